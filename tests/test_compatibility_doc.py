"""docs/compatibility.md stays true: every test a cell names exists in its suite.

Each ``### `package` version`` section names its suite (``Suite `compat-<name>` ``); its
cells name tests as ``test_x.py::test_name[params]`` or ``test_name[params]``. A renamed or
deleted test leaves a cell backed by nothing: this fails then.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
_SUITE = re.compile(r"Suite `compat-([\w.-]+)`")
_TEST = re.compile(r"`(?:(test_\w+\.py)::)?(test_\w+)(?:\[[^\]`]*\])?`")


def _sections() -> list[tuple[str, str]]:
    """(suite folder, section text) for each section naming a suite."""
    parts = re.split(r"^### ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    found = []
    for part in parts[1:]:
        suite = _SUITE.search(part)
        if suite:
            found.append((suite.group(1), part))
    return found


def test_every_section_names_a_suite_that_exists() -> None:
    sections = _sections()
    assert len(sections) >= 8
    for suite, _text in sections:
        assert (ROOT / "compat" / suite / "pyproject.toml").is_file(), suite


def test_every_test_a_cell_names_exists_in_its_suite() -> None:
    missing = []
    for suite, text in _sections():
        tests = ROOT / "compat" / suite / "tests"
        sources = {path.name: path.read_text(encoding="utf-8") for path in tests.glob("test_*.py")}
        for match in _TEST.finditer(text):
            module, name = match.groups()
            candidates = [sources.get(module, "")] if module else list(sources.values())
            if not any(
                re.search(rf"^(?:async )?def {name}\(", src, re.MULTILINE) for src in candidates
            ):
                missing.append(f"{suite}: {match.group(0)}")
    assert missing == []
