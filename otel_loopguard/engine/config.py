"""Configuration: one pydantic model, read from ``OTEL_LOOPGUARD_*`` variables.

A bad value must never crash the host program: :meth:`LoopGuardConfig.from_env` validates
each variable on its own, and a value that fails gets one warning naming the variable, the
value and what is accepted, and the default is used instead.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

logger = logging.getLogger("otel_loopguard.engine.config")

ENV_PREFIX = "OTEL_LOOPGUARD_"

DEFAULT_READ_ONLY_TOOLS: tuple[str, ...] = (
    "read_file",
    "grep",
    "find_files",
    "list_directory",
    "list_files",
    "glob",
    "search_files",
    "view_file",
    "cat",
    "ls",
    # SWE-agent's file viewer and search commands
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "search_file",
    "search_dir",
    "find_file",
    # Claude Code's (Read, Grep, Glob, LS match read, grep, glob, ls)
    "read",
)

#: tools that only record a thought (detectors/note_tools.py): neither work nor progress
DEFAULT_NOTE_TOOLS: tuple[str, ...] = (
    "think",
    "thinking",
    "thought",
    "reflect",
    "scratchpad",
    "note_to_self",
)

#: tools that hand a task to a coworker agent and return its answer (handoff_cycle.py):
#: CrewAI's "Delegate work to coworker" / "Ask question to coworker" (older releases:
#: "co-worker"), Agno teams' member delegation
DEFAULT_DELEGATION_TOOLS: tuple[str, ...] = (
    "delegate_work_to_coworker",
    "ask_question_to_coworker",
    "delegate_work_to_co_worker",
    "ask_question_to_co_worker",
    "delegate_task_to_member",
    "delegate_task_to_members",
)

DEFAULT_SHELL_TOOLS: tuple[str, ...] = (
    "bash",
    "shell",
    "run_shell_command",
    "run_command",
    "execute_command",
    "terminal",
    "exec",
)


class ModelPrice(BaseModel):
    """Price of one model in currency units per one million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


def _choice(value: Any) -> Any:
    """A choice as users write it: ``ENFORCE``, `` Enforce `` are ``enforce``."""
    if isinstance(value, str):
        return value.strip().lower()
    return value


