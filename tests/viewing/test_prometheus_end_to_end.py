"""Every dashboard panel shows what the plugin really did, read from a real Prometheus.

The demo runs its scripted agents (all scenarios, enforce mode) under the real span
processor with the Prometheus exporter serving ``/metrics``; Debian's ``prometheus`` binary
scrapes it every second; each panel query of each dashboard, with Grafana's variables filled
in, is then run through Prometheus' HTTP API. Each must return data, and each panel's
values must be the demo's: four stops (by repetition, handoff_cycle, permanent_failure
and shell_failure, of four agents), four warns, two replans (the shell hint, delivered
twice: one resolved, one persisted), four interrupts, four stopped runs and two
completed. Every one of those series is born at 1 (or at its first count), which
``increase()`` alone cannot count, so the panels are evaluated twice: over a range that
starts before the plugin's first scrape (every series born inside it) and over one that
starts after it (the zero series created at start are old, the decisions are born).
``scripts/test.sh`` installs Prometheus; without it this test is skipped, saying so.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from dashboard_model import Dashboard
from test_dashboards import DASHBOARDS, all_queries, concrete

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None,
    reason="prometheus not installed (apt-get install prometheus)",
)


RULES = Path(__file__).resolve().parents[2] / "collector" / "loopguard-alerts.yml"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def query(base: str, expr: str, at: float | None = None) -> list[dict]:
    params = {"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"}
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]["result"]


def api(base: str, path: str) -> dict:
    with urllib.request.urlopen(f"{base}/api/v1/{path}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def finite_values(result: list[dict]) -> list[float]:
    values = [float(sample["value"][1]) for sample in result]
    return [v for v in values if math.isfinite(v)]


# What the demo (--scenario all, enforce mode, default policy) really did, panel by panel,
# as a user reads it: legend entry -> value over the whole run; entries of 0 left out.
# stuck-search (support-agent): warn repetition, stop repetition+no_progress (search_kb);
# ping-pong: warn action_cycle, stop handoff_cycle (both billing-agent's
# transfer_to_triage_agent); permanent-failure (order-agent): stop permanent_failure
# (fetch_order); healthy (support-agent): warn repetition (check_status), warn
# repeated_tool_steps (a model turn: no tool); nudge-heeded (coding-agent): replan
# shell_failure (bash), delivered, the run recovers (resolved); nudge-ignored (coding-agent):
# replan shell_failure, delivered, then stop shell_failure after the nudge (persisted).
# Each STOP interrupted its run.
DEMO_PANELS: dict[str, dict[str, float]] = {
    "Decisions over time by action": {"warn": 4, "replan": 2, "stop": 4},
    "Stops by detector": {
        "repetition": 1,
        "handoff_cycle": 1,
        "permanent_failure": 1,
        "shell_failure": 1,
    },
    "Agents that loop most": {
        "support-agent": 1,
        "billing-agent": 1,
        "order-agent": 1,
        "coding-agent": 3,
    },
    "Tools that loop most": {
        "search_kb": 2,
        "transfer_to_triage_agent": 2,
        "fetch_order": 1,
        "check_status": 1,
        "bash": 3,
    },
    # cumulative buckets: the four warns score at most 0.5, the two replans 0.55-0.6, the
    # four stops above 0.7
    "Risk score distribution": {"0.5": 4, "0.6": 6, "0.7": 6, "1.0": 10, "+Inf": 10},
    "Interrupts": {"": 4},
    "Active runs": {},
    "Runs by end state": {"stopped": 4, "completed": 2},
    "Internal errors": {},
    "Signals by detector": {
        "repetition": 3,
        "no_progress": 1,
        "action_cycle": 1,
        "handoff_cycle": 1,
        "permanent_failure": 1,
        "repeated_tool_steps": 1,
        "shell_failure": 3,
    },
    "Recommendations by outcome": {"resolved": 1, "persisted": 1},
}
# the same with the dashboard's agent variable set to support-agent (the two runs of it)
SUPPORT_AGENT_PANELS = {
    **DEMO_PANELS,
    "Decisions over time by action": {"warn": 3, "stop": 1},
    "Stops by detector": {"repetition": 1},
    "Agents that loop most": {"support-agent": 1},
    "Tools that loop most": {"search_kb": 2, "check_status": 1},
}
AGENT_VIEWS = ((".*", DEMO_PANELS), ("support-agent", SUPPORT_AGENT_PANELS))
# the risk panel is checked at the buckets that tell warns from stops
PARTLY_CHECKED = {"Risk score distribution"}
# panels whose values depend on timing, not on what the agents did: data is enough
TIMING_PANELS = {"Processing overhead per span (p50 / p95 / p99)"}


def single_target_panels() -> list[tuple[str, str, str]]:
    """(title, query, legend label) of each one-query panel; the label "" without one."""
    panels = []
    for path in DASHBOARDS:
        for panel in Dashboard.model_validate(json.loads(path.read_text())).panels:
            if panel.title in TIMING_PANELS:
                continue
            (target,) = panel.targets
            label = re.fullmatch(r"\{\{(\w+)\}\}", target.legendFormat)
            panels.append((panel.title, target.expr, label.group(1) if label else ""))
    return panels


def panel_values(base: str, expr: str, label: str, at: float) -> dict[str, float]:
    """A panel's legend entries and values, rounded (increase() extrapolates a little)."""
    values = {}
    for sample in query(base, expr, at):
        value = float(sample["value"][1])
        assert math.isfinite(value), (expr, sample)
        if round(value):
            values[sample["metric"].get(label, "")] = round(value)
    return values


def windowed(expr: str, agent: str, seconds: float) -> str:
    """The panel query with both of Grafana's windows set to ``seconds``."""
    window = f"{max(int(seconds * 1000), 1000)}ms"
    return concrete(expr.replace("$__rate_interval", window).replace("$__range", window), agent)


