"""``analyze --labels FILE --suggest-settings``: the settings that fit the user's own runs.

The labelled runs are replayed under other detector thresholds and policy presets, and
the settings that catch the most labelled loops with no false STOP on the labelled clean
runs are suggested, with the figures before and after (``docs/replay.md``, "Suggesting
settings").

The search is bounded:

* the input is parsed once; its span views are kept (at most ``max_spans``, else one clear
  error) and every candidate is a fresh :class:`Replayer` (a fresh Monitor) over them;
  after the first replay only the traces of labelled runs are kept, when that gives the
  same figures;
* coordinate descent, not the full grid: one setting at a time over its candidate
  values, the others held, for a few passes, until a pass changes nothing;
* a time budget and a cap on candidates; what is best when either runs out is suggested;
* a candidate is abandoned at the first false STOP beyond the best one's (it cannot win).

Which settings are searched is :data:`SEARCHED_SETTINGS`, one name per setting; their types
and bounds, hence their candidate values, come from :class:`LoopGuardConfig`, so a setting
a detector adds joins the search by being named there.

Ranking, best first: fewest false STOPs (zero is the goal), most loop runs caught, most
tool calls saved (the earliest STOPs), fewest loop runs stopped before their loop began,
fewest settings changed from the ones the search starts from (the current ones).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO, get_args, get_origin

from pydantic import ValidationError

from otel_loopguard.analyze.labels import Gates, Label, LabelScore, Tally, _figures
from otel_loopguard.analyze.replay import DEFAULT_BUFFER_SPANS, Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.spans.view import SpanView

#: the settings searched, in this order; a setting joins the search by being named here
#: (names that are no field of LoopGuardConfig are skipped)
SEARCHED_SETTINGS: tuple[str, ...] = (
    "repetition_threshold",
    "no_progress_threshold",
    "poll_patience",
    "cycle_min_periods",
    "permanent_failure_threshold",
    "retryable_failure_threshold",
    "read_only_loop_threshold",
    "shell_failure_threshold",
    "max_repeated_tool_steps",
    "policy",
)
#: candidate values fixed by name, where a field's type says too little (free text)
FIXED_CANDIDATES: dict[str, tuple[Any, ...]] = {"policy": ("default", "strict")}

#: spans kept in memory for the search (about 2.5 kB each); more is an error
DEFAULT_MAX_SPANS = 200_000
DEFAULT_BUDGET_SECONDS = 300.0
DEFAULT_MAX_CANDIDATES = 500
MAX_PASSES = 3
#: candidate values per setting, at most
MAX_VALUES = 10


class SuggestError(Exception):
    """The search cannot run (too many spans, nothing labelled): one line, exit 2."""


# -- candidate values -------------------------------------------------------------------------


def _bounds(name: str) -> tuple[float | None, float | None, bool, bool]:
    """``(low, high, low_inclusive, high_inclusive)`` of a field, from its metadata."""
    low = high = None
    low_incl = high_incl = True
    for bound in LoopGuardConfig.model_fields[name].metadata:
        if getattr(bound, "ge", None) is not None:
            low, low_incl = bound.ge, True
        if getattr(bound, "gt", None) is not None:
            low, low_incl = bound.gt, False
        if getattr(bound, "le", None) is not None:
            high, high_incl = bound.le, True
        if getattr(bound, "lt", None) is not None:
            high, high_incl = bound.lt, False
    return low, high, low_incl, high_incl


def _within(name: str, value: float) -> bool:
    low, high, low_incl, high_incl = _bounds(name)
    if low is not None and (value < low or (value == low and not low_incl)):
        return False
    return not (high is not None and (value > high or (value == high and not high_incl)))


def candidate_values(name: str, current: Any, start: Any = None) -> tuple[Any, ...]:
    """The values tried for one setting (the current one first, ``start``, the value the
    search began from, second), from its type and bounds: whole numbers below the current
    one down to the lower bound (sampled when far) and a few above it; numbers scaled by
    fixed factors; both booleans; a Literal's choices."""
    if name in FIXED_CANDIDATES:
        values = [current, *FIXED_CANDIDATES[name]]
    else:
        annotation = LoopGuardConfig.model_fields[name].annotation
        if annotation is bool:
            values = [current, not current]
        elif get_origin(annotation) is Literal:
            values = [current, *get_args(annotation)]
        elif annotation is int and isinstance(current, int):
            low = _bounds(name)[0]
            floor = math.ceil(low) if low is not None else 0
            if current - floor <= 6:
                below = set(range(floor, current))
            else:  # sampled: both ends and a few between
                below = {floor, floor + 1, current - 1}
                below |= {round(current * f) for f in (0.25, 0.5, 0.75)}
            above = {current + 1, math.ceil(current * 1.5), current * 2}
            values = [current, *sorted(below, reverse=True), *sorted(above)]
        elif annotation is float and isinstance(current, float):
            factors = (0.5, 0.75, 0.9, 1.1, 1.25, 1.5, 2.0)
            values = [current, *(round(current * f, 6) for f in factors)]
        else:
            values = [current]
    if start is not None:
        values.insert(1, start)
    unique: list[Any] = []
    for value in values:
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value in unique or (numeric and not _within(name, value)):
            continue
        unique.append(value)
    return tuple(unique[:MAX_VALUES])