class LoopGuardConfig(BaseModel):
    """Every setting of otel-loopguard. Field ``foo_bar`` is read from ``OTEL_LOOPGUARD_FOO_BAR``.

    Thresholds are counts of occurrences ("fires on the Nth"), limits of ``0`` mean off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(True, description="master switch")
    mode: Literal["observe", "enforce"] = Field(
        "observe", description="`observe` records, `enforce` interrupts"
    )
    policy: str = Field(
        "default", description="`default`, `strict`, `observe`, or `module:callable`"
    )

    # detector thresholds
    repetition_threshold: int = Field(
        3, ge=2, description="identical calls that count as repetition"
    )
    near_duplicate: bool = Field(True, description="also match paraphrased repeats of a call")
    similarity: str | None = Field(
        None, description="optional `module:callable(a, b) -> float` similarity hook"
    )
    similarity_threshold: float = Field(0.9, gt=0, le=1, description="hook score that is a repeat")
    max_repeated_tool_steps: int = Field(
        3, ge=2, description="identical consecutive tool-call sets"
    )
    no_progress_threshold: int = Field(2, ge=1, description="repeats of an unchanged output")
    poll_patience: int = Field(
        10, ge=1, description="repeats of an unchanged output when the agent waited between"
    )
    error_poll_patience: int = Field(
        2,
        ge=1,
        description="repeats of an unchanged error answer (a failure, a non-zero exit code, "
        "an error text) when the agent waited between: waiting does not cure it",
    )
    read_time_gap_patience: bool = Field(
        False,
        description="30 s between tool events gives an unchanged re-read of the same file "
        "(a read-only tool or command) the poll patience",
    )
    idle_wait_threshold: int = Field(
        3,
        ge=0,
        description="consecutive waits with nothing else done and the same answer before a "
        "replan (twice as many: stop; 0 = off)",
    )
    cycle_user_message_resets: bool = Field(
        True, description="a new user message starts an action cycle's count afresh"
    )
    cycle_min_periods: int = Field(2, ge=2, description="full periods of an action cycle")
    cycle_max_period: int = Field(4, ge=2, le=16, description="longest cycle period looked for")
    permanent_failure_threshold: int = Field(
        2, ge=1, description="occurrences of the same non-retryable error"
    )
    retryable_failure_threshold: int = Field(
        4, ge=1, description="occurrences of the same retryable error"
    )
    quota_reset_horizon: float = Field(
        900.0,
        ge=0,
        description="seconds: a usage limit resetting later than this (or a quota, billing "
        "or credit error) is a permanent failure, also as a 429 (0 = off)",
    )
    handoff_cycle_threshold: int = Field(2, ge=1, description="closed handoff cycles")
    delegation_tools: tuple[str, ...] = Field(
        DEFAULT_DELEGATION_TOOLS,
        description="tools that delegate a task to a coworker agent named in their arguments",
    )
    delegation_repeat_threshold: int = Field(
        2, ge=1, description="delegations answered with an answer already given, in a row"
    )
    delegation_ack_words: int = Field(
        4, ge=0, description="a delegation answer of fewer content words is an acknowledgement"
    )
    sub_agent_replans: int = Field(
        1, ge=0, description="loop stops about a sub-agent answered with replan first"
    )
    deliver_recommendations: bool = Field(
        True,
        description="enforce mode: add a replan's recommendation to the run's next model request",
    )
    max_nudges: int = Field(
        1,
        ge=0,
        description="recommendations delivered for one detector before its next replan stops "
        "(0: a replan never becomes a stop)",
    )
    max_tokens_recoveries: int = Field(
        2, ge=0, description="truncations answered with a continuation"
    )
    truncation_stops: bool = Field(
        False, description="stop at the truncation after the continuations, not warn"
    )
    max_premature_end_recoveries: int = Field(2, ge=0, description="empty end-turns re-prompted")
    output_failure_markers: bool = Field(
        True,
        description="a successful tool call whose output shows failing tests, a traceback or "
        "a non-zero exit code counts as failing for premature_end",
    )
    shell_failure_threshold: int = Field(2, ge=1, description="consecutive shell failures")
    shell_tools: tuple[str, ...] = Field(
        DEFAULT_SHELL_TOOLS, description="tools that run shell commands"
    )
    read_only_loop_threshold: int = Field(8, ge=2, description="consecutive read-only steps")
    repeated_text_threshold: int = Field(
        3, ge=2, description="consecutive model turns saying the same (or nearly the same)"
    )
    read_only_tools: tuple[str, ...] = Field(DEFAULT_READ_ONLY_TOOLS, description="read-only tools")
    note_tools: tuple[str, ...] = Field(
        DEFAULT_NOTE_TOOLS, description="tools that only record a thought"
    )
    wait_tools: tuple[str, ...] = Field(
        (), description="tools that wait, besides those named sleep*, wait*, delay*"
    )
    history_size: int = Field(
        128, ge=8, le=100_000, description="distinct signatures remembered per run"
    )
    no_new_information_threshold: int = Field(
        3,
        ge=2,
        description="stale results in a row (nothing the run has not seen, arguments changing "
        "in wording, order or flags) of one tool or one read resource before the nudge",
    )
    no_new_information_read_threshold: int = Field(
        4,
        ge=2,
        description="stale reads in a row of one file or resource (overlapping ranges "
        "surfacing no line the run has not read) before the nudge",
    )
    no_new_information_stop: int = Field(
        0,
        ge=0,
        description="stale results in a row that stop without a nudge (0: only the ladder stops)",
    )
    seen_results: int = Field(
        256, ge=8, le=100_000, description="result and work fingerprints remembered per run"
    )
    seen_lines: int = Field(
        2048, ge=128, le=1_000_000, description="fingerprints of read lines remembered per run"
    )

    # budgets and limits (0 = off)
    token_budget: int = Field(0, ge=0, description="tokens per run")
    cost_limit: float = Field(0.0, ge=0, description="cost per run, in the price table's currency")
    max_steps: int = Field(0, ge=0, description="model turns per run")
    max_tool_calls: int = Field(0, ge=0, description="tool calls per run")
    timeout: float = Field(0.0, ge=0, description="wall time per run, seconds")
    reserve_tokens: int = Field(512, ge=0, description="budget-proximity token headroom")
    reserve_cost_fraction: float = Field(0.1, ge=0, le=1, description="cost headroom fraction")
    prices: str | None = Field(None, description="JSON file: model -> input/output price per 1M")

    # policy, signatures, privacy, bounds
    signal_window: int = Field(12, ge=1, le=1000, description="signals the policy considers")
    signature_max_chars: int = Field(200, ge=8, le=100_000, description="per-value signature cap")
    capture_content: bool = Field(False, description="export raw tool arguments/results")
    export_signatures: bool = Field(
        True,
        description="put call/result signature hashes on tool spans, so saved traces "
        "replay without content",
    )
    max_runs: int = Field(10_000, ge=1, description="live runs kept (LRU)")
    run_ttl: float = Field(3600.0, gt=0, description="idle seconds before a run is dropped")
    standalone_idle_gap: float = Field(
        300.0,
        ge=0,
        description="seconds without a call after which gated calls outside any run and any "
        "parent span, in one thread or asyncio task, start a new run (0: each is a run of its "
        "own)",
    )

    # the run store (docs/fleet.md): runs shared between processes
    store: str = Field("memory", description="`memory` or a redis:// / rediss:// URL")
    store_timeout: float = Field(50.0, gt=0, le=60_000, description="ms a store call may wait")
    store_prefix: str = Field("loopguard:", description="key prefix in the store")
    user_token_budget: int = Field(0, ge=0, description="tokens per user per window, all runs")
    user_cost_limit: float = Field(0.0, ge=0, description="cost per user per window, all runs")
    user_budget_window: float = Field(3600.0, ge=1, description="fleet budget window, seconds")
    user_key: str | None = Field(None, description="baggage key naming the user or tenant")

    _split_lists = field_validator(
        "read_only_tools",
        "shell_tools",
        "note_tools",
        "wait_tools",
        "delegation_tools",
        mode="before",
    )(_comma_list)
    _choices = field_validator("mode", mode="before")(_choice)

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str) -> str:
        if value.strip().lower() != "memory" and not value.strip().lower().startswith(
            _STORE_SCHEMES
        ):
            raise ValueError("not `memory` or a Redis URL")
        return value.strip()

    @field_validator("store_prefix", "user_key")
    @classmethod
    def _plain_key(cls, value: str | None) -> str | None:
        if value is not None and (not value.isprintable() or any(c.isspace() for c in value)):
            raise ValueError("spaces or control characters")
        return value

    @classmethod
    def env_name(cls, field_name: str) -> str:
        return ENV_PREFIX + field_name.upper()

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> LoopGuardConfig:
        """Read the configuration; never raises for a bad variable (warns and uses the default).

        ``overrides`` (already-typed values, e.g. from a CLI flag) win over the environment.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, info in cls.model_fields.items():
            raw = env.get(cls.env_name(name))
            if raw is None or raw.strip() == "":
                continue
            candidate: Any = raw.strip()
            if name in _CHOICE_FIELDS:
                candidate = _choice(candidate)
            try:
                value = _FIELD_ADAPTERS[name].validate_python(
                    _comma_list(candidate) if name in _LIST_FIELDS else candidate
                )
                _check_constraints(name, value)
            except (ValidationError, ValueError):
                logger.warning(
                    "otel-loopguard: ignoring %s=%r (set by the variable or by "
                    "opentelemetry-instrument's --loopguard_%s flag): %s; using the default %s",
                    cls.env_name(name),
                    _shown(name, raw),
                    name,
                    _accepted(name, raw),
                    _plain(info.default),
                )
                continue
            values[name] = value
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:  # an override that does not fit
            logger.warning("otel-loopguard: invalid settings (%s); using defaults", exc)
            return cls.model_validate({})

    def load_prices(self) -> dict[str, ModelPrice]:
        """The price table, or an empty one (with one warning) when the file is unusable."""
        if not self.prices:
            return {}
        try:
            with open(self.prices, encoding="utf-8") as handle:
                raw = json.load(handle)
            return _PRICE_TABLE.validate_python(raw)
        except (OSError, ValueError, ValidationError) as exc:
            logger.warning(
                "otel-loopguard: ignoring %s=%r: %s; expected a JSON object "
                '{"model": {"input": price_per_1M, "output": price_per_1M}}; costs are unknown',
                self.env_name("prices"),
                self.prices,
                str(exc).splitlines()[0],
            )
            return {}


_PRICE_TABLE: TypeAdapter[dict[str, ModelPrice]] = TypeAdapter(dict[str, ModelPrice])
_STORE_SCHEMES = ("redis://", "rediss://", "unix://")
#: what a text setting with a rule of its own takes, for the warning
_ACCEPTED_TEXT = {
    "store": "`memory` or a redis://, rediss:// or unix:// URL",
    "store_prefix": "text without spaces or control characters",
    "user_key": "a baggage key (no spaces or control characters)",
}
_LIST_FIELDS = {
    "read_only_tools",
    "shell_tools",
    "note_tools",
    "wait_tools",
    "delegation_tools",
}
#: fields with a fixed set of values, read in any case and spacing
_CHOICE_FIELDS = {
    name
    for name, info in LoopGuardConfig.model_fields.items()
    if get_origin(info.annotation) is Literal
}
_FIELD_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    # every field is annotated: annotation is never None here
    name: TypeAdapter(info.annotation)  # type: ignore[arg-type]
    for name, info in LoopGuardConfig.model_fields.items()
}


def _check_constraints(name: str, value: Any) -> None:
    """Apply the field's own bounds (ge/le/...) by validating it alone on the model."""
    LoopGuardConfig.__pydantic_validator__.validate_assignment(
        LoopGuardConfig.model_construct(), name, value
    )


