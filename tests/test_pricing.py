"""Price table: exact, provider-prefixed and snapshot names; unknown models cost None."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from otel_loopguard.engine.config import LoopGuardConfig, ModelPrice
from otel_loopguard.engine.pricing import PriceTable

TABLE = PriceTable(
    {
        "gpt-4o": ModelPrice(input=2.5, output=10),
        "gpt-4o-mini": ModelPrice(input=0.15, output=0.6),
        "Claude-3": ModelPrice(input=15, output=75),
        "claude-sonnet-4-5": ModelPrice(input=3, output=15),
        "gemini-1.5-pro": ModelPrice(input=1.25, output=5),
    }
)


def test_cost_per_million_tokens() -> None:
    assert TABLE.cost("gpt-4o", 1_000_000, 0) == pytest.approx(2.5)
    assert TABLE.cost("gpt-4o", 2000, 500) == pytest.approx((2000 * 2.5 + 500 * 10) / 1e6)
    assert TABLE.cost("gpt-4o", None, None) == 0.0


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("GPT-4o", "gpt-4o"),
        ("claude-3", "claude-3"),
        ("openai/gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("gemini-1.5-pro-002", "gemini-1.5-pro"),
        ("models/gemini-1.5-pro-latest", "gemini-1.5-pro"),
        ("claude-3-20240229-v1:0", "claude-3"),
    ],
)
def test_names_resolve_to_their_listed_model(model: str, listed: str) -> None:
    expected = {"claude-3": 15.0, "gpt-4o": 2.5, "gpt-4o-mini": 0.15}
    price = TABLE.price(model)
    assert price is not None
    assert price.input == expected.get(listed, price.input)
    assert TABLE.price(model) == TABLE.price(listed)


@pytest.mark.parametrize(
    "model",
    ["gpt-4", "gpt-4o-audio-preview", "gpt-4o-mini-tts", "claude-3-5-sonnet", "gpt-4.1", None, ""],
)
def test_other_models_are_unknown_not_guessed(model: str | None) -> None:
    assert TABLE.price(model) is None
    assert TABLE.cost(model, 100, 100) is None


def test_a_model_only_differing_by_name_is_not_priced_like_its_prefix() -> None:
    only_big = PriceTable({"gpt-4o": ModelPrice(input=2.5, output=10)})
    assert only_big.cost("gpt-4o-mini", 1000, 1000) is None


def test_from_config_reads_the_json_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"my-model": {"input": 1, "output": 2}}), encoding="utf-8")
    config = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_PRICES": str(path)})
    table = PriceTable.from_config(config)
    assert table.cost("my-model-2025-01-01", 1_000_000, 1_000_000) == pytest.approx(3.0)


def test_unusable_file_makes_costs_unknown_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"my-model": {"input": "cheap"}}', encoding="utf-8")
    config = LoopGuardConfig(prices=str(path))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.config"):
        table = PriceTable.from_config(config)
    assert len(caplog.records) == 1 and "OTEL_LOOPGUARD_PRICES" in caplog.records[0].getMessage()
    assert len(table) == 0 and table.cost("my-model", 10, 10) is None
    assert PriceTable.from_config(LoopGuardConfig()).cost("my-model", 1, 1) is None


def test_lookup_cache_stays_bounded() -> None:
    table = PriceTable({"m": ModelPrice(input=1, output=1)})
    for n in range(5000):
        assert table.price(f"m-{n:04d}") is not None
    assert len(table._resolved) <= 1024
