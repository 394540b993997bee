"""What a model turn's finish reason means, in every provider's spelling.

Providers name the same outcome differently (OpenAI ``length`` / ``tool_calls``,
Anthropic ``max_tokens`` / ``end_turn`` / ``tool_use``, Gemini ``MAX_TOKENS`` / ``STOP``),
and adapters pass them through as they come. Comparisons are case-insensitive; a
comma-separated list (several choices) counts when any entry does.
"""

from __future__ import annotations

TRUNCATION_REASONS = frozenset(
    {
        "length",
        "max_tokens",
        "max_output_tokens",
        "max_completion_tokens",
        "max_tokens_reached",
        "token_limit",
        "model_length",
        "model_context_window_exceeded",
    }
)

#: the model chose to end its turn (not cut off, not asking for tools)
STOP_REASONS = frozenset(
    {"stop", "end_turn", "stop_sequence", "end", "complete", "completed", "finished", "eos"}
)

_MEMO_LIMIT = 256  # finish reasons are a small vocabulary: answers are memoised, bounded
_truncation: dict[str, bool] = {}
_stop: dict[str, bool] = {}


def _any_in(reason: str, names: frozenset[str], memo: dict[str, bool]) -> bool:
    verdict = memo.get(reason)
    if verdict is None:
        verdict = any(part.strip() in names for part in reason.lower().split(","))
        if len(memo) < _MEMO_LIMIT:
            memo[reason] = verdict
    return verdict


def is_truncation(finish_reason: str | None) -> bool:
    """The model stopped because it hit its output token limit."""
    return finish_reason is not None and _any_in(finish_reason, TRUNCATION_REASONS, _truncation)


def is_stop(finish_reason: str | None) -> bool:
    """The model ended its turn by itself (``stop``, ``end_turn``, ...); ``None`` is unknown."""
    return finish_reason is not None and _any_in(finish_reason, STOP_REASONS, _stop)