def _shown(name: str, raw: str) -> str:
    """A value as a warning may show it: a store URL without its password."""
    if name == "store" and "@" in raw:
        scheme, _, rest = raw.rpartition("://")
        return (
            f"{scheme}://***@{rest.rsplit('@', 1)[1]}" if scheme else "***@" + raw.rsplit("@", 1)[1]
        )
    return raw


def _plain(value: Any) -> str:
    """A default as the variable would be written: ``true``, ``0.9``, ``'observe'``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return repr(",".join(value))
    return repr(value)


#: how a bound of annotated_types (``Ge(ge=0)``...) reads in a warning
_BOUND_WORDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def _accepted(name: str, raw: str | None = None) -> str:
    """What the field takes, in plain words: ``expected a number >= 0``; for a choice, the
    valid values and the one closest to ``raw`` (``did you mean 'enforce'?``)."""
    info = LoopGuardConfig.model_fields[name]
    annotation = info.annotation
    if annotation is bool:
        what = "true or false"
    elif annotation is int:
        what = "a whole number"
    elif annotation is float:
        what = "a number"
    elif name in _LIST_FIELDS:
        what = "a comma-separated list of names"
    elif get_origin(annotation) is Literal:
        choices = [str(choice) for choice in get_args(annotation)]
        what = "one of: " + ", ".join(choices)
        closest = _closest(raw, choices) if raw is not None else None
        if closest is not None:
            what += f" (did you mean {closest!r}?)"
    elif name in _ACCEPTED_TEXT:
        what = _ACCEPTED_TEXT[name]
    else:
        what = "text"
    bounds = [
        f"{word} {getattr(bound, attribute)}"
        for bound in info.metadata
        for attribute, word in _BOUND_WORDS
        if hasattr(bound, attribute)
    ]
    return f"expected {' '.join([what, ' and '.join(bounds)]).strip()}"


def _closest(raw: str, choices: list[str]) -> str | None:
    """The valid value a mistyped one most looks like (``enforced``, ``enfroce``, ``obs``),
    or None when none is close."""
    typed = _choice(raw)
    matches = difflib.get_close_matches(typed, choices, n=1, cutoff=0.5)
    if matches:
        return matches[0]
    prefixed = [choice for choice in choices if typed and choice.startswith(typed[:3])]
    return prefixed[0] if len(prefixed) == 1 else None