def panels_without_data(base: str) -> list[str]:
    """Every query of every dashboard, for all agents and for one, that returns nothing."""
    failures = []
    for agent in (".*", "support-agent"):
        for name, expr in all_queries():
            if not finite_values(query(base, concrete(expr, agent))):
                failures.append(f"{name} (agent {agent}): {concrete(expr, agent)}")
    return failures


def panels_not_as_the_demo_did(base: str, starts: tuple[float, ...]) -> list[str]:
    """Each one-query panel whose values, over windows from each of ``starts`` to now, for
    all agents and for support-agent, are not the demo's."""
    now = time.time()
    wrong = []
    for start in starts:
        for agent, expected in AGENT_VIEWS:
            for title, expr, label in single_target_panels():
                got = panel_values(base, windowed(expr, agent, now - start), label, now)
                if title in PARTLY_CHECKED:
                    got = {key: got.get(key, 0) for key in expected[title]}
                if got != expected[title]:
                    wrong.append(
                        f"{title} (agent {agent}, from {now - start:.0f}s ago): "
                        f"{got}, expected {expected[title]}"
                    )
    return wrong


def assert_panels_show_the_demo(base: str, settle: float = 30) -> None:
    """The dashboards as a user refreshing them sees them once Prometheus scraped the whole
    demo (polled for ``settle`` seconds each: the last changes need their scrapes): every
    query has data, and each panel's values are what the demo did.

    Prometheus needs two scrapes around each change before rate() and
    histogram_quantile() have a value. The values are checked over a window reaching back
    before the first scrape (every series born inside it) and over one starting after the
    first scrape but before the first decision (the series created at zero are old, the
    decisions born)."""
    deadline = time.monotonic() + settle * 1.5
    while (failures := panels_without_data(base)) and time.monotonic() < deadline:
        time.sleep(1)
    assert not failures, "panels without data:\n" + "\n".join(failures)

    def first_sample(selector: str) -> float:
        return min(
            float(value[0])
            for series in query(base, f"{selector}[10m]")
            for value in series["values"]
        )

    first_scrape = first_sample('loopguard_runs_total{state="completed"}')
    first_decision = first_sample("loopguard_decisions_total")
    assert first_decision - first_scrape >= 2, "no scrape of the zero series before the runs"
    starts = (first_scrape - 60, (first_scrape + first_decision) / 2)
    deadline = time.monotonic() + settle
    while (wrong := panels_not_as_the_demo_did(base, starts)) and time.monotonic() < deadline:
        time.sleep(1)
    assert not wrong, "panels that do not show what the demo did:\n" + "\n".join(wrong)


@pytest.fixture
def prometheus(tmp_path: Path):
    metrics_port, prometheus_port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES}\n"
        "scrape_configs:\n  - job_name: loopguard-demo\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    server = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
            "--enable-feature=exemplar-storage",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    base = f"http://127.0.0.1:{prometheus_port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.2)
        yield base, metrics_port
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_every_panel_shows_what_the_demo_did_in_real_prometheus(prometheus, tmp_path: Path) -> None:
    base, metrics_port = prometheus
    # Prometheus discovers its targets a few seconds after it is ready: wait for the scrape
    # loop, so the zero series are scraped during the demo's warmup, before any run
    deadline = time.monotonic() + 30
    while not api(base, "targets")["activeTargets"]:
        assert time.monotonic() < deadline, "prometheus never picked up its scrape target"
        time.sleep(0.2)
    env = dict(os.environ, OTEL_LOOPGUARD_MODE="enforce")
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_loopguard.cli",
            "demo",
            "--scenario",
            "all",
            "--pace",
            "0.3",
            "--warmup",
            "5",
            "--serve-metrics",
            str(metrics_port),
            "--trace-file",
            str(tmp_path / "trace.json"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # the demo keeps /metrics up after its runs; wait until Prometheus saw the runs end
        deadline = time.monotonic() + 90
        while True:
            assert demo.poll() is None, demo.stdout.read() if demo.stdout else ""
            runs = finite_values(query(base, "sum(loopguard_runs_total)"))
            if runs and runs[0] >= 6:
                break
            assert time.monotonic() < deadline, "no loopguard_runs_total in Prometheus"
            time.sleep(1)
        assert_panels_show_the_demo(base)
        # our alerting rules, loaded by this Prometheus: each evaluates without error on
        # the plugin's real series, and four stopped runs of six raise the stop-rate
        # alert (pending: it fires after 10 minutes, which promtool's tests cover) with the
        # true share of stopped runs: every run counted, also the first of each end state
        # (a counter series born at 1 would count as no increase). The alert's value
        # trails the scrapes by an evaluation, so poll until they agree
        true_share = 'sum(loopguard_runs_total{state="stopped"}) / sum(loopguard_runs_total)'
        deadline = time.monotonic() + 30
        while True:
            rules = api(base, "rules")["groups"][0]["rules"]
            alerts = {a["labels"]["alertname"]: a for a in api(base, "alerts")["alerts"]}
            share = finite_values(query(base, true_share))
            alert = alerts.get("LoopGuardStopRateHigh")
            if alert and share and float(alert["value"]) == pytest.approx(share[0]):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        assert {rule["name"] for rule in rules} >= {"LoopGuardStopRateHigh"}
        assert all(rule["health"] == "ok" for rule in rules), rules
        assert alert is not None and alert["state"] in ("pending", "firing"), alerts
        assert alert["labels"]["job"] == "loopguard-demo"
        assert share and float(alert["value"]) == pytest.approx(share[0]), (alert, share)
        assert "LoopGuardInternalErrors" not in alerts
    finally:
        demo.terminate()
        demo.wait(timeout=20)
