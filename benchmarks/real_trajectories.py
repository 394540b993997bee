"""Recall, false-STOP rate and tool calls saved on published agent trajectories, per set.

Usage::

    python benchmarks/real_trajectories.py [--corpus DIR] [--policy default|strict|...]
        [--min-recall 0.9] [--max-false-stop-rate 0]

Replays the corpus (``benchmarks/trajectories/README.md``: real runs of a bash-only coding
agent, of SWE-agent, and of a τ-bench tool-using assistant, converted to GenAI-semconv
OTLP and labelled by written rules independent of the detectors) through
``otel-loopguard analyze --labels``, in this process, with the defaults (``OTEL_LOOPGUARD_*``
variables are ignored, so the figures are the shipped defaults' unless ``--policy`` says
otherwise), and prints per set: runs, loop and clean runs, recall, false-STOP rate,
precision, loop runs stopped before their loop began, tool calls a STOP saved on loop
runs, and the replay's time. Exit status 1 when a gate given fails (as ``analyze``), 2
when the corpus is missing.

The corpus is ``--corpus``; without it, ``$LOOPGUARD_TRAJECTORIES``, then
``shared/trajectories`` beside the repository (where the steering side keeps data files).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # an installed package first

from otel_loopguard.cli import main as cli_main

HERE = Path(__file__).resolve().parent
CORPUS_ENV = "LOOPGUARD_TRAJECTORIES"


def find_corpus(explicit: str | None = None) -> Path | None:
    """The corpus folder (``labels.json`` and ``*.otlp.jsonl.gz``), or ``None``; a folder
    named explicitly is the only one looked at."""
    candidates = (
        [explicit]
        if explicit
        else [os.environ.get(CORPUS_ENV), str(HERE.parent.parent / "shared" / "trajectories")]
    )
    for candidate in candidates:
        if candidate and (Path(candidate) / "labels.json").is_file():
            return Path(candidate)
    return None


@contextlib.contextmanager
def _default_settings() -> Any:
    """The shipped defaults: the caller's ``OTEL_LOOPGUARD_*`` variables set aside."""
    saved = {
        key: os.environ.pop(key) for key in list(os.environ) if key.startswith("OTEL_LOOPGUARD_")
    }
    try:
        yield
    finally:
        os.environ.update(saved)


def score(corpus: Path, policy: str = "default", *gates: str) -> tuple[int, dict[str, Any], float]:
    """(exit status, ``summary`` of the JSON report, seconds) of one ``analyze --labels``."""
    exports = sorted(str(path) for path in corpus.glob("*.otlp.jsonl.gz"))
    argv = [
        "analyze",
        "--format",
        "json",
        "--no-progress",
        "--policy",
        policy,
        "--labels",
        str(corpus / "labels.json"),
        *gates,
        *exports,
    ]
    out = io.StringIO()
    with _default_settings(), contextlib.redirect_stdout(out):
        started = time.perf_counter()
        status = cli_main(argv)
        elapsed = time.perf_counter() - started
    if status == 2:
        raise SystemExit(2)
    return status, json.loads(out.getvalue())["summary"], elapsed


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def table(summary: dict[str, Any]) -> str:
    labels = summary["labels"]
    rows = [
        (
            "set",
            "runs",
            "loop",
            "clean",
            "recall",
            "false STOP",
            "precision",
            "early",
            "saved calls",
        )
    ]
    for name, tally in [*labels["sets"].items(), ("all", labels)]:
        rows.append(
            (
                name,
                str(tally["loop_runs"] + tally["clean_runs"]),
                str(tally["loop_runs"]),
                str(tally["clean_runs"]),
                f"{tally['caught']}/{tally['loop_runs']} {_pct(tally['recall'])}",
                f"{tally['false_stops']}/{tally['clean_runs']} {_pct(tally['false_stop_rate'])}",
                _pct(tally["precision"]),
                str(tally["early_stops"]),
                str(tally["saved_tool_calls"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--corpus", help=f"the corpus folder (else ${CORPUS_ENV}, else shared/trajectories)"
    )
    parser.add_argument("--policy", default="default")
    parser.add_argument("--min-recall")
    parser.add_argument("--max-false-stop-rate")
    args = parser.parse_args(argv)
    corpus = find_corpus(args.corpus)
    if corpus is None:
        print(
            "real_trajectories: no corpus (labels.json and *.otlp.jsonl.gz) in "
            + (args.corpus or f"${CORPUS_ENV} or shared/trajectories")
            + "; see benchmarks/trajectories/README.md",
            file=sys.stderr,
        )
        return 2
    gates = []
    if args.min_recall:
        gates += ["--min-recall", args.min_recall]
    if args.max_false_stop_rate:
        gates += ["--max-false-stop-rate", args.max_false_stop_rate]
    status, summary, elapsed = score(corpus, args.policy, *gates)
    labels = summary["labels"]
    print(
        f"corpus {corpus} (policy {args.policy}): {summary['runs']} runs, "
        f"{summary['spans']:,} spans, replayed in {elapsed:.2f} s"
    )
    print(table(summary))
    if labels["detectors"]:
        print(
            "per detector (first STOPs it took part in): "
            + ", ".join(
                f"{name} caught {tally['caught']} false {tally['false_stops']}"
                for name, tally in labels["detectors"].items()
            )
        )
    for kind, ids in labels["runs_to_look_at"].items():
        if ids:
            print(f"{kind.replace('_', ' ')}: {', '.join(ids)}")
    for line in labels["gates"]["failed"]:
        print(f"gate failed: {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
