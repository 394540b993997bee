"""Convert published agent trajectories to GenAI-semconv OTLP, label them, sample them.

Usage (the raw sources' layout: ``README.md`` beside this file)::

    python benchmarks/trajectories/convert.py --out DIR \\
        --mini-swe-agent TRAJS_DIR RESULTS_SUMMARY_JSON \\
        --swe-agent REPO_DIR \\
        --tau-bench HISTORICAL_JSON airline \\
        [--clean-per-set 30] [--seed 18]

Writes ``DIR/<set>.otlp.jsonl.gz`` (one OTLP ``ExportTraceServiceRequest`` per line, one
line per run, as the Collector's file exporter writes) and ``DIR/labels.json`` (the format
``otel-loopguard analyze --labels`` reads). The sample is every loop run the rules find
(``rules.py``) plus ``--clean-per-set`` clean runs per set drawn with ``--seed``; the same
sources and flags give the same bytes.

Each run becomes one trace as a GenAI instrumentation with content capture on would record
it, built with the OpenTelemetry SDK and encoded by its OTLP encoder: an ``invoke_agent``
span (agent name, ``gen_ai.conversation.id`` = the run's id), per model response a
``chat`` span (model, token usage when the source has it, finish reason, the answer in
``gen_ai.output.messages``), per tool call an ``execute_tool`` span (name, call id,
arguments, result). Times are the source's when it records them (mini-swe-agent's
response times), else one second per step.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sources, rules
sys.path.append(str(Path(__file__).resolve().parent.parent.parent))  # an installed package first

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind
from rules import Verdict, judge
from sources import Trajectory, read_mini_swe_agent, read_swe_agent, read_tau_bench

from otel_loopguard.spans.otlp_json import spans_to_otlp_json

SCOPE = "otel-loopguard-trajectory-converter"
NS = 1_000_000_000

#: the SWE-agent trajectories read (demonstrations and test runs; the repository's test
#: data repeats some demonstrations, which are read once)
SWE_AGENT_PATHS = (
    "trajectories/demonstrations/ctf/crypto/BabyEncryption.traj",
    "trajectories/demonstrations/ctf/crypto/BabyTimeCapsule.traj",
    "trajectories/demonstrations/ctf/crypto/eps.traj",
    "trajectories/demonstrations/ctf/crypto/katy.traj",
    "trajectories/demonstrations/ctf/forensics/flash.traj",
    "trajectories/demonstrations/ctf/misc/networking_1.traj",
    "trajectories/demonstrations/ctf/pwn/warmup.traj",
    "trajectories/demonstrations/ctf/rev/rock.traj",
    "trajectories/demonstrations/ctf/web/i_got_id_demo.traj",
    "trajectories/demonstrations/human_thought__swe-bench-HumanEvalFix-python__lcb__t-0.00__p-0.95__c-4.00__install-0/humanevalfix-python-0.traj",
    "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__install-1___install_from_source/marshmallow-code__marshmallow-1867.traj",
    "tests/test_data/trajectories/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj",
    "tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj",
    "tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj",
)


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator: the same run gives the same ids."""

    def __init__(self) -> None:
        self.random = random.Random(0)

    def reseed(self, key: str) -> None:
        self.random = random.Random(zlib.crc32(key.encode("utf-8")))

    def generate_span_id(self) -> int:
        return self.random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.random.getrandbits(128) or 1


class Converter:
    """One SDK tracer provider; :meth:`trace` records one run and returns its spans."""

    def __init__(self) -> None:
        self.ids = SeededIds()
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(
            # no resource detectors: a random service.instance.id would change every output
            resource=Resource({"service.name": "published-trajectories"}),
            id_generator=self.ids,
        )
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer(SCOPE, "1.0")

    def trace(self, run: Trajectory) -> list[ReadableSpan]:
        self.exporter.clear()
        self.ids.reseed(run.id)
        tracer = self.tracer
        times = _timeline(run)
        start = times[0][0] if times else 1_700_000_000 * NS
        end = times[-1][-1] if times else start + NS
        root = tracer.start_span(
            f"invoke_agent {run.agent}",
            kind=SpanKind.INTERNAL,
            start_time=start,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": run.agent,
                "gen_ai.conversation.id": run.id,
                "gen_ai.request.model": run.model,
            },
        )
        from opentelemetry.trace import set_span_in_context

        context = set_span_in_context(root)
        for number, (turn, marks) in enumerate(zip(run.turns, times, strict=True)):
            chat_start, chat_end = marks[0], marks[1]
            chat = tracer.start_span(
                f"chat {turn.model or run.model}",
                context=context,
                kind=SpanKind.CLIENT,
                start_time=chat_start,
                attributes=_chat_attributes(run, turn, number),
            )
            chat.end(end_time=chat_end)
            for index, call in enumerate(turn.calls):
                call_id = call.call_id or f"call_{number}_{index}"
                span = tracer.start_span(
                    f"execute_tool {call.name}",
                    context=context,
                    kind=SpanKind.INTERNAL,
                    start_time=marks[2 + 2 * index],
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": call.name,
                        "gen_ai.tool.call.id": call_id,
                        "gen_ai.tool.call.arguments": json.dumps(call.arguments),
                        "gen_ai.tool.call.result": call.output,
                    },
                )
                span.end(end_time=marks[3 + 2 * index])
        root.end(end_time=end)
        return list(self.exporter.get_finished_spans())