def searched_settings(names: Iterable[str] = SEARCHED_SETTINGS) -> list[str]:
    return [name for name in names if name in LoopGuardConfig.model_fields]


def env_line(name: str, value: Any) -> str:
    """``OTEL_LOOPGUARD_NAME=value`` as the variable is written."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, tuple):
        text = ",".join(value)
    else:
        text = str(value)
    return f"{LoopGuardConfig.env_name(name)}={text}"


# -- scoring one candidate --------------------------------------------------------------------


@dataclass
class Score:
    """The figures of one candidate; ``pruned``: abandoned at a false STOP it could not
    afford (its figures are then a lower bound of its false STOPs only)."""

    settings: dict[str, Any]
    tally: Tally
    labels: LabelScore | None = None
    pruned: bool = False
    changes: int = 0
    labelled_traces: set[str] = field(default_factory=set)

    def key(self) -> tuple[int, int, int, int, int]:
        """Larger is better."""
        tally = self.tally
        return (
            -tally.false_stops,
            tally.caught,
            tally.saved_tool_calls,
            -tally.early,
            -self.changes,
        )


class _Pruned(Exception):
    pass


@dataclass
class Search:
    """The parsed input and the labels; :meth:`run` the coordinate descent."""

    views: list[SpanView]
    labels: dict[str, Label]
    base: LoopGuardConfig
    buffer_spans: int = DEFAULT_BUFFER_SPANS
    budget_seconds: float = DEFAULT_BUDGET_SECONDS
    max_candidates: int = DEFAULT_MAX_CANDIDATES
    names: list[str] = field(default_factory=searched_settings)
    progress: Callable[[str], None] | None = None
    replays: int = 0
    passes: int = 0
    out_of_budget: str | None = None
    _cache: dict[tuple[Any, ...], Score] = field(default_factory=dict)

    def settings_of(self, config: LoopGuardConfig) -> dict[str, Any]:
        return {name: getattr(config, name) for name in self.names}

    def replay(self, settings: dict[str, Any], allowed_false_stops: int | None = None) -> Score:
        """Replay every kept span under ``settings`` (a fresh monitor), scored."""
        key = tuple(settings[name] for name in self.names)
        cached = self._cache.get(key)
        if cached is not None and (not cached.pruned or allowed_false_stops is not None):
            return cached
        try:
            config = self.base.model_validate({**self.base.model_dump(), **settings})
        except ValidationError:  # a combination the model refuses: never suggested
            refused = Score(dict(settings), Tally(false_stops=len(self.labels) + 1), pruned=True)
            self._cache[key] = refused
            return refused
        score = LabelScore(self.labels, Gates())
        false_stopped: set[str] = set()
        labelled_traces: set[str] = set()

        def on_run(record: RunRecord) -> None:
            score.add(record)
            label = score._label_for(record)
            if label is None:
                return
            labelled_traces.update(record.trace_ids)
            if allowed_false_stops is None or record.first_stop is None:
                return
            if not label.loop:
                false_stopped.add(label.id)
                if len(false_stopped) > allowed_false_stops:
                    raise _Pruned

        replayer = Replayer(config, on_run, buffer_spans=self.buffer_spans)
        self.replays += 1
        changes = sum(1 for name in self.names if settings[name] != getattr(self.base, name))
        try:
            replayer.feed(self.views)
            replayer.finish()
        except _Pruned:
            tally = Tally(false_stops=len(false_stopped))
            result = Score(dict(settings), tally, None, pruned=True, changes=changes)
        else:
            result = Score(dict(settings), score.total, score, changes=changes)
            result.labelled_traces = labelled_traces
        self._cache[key] = result
        return result

    def keep_labelled_traces(self, first: Score) -> None:
        """Keep only the spans of traces of labelled runs, if the figures stay the same
        (unlabelled traces can move the run TTL's clock or the live-run cap)."""
        assert first.labels is not None
        wanted = first.labelled_traces
        kept = [view for view in self.views if view.trace_id in wanted]
        if len(kept) == len(self.views):
            return
        everything, self.views = self.views, kept
        self._cache.clear()
        again = self.replay(first.settings)
        if again.labels is None or again.labels.to_json() != first.labels.to_json():
            self.views = everything
            self._cache.clear()
            self._cache[tuple(first.settings[name] for name in self.names)] = first

    def run(self, current: Score) -> Score:
        """Coordinate descent from ``current``; returns the best score found."""
        if not self._started:
            self._started = time.monotonic()
        best = current
        for number in range(1, MAX_PASSES + 1):
            self.passes = number
            improved = False
            for name in self.names:
                was = best.settings[name]
                values = candidate_values(name, was, getattr(self.base, name))
                tried = 0
                for side in _sides(values, was):
                    for index, value in enumerate(side):
                        settings = {**best.settings, name: value}
                        score = self._try(settings, best.tally.false_stops)
                        if score is None:
                            return best
                        tried += 1
                        if not score.pruned and score.key() > best.key():
                            best = score
                            improved = True
                        elif index == 0 and len(side) > 1 and _same(score, best):
                            break  # the far end changes nothing: nor will what lies between
                if self.progress is not None and tried:
                    now = best.settings[name]
                    what = f"{_plain(was)} -> {_plain(now)}" if now != was else "kept"
                    self.progress(
                        f"pass {number}, {name}: {what} ({tried} tried; "
                        f"{_figures_short(best.tally)}; {self.replays} replays, "
                        f"{time.monotonic() - self._started:.1f} s)"
                    )
            if not improved:
                break
        return best

    _started = 0.0

    def _try(self, settings: dict[str, Any], allowed_false_stops: int) -> Score | None:
        """The candidate's score, or ``None`` when the budget or the cap is used up."""
        key = tuple(settings[name] for name in self.names)
        if key not in self._cache:
            if self.replays >= self.max_candidates:
                self.out_of_budget = f"the cap of {self.max_candidates} candidates"
            elif time.monotonic() - self._started > self.budget_seconds:
                self.out_of_budget = f"the budget of {self.budget_seconds:g} s"
            if self.out_of_budget:
                return None
        return self.replay(settings, allowed_false_stops=allowed_false_stops)


def _sides(values: Sequence[Any], current: Any) -> list[list[Any]]:
    """The values to try, in runs whose first value is the far end of a range of numbers
    (below the current value, then above it): when the far end gives the same figures as
    the current value, the thresholds between are taken to change nothing either (the
    detectors' thresholds are monotone: a lower one fires at least as early)."""
    numeric = isinstance(current, (int, float)) and not isinstance(current, bool)
    others = [value for value in values if value != current]
    if not numeric:
        return [[value] for value in others]
    below = sorted((value for value in others if value < current), reverse=True)
    above = sorted(value for value in others if value > current)
    return [side[-1:] + side[:-1] for side in (below, above) if side]


def _same(score: Score, best: Score) -> bool:
    """The same outcome on every labelled run (figures, per set and per detector)."""
    if score.labels is None or best.labels is None:
        return False
    return score.labels.to_json() == best.labels.to_json()


def _figures_short(tally: Tally) -> str:
    return (
        f"caught {tally.caught}/{tally.loop_runs}, {tally.false_stops} false STOPs, "
        f"saved {tally.saved_tool_calls}"
    )


def _plain(value: Any) -> str:
    return env_line("x", value).partition("=")[2]


# -- the report ---------------------------------------------------------------------------


@dataclass
class Suggestion:
    current: Score
    best: Score
    search: Search
    spans: int
    seconds: float

    @property
    def changes(self) -> dict[str, Any]:
        return {
            name: value
            for name, value in self.best.settings.items()
            if value != self.current.settings[name]
        }

    @property
    def meets_goal(self) -> bool:
        return self.best.tally.false_stops == 0

    def to_json(self) -> dict[str, Any]:
        assert self.current.labels is not None and self.best.labels is not None
        search = self.search
        return {
            "current": {
                "settings": {
                    LoopGuardConfig.env_name(k): v for k, v in self.current.settings.items()
                },
                "labels": self.current.labels.to_json(),
            },
            "suggested": {
                "changes": {LoopGuardConfig.env_name(k): v for k, v in self.changes.items()},
                "env": [env_line(k, v) for k, v in self.changes.items()],
                "settings": {LoopGuardConfig.env_name(k): v for k, v in self.best.settings.items()},
                "labels": self.best.labels.to_json(),
                "no_false_stop": self.meets_goal,
            },
            "search": {
                "settings": [LoopGuardConfig.env_name(name) for name in search.names],
                "replays": search.replays,
                "passes": search.passes,
                "stopped_by": search.out_of_budget,
                "spans": self.spans,
                "spans_replayed": len(search.views),
                "seconds": round(self.seconds, 3),
            },
        }

    def text(self) -> str:
        assert self.current.labels is not None and self.best.labels is not None
        search = self.search
        total = self.current.tally
        lines = [
            f"suggest-settings: {total.loop_runs + total.clean_runs} labelled runs "
            f"({total.loop_runs} loop, {total.clean_runs} clean), {self.spans:,} spans; "
            f"{len(search.names)} settings searched, {search.replays} replays in "
            f"{search.passes} pass{'es' if search.passes != 1 else ''}, {self.seconds:.1f} s"
            + (f" (stopped by {search.out_of_budget})" if search.out_of_budget else ""),
            "current settings:",
            *_figure_lines(self.current.labels),
        ]
        changes = self.changes
        if changes:
            lines.append("suggested settings (paste; only those that differ):")
            lines += [env_line(name, value) for name, value in changes.items()]
            lines.append("with them:")
            lines += _figure_lines(self.best.labels)
        else:
            lines.append("suggested settings: the current ones (no searched change does better)")
        if not self.meets_goal:
            lines.append(
                f"no settings searched avoid every false STOP: the fewest found is "
                f"{self.best.tally.false_stops}"
            )
        return "\n".join(lines) + "\n"


def _figure_lines(score: LabelScore) -> list[str]:
    lines = [f"  all: {_figures(score.total)}"]
    sets = sorted(score.sets.items())
    if len(sets) > 1:
        lines += [f"  {name}: {_figures(tally)}" for name, tally in sets]
    return lines


# -- the command ----------------------------------------------------------------------------


def collect_views(batches: Iterable[Sequence[SpanView]], max_spans: int) -> list[SpanView]:
    views: list[SpanView] = []
    for batch in batches:
        views.extend(batch)
        if len(views) > max_spans:
            raise SuggestError(
                f"--suggest-settings keeps the spans in memory: more than {max_spans:,} "
                "spans; give fewer runs (the labelled ones) or raise --suggest-max-spans"
            )
    return views


def suggest(
    views: list[SpanView],
    labels: dict[str, Label],
    base: LoopGuardConfig,
    *,
    buffer_spans: int = DEFAULT_BUFFER_SPANS,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: Callable[[str], None] | None = None,
) -> tuple[Suggestion, LabelScore]:
    """Replay with ``base`` (the figures ``analyze --labels`` gives), then search."""
    started = time.monotonic()
    search = Search(
        views,
        labels,
        base,
        buffer_spans=buffer_spans,
        budget_seconds=budget_seconds,
        max_candidates=max_candidates,
        progress=progress,
    )
    search._started = started  # the budget counts the first replay too
    current = search.replay(search.settings_of(base))
    if current.labels is None:  # pragma: no cover - the current settings are valid
        raise SuggestError("the current settings do not validate")
    first_labels = current.labels
    if not first_labels.total.loop_runs and not first_labels.total.clean_runs:
        raise SuggestError(
            f"--suggest-settings: no labelled run in the input ({len(labels)} labels matched "
            "no run)"
        )
    search.keep_labelled_traces(current)
    if progress is not None:
        progress(
            f"current settings: {_figures(current.tally)}; searching "
            f"{len(search.names)} settings over {len(search.views):,} spans"
        )
    best = search.run(current)
    suggestion = Suggestion(current, best, search, len(views), time.monotonic() - started)
    return suggestion, first_labels


def write(out: TextIO, suggestion: Suggestion, fmt: str) -> None:
    if fmt == "json":
        import json

        out.write(json.dumps(suggestion.to_json(), indent=1) + "\n")
    else:
        out.write(suggestion.text())
