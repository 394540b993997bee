"""The Grafana dashboards: structurally valid, and every query is valid PromQL.

Grafana cannot run on this machine (no container engine, no network), so what can be
validated without it is: the JSON against a strict model of the dashboard schema
(``dashboard_model.py``, unknown keys rejected), the layout, the datasource wiring against
the provisioning files, and every panel query with ``promtool`` (Prometheus' own parser).
That each query also returns data from the real plugin is proven against a real Prometheus
in ``test_prometheus_end_to_end.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dashboard_model import Dashboard

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))


def concrete(expr: str, agent: str = ".*") -> str:
    """Replace Grafana's template variables with values a Prometheus query accepts."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace("$__range", "1h")
        .replace("$job", ".*")
        .replace("$agent", agent)
    )


def provisioned_datasources() -> dict[str, str]:
    config = yaml.safe_load(
        (ROOT / "dashboards/provisioning/datasources/loopguard.yaml").read_text()
    )
    return {ds["uid"]: ds["type"] for ds in config["datasources"]}


def test_there_is_a_dashboard() -> None:
    assert DASHBOARDS, "dashboards/*.json is empty"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_matches_the_schema(path: Path) -> None:
    dashboard = Dashboard.model_validate(json.loads(path.read_text()))
    ids = [panel.id for panel in dashboard.panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    titles = [panel.title for panel in dashboard.panels]
    assert len(titles) == len(set(titles))


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panels_fit_the_grid_without_overlap(path: Path) -> None:
    dashboard = Dashboard.model_validate(json.loads(path.read_text()))
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard.panels:
        pos = panel.gridPos
        assert pos.x + pos.w <= 24, f"{panel.title} runs off the 24-column grid"
        for x in range(pos.x, pos.x + pos.w):
            for y in range(pos.y, pos.y + pos.h):
                assert (x, y) not in cells, f"{panel.title} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel.title


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_queries_use_the_provisioned_datasource(path: Path) -> None:
    raw = json.loads(path.read_text())
    dashboard = Dashboard.model_validate(raw)
    sources = provisioned_datasources()
    variables = {v.name: v for v in dashboard.templating.list}
    chosen = variables["datasource"].current or {}
    assert sources.get(chosen.get("value")) == "prometheus"
    for panel in dashboard.panels:
        for target in [panel, *panel.targets]:
            uid = target.datasource.uid
            assert uid == "${datasource}" or uid in sources, panel.title
    # the stop -> trace link: exemplars on, and Prometheus' exemplars point at Jaeger
    assert any(t.exemplar for p in dashboard.panels for t in p.targets)
    prometheus = yaml.safe_load(
        (ROOT / "dashboards/provisioning/datasources/loopguard.yaml").read_text()
    )["datasources"]
    destinations = [
        d["datasourceUid"]
        for ds in prometheus
        for d in ds.get("jsonData", {}).get("exemplarTraceIdDestinations", [])
    ]
    assert destinations and all(sources.get(uid) == "jaeger" for uid in destinations)


def all_queries() -> list[tuple[str, str]]:
    queries = []
    for path in DASHBOARDS:
        dashboard = Dashboard.model_validate(json.loads(path.read_text()))
        for panel in dashboard.panels:
            for target in panel.targets:
                queries.append((f"{path.stem}: {panel.title} [{target.refId}]", target.expr))
    return queries


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_every_panel_query_parses_with_promtool(tmp_path: Path) -> None:
    queries = all_queries()
    rules = {
        "groups": [
            {
                "name": "dashboard-queries",
                "rules": [
                    {"record": f"loopguard:query_{i}", "expr": concrete(expr)}
                    for i, (_, expr) in enumerate(queries)
                ],
            }
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout
