"""Scale-out for real: the built Collector running ``collector/serve-replicas.yaml`` in front
of three ``otel-loopguard serve`` replicas (its static resolver given their addresses), its
``otlp/backend`` exporter sending every span to a built Jaeger, where the replicas export
their decision spans too. Agents are processes of their own exporting OTLP/gRPC to the
Collector; a conversation's turns come from separate processes, one trace each, joined only
by ``gen_ai.conversation.id``. What a user sees: such a conversation is judged on one
replica and stopped at the same call as when one process makes every call; conversations
spread over the replicas; with a replica killed, the Collector and the other replicas go on
and the dead replica's conversations are not judged elsewhere (docs/serve.md, "Scale-out").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from serve.service_process import ServeProcess, run_agent

from .processes import Background, http_ok, wait_for
from .stack import Jaeger, start_jaeger, start_replica_collector

REPLICAS = 3
#: the service name the replicas' decision spans carry in Jaeger
REPLICA_SERVICE = "loopguard-serve-replica"
#: a looping agent's calls, and the calls per turn when they are split over processes
CALLS, PER_TURN = 8, 2


@dataclass
class ScaleOut:
    jaeger: Jaeger
    replicas: list[ServeProcess]
    collector: Background
    grpc: str  # the Collector's OTLP/gRPC receiver

    def turns(self, conversation: str, service: str, turns: range) -> list[str]:
        """Run turns of a looping conversation, each in its own agent process, one after
        another (``PER_TURN`` calls each, numbered on); their trace ids."""
        return [
            run_agent(
                "grpc",
                self.grpc,
                "loop",
                service,
                "--conversation",
                conversation,
                "--calls",
                str(PER_TURN),
                "--first-call",
                str(turn * PER_TURN),
            )
            for turn in turns
        ]

    def stops(self, service: str) -> list[float]:
        """Each live replica's count of STOPs of the agent ``service``."""
        return [
            replica.metric("loopguard_decisions_total", action="stop", service_name=service)
            if replica.process.poll() is None
            else 0.0
            for replica in self.replicas
        ]

    def accepted(self) -> list[float]:
        return [
            replica.metric("loopguard_serve_spans_total", outcome="accepted")
            if replica.process.poll() is None
            else 0.0
            for replica in self.replicas
        ]

    def stopped_call(self, trace_ids: list[str]) -> list[str]:
        """The calls at which the replicas' STOP decision spans in these traces were taken."""
        found = self.jaeger.traces(REPLICA_SERVICE, {"loopguard.action": "stop"})
        return [
            tags["gen_ai.tool.call.id"]
            for trace in found
            if trace["traceID"] in trace_ids
            for span in trace["spans"]
            if span["operationName"] == "loopguard.decision"
            and (tags := {t["key"]: t["value"] for t in span["tags"]}).get("loopguard.action")
            == "stop"
        ]


@pytest.fixture(scope="module")
def scale_out(
    collector_binary: Path, jaeger_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ScaleOut]:
    directory = tmp_path_factory.mktemp("scale-out")
    with contextlib.ExitStack() as running:
        jaeger = start_jaeger(jaeger_binary, directory)
        running.callback(jaeger.process.stop)
        replicas = []
        for _ in range(REPLICAS):
            replica = ServeProcess(jaeger.otlp_http, env={"OTEL_SERVICE_NAME": REPLICA_SERVICE})
            running.callback(replica.kill)
            replicas.append(replica)
        collector = start_replica_collector(
            collector_binary, [r.grpc for r in replicas], jaeger.otlp_grpc, directory
        )
        running.callback(collector.process.stop)
        yield ScaleOut(jaeger, replicas, collector.process, collector.grpc)


def _one(stops: Callable[[], list[float]]) -> list[float]:
    """Each replica's STOPs once one counts one, and a moment more (a second would show)."""
    wait_for(lambda: sum(stops()), 60, "a STOP on a replica")
    time.sleep(1)
    return stops()


