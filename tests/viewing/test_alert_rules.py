"""The Prometheus alerting rules we ship (``collector/loopguard-alerts.yml``).

Three things can make an alert useless without anyone noticing: a syntax error (Prometheus
refuses the whole file), logic that fires on the wrong data or never fires, and a metric or
label name the plugin does not export (the rule evaluates to nothing, for ever). The first
two are checked by ``promtool`` (Prometheus' own checker and rule unit tests, with the
series and expected alerts in ``alert_rules_test.yml``); the third against the text the
real Prometheus exporter writes for a real looping run. That the rules load and evaluate
against a real Prometheus scraping the demo is in ``test_prometheus_end_to_end.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard
from otel_loopguard.guard.decorators import agent_run, loopguard_tool
from otel_loopguard.processor import LoopGuardSpanProcessor

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "collector" / "loopguard-alerts.yml"
RULE_TESTS = Path(__file__).with_name("alert_rules_test.yml")

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not installed (apt-get install prometheus)",
)


def alert_rules() -> list[dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


@needs_promtool
def test_promtool_accepts_the_rules() -> None:
    result = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_each_alert_fires_on_its_condition_and_not_on_near_misses() -> None:
    result = subprocess.run(
        ["promtool", "test", "rules", str(RULE_TESTS)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert tested == {rule["alert"] for rule in alert_rules()}, "every alert has a unit test"


def _exported_labels() -> dict[str, set[str]]:
    """Metric name -> label names, from the Prometheus exporter's text after a real run
    that loops to STOP, plus one counted internal error."""
    registry = CollectorRegistry()
    meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    provider = TracerProvider()
    guard = LoopGuard(LoopGuardConfig(), meter_provider=meter_provider, tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    tracer = provider.get_tracer("alert-rules-test")

    @loopguard_tool(tracer=tracer, guard=guard)
    def search(query: str) -> str:
        return "no results"

    with agent_run("researcher", tracer=tracer, guard=guard):
        for _ in range(6):
            search("pricing")
    guard.telemetry.internal_error("on_end", TypeError("a test error"))
    labels: dict[str, set[str]] = {}
    for line in generate_latest(registry).decode().splitlines():
        match = re.match(r"(\w+)(?:\{(.*)\})? ", line)
        if match and not line.startswith("#"):
            names = set(re.findall(r'(\w+)="', match.group(2) or ""))
            labels.setdefault(match.group(1), set()).update(names)
    return labels


def test_rules_read_only_metrics_and_labels_the_plugin_exports() -> None:
    exported = _exported_labels()
    for rule in alert_rules():
        expr = rule["expr"]
        metrics = set(re.findall(r"\bloopguard_\w+", expr))
        assert metrics, rule["alert"]
        for metric in metrics:
            assert metric in exported, f"{rule['alert']}: {metric} is not exported"
        available = set().union(*(exported[metric] for metric in metrics))
        used = set()
        for group in re.findall(r"\bby \(([^)]*)\)", expr):
            used |= {name.strip() for name in group.split(",")}
        used |= set(re.findall(r"(\w+)=~?\"", expr))
        # job comes from the scrape; le is on every _bucket series
        missing = used - available - {"job"}
        assert not missing, f"{rule['alert']}: labels {missing} are not exported"
        templated = set(re.findall(r"\$labels\.(\w+)", str(rule.get("annotations", {}))))
        assert templated <= used, f"{rule['alert']}: annotations use labels the alert drops"
