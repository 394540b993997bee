"""The kit is what framework packages import beside the public face, and all they import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import otel_loopguard.kit as kit

_ROOT = Path(__file__).resolve().parents[2]


def test_every_kit_name_resolves() -> None:
    for name in kit.__all__:
        assert getattr(kit, name) is not None, name


def test_importing_one_kit_module_loads_no_other() -> None:
    code = (
        "import sys, otel_loopguard.kit.openai_format; "
        "print(sorted(m for m in sys.modules if m.startswith('otel_loopguard.kit.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert loaded.strip() == "['otel_loopguard.kit.openai_format']"


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_framework_packages_import_only_the_public_face_and_the_kit() -> None:
    sources = sorted(_ROOT.glob("instrumentation/*/src/*/*.py"))
    assert sources, "no framework package found"
    outside = [
        f"{path.relative_to(_ROOT)}: {module}"
        for path in sources
        for module in _imported_modules(path)
        if module.startswith("otel_loopguard.")
        and not (module == "otel_loopguard.kit" or module.startswith("otel_loopguard.kit."))
    ]
    assert outside == []
