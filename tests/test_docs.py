"""The documentation tells the truth about the configuration, and README stays a front door.

docs/configuration.md lists every setting with its real default: the table is read by
people deciding what to set, so it must not drift from the model. The defaults are read
from ``LoopGuardConfig`` itself, so adding or changing a field without updating the docs
fails here. Every ``OTEL_LOOPGUARD_*`` name written anywhere in README.md, docs/ or a
framework package's README must exist; README.md stays short (at most 200 lines) and shows
the test command CI runs; every relative link in them, and every repository path they
write in backticks, points at a file that exists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from otel_loopguard import environment_variables
from otel_loopguard.engine.config import LoopGuardConfig

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"
DETECTORS = DOCS / "detectors.md"
PACKAGES = sorted(p.parent for p in (ROOT / "instrumentation").glob("*/pyproject.toml"))

#: every page a reader of the docs lands on: README, docs/, each framework package's README
PAGES = [README, *sorted(DOCS.glob("*.md")), *(package / "README.md" for package in PACKAGES)]

VARIABLE = re.compile(r"\bOTEL_LOOPGUARD_[A-Z0-9]+(?:_[A-Z0-9]+)*")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _section(path: Path, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) up to the next heading of that level."""
    text = path.read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, f"{path.relative_to(ROOT)} has no '{heading}' section"
    return found.group(1)


def _configuration_rows() -> dict[str, tuple[str, str]]:
    """``{variable: (default cell, meaning)}`` from the table of the Variables section."""
    rows = {}
    for line in _section(CONFIGURATION, "## Variables").splitlines():
        if not line.startswith("| `OTEL_LOOPGUARD_"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"malformed row: {line}"
        variable, default, meaning = cells
        assert variable.strip("`") not in rows, f"{variable} listed twice"
        rows[variable.strip("`")] = (default.strip("`"), meaning)
    return rows


def _shown(value: Any) -> str:
    """How the docs write a default."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return ",".join(value) or "unset"  # an empty list: nothing configured
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


ROWS = _configuration_rows()
KNOWN = {LoopGuardConfig.env_name(field) for field in LoopGuardConfig.model_fields}


@pytest.mark.parametrize("field", list(LoopGuardConfig.model_fields))
def test_every_setting_is_in_the_table_with_its_default(field: str) -> None:
    variable = LoopGuardConfig.env_name(field)
    assert variable in ROWS, f"docs/configuration.md's Variables table lacks {variable}"
    default, meaning = ROWS[variable]
    assert default == _shown(LoopGuardConfig.model_fields[field].default)
    assert len(meaning) > 10


def test_every_variable_opentelemetry_instrument_knows_is_documented() -> None:
    """The entry point's names (what becomes a ``--loopguard_*`` flag) are the model's."""
    exported = {name for name in vars(environment_variables) if name.startswith("OTEL_")}
    assert set(environment_variables.ALL_VARIABLES) == KNOWN
    assert exported == KNOWN
    assert exported <= set(ROWS)


def test_no_row_for_a_variable_that_does_not_exist() -> None:
    assert set(ROWS) - KNOWN == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_variable_a_page_names_exists(page: Path) -> None:
    named = set(VARIABLE.findall(page.read_text(encoding="utf-8")))
    assert named - KNOWN == set(), f"{page.relative_to(ROOT)} names unknown variables"


def test_a_shown_default_is_what_an_unset_environment_gives() -> None:
    """The documented values, fed back as variables, configure exactly the defaults."""
    env = {name: default for name, (default, _) in ROWS.items() if default != "unset"}
    assert LoopGuardConfig.from_env(env) == LoopGuardConfig.from_env({})


def test_prices_example_is_a_valid_table(tmp_path: Path) -> None:
    example = re.search(r"```json\n(.*?)```", _section(CONFIGURATION, "## Prices"), re.S)
    assert example, "docs/configuration.md's Prices section shows no JSON example"
    path = tmp_path / "prices.json"
    path.write_text(example.group(1), encoding="utf-8")
    prices = LoopGuardConfig(prices=str(path)).load_prices()
    assert prices and all(p.input >= 0 and p.output >= 0 for p in prices.values())


def test_detector_defaults_are_the_models() -> None:
    """docs/detectors.md's Defaults table writes ``NAME=value``: the model's default."""
    pairs = re.findall(r"`([A-Z][A-Z0-9_]*)=([^`]*)`", _section(DETECTORS, "## Defaults"))
    assert len(pairs) > 20
    for name, value in pairs:
        field = name.lower()
        assert field in LoopGuardConfig.model_fields, f"detectors.md: no setting {name}"
        assert value == _shown(LoopGuardConfig.model_fields[field].default), name


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_shows_the_test_command_ci_runs() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", _section(README, "## Running the tests"), re.S)
    assert [block.strip() for block in blocks] == ["bash scripts/test.sh"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "bash scripts/test.sh" in ci


def test_readme_links_every_framework_package_readme() -> None:
    text = README.read_text(encoding="utf-8")
    for package in PACKAGES:
        assert f"](instrumentation/{package.name}/README.md)" in text, package.name
        section = _section(package / "README.md", "## What it records and when it interrupts")
        assert len(section) > 500, f"{package.name}'s README lost its section"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(page: Path) -> None:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    links = [link for link in LINK.findall(text) if not re.match(r"[a-z]+:|#", link)]
    missing = [link for link in links if not (page.parent / link.split("#")[0]).exists()]
    assert missing == [], f"{page.relative_to(ROOT)} links to files that do not exist"


#: a path of this repository written in backticks (``otel_loopguard/guard/tool_call.py``)
REPO_PATH = re.compile(
    r"`((?:otel_loopguard|tests|benchmarks|collector|dashboards|scripts|instrumentation|docs)"
    r"/[^`\s]*)`"
)
#: written by the running viewing stack, not part of the checkout
RUNTIME_PATHS = ("collector/data/",)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_file_a_page_names_exists(page: Path) -> None:
    """A newcomer finds the gate or a detector by the file name the docs give."""
    named = {path.split("::")[0] for path in REPO_PATH.findall(page.read_text(encoding="utf-8"))}
    named = {path for path in named if not re.search(r"[<*{]", path)}
    missing = [
        path
        for path in sorted(named)
        if not path.startswith(RUNTIME_PATHS) and not (ROOT / path).exists()
    ]
    assert missing == [], f"{page.relative_to(ROOT)} names files that do not exist"