def test_a_conversation_split_over_processes_stops_on_one_replica_at_the_same_call(
    scale_out: ScaleOut,
) -> None:
    # one process makes every call of the conversation
    whole = run_agent(
        "grpc", scale_out.grpc, "loop", "whole-agent", "--conversation", "conv-whole",
        "--calls", str(CALLS),
    )  # fmt: skip
    assert sorted(_one(lambda: scale_out.stops("whole-agent"))) == [0, 0, 1]
    expected = wait_for(lambda: scale_out.stopped_call([whole]), 30, "the STOP in Jaeger")
    # the same calls, turn by turn from separate processes: one trace each
    split = scale_out.turns("conv-split", "split-agent", range(CALLS // PER_TURN))
    assert len(set(split)) == CALLS // PER_TURN
    assert sorted(_one(lambda: scale_out.stops("split-agent"))) == [0, 0, 1]
    assert wait_for(lambda: scale_out.stopped_call(split), 30, "the STOP in Jaeger") == expected


#: conversations the spread test runs: the ring's three shares are near a third each, so all
#: nine land on one replica about once in 6,500 runs (six: once in 240)
SPREAD = 9
#: the kill test's conversations, and at most how many it starts until two replicas hold some
KILLED, MAX_KILLED = 6, 12


def test_conversations_spread_over_the_replicas(scale_out: ScaleOut) -> None:
    services = [f"spread-agent-{n}" for n in range(SPREAD)]
    with ThreadPoolExecutor(3) as pool:
        list(
            pool.map(lambda s: scale_out.turns(f"conv-{s}", s, range(CALLS // PER_TURN)), services)
        )
    judged_on = set()
    for service in services:
        counts = _one(lambda service=service: scale_out.stops(service))
        assert sorted(counts) == [0, 0, 1], (service, counts)
        judged_on.add(counts.index(1))
    assert len(judged_on) >= 2, "every conversation went to one replica"


def test_a_killed_replica_loses_its_conversations_and_nothing_else(scale_out: ScaleOut) -> None:
    """Last in the module: it kills a replica."""
    # turn 1 of each conversation, one at a time: the replica whose accepted spans grew
    # holds it; more conversations while one replica holds them all (the ring's chance)
    holder: dict[str, int] = {}
    for n in range(MAX_KILLED):
        if len(holder) >= KILLED and len(set(holder.values())) >= 2:
            break
        service = f"kill-agent-{n}"
        before = scale_out.accepted()
        scale_out.turns(f"conv-{service}", service, range(1))
        grew = wait_for(
            lambda before=before: [
                i
                for i, (a, b) in enumerate(zip(scale_out.accepted(), before, strict=True))
                if a > b
            ],
            30,
            f"{service}'s first turn on a replica",
        )
        assert len(grew) == 1, grew
        holder[service] = grew[0]
    services = list(holder)
    victim = max(set(holder.values()), key=list(holder.values()).count)
    scale_out.replicas[victim].kill()
    # the remaining turns, after the kill
    with ThreadPoolExecutor(3) as pool:
        traces = dict(
            zip(
                services,
                pool.map(
                    lambda s: scale_out.turns(f"conv-{s}", s, range(1, CALLS // PER_TURN)),
                    services,
                ),
                strict=True,
            )
        )
    survivors = [s for s in services if holder[s] != victim]
    lost = [s for s in services if holder[s] == victim]
    assert survivors and lost
    for service in survivors:  # stopped as before, on the replica that held them
        counts = _one(lambda service=service: scale_out.stops(service))
        assert counts[holder[service]] == 1 and sum(counts) == 1, (service, counts)
    for service in lost:  # not moved to another replica: never judged
        assert sum(scale_out.stops(service)) == 0
    assert scale_out.collector.running()
    # the backend pipeline is not held up: Jaeger has every turn of the lost conversations
    for service in lost:
        found = wait_for(
            lambda service=service: (
                t if len(t := scale_out.jaeger.traces(service, {})) >= CALLS // PER_TURN else None
            ),
            30,
            f"{service}'s turns in Jaeger",
        )
        assert set(traces[service]) <= {trace["traceID"] for trace in found}
    assert http_ok(scale_out.jaeger.query + "/api/services")
