"""collector/serve-replicas.yaml routes a conversation to one replica, a span without one by
its trace: the file's own consistency and the routing rule it encodes. The built Collector
runs it in front of real replicas in the ``collector`` suite (tests/collector/)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "collector/serve-replicas.yaml").read_text())


def test_every_pipeline_component_is_defined() -> None:
    for pipeline in CONFIG["service"]["pipelines"].values():
        for section in ("receivers", "processors", "exporters"):
            for name in pipeline.get(section, []):
                assert name in CONFIG[section], f"{section}.{name} is not defined"


def test_replicas_are_routed_by_the_route_attribute_the_transform_sets() -> None:
    balancer = CONFIG["exporters"]["load_balancing"]
    assert balancer["routing_key"] == "attributes"
    assert balancer["routing_attributes"] == ["loopguard.route"]
    pipeline = CONFIG["service"]["pipelines"]["traces"]
    processors = pipeline["processors"]
    assert "transform/loopguard_route" in processors
    assert processors.index("transform/loopguard_route") < processors.index("batch")
    statements = CONFIG["processors"]["transform/loopguard_route"]["trace_statements"][0]
    assert statements["context"] == "span"
    first, second = statements["statements"]
    # the conversation id first, the trace id only where there is none
    assert re.fullmatch(
        r'set\(attributes\["loopguard.route"\], attributes\["gen_ai.conversation.id"\]\) '
        r'where attributes\["gen_ai.conversation.id"\] != nil',
        first,
    )
    assert re.fullmatch(
        r'set\(attributes\["loopguard.route"\], trace_id.string\) '
        r'where attributes\["loopguard.route"\] == nil',
        second,
    )


def test_the_replicas_listen_where_serve_does_by_default_for_grpc() -> None:
    from otel_loopguard.serve.settings import DEFAULT_GRPC

    hosts = CONFIG["exporters"]["load_balancing"]["resolver"]["static"]["hostnames"]
    assert len(hosts) >= 2
    assert {host.rsplit(":", 1)[1] for host in hosts} == {DEFAULT_GRPC.rsplit(":", 1)[1]}
