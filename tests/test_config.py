"""Configuration: every variable read, bad values warn once and fall back to defaults."""

from __future__ import annotations

import logging

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