def _chat_attributes(run: Trajectory, turn: Any, number: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"type": "text", "content": turn.text})
    for index, call in enumerate(turn.calls):
        parts.append(
            {
                "type": "tool_call",
                "id": call.call_id or f"call_{number}_{index}",
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": turn.model or run.model,
        "gen_ai.response.finish_reasons": (turn.finish_reason,),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": parts, "finish_reason": turn.finish_reason}]
        ),
    }
    if turn.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = int(turn.input_tokens)
    if turn.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = int(turn.output_tokens)
    return attributes


def _timeline(run: Trajectory) -> list[list[int]]:
    """Per turn: chat start, chat end, then start and end of each tool call (nanoseconds).

    With the source's response times, a chat span ends when its response was made and the
    tool calls run until half-way to the next response (at most 30 s); without them, each
    step takes a second from a fixed origin."""
    known = [turn.time for turn in run.turns]
    have_times = bool(known) and all(isinstance(t, (int, float)) for t in known)
    marks: list[list[int]] = []
    clock = 1_700_000_000 * NS
    for number, turn in enumerate(run.turns):
        if have_times:
            made = int(float(known[number]) * NS)  # type: ignore[arg-type]
            chat_start = max(clock, made - NS)
            chat_end = max(made, chat_start + 1)
            following = known[number + 1] if number + 1 < len(known) else None
            budget = (
                min(30 * NS, max(int(float(following) * NS) - chat_end, 2) // 2)
                if following is not None
                else NS
            )
        else:
            chat_start, chat_end = clock, clock + NS
            budget = NS
        row = [chat_start, chat_end]
        step = max(budget // max(len(turn.calls), 1), 2)
        at = chat_end
        for _ in turn.calls:
            row += [at + 1, at + step]
            at += step
        clock = at + 1
        marks.append(row)
    return marks


def otlp_lines(converter: Converter, runs: Iterable[Trajectory]) -> bytes:
    return b"".join(
        json.dumps(spans_to_otlp_json(converter.trace(run)), separators=(",", ":")).encode() + b"\n"
        for run in runs
    )


def sample(
    runs: list[Trajectory], clean_per_set: int, seed: int
) -> tuple[list[Trajectory], dict[str, Verdict]]:
    """Every loop run, and ``clean_per_set`` clean runs per set, drawn with ``seed``."""
    verdicts: dict[str, Verdict] = {}
    by_set: dict[str, tuple[list[Trajectory], list[Trajectory]]] = {}
    for run in runs:
        verdict = judge(run)
        if verdict is None:
            continue
        verdicts[run.id] = verdict
        loops, clean = by_set.setdefault(run.set, ([], []))
        (loops if verdict.loop else clean).append(run)
    chosen: list[Trajectory] = []
    for name in sorted(by_set):
        loops, clean = by_set[name]
        picker = random.Random(f"{seed}/{name}")
        picked = picker.sample(clean, min(clean_per_set, len(clean)))
        chosen += sorted(loops + picked, key=lambda run: run.id)
    return chosen, {run.id: verdicts[run.id] for run in chosen}


def labels_document(chosen: list[Trajectory], verdicts: dict[str, Verdict]) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for run in chosen:
        verdict = verdicts[run.id]
        entry: dict[str, Any] = {"loop": verdict.loop, "set": run.set}
        if verdict.from_tool_call is not None:
            entry["from_tool_call"] = verdict.from_tool_call
        entry["tool_calls"] = len(run.tool_calls)
        entry["note"] = f"{verdict.rule}; source {run.source}"
        runs[run.id] = entry
    return {"version": 1, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mini-swe-agent", nargs=2, metavar=("TRAJS", "RESULTS"), type=Path)
    parser.add_argument("--swe-agent", metavar="REPO", type=Path)
    parser.add_argument(
        "--tau-bench", nargs=2, metavar=("FILE", "DOMAIN"), action="append", default=[]
    )
    parser.add_argument("--clean-per-set", type=int, default=30)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument(
        "--unjudged",
        type=Path,
        metavar="DIR",
        help="also write every run the rules do not judge (failed, no loop) to "
        "DIR/<set>.otlp.jsonl.gz, unlabelled, to see what the guard does on them",
    )
    args = parser.parse_args(argv)
    runs: list[Trajectory] = []
    if args.mini_swe_agent:
        runs += read_mini_swe_agent(*args.mini_swe_agent)
    if args.swe_agent:
        runs += read_swe_agent(args.swe_agent, list(SWE_AGENT_PATHS))
    for path, domain in args.tau_bench:
        runs += read_tau_bench(Path(path), domain)
    if not runs:
        parser.error("no source given")
    chosen, verdicts = sample(runs, args.clean_per_set, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    converter = Converter()
    for name in sorted({run.set for run in chosen}):
        data = otlp_lines(converter, [run for run in chosen if run.set == name])
        path = args.out / f"{name}.otlp.jsonl.gz"
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        loops = sum(1 for run in chosen if run.set == name and verdicts[run.id].loop)
        total = sum(1 for run in runs if run.set == name)
        print(
            f"{path}: {sum(1 for r in chosen if r.set == name)} runs ({loops} loop) of "
            f"{total} read, {path.stat().st_size:,} bytes"
        )
    if args.unjudged is not None:
        unjudged = [run for run in runs if judge(run) is None]
        args.unjudged.mkdir(parents=True, exist_ok=True)
        for name in sorted({run.set for run in unjudged}):
            data = otlp_lines(converter, [run for run in unjudged if run.set == name])
            path = args.unjudged / f"{name}.otlp.jsonl.gz"
            path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
            print(f"{path}: {sum(1 for r in unjudged if r.set == name)} unjudged runs")
    labels = args.out / "labels.json"
    labels.write_text(
        json.dumps(labels_document(chosen, verdicts), indent=1, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    print(f"{labels}: {len(chosen)} labelled runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
