"""The viewing stack's configuration is consistent with itself and with README.md.

The built Collector, Jaeger and Prometheus run this configuration in the ``collector`` suite
(tests/collector/); Grafana and the compose network cannot run here (no container engine),
so these tests check the rest: every pipeline names receivers, processors and exporters
that are defined; the hosts and ports that one file points at are the ones another file
opens; and README's "view it" steps name those ports.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = yaml.safe_load((ROOT / "collector/otel-collector.yaml").read_text())
COMPOSE = yaml.safe_load((ROOT / "collector/compose.yaml").read_text())
PROMETHEUS = yaml.safe_load((ROOT / "collector/prometheus.yml").read_text())
DATASOURCES = yaml.safe_load(
    (ROOT / "dashboards/provisioning/datasources/loopguard.yaml").read_text()
)


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def _published(service: str) -> set[int]:
    ports = COMPOSE["services"][service].get("ports", [])
    return {int(str(p).split(":")[0]) for p in ports}


def test_every_pipeline_component_is_defined_and_used() -> None:
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    pipelines = COLLECTOR["service"]["pipelines"]
    assert {"traces", "metrics"} <= set(pipelines)
    for name, pipeline in pipelines.items():
        for section in used:
            for component in pipeline.get(section, []):
                assert component in (COLLECTOR.get(section) or {}), f"{name}: {component}"
                used[section].add(component)
    for section, names in used.items():
        assert set(COLLECTOR[section]) == names, f"defined but unused {section}"
    for extension in COLLECTOR["service"].get("extensions", []):
        assert extension in COLLECTOR["extensions"]


def test_otlp_in_and_exporters_point_at_running_services() -> None:
    protocols = COLLECTOR["receivers"]["otlp"]["protocols"]
    assert _port(protocols["grpc"]["endpoint"]) == 4317
    assert _port(protocols["http"]["endpoint"]) == 4318
    assert {4317, 4318} <= _published("otel-collector")
    jaeger = COLLECTOR["exporters"]["otlp/jaeger"]["endpoint"]
    host = jaeger.split(":")[0]
    assert host in COMPOSE["services"]
    assert _port(jaeger) == 4317  # Jaeger v2 accepts OTLP gRPC on 4317 inside the network


def test_prometheus_scrapes_the_collector_exporter() -> None:
    exporter_port = _port(COLLECTOR["exporters"]["prometheus"]["endpoint"])
    targets = [
        target
        for job in PROMETHEUS["scrape_configs"]
        for config in job["static_configs"]
        for target in config["targets"]
    ]
    assert f"otel-collector:{exporter_port}" in targets
    assert "otel-collector" in COMPOSE["services"]
    command = " ".join(COMPOSE["services"]["prometheus"]["command"])
    assert "exemplar-storage" in command  # exemplars link a stop to its trace


def test_the_file_exporter_writes_where_analyze_can_read_it() -> None:
    path = COLLECTOR["exporters"]["file/traces"]["path"]
    volumes = COMPOSE["services"]["otel-collector"]["volumes"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in volumes}
    directory = str(Path(path).parent)
    assert directory in mounted, "the trace file must land on the host"
    assert "file/traces" in COLLECTOR["service"]["pipelines"]["traces"]["exporters"]


def test_grafana_datasources_point_at_compose_services() -> None:
    for datasource in DATASOURCES["datasources"]:
        match = re.match(r"http://([\w-]+):(\d+)", datasource["url"])
        assert match, datasource["url"]
        host, port = match.group(1), int(match.group(2))
        assert host in COMPOSE["services"]
        assert port in _published(host)
    grafana = COMPOSE["services"]["grafana"]["volumes"]
    assert any(v.startswith("../dashboards/provisioning:") for v in grafana)


def test_readme_view_steps_name_the_real_ports() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## View it in Jaeger and Grafana", 1)[1].split("\n## ", 1)[0]
    assert "docker compose -f collector/compose.yaml up -d" in section
    for service, port in (("jaeger", 16686), ("grafana", 3000), ("prometheus", 9090)):
        assert port in _published(service)
        assert f"localhost:{port}" in section
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318" in section
    assert "loopguard.decision" in section


def test_prometheus_loads_the_alerting_rules_that_ship() -> None:
    """The rule file Prometheus is told to load is mounted beside its config and exists."""
    config_path = "/etc/prometheus/prometheus.yml"
    volumes = COMPOSE["services"]["prometheus"]["volumes"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in volumes}
    assert mounted[config_path] == "./prometheus.yml"
    assert PROMETHEUS["rule_files"], "no rule_files in collector/prometheus.yml"
    for rule_file in PROMETHEUS["rule_files"]:
        in_container = str(Path(config_path).parent / rule_file)  # relative to the config
        assert in_container in mounted, f"{rule_file} is not mounted into the container"
        assert (ROOT / "collector" / mounted[in_container]).is_file()


def test_the_collector_can_write_the_trace_file_and_the_host_user_read_it() -> None:
    """The Collector runs as a non-root user, a bind-mounted directory belongs to whoever
    made it, and the file exporter creates files mode 0600: a one-shot step as root makes
    the directory writable and the file (which the exporter then appends to) readable."""
    services = COMPOSE["services"]
    collector, prepare = services["otel-collector"], services["collector-data"]
    depends = collector["depends_on"]["collector-data"]
    assert depends["condition"] == "service_completed_successfully"
    data_mount = next(v for v in collector["volumes"] if v.endswith(":/data"))
    assert data_mount in prepare["volumes"]
    assert prepare["user"] == "0:0"
    trace_file = COLLECTOR["exporters"]["file/traces"]["path"]
    script = prepare["command"][-1]
    assert f"touch {trace_file}" in script
    assert f"chown {collector['user']} {trace_file}" in script
    assert f"chmod 0666 {trace_file}" in script and "chmod 0777 /data" in script


def test_the_trace_file_stays_out_of_git() -> None:
    result = subprocess.run(
        ["git", "check-ignore", "-q", "collector/data/traces.jsonl"], cwd=ROOT, check=False
    )
    assert result.returncode == 0, "collector/data is not in .gitignore"


def test_readme_view_steps_keep_the_metrics_going_and_stop_the_stack() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## View it in Jaeger and Grafana", 1)[1].split("\n## ", 1)[0]
    assert "--keep-exporting" in section and "--warmup" in section
    assert "docker compose -f collector/compose.yaml down" in section
    viewing = (ROOT / "docs/viewing.md").read_text()
    assert "--keep-exporting" in viewing
    assert "docker compose -f collector/compose.yaml down" in viewing
