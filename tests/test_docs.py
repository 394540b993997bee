"""README's configuration table lists every setting with its real default.

The table is read by people deciding what to set; it must not drift from the model. The
defaults are read from ``LoopGuardConfig`` itself, so adding or changing a field without
updating README fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from otel_loopguard.engine.config import LoopGuardConfig

README = Path(__file__).resolve().parent.parent / "README.md"


def _configuration_rows() -> dict[str, tuple[str, str]]:
    """``{variable: (default cell, meaning)}`` from the table of the Configuration section."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"^## Configuration\n(.*?)(?=^## )", text, re.S | re.M)
    assert found, "README.md has no '## Configuration' section"
    rows = {}
    for line in found.group(1).splitlines():
        if not line.startswith("| `OTEL_LOOPGUARD_"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"malformed row: {line}"
        variable, default, meaning = cells
        assert variable.strip("`") not in rows, f"{variable} listed twice"
        rows[variable.strip("`")] = (default.strip("`"), meaning)
    return rows


def _shown(value: Any) -> str:
    """How README writes a default."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


ROWS = _configuration_rows()


@pytest.mark.parametrize("field", list(LoopGuardConfig.model_fields))
def test_every_setting_is_in_the_table_with_its_default(field: str) -> None:
    variable = LoopGuardConfig.env_name(field)
    assert variable in ROWS, f"README's Configuration table lacks {variable}"
    default, meaning = ROWS[variable]
    assert default == _shown(LoopGuardConfig.model_fields[field].default)
    assert len(meaning) > 10


def test_no_row_for_a_variable_that_does_not_exist() -> None:
    known = {LoopGuardConfig.env_name(field) for field in LoopGuardConfig.model_fields}
    assert set(ROWS) - known == set()


def test_a_shown_default_is_what_an_unset_environment_gives() -> None:
    """The documented values, fed back as variables, configure exactly the defaults."""
    env = {name: default for name, (default, _) in ROWS.items() if default != "unset"}
    assert LoopGuardConfig.from_env(env) == LoopGuardConfig.from_env({})


def test_prices_example_in_readme_is_a_valid_table(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1]
    example = re.search(r"```json\n(.*?)```", section, re.S)
    assert example, "the Configuration section shows no prices JSON example"
    path = tmp_path / "prices.json"
    path.write_text(example.group(1), encoding="utf-8")
    prices = LoopGuardConfig(prices=str(path)).load_prices()
    assert prices and all(p.input >= 0 and p.output >= 0 for p in prices.values())
