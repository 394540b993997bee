"""Every dashboard panel returns data from a real Prometheus scraping the real plugin.

The demo runs its scripted agents (all scenarios, enforce mode) under the real span
processor with the Prometheus exporter serving ``/metrics``; Debian's ``prometheus`` binary
scrapes it every second; each panel query of each dashboard, with Grafana's variables filled
in, is then run through Prometheus' HTTP API and must return at least one finite value.
``scripts/test.sh`` installs Prometheus; without it this test is skipped, saying so.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from test_dashboards import all_queries, concrete

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None,
    reason="prometheus not installed (apt-get install prometheus)",
)


RULES = Path(__file__).resolve().parents[2] / "collector" / "loopguard-alerts.yml"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def query(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
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


def test_every_panel_returns_data_from_real_prometheus(prometheus, tmp_path: Path) -> None:
    base, metrics_port = prometheus
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
            if runs and runs[0] >= 4:
                break
            assert time.monotonic() < deadline, "no loopguard_runs_total in Prometheus"
            time.sleep(1)
        # Prometheus needs two scrapes around each change before rate() and
        # histogram_quantile() have a value: poll until every panel has data, as a user
        # refreshing the dashboard would, within a deadline
        deadline = time.monotonic() + 45
        while True:
            failures = []
            # "All" agents, and one agent picked in the dashboard's agent variable
            for agent in (".*", "support-agent"):
                for name, expr in all_queries():
                    values = finite_values(query(base, concrete(expr, agent)))
                    if not values:
                        failures.append(f"{name} (agent {agent}): {concrete(expr, agent)}")
            if not failures or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert not failures, "panels without data:\n" + "\n".join(failures)
        stops = query(base, 'sum(loopguard_decisions_total{action="stop"})')
        assert finite_values(stops) and finite_values(stops)[0] >= 1
        # our alerting rules, loaded by this Prometheus: each evaluates without error on
        # the plugin's real series, and three stopped runs of four raise the stop-rate
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
