"""Configuration: every variable read, bad values warn once and fall back to defaults."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_loopguard.engine.config import LoopGuardConfig


def test_defaults_without_environment() -> None:
    config = LoopGuardConfig.from_env({})
    assert config == LoopGuardConfig()
    assert config.mode == "observe" and config.enabled and not config.capture_content


def test_every_field_reads_its_variable() -> None:
    env = {
        LoopGuardConfig.env_name("mode"): "enforce",
        LoopGuardConfig.env_name("max_runs"): "7",
        LoopGuardConfig.env_name("timeout"): "2.5",
        LoopGuardConfig.env_name("capture_content"): "TRUE",
        LoopGuardConfig.env_name("read_only_tools"): " cat , ls ,,",
    }
    config = LoopGuardConfig.from_env(env)
    assert (config.mode, config.max_runs, config.timeout) == ("enforce", 7, 2.5)
    assert config.capture_content is True
    assert config.read_only_tools == ("cat", "ls")


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("enabled", "maybe"),
        ("mode", "destroy"),
        ("max_runs", "-3"),
        ("max_runs", "ten"),
        ("reserve_cost_fraction", "1.5"),
        ("signal_window", "0"),
        ("timeout", "soon"),
    ],
)
def test_bad_value_warns_once_and_uses_default(
    field: str, bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        config = LoopGuardConfig.from_env({LoopGuardConfig.env_name(field): bad})
    assert getattr(config, field) == LoopGuardConfig.model_fields[field].default
    records = [r for r in caplog.records if LoopGuardConfig.env_name(field) in r.getMessage()]
    assert len(records) == 1
    message = records[0].getMessage()
    assert repr(bad) in message and "expected" in message


@pytest.mark.parametrize("written", ["ENFORCE", " Enforce ", "enforce\n", "\tEnForce"])
def test_the_mode_is_read_as_users_write_it(written: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        assert LoopGuardConfig.from_env({"OTEL_LOOPGUARD_MODE": written}).mode == "enforce"
    assert not caplog.records
    assert LoopGuardConfig(mode=written).mode == "enforce"


@pytest.mark.parametrize(
    ("written", "closest"),
    [("enforced", "enforce"), ("ENFROCE", "enforce"), ("observer", "observe"), ("obs", "observe")],
)
def test_an_unknown_mode_names_the_valid_values_and_the_closest(
    written: str, closest: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        assert LoopGuardConfig.from_env({"OTEL_LOOPGUARD_MODE": written}).mode == "observe"
    (record,) = caplog.records
    message = record.getMessage()
    assert "one of: observe, enforce" in message and f"did you mean {closest!r}?" in message


def test_a_mode_close_to_none_names_no_closest(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        LoopGuardConfig.from_env({"OTEL_LOOPGUARD_MODE": "yes"})
    message = caplog.records[-1].getMessage()
    assert "one of: observe, enforce" in message and "did you mean" not in message


def test_every_field_has_a_description_for_the_readme() -> None:
    for name, info in LoopGuardConfig.model_fields.items():
        assert info.description, name


def test_price_table_loads_and_bad_file_means_unknown_cost(
    tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    good = tmp_path / "prices.json"
    good.write_text('{"gpt-x": {"input": 1.5, "output": 6}}')
    prices = LoopGuardConfig(prices=str(good)).load_prices()
    assert prices["gpt-x"].input == 1.5 and prices["gpt-x"].output == 6
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpt-x": {"input": "cheap"}}')
    with caplog.at_level(logging.WARNING):
        assert LoopGuardConfig(prices=str(bad)).load_prices() == {}
    assert "OTEL_LOOPGUARD_PRICES" in caplog.text
    assert LoopGuardConfig(prices=str(tmp_path / "missing.json")).load_prices() == {}


@pytest.mark.parametrize(
    ("field", "bad", "expected"),
    [
        ("mode", "destroy", "expected one of: observe, enforce"),
        ("timeout", "-1", "expected a number >= 0"),
        ("max_runs", "ten", "expected a whole number >= 1"),
        ("similarity_threshold", "2", "expected a number > 0 and <= 1"),
        ("enabled", "maybe", "expected true or false; using the default true"),
    ],
)
def test_warnings_say_what_is_accepted_in_plain_words(
    field: str, bad: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No pydantic internals (``Literal['observe', 'enforce']``, ``Ge(ge=0)``) in a warning;
    the flag that sets the variable is named too, for a user who never wrote the variable."""
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        LoopGuardConfig.from_env({LoopGuardConfig.env_name(field): bad})
    message = caplog.records[-1].getMessage()
    assert expected in message
    assert f"--loopguard_{field}" in message and LoopGuardConfig.env_name(field) in message
    for internal in ("Literal[", "Ge(", "Gt(", "Le(", "typing."):
        assert internal not in message


def test_a_bad_flag_of_opentelemetry_instrument_is_reported_by_its_flag_name(
    tmp_path: Path,
) -> None:
    instrument = Path(sys.executable).parent / "opentelemetry-instrument"
    if not instrument.exists():
        pytest.skip("opentelemetry-instrument is not installed next to this Python")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_LOOPGUARD_", "OTEL_EXPORTER_OTLP"))
    }
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
    result = subprocess.run(
        [str(instrument), "--loopguard_mode", "destroy", sys.executable, "-c", "print('ran')"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "ran" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "'destroy'" in line]
    assert len(warnings) == 1, result.stderr
    assert "--loopguard_mode" in warnings[0] and "expected one of: observe, enforce" in warnings[0]
