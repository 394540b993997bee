"""What a newcomer following only README.md trips on (issue 21): each stays fixed.

The quick start is only what takes seconds; a framework install line installs the
framework (through the package's ``[instruments]`` extra, which every package has); the
README writes one ``agent_run`` form.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PACKAGES = sorted(p.parent for p in (ROOT / "instrumentation").glob("*/pyproject.toml"))


def _section(heading: str) -> str:
    return README.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_block_holds_only_what_takes_seconds() -> None:
    section = _section("## Quick start (30 seconds)")
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "no command block in the quick start"
    assert "otel-loopguard demo" in block.group(1)
    assert "test" not in block.group(1), "the ~15-minute test run is not a 30-second step"


def test_framework_install_lines_install_the_framework() -> None:
    section = _section("## Frameworks")
    installs = re.findall(r"`(pip install [^`]*instrumentation/[^`]*)`", section)
    assert installs, "no framework install line"
    for line in installs:
        assert "[instruments]" in line, line
    for package in PACKAGES:
        extras = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))
        instruments = extras["project"]["optional-dependencies"].get("instruments")
        assert instruments, f"{package.name} has no [instruments] extra"


def test_one_agent_run_form() -> None:
    forms = set(re.findall(r"\b(?:\w+\.)?agent_run\(", README))
    assert len(forms) <= 1, forms


def test_each_framework_readme_installs_its_framework() -> None:
    for package in PACKAGES:
        text = (package / "README.md").read_text(encoding="utf-8")
        installs = [
            line for line in text.splitlines() if line.startswith("pip install") and "instr" in line
        ]
        assert installs, f"{package.name}: no install line"
        for line in installs:
            asked = re.search(rf"instrumentation/{package.name}\[([^\]]*)\]", line)
            assert asked and "instruments" in asked.group(1).split(","), line
