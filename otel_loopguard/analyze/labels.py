"""``analyze --labels FILE``: score a replay against the user's own labelled runs.

A team that changes a threshold wants to know, on runs it has judged itself, whether the
guard still stops its real loops and still leaves its good runs alone. The labels file is a
small JSON document (documented in ``docs/replay.md``, "Scoring against labels")::

    {"version": 1,
     "runs": {"<conversation id, trace id or run id>":
                {"loop": true, "from_tool_call": 12, "set": "coding", "note": "..."},
              "<id>": {"loop": false}}}

``from_tool_call`` (optional, 1-based, loop runs only) is the tool call from which the run
is a loop: a STOP at or after it caught the loop; a STOP before it stopped the run while it
was still healthy (an *early* STOP, counted apart). ``set`` (optional) groups runs for a
breakdown. A replayed run matches a label by its run id, its conversation id, or any of its
trace ids. Scoring counts the first STOP only: it is where an enforcing guard would have
ended the run.

Figures: *recall* (loop runs caught / loop runs), *false-STOP rate* (clean runs stopped /
clean runs), *precision* (loop runs caught / labelled runs stopped), tool calls a STOP
saved on loop runs (what the run made after it) and tool calls it cut from clean runs; per
detector, the same counted over the first STOPs that detector took part in. The gates
(``--min-recall``, ``--max-false-stop-rate``) make the exit status 1 when a figure misses.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from otel_loopguard.analyze.replay import RunRecord

LABELS_VERSION = 1
#: the bound on a labels file: a labels file is written by people or small scripts
MAX_LABELS_BYTES = 64 * 1024 * 1024


#: run ids listed per kind of mistake (``runs_to_look_at``)
MAX_IDS_IN_JSON = 100
MAX_IDS_IN_TEXT = 10
_WRONG = {
    "missed": "loop runs not stopped",
    "early": "loop runs stopped before their loop began",
    "false_stops": "clean runs stopped",
}


class LabelsError(Exception):
    """A labels file that cannot be used: one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Label:
    """One labelled run."""

    id: str
    loop: bool
    from_tool_call: int | None = None
    set: str | None = None


def load_labels(path: str) -> dict[str, Label]:
    """Read and check a labels file; raises :class:`LabelsError` with one line."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise LabelsError(f"labels {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_LABELS_BYTES:
        raise LabelsError(f"labels {path}: larger than {MAX_LABELS_BYTES // 2**20} MiB")
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabelsError(f"labels {path}: not JSON ({exc})") from None
    return parse_labels(document, path)


def parse_labels(document: Any, where: str = "labels") -> dict[str, Label]:
    """Check the documented shape; every problem names the run and the key."""
    if not isinstance(document, dict) or not isinstance(document.get("runs"), dict):
        raise LabelsError(f'labels {where}: expected {{"version": 1, "runs": {{id: label}}}}')
    version = document.get("version", LABELS_VERSION)
    if version != LABELS_VERSION:
        raise LabelsError(f"labels {where}: version {version!r} unknown (expected 1)")
    labels: dict[str, Label] = {}
    for run_id, entry in document["runs"].items():
        if not run_id:
            raise LabelsError(f"labels {where}: an empty run id")
        if not isinstance(entry, dict) or not isinstance(entry.get("loop"), bool):
            raise LabelsError(f'labels {where}: run {run_id!r}: expected {{"loop": true|false}}')
        start = entry.get("from_tool_call")
        if start is not None and (
            not isinstance(start, int) or isinstance(start, bool) or start < 1
        ):
            raise LabelsError(
                f"labels {where}: run {run_id!r}: from_tool_call must be a whole number ≥ 1"
            )
        if start is not None and not entry["loop"]:
            raise LabelsError(
                f"labels {where}: run {run_id!r}: from_tool_call given for a run that is no loop"
            )
        group = entry.get("set")
        if group is not None and not isinstance(group, str):
            raise LabelsError(f"labels {where}: run {run_id!r}: set must be a string")
        labels[run_id] = Label(run_id, entry["loop"], start, group)
    return labels


def parse_fraction(text: str) -> float:
    """``0.9`` or ``90%`` as 0.9; for the gate flags (argparse type)."""
    import argparse

    value_text = text.strip()
    percent = value_text.endswith("%")
    try:
        value = float(value_text[:-1] if percent else value_text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction or a percentage, got {text!r}"
        ) from None
    if percent:
        value /= 100.0
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (or 0% and 100%): {text!r}")
    return value


@dataclass
class Tally:
    """The figures of one group of labelled runs (all, a set, a detector)."""

    loop_runs: int = 0
    clean_runs: int = 0
    caught: int = 0  # loop runs stopped at or after their loop began
    early: int = 0  # loop runs stopped before their labelled loop began
    false_stops: int = 0  # clean runs stopped
    saved_tool_calls: int = 0  # on caught loop runs, tool calls after the STOP
    cut_tool_calls: int = 0  # on clean runs stopped, tool calls after the STOP
    delays: list[int] = field(default_factory=list)  # STOP's tool call - from_tool_call

    @property
    def stopped(self) -> int:
        return self.caught + self.early + self.false_stops

    @property
    def recall(self) -> float | None:
        return self.caught / self.loop_runs if self.loop_runs else None

    @property
    def false_stop_rate(self) -> float | None:
        return self.false_stops / self.clean_runs if self.clean_runs else None

    @property
    def precision(self) -> float | None:
        return self.caught / self.stopped if self.stopped else None

    def to_json(self) -> dict[str, Any]:
        delays = sorted(self.delays)
        return {
            "loop_runs": self.loop_runs,
            "clean_runs": self.clean_runs,
            "caught": self.caught,
            "early_stops": self.early,
            "false_stops": self.false_stops,
            "recall": _round(self.recall),
            "false_stop_rate": _round(self.false_stop_rate),
            "precision": _round(self.precision),
            "saved_tool_calls": self.saved_tool_calls,
            "cut_tool_calls": self.cut_tool_calls,
            "median_delay_tool_calls": delays[len(delays) // 2] if delays else None,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True)
class Gates:
    """Thresholds that fail the command (exit 1); ``None``: not gated."""

    min_recall: float | None = None
    max_false_stop_rate: float | None = None


@dataclass
class _Outcome:
    """What the replayed parts of one labelled run did. A run idle past the run TTL (in
    trace time) is replayed as two runs, as on-line a new run would start: their tool
    calls add up, and the first STOP of either counts."""

    tool_calls: int = 0
    stop_at: int | None = None  # the first STOP's tool call, counted over the parts
    after_stop: int = 0  # tool calls made after it
    detectors: tuple[str, ...] = ()

    def add(self, record: RunRecord) -> None:
        stop = record.first_stop
        if self.stop_at is not None:
            self.after_stop += record.tool_calls
        elif stop is not None:
            self.stop_at = self.tool_calls + stop.tool_call_index
            self.after_stop = record.after_stop_tool_calls
            self.detectors = stop.detectors
        self.tool_calls += record.tool_calls


class LabelScore:
    """Matches finished runs to labels, keeps what each labelled run did, and tallies the
    figures when asked; fed run by run (memory: one small record per label)."""

    def __init__(self, labels: dict[str, Label], gates: Gates) -> None:
        self.labels = labels
        self.gates = gates
        self.unlabelled_runs = 0
        self._outcomes: dict[str, _Outcome] = {}
        self._tallied: tuple[Tally, dict[str, Tally], dict[str, Tally]] | None = None

    def add(self, record: RunRecord) -> None:
        label = self._label_for(record)
        if label is None:
            self.unlabelled_runs += 1
            return
        self._outcomes.setdefault(label.id, _Outcome()).add(record)
        self._tallied = None

    def _tally(self) -> tuple[Tally, dict[str, Tally], dict[str, Tally]]:
        if self._tallied is None:
            total = Tally()
            sets: dict[str, Tally] = {}
            detectors: dict[str, Tally] = {}
            for label_id, outcome in self._outcomes.items():
                label = self.labels[label_id]
                groups = [total]
                if label.set:
                    groups.append(sets.setdefault(label.set, Tally()))
                groups += [detectors.setdefault(name, Tally()) for name in outcome.detectors]
                for tally in groups:
                    _count(tally, label, outcome)
            self._tallied = (total, sets, detectors)
        return self._tallied

    @property
    def total(self) -> Tally:
        return self._tally()[0]

    @property
    def sets(self) -> dict[str, Tally]:
        return self._tally()[1]

    @property
    def detectors(self) -> dict[str, Tally]:
        return self._tally()[2]

    def _label_for(self, record: RunRecord) -> Label | None:
        labels = self.labels
        label = labels.get(record.run_id)
        if label is None and ":" in record.run_id:
            label = labels.get(record.run_id.partition(":")[0])
        if label is None:
            for trace_id in record.trace_ids:
                label = labels.get(trace_id)
                if label is not None:
                    break
        return label

    @property
    def missing(self) -> list[str]:
        """Labels that no replayed run matched (a wrong id, or a trace not in the input)."""
        return [run_id for run_id in self.labels if run_id not in self._outcomes]

    def runs_to_look_at(self) -> dict[str, list[str]]:
        """The labelled runs the guard got wrong, by kind, ids sorted: loop runs never
        stopped (``missed``), stopped before their loop began (``early``), clean runs
        stopped (``false_stops``)."""
        wrong: dict[str, list[str]] = {"missed": [], "early": [], "false_stops": []}
        for label_id, outcome in self._outcomes.items():
            label = self.labels[label_id]
            if not label.loop:
                if outcome.stop_at is not None:
                    wrong["false_stops"].append(label_id)
            elif outcome.stop_at is None:
                wrong["missed"].append(label_id)
            elif label.from_tool_call is not None and outcome.stop_at < label.from_tool_call:
                wrong["early"].append(label_id)
        return {kind: sorted(ids) for kind, ids in wrong.items()}

    def _per_detector(self, tally: Tally) -> Tally:
        """A detector's figures over every labelled run: its recall is the share of all
        loop runs whose first STOP it took part in, its false-STOP rate likewise."""
        return replace(tally, loop_runs=self.total.loop_runs, clean_runs=self.total.clean_runs)

    def failed_gates(self) -> list[str]:
        """One line per gate missed; empty when every gate passed."""
        failed = []
        total = self.total
        recall, rate = total.recall, total.false_stop_rate
        least, most = self.gates.min_recall, self.gates.max_false_stop_rate
        if least is not None and recall is not None and recall < least:
            failed.append(f"recall {_pct(recall)} < {_pct(least)}")
        if most is not None and rate is not None and rate > most:
            failed.append(f"false-STOP rate {_pct(rate)} > {_pct(most)}")
        return failed

    def to_json(self) -> dict[str, Any]:
        return {
            **self.total.to_json(),
            "labelled_runs": self.total.loop_runs + self.total.clean_runs,
            "unlabelled_runs": self.unlabelled_runs,
            "labels_without_run": len(self.missing),
            "sets": {name: tally.to_json() for name, tally in sorted(self.sets.items())},
            "detectors": {
                name: self._per_detector(tally).to_json()
                for name, tally in sorted(self.detectors.items())
            },
            "runs_to_look_at": {
                kind: ids[:MAX_IDS_IN_JSON] for kind, ids in self.runs_to_look_at().items()
            },
            "gates": {
                "min_recall": self.gates.min_recall,
                "max_false_stop_rate": self.gates.max_false_stop_rate,
                "failed": self.failed_gates(),
            },
        }

    def text(self) -> str:
        total = self.total
        lines = [
            f"labels: {total.loop_runs + total.clean_runs} labelled runs "
            f"({total.loop_runs} loop, {total.clean_runs} clean), "
            f"{self.unlabelled_runs} unlabelled, {len(self.missing)} labels without a run"
        ]
        named = [("all", total), *sorted(self.sets.items())]
        if len(named) == 2 and named[1][1].to_json() == total.to_json():
            named = named[:1]  # one set: the same figures twice
        for name, tally in named:
            lines.append(f"  {name}: {_figures(tally)}")
        if self.detectors:
            lines.append("  per detector (first STOPs it took part in):")
            width = max(len(name) for name in self.detectors)
            for name, tally in sorted(self.detectors.items()):
                lines.append(
                    f"    {name:<{width}}  caught {tally.caught}, early {tally.early}, "
                    f"false {tally.false_stops}, precision {_pct(tally.precision)}, "
                    f"saved {tally.saved_tool_calls} tool calls"
                )
        for kind, ids in self.runs_to_look_at().items():
            if ids:
                more = (
                    f" (+{len(ids) - MAX_IDS_IN_TEXT} more)" if len(ids) > MAX_IDS_IN_TEXT else ""
                )
                lines.append(f"  {_WRONG[kind]}: {', '.join(ids[:MAX_IDS_IN_TEXT])}{more}")
        failed = self.failed_gates()
        gated = [
            f"recall ≥ {_pct(self.gates.min_recall)}" if self.gates.min_recall is not None else "",
            f"false-STOP rate ≤ {_pct(self.gates.max_false_stop_rate)}"
            if self.gates.max_false_stop_rate is not None
            else "",
        ]
        gated = [gate for gate in gated if gate]
        if failed:
            lines.append("gate failed: " + "; ".join(failed))
        elif gated:
            lines.append("gates passed: " + "; ".join(gated))
        return "\n".join(lines) + "\n"


def _count(tally: Tally, label: Label, outcome: _Outcome) -> None:
    stop_at = outcome.stop_at
    if not label.loop:
        tally.clean_runs += 1
        if stop_at is not None:
            tally.false_stops += 1
            tally.cut_tool_calls += outcome.after_stop
        return
    tally.loop_runs += 1
    if stop_at is None:
        return
    start = label.from_tool_call
    if start is not None and stop_at < start:
        tally.early += 1
        return
    tally.caught += 1
    tally.saved_tool_calls += outcome.after_stop
    if start is not None:
        tally.delays.append(stop_at - start)


def _figures(tally: Tally) -> str:
    parts = [
        f"recall {tally.caught}/{tally.loop_runs} ({_pct(tally.recall)})",
        f"false STOPs {tally.false_stops}/{tally.clean_runs} ({_pct(tally.false_stop_rate)})",
        f"precision {_pct(tally.precision)}",
    ]
    if tally.early:
        parts.append(f"{tally.early} loop runs stopped before their loop began")
    saved_calls = tally.saved_tool_calls
    saved = f"a STOP saved {saved_calls} tool call{'s' if saved_calls != 1 else ''} on loop runs"
    delays = sorted(tally.delays)
    if delays:
        median = delays[len(delays) // 2]
        saved += f" (median {median} call{'s' if median != 1 else ''} after the loop began)"
    parts.append(saved)
    if tally.cut_tool_calls:
        parts.append(f"cut {tally.cut_tool_calls} from clean runs")
    return ", ".join(parts)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"
