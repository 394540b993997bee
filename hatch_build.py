"""Hatch build hook: the native C modules, in the compiled build only.

``otel_loopguard/engine/_native_signatures.c`` computes the common case of
``signatures._canonical_text``; ``otel_loopguard/engine/detectors/_native_table.c`` makes the
record moves of ``FingerprintTable`` (see each file). They are built when, and only when, the
compiled build is asked for, by the switch of pyproject's mypyc hook
(``HATCH_BUILD_HOOK_ENABLE_MYPYC=true``): this hook is on by default and does nothing
otherwise, so a plain install still needs no C compiler, and an editable install never gets
an extension module beside the sources. It compiles the one C file with the interpreter's
own compiler and headers (``sysconfig``), as a shared object with the interpreter's
extension suffix, and puts them into the wheel, which is then tagged for this interpreter and
platform (as the mypyc hook tags it too). A compile failure fails the build: the compiled
build was asked for, and would silently lose part of what it is for.

Not on Windows (no ``CC`` there): the build goes on without the modules, and their
callers use their Python implementations, which give the same results.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: each C source, and the module's path in the wheel less the suffix
NATIVE_MODULES = (
    ("otel_loopguard/engine/_native_signatures.c", "otel_loopguard/engine/_native_signatures"),
    (
        "otel_loopguard/engine/detectors/_native_table.c",
        "otel_loopguard/engine/detectors/_native_table",
    ),
)
SWITCH = "HATCH_BUILD_HOOK_ENABLE_MYPYC"  # the compiled build's switch (hatch: "true" or "1")


def compiled_build_requested() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() in ("true", "1")


def compile_command(source: Path, target: Path) -> list[str]:
    """The interpreter's compiler, its headers, and the flags of a loadable extension."""
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    paths = sysconfig.get_paths()
    includes = sorted({paths["include"], paths["platinclude"]})
    # macOS links an extension as a bundle whose Python symbols the interpreter provides
    link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    return [
        *compiler,
        "-O2",
        "-fPIC",
        *(f"-I{include}" for include in includes),
        *link,
        str(source),
        "-o",
        str(target),
    ]


class NativeModulesHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._scratch: str | None = None
        if self.target_name != "wheel" or version == "editable":
            return
        if not compiled_build_requested():
            return
        if sys.platform == "win32":
            self.app.display_warning(
                "otel-loopguard: no native modules on Windows; the compiled build uses their "
                "Python implementations (the same results)"
            )
            return
        self._scratch = tempfile.mkdtemp(prefix="otel-loopguard-native-")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for source, module in NATIVE_MODULES:
            target = Path(self._scratch) / f"{Path(module).name}{suffix}"
            self._compile(source, target)
            build_data["force_include"][str(target)] = f"{module}{suffix}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def _compile(self, source: str, target: Path) -> None:
        command = compile_command(Path(self.root) / source, target)
        failure = ""
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                failure = done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}"
        except OSError as exc:  # no compiler at all
            failure = str(exc)
        if failure or not target.is_file():
            shutil.rmtree(str(self._scratch), ignore_errors=True)
            raise RuntimeError(
                f"otel-loopguard: the compiled build ({SWITCH}=true) could not compile "
                f"{source} with `{shlex.join(command)}` (it needs a C compiler and the Python "
                f"headers; without {SWITCH} the pure-Python build needs neither):\n"
                f"{failure or 'no output file'}"
            )

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_scratch", None):
            shutil.rmtree(str(self._scratch), ignore_errors=True)
