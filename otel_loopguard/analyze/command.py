"""``otel-loopguard analyze FILE…``: where would otel-loopguard have stopped these runs?

Exit codes: 0 when no run reached the ``--fail-on`` action (and, with ``--labels``, every
gate passed), 1 when one did (or a gate failed), 2 when an input or the labels file is
unusable (missing, unreadable, empty, not JSON, not traces, truncated, a broken .gz),
with one line on stderr and no traceback. An empty input (no bytes, or whitespace only) is
unusable: a CI job pointed at a file the collector never wrote must not pass silently. A
valid export that holds no spans is fine (0 runs, exit 0).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

from otel_loopguard.analyze.labels import parse_fraction
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action

_FAIL_ON_CHOICES = ("warn", "replan", "pause", "stop", "never")
_PRESETS = ("default", "strict", "observe")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="replay exported traces and report where each run would have stopped",
        description=(
            "Replay exported traces (OTLP JSON, Collector JSON lines, Jaeger JSON; .gz or "
            "'-' for stdin) through the same detectors and policy as on-line use, and "
            "report, per run, the decisions and where STOP would have fired. Settings come "
            "from the OTEL_LOOPGUARD_* variables; flags override them."
        ),
        epilog="exit status: 0 no run reached --fail-on and no --labels gate failed, 1 one "
        "did, 2 unusable input or labels",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="trace export, or - for stdin")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="report format (text)"
    )
    parser.add_argument(
        "--fail-on",
        choices=_FAIL_ON_CHOICES,
        default=None,
        help="exit 1 when a run reaches this action or a more severe one (stop; never "
        "with --labels, whose gates decide); never: always exit 0 for usable input",
    )
    parser.add_argument(
        "--labels",
        metavar="FILE",
        help="score the runs against this labels file (docs/replay.md): recall, false-STOP "
        "rate, precision, tool calls saved, per detector",
    )
    parser.add_argument(
        "--min-recall",
        type=parse_fraction,
        metavar="R",
        help="with --labels: exit 1 when recall on loop runs is below R (0.9 or 90%%)",
    )
    parser.add_argument(
        "--max-false-stop-rate",
        type=parse_fraction,
        metavar="R",
        help="with --labels: exit 1 when the share of clean runs stopped is above R (0 or 0%%)",
    )
    parser.add_argument(
        "--suggest-settings",
        action="store_true",
        help="with --labels: search the detector thresholds and the policy preset for the "
        "settings that catch the most labelled loops with no false STOP, and print them "
        "(OTEL_LOOPGUARD_*=value lines) with the figures before and after",
    )
    parser.add_argument(
        "--suggest-budget",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="with --suggest-settings: stop searching after this long, the first replay "
        "included (300)",
    )
    parser.add_argument(
        "--suggest-max-candidates",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --suggest-settings: replay at most N candidate settings (500)",
    )
    parser.add_argument(
        "--suggest-max-spans",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --suggest-settings: spans kept in memory for the search (200000)",
    )
    parser.add_argument(
        "--mode",
        type=lambda value: value.strip().lower(),  # ENFORCE, " Enforce " as the variable
        choices=("observe", "enforce"),
        help="overrides OTEL_LOOPGUARD_MODE",
    )
    parser.add_argument(
        "--policy",
        metavar="NAME",
        help="default, strict, observe or package.module:callable; overrides OTEL_LOOPGUARD_POLICY",
    )
    parser.add_argument(
        "--buffer-spans",
        type=_positive_int,
        default=None,
        metavar="N",
        help="spans held while waiting for a trace to complete (100000)",
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="always show progress on stderr",
    )
    progress.add_argument(
        "--no-progress", dest="progress", action="store_false", help="never show progress"
    )
    parser.set_defaults(handler=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds above 0")
    return value


class UsageError(Exception):
    """A flag value that cannot be used; exit 2 with this line."""


def _config(args: argparse.Namespace) -> LoopGuardConfig:
    overrides: dict[str, Any] = {}
    if args.mode:
        overrides["mode"] = args.mode
    if args.policy:
        _check_policy(args.policy)
        overrides["policy"] = args.policy
    return LoopGuardConfig.from_env(**overrides)


def _check_policy(spec: str) -> None:
    """An explicit ``--policy`` that cannot be loaded is an error, not a silent default."""
    if spec.strip().lower() in _PRESETS:
        return
    import importlib

    module_name, sep, attribute = spec.strip().partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(
            f"--policy {spec!r}: expected default, strict, observe or package.module:callable"
        )
    try:
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as exc:  # any import can fail in any way
        raise UsageError(f"--policy {spec!r}: {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise UsageError(f"--policy {spec!r}: not callable")


def run(args: argparse.Namespace) -> int:
    with _collecting_cycles_less_often():
        return _analyze(args)


def _analyze(args: argparse.Namespace) -> int:
    from itertools import chain

    from otel_loopguard.analyze.labels import Gates, LabelScore, LabelsError, load_labels
    from otel_loopguard.analyze.progress import Progress
    from otel_loopguard.analyze.readers import ReadStats, read_span_batches
    from otel_loopguard.analyze.replay import DEFAULT_BUFFER_SPANS, Replayer
    from otel_loopguard.analyze.report import (
        InputSummary,
        JsonReport,
        ReportContext,
        TextReport,
    )
    from otel_loopguard.analyze.sources import InputError

    _quiet_library_logs()
    try:
        config = _config(args)
    except UsageError as exc:
        return _fail(str(exc))
    labels = None
    gated = args.min_recall is not None or args.max_false_stop_rate is not None
    if args.labels is None and gated:
        return _fail("--min-recall and --max-false-stop-rate need --labels FILE")
    suggest_flags = (args.suggest_budget, args.suggest_max_candidates, args.suggest_max_spans)
    if not args.suggest_settings and any(flag is not None for flag in suggest_flags):
        return _fail("--suggest-budget and --suggest-max-* need --suggest-settings")
    if args.suggest_settings and args.labels is None:
        return _fail("--suggest-settings needs --labels FILE")
    if args.labels is not None:
        try:
            labels = LabelScore(
                load_labels(args.labels), Gates(args.min_recall, args.max_false_stop_rate)
            )
        except LabelsError as exc:
            return _fail(str(exc))
    if args.suggest_settings:
        assert labels is not None
        return _suggest(args, config, labels)
    fail_on_name = args.fail_on or ("never" if labels is not None else "stop")
    fail_on = None if fail_on_name == "never" else Action(fail_on_name)
    context = ReportContext(
        inputs=list(args.files),
        mode=config.mode,
        policy=config.policy,
        fail_on=fail_on,
        capture_content=config.capture_content,
        prices_configured=bool(config.prices),
        labels=labels,
    )
    out = sys.stdout
    report = (JsonReport if args.format == "json" else TextReport)(out, context)
    stats = ReadStats()
    replayer = Replayer(config, report.run, buffer_spans=args.buffer_spans or DEFAULT_BUFFER_SPANS)
    progress = Progress(sys.stderr, list(args.files), force=args.progress)

    def on_position(path: str, position: int) -> None:
        progress.update(path, position, stats.spans, replayer.runs_finished)

    try:
        replayer.feed(chain.from_iterable(read_span_batches(args.files, stats, on_position)))
        replayer.finish()
        report.end(
            InputSummary(
                spans=stats.spans,
                skipped_spans=stats.skipped_spans,
                peak_buffered_spans=replayer.buffer.peak_buffered,
                forced_flushes=replayer.buffer.forced_flushes,
                peak_live_runs=replayer.peak_live_runs,
            )
        )
        out.flush()
    except InputError as exc:
        progress.close()
        return _fail(str(exc))
    except BrokenPipeError:  # `| head`: the reader went away; not an error of ours
        _silence_stdout()
        return 0
    progress.close(stats.spans, replayer.runs_finished)
    if labels is not None and labels.missing:
        missing = labels.missing
        print(
            f"otel-loopguard analyze: {len(missing)} labels matched no run, e.g. {missing[0]!r}",
            file=sys.stderr,
        )
    if report.totals.failing or (labels is not None and labels.failed_gates()):
        return 1
    return 0


def _suggest(args: argparse.Namespace, config: LoopGuardConfig, labels: Any) -> int:
    """``--suggest-settings``: parse once, search, print the suggestion (exit 1 when no
    settings searched avoid every false STOP, or a gate fails on the suggested figures)."""
    from otel_loopguard.analyze.readers import ReadStats, read_span_batches
    from otel_loopguard.analyze.replay import DEFAULT_BUFFER_SPANS
    from otel_loopguard.analyze.sources import InputError
    from otel_loopguard.analyze.suggest import (
        DEFAULT_BUDGET_SECONDS,
        DEFAULT_MAX_CANDIDATES,
        DEFAULT_MAX_SPANS,
        SuggestError,
        collect_views,
        suggest,
        write,
    )

    show = args.progress is not False

    def progress(line: str) -> None:
        if show:
            print(f"suggest-settings: {line}", file=sys.stderr, flush=True)

    stats = ReadStats()
    try:
        views = collect_views(
            read_span_batches(args.files, stats, lambda _path, _position: None),
            args.suggest_max_spans or DEFAULT_MAX_SPANS,
        )
        suggestion, first = suggest(
            views,
            labels.labels,
            config,
            buffer_spans=args.buffer_spans or DEFAULT_BUFFER_SPANS,
            budget_seconds=args.suggest_budget or DEFAULT_BUDGET_SECONDS,
            max_candidates=args.suggest_max_candidates or DEFAULT_MAX_CANDIDATES,
            progress=progress,
        )
    except (InputError, SuggestError) as exc:
        return _fail(str(exc))
    try:
        write(sys.stdout, suggestion, args.format)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return 0
    if first.missing:
        print(
            f"otel-loopguard analyze: {len(first.missing)} labels matched no run, "
            f"e.g. {first.missing[0]!r}",
            file=sys.stderr,
        )
    best = suggestion.best.labels
    assert best is not None
    best.gates = labels.gates
    if not suggestion.meets_goal or best.failed_gates():
        return 1
    return 0


def _fail(message: str) -> int:
    sys.stdout.flush()
    print(f"otel-loopguard analyze: error: {message}", file=sys.stderr)
    return 2


#: allocations between two runs of the cyclic garbage collector's youngest generation
GC_YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def _collecting_cycles_less_often() -> Iterator[None]:
    """Raise the youngest generation's threshold (CPython's default: 700) while analysing.

    A replay allocates tens of thousands of containers per parsed request (dicts, lists,
    views, events) and keeps almost none of them: with the default the collector ran about
    20 times per 1,000 spans, walking each freshly parsed request, some 6% of the CPU time.
    Garbage still goes at once by reference counting; cycles wait for at most this many
    allocations, so memory stays bounded. The previous thresholds are restored after.
    """
    previous = gc.get_threshold()
    if 0 < previous[0] < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _quiet_library_logs() -> None:
    """Configuration warnings still reach stderr (one line each), without logging setup."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
