"""Every benchmark in one run, printed as ONE table of ratios measured side by side.

Usage::

    python benchmarks/run_all.py            # the published figures (docs/benchmarks.md)
    python benchmarks/run_all.py --quick    # a smoke run: same table, small counts, ~1 min
    python benchmarks/run_all.py --only span,monitor   # some sections only

Each row compares otel-loopguard with a baseline measured in the same process run (or, for
``analyze``, in a child process started by this run): the plain OpenTelemetry SDK, a dict
lookup per event, ``json.loads`` of the same file, the same agent with the guard disabled.
Times are CPU time and every time figure is a median of repeats; a lone absolute time is
never the result, the ratio is. The benchmark scripts themselves (``span_overhead.py``,
``asyncio_runs.py``, ``monitor_throughput.py``, ``live_runs_memory.py``,
``analyze_throughput.py``, ``loop_savings.py``, ``signature_cost.py``) are imported, so each
section is the same measurement its script prints when run alone, with more detail.

The machine (CPU, cores, Python and package versions) is printed first; paste the whole
output into ``docs/benchmarks.md`` when publishing. Exit status 0 when the table was made;
targets missed are marked in the table, not in the exit status (a loaded machine must not
fail a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # an installed (perhaps compiled) package first


@dataclass
class Row:
    measure: str
    loopguard: str
    baseline: str
    ratio: str
    verdict: str = ""


@dataclass(frozen=True)
class Sizes:
    span_spans: int
    span_rounds: int
    async_runs: int
    async_tools: int
    async_rounds: int
    monitor_events: int
    monitor_pairs: int
    live_runs: int
    analyze_spans: int
    signature_repeats: int
    peer_events: int


FULL = Sizes(2_000, 7, 1_000, 5, 5, 1_000_000, 30, 10_000, 500_000, 7, 100_000)
QUICK = Sizes(100, 3, 1_000, 1, 3, 20_000, 5, 200, 5_000, 3, 20_000)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def span_rows(sizes: Sizes) -> list[Row]:
    import span_overhead

    rows = []
    for threads in (1, 8):
        result = span_overhead.compare(threads, sizes.span_spans, sizes.span_rounds)
        plain, guarded = result["plain"][0], result["loopguard"][0]
        ratio = guarded / plain
        rows.append(
            Row(
                f"tool span, {threads} thread{'s' if threads > 1 else ''} (CPU per span)",
                _us(guarded),
                f"{_us(plain)} plain SDK",
                f"{ratio:.2f}x",
                f"{_mark(ratio <= span_overhead.TARGET_RATIO)} (≤ {span_overhead.TARGET_RATIO})",
            )
        )
    return rows


def asyncio_rows(sizes: Sizes) -> list[Row]:
    import asyncio_runs

    result = asyncio_runs.compare(sizes.async_runs, sizes.async_tools, sizes.async_rounds)
    ratio = result["loopguard"] / result["plain"]
    return [
        Row(
            f"tool span, {sizes.async_runs:,} concurrent asyncio runs",
            _us(result["loopguard"]),
            f"{_us(result['plain'])} plain SDK",
            f"{ratio:.2f}x",
            f"{_mark(ratio <= asyncio_runs.TARGET_RATIO)} (≤ {asyncio_runs.TARGET_RATIO})",
        )
    ]


def monitor_rows(sizes: Sizes) -> list[Row]:
    import monitor_throughput as mt

    script = mt.build_script()
    monitor = mt.new_monitor()
    events = max(sizes.monitor_events, 30 * mt.BLOCK)
    # each block of the monitor is followed by the same block through the baseline, so both
    # see the same machine load (monitor_throughput.timed_blocks)
    blocks, base_blocks = mt.timed_blocks(
        script, events, ["long-run"], monitor.observe, mt.baseline_observe()
    )
    cost, base = mt.median_per_event(blocks), mt.median_per_event(base_blocks)
    early, late = mt.growth_pairs(script, monitor, "long-run", events, sizes.monitor_pairs)
    net = max(cost - base, 1e-12)
    growth = late / early
    return [
        Row(
            f"monitor, 1 run of {events:,} events",
            f"{1 / net:,.0f} events/s ({_us(net)}/event)",
            f"{_us(base)}/event: build event + dict lookup",
            f"{cost / base:.1f}x",
            _mark(1 / net >= mt.TARGET_EVENTS_PER_SECOND) + " (≥ 100,000/s)",
        ),
        Row(
            f"monitor, per-event cost after {events:,} vs at 1,000 events",
            f"{_us(late)} after {events:,}",
            f"{_us(early)} at 1,000",
            f"{growth:.2f}x",
            f"{_mark(growth <= mt.TARGET_GROWTH_RATIO)} (≤ {mt.TARGET_GROWTH_RATIO})",
        ),
    ]


def memory_rows(sizes: Sizes) -> list[Row]:
    import live_runs_memory

    result = live_runs_memory.compare(sizes.live_runs, 5)
    plain, guarded = result["plain"], result["loopguard"]
    extra = guarded.live_bytes - plain.live_bytes
    per_run = extra / sizes.live_runs
    return [
        Row(
            f"memory, {sizes.live_runs:,} live runs (5 tool spans each)",
            f"{guarded.live_bytes / 2**20:.1f} MiB total, {per_run / 1024:.1f} KiB/run own",
            f"{plain.live_bytes / 2**20:.1f} MiB plain SDK",
            f"{guarded.live_bytes / plain.live_bytes:.2f}x",
            f"{_mark(per_run <= 16 * 1024 and guarded.active_runs == sizes.live_runs)}"
            f" (≤ 16 KiB/run; {guarded.active_runs:,} tracked)",
        ),
        Row(
            "memory held after every run ended",
            f"{guarded.after_end_bytes / 2**20:.2f} MiB",
            f"{plain.after_end_bytes / 2**20:.2f} MiB plain SDK",
            f"+{(guarded.after_end_bytes - plain.after_end_bytes) / 2**20:.2f} MiB",
            _mark(guarded.after_end_bytes - plain.after_end_bytes < max(extra / 10, 2**20)),
        ),
    ]


def _peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def measure_child(command: list[str]) -> tuple[float, float, bytes]:
    """(CPU seconds, peak RSS MiB, stdout) of one child process.

    Peak RSS is the child's own high-water mark (``VmHWM``), polled until it exits: the
    ``ru_maxrss`` that ``wait4`` reports on Linux starts from the parent's RSS at fork,
    which in this process (after the memory section) would hide the child's own figure.
    """
    with tempfile.TemporaryFile() as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE, cwd=HERE.parent)
        peak = 0.0
        while process.poll() is None:
            peak = max(peak, _peak_rss_mib(process.pid))
            time.sleep(0.02)
        if process.returncode not in (0, 1):
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"{command[:3]} failed ({process.returncode}): {stderr[-2000:]}")
        sink.seek(0)
        output = sink.read()
    return cpu_of_children(), peak, output


_children_cpu = [0.0]


def cpu_of_children() -> float:
    """CPU seconds of the child just reaped (the growth of this process's children total)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _children_cpu[0] = total - _children_cpu[0], total
    return spent


def analyze_rows(sizes: Sizes) -> list[Row]:
    import analyze_throughput as at

    workdir = Path(tempfile.mkdtemp(prefix="loopguard-run-all-"))
    path = workdir / "export.jsonl"
    try:
        spans = at.generate(path, sizes.analyze_spans, 0, 200)
        megabytes = path.stat().st_size / 1e6
        cpu_of_children()  # start counting from here
        base_cpu, base_rss, _ = measure_child([sys.executable, "-c", at.BASELINE, str(path)])
        cli = [sys.executable, "-m", "otel_loopguard.cli", "analyze", str(path)]
        cpu, rss, out = measure_child([*cli, "--format", "json", "--fail-on", "never"])
        summary = json.loads(out.decode())["summary"]
        assert summary["spans"] == spans, summary
    finally:
        for child in workdir.iterdir():
            child.unlink()
        workdir.rmdir()
    rate = spans / cpu
    return [
        Row(
            f"analyze, {spans:,} spans ({megabytes:,.0f} MB JSON lines)",
            f"{rate:,.0f} spans/s",
            f"{spans / base_cpu:,.0f} spans/s json.loads only",
            f"{cpu / base_cpu:.1f}x CPU",
            f"{_mark(rate >= at.TARGET_SPANS_PER_SECOND)} (≥ {at.TARGET_SPANS_PER_SECOND:,}/s)",
        ),
        Row(
            "analyze, peak RSS",
            f"{rss:,.0f} MiB",
            f"{base_rss:,.0f} MiB json.loads only",
            f"{rss / base_rss:.2f}x",
            f"{summary['runs']:,} runs, {summary['stopped']:,} stopped",
        ),
    ]


def loop_rows(_sizes: Sizes) -> list[Row]:
    import loop_savings

    rows = []
    for without, enforced in loop_savings.compare():
        healthy = without.scenario == "healthy"
        ok = (
            (enforced.tool_calls, enforced.tokens) == (without.tool_calls, without.tokens)
            if healthy
            else enforced.stopped and enforced.tool_calls < without.tool_calls
        )
        rows.append(
            Row(
                f"looping run '{without.scenario}', enforce vs no guard",
                f"{enforced.tool_calls} calls, {enforced.tokens:,} tokens",
                f"{without.tool_calls} calls, {without.tokens:,} tokens",
                f"{enforced.tokens / without.tokens:.2f}x tokens",
                _mark(ok) + (" (untouched)" if healthy else " (stopped)"),
            )
        )
    return [*rows, langchain_row()]


def langchain_python() -> str | None:
    """The LangChain suite's interpreter: ``LOOPGUARD_LANGCHAIN_PYTHON`` or ``.venvs/langchain``."""
    configured = os.environ.get("LOOPGUARD_LANGCHAIN_PYTHON")
    if configured:
        return configured
    default = HERE.parent / ".venvs" / "langchain" / "bin" / "python"
    return str(default) if default.exists() else None


def langchain_row() -> Row:
    """The same comparison on a real LangGraph agent, in the LangChain suite's environment."""
    label = "looping LangGraph agent, enforce vs no guard"
    python = langchain_python()
    if python is None:
        return Row(
            label,
            "not run",
            "no LangChain environment",
            "-",
            "make it: python scripts/run_tests.py langchain",
        )
    root = HERE.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), str(root / "instrumentation" / "langchain" / "src")]
    )
    result = subprocess.run(
        [python, str(HERE / "langchain_loop.py"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
    )
    if result.returncode not in (0, 1) or not result.stdout.strip():
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1][:60]
        return Row(label, "failed", reason, "-", "MISSED")
    spent = json.loads(result.stdout.strip().splitlines()[-1])
    without, enforced = spent["without"], spent["enforce"]
    ok = enforced["stopped"] and enforced["tool_calls"] < without["tool_calls"]
    return Row(
        label,
        f"{enforced['tool_calls']} calls, {enforced['tokens']:,} tokens",
        f"{without['tool_calls']} calls, {without['tokens']:,} tokens",
        f"{enforced['tokens'] / without['tokens']:.2f}x tokens",
        _mark(ok) + " (stopped)",
    )


def signature_rows(sizes: Sizes) -> list[Row]:
    """signature_cost.py's own tables (captured), reduced to their two verdicts."""
    import signature_cost

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        signature_cost.main(["--repeats", str(sizes.signature_repeats)])
    text = captured.getvalue()
    huge = re.search(r"slowest 10 MB signature: ([\d.]+) ms", text)
    typical = re.search(r"worst typical now / baseline: ([\d.]+)x", text)
    if huge is None:
        raise RuntimeError("signature_cost.py printed no verdict:\n" + text)
    huge_ms = float(huge.group(1))
    limit = signature_cost.MAX_HUGE_MS
    rows = [
        Row(
            "signature of a 10 MB value (slowest shape)",
            f"{huge_ms:.2f} ms",
            f"{limit:.0f} ms (the target)",
            f"{huge_ms / limit:.2f}x",
            f"{_mark(huge_ms <= limit)} (≤ {limit:.0f} ms)",
        )
    ]
    if typical is None:  # no git history to read the baseline from (an unpacked archive)
        return rows
    ratio = float(typical.group(1))
    rows.append(
        Row(
            f"typical signature vs {signature_cost.BASELINE} (worst shape)",
            f"{ratio:.2f}x",
            "1.00x",
            f"{ratio:.2f}x",
            f"{_mark(ratio <= signature_cost.MAX_TYPICAL_RATIO)} "
            f"(≤ {signature_cost.MAX_TYPICAL_RATIO}x)",
        )
    )
    return rows


def peer_rows(sizes: Sizes) -> list[Row]:
    """peer_monitors.py in its own venv (made on a full run, from PyPI; a quick run uses
    it only when it is there): our Monitor beside the bounded loop guards on PyPI."""
    import peer_monitors as pm

    label = "monitor beside the loop guards on PyPI, tool events"
    quick = sizes.peer_events < FULL.peer_events
    if quick and not (pm.VENV / "bin" / "python").exists():
        return [Row(label, "not run", "no peers venv", "-", "make it: benchmarks/peer_monitors.py")]
    result = subprocess.run(
        [
            sys.executable,
            str(HERE / "peer_monitors.py"),
            "--json",
            "--events",
            str(sizes.peer_events),
            "--budget",
            "3" if quick else "20",
        ],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        timeout=3600,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode not in (0, 1) or not lines or not lines[-1].startswith("{"):
        reason = (result.stderr.strip().splitlines() or lines or ["no output"])[-1][:60]
        return [Row(label, "failed", reason, "-", "MISSED")]
    summary = json.loads(lines[-1])
    ours, *rest = summary["rows"]
    peers = [r for r in rest if r["bounded"] and not r["stopped"] and r["name"][0] != " "]
    if not peers:
        return [Row(label, "not run", "no bounded peer measured", "-", "-")]
    fastest = max(peers, key=lambda r: r["events_per_s"])
    return [
        Row(
            f"{label} ({len(rest) - 1} measured)",
            f"{ours['events_per_s']:,.0f} events/s",
            f"{fastest['events_per_s']:,.0f}/s {fastest['name']} {fastest['version']}",
            f"{ours['events_per_s'] / fastest['events_per_s']:.2f}x",
            f"{_mark(summary['met'])} (≥ {pm.TARGET_EVENTS_PER_SECOND:,}/s, ahead of all)",
        )
    ]


SECTIONS: dict[str, Callable[[Sizes], list[Row]]] = {
    "span": span_rows,
    "asyncio": asyncio_rows,
    "monitor": monitor_rows,
    "memory": memory_rows,
    "analyze": analyze_rows,
    "loop": loop_rows,
    "signature": signature_rows,
    "peers": peer_rows,
}


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for package in (
        "otel-loopguard",
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp",
        "pydantic",
    ):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{cpu}; {os.cpu_count()} cores (nproc); load average {load}\n"
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.release()}\n" + "; ".join(versions)
    )


def render(rows: list[Row]) -> str:
    header = Row("measure", "otel-loopguard", "baseline (same run)", "ratio", "target")
    table = [header, *rows]
    widths = [max(len(getattr(r, f)) for r in table) for f in Row.__dataclass_fields__]
    lines = []
    for index, row in enumerate(table):
        cells = [getattr(row, f) for f in Row.__dataclass_fields__]
        padded = (cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        lines.append("| " + " | ".join(padded) + " |")
        if index == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument(
        "--only", default="", help=f"comma list of sections: {', '.join(SECTIONS)} (default all)"
    )
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}")
    sizes = QUICK if args.quick else FULL
    print(machine())
    print(f"{'quick (smoke) run' if args.quick else 'full run'}; sections: {', '.join(chosen)}")
    rows: list[Row] = []
    for name in chosen:
        started = time.monotonic()
        print(f"... {name}", file=sys.stderr, flush=True)
        rows.extend(SECTIONS[name](sizes))
        print(f"    {name} took {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    print()
    print(render(rows))
    missed = sum(1 for r in rows if r.verdict.startswith("MISSED"))
    print(f"\n{len(rows)} rows; {missed} target(s) missed" + (" (quick run)" if args.quick else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
