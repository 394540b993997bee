"""The detection core imports no OpenTelemetry: every ``otel_loopguard.engine`` module loads
in a process where ``opentelemetry`` cannot be imported at all (and so does the public
face's engine part), so the same code can serve where the SDK is absent and the compiled
build compiles it without the SDK's types."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import otel_loopguard.engine

_PROGRAM = r"""
import importlib, json, pkgutil, sys

class _NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"opentelemetry is blocked here ({name})")
        return None

sys.meta_path.insert(0, _NoOpenTelemetry())
import otel_loopguard.engine as engine

loaded = []
for module in pkgutil.walk_packages(engine.__path__, "otel_loopguard.engine."):
    importlib.import_module(module.name)
    loaded.append(module.name)
from otel_loopguard import LoopGuardConfig, Monitor  # the public face's engine names
monitor = Monitor(LoopGuardConfig())
leaked = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
print(json.dumps({"loaded": loaded, "leaked": leaked}))
"""


def test_every_engine_module_imports_without_opentelemetry() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    files = {
        path.relative_to(Path(otel_loopguard.engine.__file__).parent.parent.parent)
        for path in Path(otel_loopguard.engine.__file__).parent.rglob("*.py")
        if path.name != "__init__.py"
    }
    expected = {".".join(path.with_suffix("").parts) for path in files}
    assert expected <= set(result["loaded"])  # every module file was imported
    assert "otel_loopguard.engine.monitor" in result["loaded"]
    assert result["leaked"] == []
