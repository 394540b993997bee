"""What one Messages API turn tells the loop detectors, from a response or from a stream.

A turn is the model's stop reason, its token usage, the tool calls it asked for (the
"tool-call set" the repeated-identical-steps detector compares between turns) and whether
it said anything at all (an empty ``end_turn`` after failing tools is a premature end).
Only names, arguments and emptiness are kept: no text leaves this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# a tool_use block's streamed JSON is kept up to this many characters; past it the
# arguments are signed from the truncated text (signatures cap every value far below this)
MAX_STREAMED_ARGUMENT_CHARS = 65_536
# the answer's text kept for its signature (the repeated-text detector hashes it)
MAX_TEXT_CHARS = 8192


@dataclass(slots=True)
class Turn:
    model: str | None = None
    response_id: str | None = None
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    has_text: bool = False
    text: str = ""  # the first MAX_TEXT_CHARS of the answer's text, hashed by the guard

    def add_text(self, text: str) -> None:
        self.has_text = True
        if len(self.text) < MAX_TEXT_CHARS:
            self.text = (self.text + text)[:MAX_TEXT_CHARS]

    @property
    def empty(self) -> bool:
        return not self.has_text and not self.tool_calls


def _get(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def input_tokens_of(usage: Any) -> int | None:
    """All input tokens, cached ones included, as the GenAI conventions count them."""
    if usage is None:
        return None
    total = None
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = _get(usage, name)
        if isinstance(value, int):
            total = (total or 0) + value
    return total


def turn_from_message(message: Any) -> Turn:
    """A complete ``Message`` (``messages.create`` without streaming)."""
    turn = Turn(
        model=_get(message, "model"),
        response_id=_get(message, "id"),
        stop_reason=_get(message, "stop_reason"),
    )
    usage = _get(message, "usage")
    turn.input_tokens = input_tokens_of(usage)
    output = _get(usage, "output_tokens") if usage is not None else None
    turn.output_tokens = output if isinstance(output, int) else None
    for block in _get(message, "content") or ():
        _add_block(turn, block)
    return turn


def _add_block(turn: Turn, block: Any) -> None:
    kind = _get(block, "type")
    if kind == "tool_use" or kind == "server_tool_use":
        turn.tool_calls.append((str(_get(block, "name")), _get(block, "input")))
    elif kind == "text":
        text = _get(block, "text")
        if isinstance(text, str) and text.strip():
            turn.add_text(text)
    elif kind is not None:  # thinking, images, ...: the model produced something
        turn.has_text = turn.has_text or kind not in ("thinking", "redacted_thinking")


class StreamedTurn:
    """Builds a :class:`Turn` from raw stream events (``message_start`` ... ``message_stop``).

    Holds only what the turn needs: per open ``tool_use`` block its name and the JSON text
    streamed so far (capped), so memory stays bounded however long the answer is.
    """

    __slots__ = ("_blocks", "complete", "started", "turn")

    def __init__(self) -> None:
        self.turn = Turn()
        self.started = False
        self.complete = False
        self._blocks: dict[int, list[Any]] = {}  # index -> [name, json parts, length]

    def add(self, event: Any) -> bool:
        """Feed one event; True when the message is complete (``message_stop``)."""
        kind = _get(event, "type")
        if kind == "message_start":
            self._start(_get(event, "message"))
        elif kind == "content_block_start":
            self._block_start(_get(event, "index"), _get(event, "content_block"))
        elif kind == "content_block_delta":
            self._delta(_get(event, "index"), _get(event, "delta"))
        elif kind == "content_block_stop":
            self._block_stop(_get(event, "index"))
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            self.complete = True
        return self.complete

    def _start(self, message: Any) -> None:
        self.started = True
        turn = self.turn
        turn.model = _get(message, "model")
        turn.response_id = _get(message, "id")
        usage = _get(message, "usage")
        turn.input_tokens = input_tokens_of(usage)
        output = _get(usage, "output_tokens") if usage is not None else None
        turn.output_tokens = output if isinstance(output, int) else None

    def _block_start(self, index: Any, block: Any) -> None:
        kind = _get(block, "type")
        if kind in ("tool_use", "server_tool_use"):
            initial = _get(block, "input")
            self._blocks[index] = [str(_get(block, "name")), [], 0, initial]
        else:
            _add_block(self.turn, block)

    def _delta(self, index: Any, delta: Any) -> None:
        kind = _get(delta, "type")
        if kind == "input_json_delta":
            block = self._blocks.get(index)
            part = _get(delta, "partial_json")
            if (
                block is not None
                and isinstance(part, str)
                and block[2] < MAX_STREAMED_ARGUMENT_CHARS
            ):
                block[1].append(part)
                block[2] += len(part)
        elif kind == "text_delta":
            text = _get(delta, "text")
            if isinstance(text, str) and text:
                self.turn.add_text(text)

    def _block_stop(self, index: Any) -> None:
        block = self._blocks.pop(index, None)
        if block is None:
            return
        name, parts, _length, initial = block
        text = "".join(parts)
        if not text:
            arguments = initial if initial is not None else {}
        else:
            try:
                arguments = json.loads(text)
            except ValueError:  # capped or malformed: sign the text itself
                arguments = text
        self.turn.tool_calls.append((name, arguments))

    def _message_delta(self, event: Any) -> None:
        delta = _get(event, "delta")
        reason = _get(delta, "stop_reason")
        if reason:
            self.turn.stop_reason = reason
        usage = _get(event, "usage")
        output = _get(usage, "output_tokens") if usage is not None else None
        if isinstance(output, int):
            self.turn.output_tokens = max(output, self.turn.output_tokens or 0)
        streamed_input = input_tokens_of(usage)
        if streamed_input:  # newer API versions repeat the input usage here
            self.turn.input_tokens = max(streamed_input, self.turn.input_tokens or 0)
