"""The two builds of the core a release ships (docs/releasing.md): a pure-Python wheel for
every platform, and wheels compiled with mypyc where one can be built, which pip prefers.

Both come from the same sdist and must be the same package: the same version, requirements
and Python files (the compiled wheel ships the ``.py`` files beside the extensions, for
tracebacks and type checkers), the compiled one marked for its platform and holding an
extension for every module pyproject's mypyc hook lists. Every test that uses the
``installed`` venv runs on both builds (conftest.py); here, that each venv imports the build
it says.
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

from archives import wheel_files, wheel_metadata, wheel_text
from conftest import COMPILE_SWITCH, Built, Venv, explain, run, uv
from distributions import CORE, NATIVE_SOURCES, native_module

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dists venv installs tomli there
    import tomli as tomllib

_EXTENSION_SUFFIXES = (".so", ".pyd")


def listed_modules() -> set[str]:
    """The modules pyproject's mypyc hook compiles, as dotted names."""
    pyproject = tomllib.loads((CORE.directory / "pyproject.toml").read_text())
    hook = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["mypyc"]
    excluded = {CORE.directory / path for path in hook.get("exclude", [])}
    modules: set[str] = set()
    for entry in hook["include"]:
        path = CORE.directory / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            if file in excluded or (file.name == "__init__.py" and path.is_dir()):
                continue
            relative = file.relative_to(CORE.directory).with_suffix("")
            modules.add(".".join(relative.parts))
    return modules


def extension_modules(wheel: Path) -> set[str]:
    """Dotted names of the extension modules in a wheel (``a/b.cpython-311-x86_64.so``)."""
    found = set()
    for name in wheel_files(wheel):
        if name.endswith(_EXTENSION_SUFFIXES) and "/" in name:
            folder, file = name.rsplit("/", 1)
            found.add(".".join([*folder.split("/"), file.split(".", 1)[0]]))
    return found


def outside_metadata(wheel: Path) -> set[str]:
    return {n for n in wheel_files(wheel) if not n.split("/", 1)[0].endswith(".dist-info")}


def test_the_compiled_wheel_is_the_pure_one_with_extensions(
    built: dict[str, Built], compiled_core: Built
) -> None:
    pure = built[CORE.name].require().wheel
    compiled = compiled_core.require().wheel
    assert pure is not None and compiled is not None
    pure_meta, compiled_meta = wheel_metadata(pure), wheel_metadata(compiled)
    assert compiled_meta["Version"] == pure_meta["Version"]
    assert compiled_meta.get_all("Requires-Dist") == pure_meta.get_all("Requires-Dist")
    assert compiled_meta["Requires-Python"] == pure_meta["Requires-Python"]
    # every file of the pure wheel, the .py files of the compiled modules among them
    assert sorted(outside_metadata(pure) - outside_metadata(compiled)) == []
    # an extension for every listed module (mypyc also adds its shared runtime module)
    assert listed_modules(), "pyproject lists no module to compile"
    assert sorted(listed_modules() - extension_modules(compiled)) == []
    # and the native modules hatch_build.py compiles (their C sources shipped by neither)
    assert len(NATIVE_SOURCES) >= 2, NATIVE_SOURCES
    for source in NATIVE_SOURCES:
        assert native_module(source) in extension_modules(compiled), source
    assert [name for name in outside_metadata(compiled) if name.endswith(".c")] == []
    assert extension_modules(pure) == set()


def test_a_native_core_that_does_not_compile_fails_the_compiled_build(
    built: dict[str, Built], tmp_path: Path
) -> None:
    """Asked for the compiled build, a C compile failure of the native signature core stops
    the build with one clear message (hatch_build.py runs before mypyc: seconds, not
    minutes), rather than giving a wheel without it."""
    sdist = built[CORE.name].require().sdist
    assert sdist is not None
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (source,) = [path for path in tmp_path.iterdir() if path.is_dir()]
    c_file = source / "otel_loopguard" / "engine" / "_native_signatures.c"
    c_file.write_text(c_file.read_text() + "\n#error broken on purpose\n")
    out = tmp_path / "out"
    python = ["--python", sys.executable]
    done = run(
        [*uv(), "build", "--wheel", *python, "--out-dir", out, source], tmp_path, **COMPILE_SWITCH
    )
    assert done.returncode != 0, explain(done)
    assert "could not compile otel_loopguard/engine/_native_signatures.c" in done.stderr, explain(
        done
    )
    assert "broken on purpose" in done.stderr
    assert list(out.glob("*.whl")) == []


