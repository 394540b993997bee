"""Throughput and peak memory of ``otel-loopguard analyze`` on a generated JSON-lines export.

Usage::

    python benchmarks/analyze_throughput.py [--spans N] [--concurrent C] [--keep PATH]
    python benchmarks/analyze_throughput.py --gigabytes 1.0   # the bounded-memory check
    python benchmarks/analyze_throughput.py --spans 30000 --breakdown 30000  # per part

Generates an OTLP JSON-lines file as the Collector's file exporter writes it (one export
request of up to 512 spans per line, the traces of ``C`` concurrent agent runs interleaved
within and across lines; each run is an ``invoke_agent`` span with model turns and tool
calls carrying arguments, results and token usage; one run in ten loops). Then runs, each
as a subprocess measured with ``os.wait4`` (CPU time and peak RSS of that process alone):

1. a baseline: the same file read line by line and parsed with ``json.loads``, every span
   visited, nothing else: the floor any JSON reader of this file pays;
2. ``otel-loopguard analyze FILE --format json --fail-on never`` with the default policy
   and detectors;
3. the same command on a file of one span: what starting it costs (interpreter, imports),
   printed beside the total it is part of (the rates above include it).

Prints spans/s for both (CPU time, and wall time, which on a shared machine includes time
spent waiting for a core), their ratio, and the peak RSS of each. The file is generated in
a temporary directory (``--keep`` writes it to PATH instead and keeps it). Exit status 1
when analyze is below the target rate of 50,000 spans/s (CPU time).

With ``--gigabytes G`` the file is at least G GB: peak RSS must then be set by the live
runs (``--concurrent``) and the trace buffer, not by the file size; run it twice with
different sizes to see that the peak does not move.

With ``--breakdown N`` it also splits the CPU time of the first N spans into its parts
(parsing, span views, mapping and signatures, the replay's bookkeeping, the monitor) by
five passes in this process, each doing one more part than the one before.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_runs import AgentRun, SyntheticSpan  # a sibling script, not a package

ROOT = Path(__file__).resolve().parent.parent
TARGET_SPANS_PER_SECOND = 50_000
SPANS_PER_LINE = 512

BASELINE = """
import json, sys
spans = 0
with open(sys.argv[1], encoding="utf-8") as handle:
    for line in handle:
        request = json.loads(line)
        for resource_spans in request["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    spans += 1
print(spans)
"""


def _attr(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _json_span(span: SyntheticSpan) -> dict:
    """The span as the OTLP JSON encoding writes it."""
    encoded = {
        "traceId": f"{span.trace_id:032x}",
        "spanId": f"{span.span_id:016x}",
        "name": span.name,
        "kind": 1,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": [_attr(key, value) for key, value in span.attributes.items()],
        "status": {},
    }
    if span.parent_id is not None:
        encoded["parentSpanId"] = f"{span.parent_id:016x}"
    return encoded


def generate(path: Path, min_spans: int, min_bytes: int, concurrent: int, seed: int = 7) -> int:
    """Write the export; returns the number of spans."""
    rng = random.Random(seed)
    resource = {
        "attributes": [_attr("service.name", "agent-service"), _attr("service.version", "1.4")]
    }
    scope = {"name": "openai-agents", "version": "0.1"}
    now = 1_760_000_000_000_000_000
    number = 0
    live = []
    for _ in range(concurrent):
        live.append(AgentRun(rng, number, now))
        number += 1
    spans_written = 0
    pending: list[dict] = []
    written_bytes = 0
    with path.open("w", encoding="utf-8") as out:
        while spans_written < min_spans or written_bytes < min_bytes:
            index = rng.randrange(len(live))
            run = live[index]
            spans = [_json_span(span) for span in run.next_spans()]
            pending.extend(spans)
            if run.turn >= run.turns and len(spans) == 1:  # its root was just written
                now = max(now, run.clock_ns)
                live[index] = AgentRun(rng, number, now)
                number += 1
            if len(pending) >= SPANS_PER_LINE:
                request = {
                    "resourceSpans": [
                        {"resource": resource, "scopeSpans": [{"scope": scope, "spans": pending}]}
                    ]
                }
                line = json.dumps(request, separators=(",", ":")) + "\n"
                out.write(line)
                written_bytes += len(line)
                spans_written += len(pending)
                pending = []
        # finish the runs still open so every trace is complete
        for run in live:
            while True:
                spans = [_json_span(span) for span in run.next_spans()]
                pending.extend(spans)
                if len(spans) == 1:
                    break
        for start in range(0, len(pending), SPANS_PER_LINE):
            batch = pending[start : start + SPANS_PER_LINE]
            request = {
                "resourceSpans": [
                    {"resource": resource, "scopeSpans": [{"scope": scope, "spans": batch}]}
                ]
            }
            out.write(json.dumps(request, separators=(",", ":")) + "\n")
            spans_written += len(batch)
    return spans_written


def measure(command: list[str]) -> tuple[float, float, float, bytes]:
    """(cpu seconds, wall seconds, peak RSS MiB, stdout) of one child process."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        # not from the source tree: ``-m`` would put it first on sys.path, ahead of the
        # installed (perhaps compiled) package
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.PIPE, cwd=tempfile.gettempdir()
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        stderr = process.stderr.read() if process.stderr else b""
        if process.returncode not in (0, 1):
            sys.exit(f"{command[0]} failed ({process.returncode}): {stderr.decode()[-2000:]}")
        sink.seek(0)
        output = sink.read()
    cpu = usage.ru_utime + usage.ru_stime
    return cpu, wall, usage.ru_maxrss / 1024, output


def breakdown(path: Path, max_spans: int, repeats: int = 3) -> None:
    """Where a span's CPU time goes: five passes over the same spans in this process, each
    doing one more part of the work than the one before, streamed as the command streams
    them (best of ``repeats`` each); a part's cost is the difference to the pass before.

    1. ``json.loads`` of each line; 2. span views built; 3. the dialect mapping and
    signatures of each view; 4. the replay with a monitor that has no detector (the
    replay's own bookkeeping: buffer, order, runs, and the monitor's); 5. the full replay.
    """
    import io

    from otel_loopguard.analyze import command
    from otel_loopguard.analyze.readers import ReadStats, read_text
    from otel_loopguard.analyze.replay import Replayer
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.spans.classify import classify
    from otel_loopguard.spans.events import span_to_events

    lines: list[str] = []
    spans = 0
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            lines.append(line)
            spans += line.count('"spanId"')
            if spans >= max_spans:
                break
    text = "".join(lines)
    config = LoopGuardConfig.from_env()

    def views():
        for batch in read_text(io.StringIO(text), ReadStats()):
            yield from batch

    def parse() -> None:
        for line in lines:
            for resource_spans in json.loads(line)["resourceSpans"]:
                for scope_spans in resource_spans["scopeSpans"]:
                    for _span in scope_spans["spans"]:
                        pass

    def read() -> None:
        for _view in views():
            pass

    def mapping() -> None:
        for view in views():
            span_to_events(view, "run", config, span_class=classify(view))

    def replay(detectors: bool) -> None:
        # the monitor with no detector: a compiled Monitor's methods cannot be replaced
        replayer = Replayer(config, lambda record: None, detectors=None if detectors else [])
        replayer.feed(views())
        replayer.finish()

    passes = [parse, read, mapping, lambda: replay(False), lambda: replay(True)]
    labels = [
        "json.loads (the baseline's work)",
        "building span views",
        "span mapping and signatures",
        "replay and monitor bookkeeping (no detector)",
        "detectors and policy",
    ]
    best = [float("inf")] * len(passes)
    with command._collecting_cycles_less_often():  # as the command runs
        for _ in range(repeats):  # interleaved: a busy moment spreads over all passes
            for index, work in enumerate(passes):
                started = time.thread_time()
                work()
                best[index] = min(best[index], (time.thread_time() - started) / spans * 1e6)
    total = best[-1]
    print(f"per span, CPU, best of {repeats}, first {spans:,} spans in one process:")
    before = 0.0
    for label, micros in zip(labels, best, strict=True):
        part = micros - before
        before = micros
        print(f"  {label:<44} {part:6.1f} µs  {part / total:4.0%}")
    print(f"  {'total':<44} {total:6.1f} µs  = {1e6 / total:,.0f} spans/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=500_000, help="at least this many spans")
    parser.add_argument("--gigabytes", type=float, default=0.0, help="at least this file size")
    parser.add_argument("--concurrent", type=int, default=200, help="agent runs open at once")
    parser.add_argument("--keep", type=Path, help="write the file here and keep it")
    parser.add_argument(
        "--breakdown",
        type=int,
        metavar="N",
        default=0,
        help="also split the CPU time per span into its parts, on the first N spans",
    )
    parser.add_argument("--generate-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        count = generate(args.generate_only, args.spans, int(args.gigabytes * 1e9), args.concurrent)
        print(count)
        return 0

    # the build the children import, asked of a child: this process stays small (see below)
    compiled = subprocess.run(
        [sys.executable, "-c", "import otel_loopguard; print(otel_loopguard.COMPILED)"],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"otel-loopguard build: {'compiled (mypyc)' if compiled == 'True' else 'pure Python'}")

    workdir = Path(tempfile.mkdtemp(prefix="loopguard-analyze-bench-"))
    path = args.keep or workdir / "export.jsonl"
    try:
        started = time.monotonic()
        # in a child process: a child's peak RSS starts at its parent's size when it forks,
        # so this process must stay small while it measures the others
        spans = int(
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--generate-only",
                    str(path),
                    "--spans",
                    str(args.spans),
                    "--gigabytes",
                    str(args.gigabytes),
                    "--concurrent",
                    str(args.concurrent),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        size = path.stat().st_size
        print(
            f"generated {spans:,} spans, {size / 1e6:,.0f} MB, {args.concurrent} concurrent "
            f"runs, in {time.monotonic() - started:.0f}s: {path}"
        )
        base_cpu, base_wall, base_rss, base_out = measure(
            [sys.executable, "-c", BASELINE, str(path)]
        )
        assert int(base_out) == spans, (base_out, spans)
        cli = [sys.executable, "-m", "otel_loopguard.cli", "analyze"]
        flags = ["--format", "json", "--fail-on", "never"]
        cpu, wall, rss, out = measure([*cli, str(path), *flags])
        # what any run pays before its first span (interpreter, imports): included above
        tiny = workdir / "one-span.jsonl"
        with path.open(encoding="utf-8") as source, tiny.open("w", encoding="utf-8") as sink:
            request = json.loads(source.readline())
            request["resourceSpans"][0]["scopeSpans"][0]["spans"][1:] = []
            sink.write(json.dumps(request) + "\n")
        start_cpu, _, _, _ = measure([*cli, str(tiny), *flags])
        summary = json.loads(out.decode())["summary"]
        assert summary["spans"] == spans, summary
        rate = spans / cpu
        print(
            f"baseline (json.loads per line): {spans / base_cpu:>10,.0f} spans/s CPU, "
            f"{spans / base_wall:>10,.0f} wall, peak RSS {base_rss:,.0f} MiB"
        )
        print(
            f"otel-loopguard analyze:         {rate:>10,.0f} spans/s CPU, "
            f"{spans / wall:>10,.0f} wall, peak RSS {rss:,.0f} MiB"
        )
        print(
            f"  of which starting the command (interpreter, imports; analyze of a 1-span "
            f"file): {start_cpu:.2f}s of {cpu:.2f}s CPU; per span after it: "
            f"{(cpu - start_cpu) / spans * 1e6:.1f} µs, baseline "
            f"{base_cpu / spans * 1e6:.1f} µs"
        )
        print(
            f"analyze costs {cpu / base_cpu:.1f}x the baseline's CPU time; "
            f"{summary['runs']:,} runs, {summary['stopped']:,} would have stopped; at most "
            f"{summary['peak_live_runs']:,} live runs and {summary['peak_buffered_spans']:,} "
            f"buffered spans"
        )
        if args.breakdown:
            breakdown(path, args.breakdown)
        verdict = "ok" if rate >= TARGET_SPANS_PER_SECOND else "BELOW TARGET"
        print(f"target {TARGET_SPANS_PER_SECOND:,} spans/s (CPU): {verdict}")
        return 0 if rate >= TARGET_SPANS_PER_SECOND else 1
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