def test_the_compiled_wheel_says_it_is_for_this_platform_only(
    built: dict[str, Built], compiled_core: Built
) -> None:
    """pip must never install a compiled wheel where its extensions cannot load, and
    prefers it over the pure one where they can: the tags say which is which."""
    pure_wheel = wheel_text(built[CORE.name].require().wheel, "WHEEL")
    compiled_wheel = wheel_text(compiled_core.require().wheel, "WHEEL")
    assert "Root-Is-Purelib: true" in pure_wheel
    assert "Tag: py3-none-any" in pure_wheel
    assert "Root-Is-Purelib: false" in compiled_wheel
    lines = compiled_wheel.splitlines()
    tags = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert tags and all(tag.startswith(f"{interpreter}-{interpreter}-") for tag in tags), tags
    assert not any(tag.endswith("-any") for tag in tags), tags


def test_each_venv_imports_the_build_it_holds(installed: Venv) -> None:
    done = installed.run(
        installed.python,
        "-c",
        "import json, otel_loopguard; from otel_loopguard.engine.monitor import pipeline;"
        " print(json.dumps([otel_loopguard.COMPILED, pipeline.__file__]))",
    )
    assert done.returncode == 0, done.stderr
    compiled, monitor_file = json.loads(done.stdout)
    assert compiled is (installed.build == "compiled")
    assert monitor_file.endswith(_EXTENSION_SUFFIXES) is compiled
    assert Path(monitor_file).resolve().is_relative_to(installed.path.resolve())


# -- the release's wheel builder (pyproject's [tool.cibuildwheel]) ----------------------------

#: the compiled wheels a release publishes (docs/releasing.md): these CPythons, on these
#: platforms; every other platform and Python installs the pure wheel
RELEASED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
RELEASED_PLATFORMS = {
    "linux": ("manylinux_x86_64", "manylinux_aarch64"),
    "macos": ("macosx_x86_64", "macosx_arm64"),
    "windows": (),
}


def release_builder() -> dict[str, Any]:
    """pyproject's ``[tool.cibuildwheel]``: how the published compiled wheels are built."""
    pyproject = tomllib.loads((CORE.directory / "pyproject.toml").read_text())
    config: dict[str, Any] = pyproject["tool"]["cibuildwheel"]
    return config


def test_the_release_builder_makes_the_compiled_wheels_the_docs_promise_and_no_others() -> None:
    """cibuildwheel (in the manylinux images and on macOS) builds the published compiled
    wheels from pyproject's configuration. Asked which it would build on each platform, it
    must name exactly the CPythons and platforms docs/releasing.md promises: no Python the
    compiled suites never ran (a free-threaded or newer one), no Windows or musl wheel."""
    cibuildwheel = Path(sys.executable).with_name("cibuildwheel")
    for platform_name, tags in RELEASED_PLATFORMS.items():
        done = run(
            [cibuildwheel, "--print-build-identifiers", "--platform", platform_name, "."],
            CORE.directory,
        )
        assert done.returncode == 0, explain(done)
        expected = {f"cp{v.replace('.', '')}-{tag}" for v in RELEASED_PYTHONS for tag in tags}
        assert set(done.stdout.split()) == expected, platform_name
    releasing = " ".join((CORE.directory / "docs" / "releasing.md").read_text().split())
    assert f"CPython {RELEASED_PYTHONS[0]} to {RELEASED_PYTHONS[-1]}" in releasing


def test_the_release_builder_turns_the_compiled_build_on() -> None:
    """The switch this suite builds the compiled wheel with is the one the release's
    builder sets (without it cibuildwheel would publish pure wheels tagged per platform)."""
    assert release_builder()["environment"] == COMPILE_SWITCH


def test_the_release_builders_own_test_refuses_a_wheel_that_is_not_compiled(
    installed: Venv,
) -> None:
    """cibuildwheel runs the configured test command in a fresh environment holding each
    wheel it built: it passes with the compiled build and fails with the pure one."""
    command = release_builder()["test-command"]
    path = f"{installed.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    done = installed.run("sh", "-c", command, PATH=path)
    if installed.build == "compiled":
        assert done.returncode == 0, explain(done)
        assert done.stdout.strip(), explain(done)  # the version, from the command line tool
    else:
        assert done.returncode != 0, explain(done)
        assert "not the compiled build" in done.stderr
