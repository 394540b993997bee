"""Model turns the caller streams itself: ``BaseChatModel.stream`` / ``astream``.

A hand-written agent loop (``for chunk in model.stream(messages)`` inside an application's
``agent_run``), a LangGraph node that streams its model, or a chain's ``stream`` (which
reaches the model's through ``Runnable.transform``) never passes through
``_generate_with_cache``, which :mod:`otel_loopguard_langchain.model_turns` wraps. This
wrapper (the kit's :func:`~otel_loopguard.kit.streamed_turns.model_turn_stream`, for both)
gives such a turn the same treatment, inside a run the guard knows only:

- At the first chunk asked for (a stream does nothing before): ``preflight_llm``, so in
  ``enforce`` mode a vetoed call raises ``LoopGuardInterrupt`` before the provider is called.
- When the stream is exhausted: one ``llm_response`` read from the chunks added up
  (``AIMessageChunk`` addition sums ``usage_metadata``, joins ``tool_call_chunks`` into
  tool calls and merges ``response_metadata``, finish reason included), unless a layer
  below (our OpenAI SDK package) reported the turn. At a STOP (enforce mode: a token budget
  passed, max steps) ``LoopGuardInterrupt`` raises from the stream at its end, after the
  caller has every chunk and before it can run the tools the answer asks for.

The model turn is open only while the provider works: around each step of langchain's
stream, not across the ``yield`` to the caller. Between chunks the caller's code runs in
the caller's context; a turn left open there would take the report of any model call the
caller makes meanwhile (a summariser's ``invoke``, an OpenAI SDK call our package reports)
for this turn's and drop this one. So every step opens a turn of its own and the stream
remembers whether any of them was reported below.

When ``stream`` falls back to ``invoke`` (a model without ``_stream``, ``disable_streaming``)
the ``_generate_with_cache`` wrapper inside reports the turn, which marks the step's turn:
the turn counts once. That wrapper's pre-flight check repeats ours; it is a check, it
counts nothing.

A stream the caller abandons (``break``, ``close()`` / ``aclose()``, an exception in the
loop body, garbage collection) reports nothing. An abandoned answer is not a turn the agent
acts on: its tool calls do not run and its text is not an answer, so a partial report would
feed the per-turn detectors a wrong turn (a non-empty stop-like turn resets the premature
end count; cut-off tool arguments make a signature no real call has). What it would count
is mostly unknown anyway: OpenAI-compatible providers send the usage in the last chunk. And
the close may run later, in the garbage collector or the event loop's async generator
finalizer, in another context where the run is not current and where nothing may raise.
The provider's stream is closed inside a turn of its own, so a layer below that reports on
close marks that turn rather than one of the caller's. The next model call of the run is
still pre-flight checked.

Delivery (``enforce`` mode): a recommendation waiting for the run when the stream is made
goes into its request as a ``HumanMessage`` at the end of a copy of the input's messages
(as in :mod:`otel_loopguard_langchain.model_turns`), at the first chunk asked for, after the
pre-flight check: the stream is then made again from the new input (langchain's stream
calls the provider only when read, so the first one was never sent). A streamed answer is
not asked again when it was cut off or empty: its chunks are already the caller's. The
waiting message then goes into the run's next model call.

The cost per chunk does not grow with the answer: the chunks are added up in batches of
:data:`_MERGE_EVERY`, the text is dropped after each batch (keeping only whether any of it
was non-blank), and the tool call arguments are parsed once, at the end (see
:class:`_StreamedAnswer`; ``benchmarks/langchain_stream.py`` measures it at two lengths).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from otel_loopguard import current_run, get_guard
from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.recommendations import deliver_waiting
from otel_loopguard.kit.run_streams import aclose_stream, close_stream, is_async_stream
from otel_loopguard.kit.streamed_turns import model_turn_stream
from otel_loopguard_langchain.model_turns import has_text, internal_message, read_message

if TYPE_CHECKING:  # the framework is imported where it is used: the package imports without it
    from langchain_core.messages import BaseMessage

# chunks held before they are added to the running total: one ``AIMessageChunk`` addition
# (a pydantic object, a long tool argument copied) per batch, not per chunk
_MERGE_EVERY = 32
# where the tool call pieces wait in the running total (see _StreamedAnswer)
_CALLS = "otel_loopguard_tool_call_chunks"


def stream_wrapper(
    wrapped: Callable[..., Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Wrap ``BaseChatModel.stream`` and ``BaseChatModel.astream``."""
    # langchain's generator, made now as without us (bad arguments fail here); it calls
    # the provider only when read
    chunks = wrapped(*args, **kwargs)
    if current_run() is None:  # no run we know of: left untouched
        return chunks
    guard = get_guard()
    if guard.deliveries.any_waiting():  # a recommendation may go into this request
        chunks = _delivering(wrapped, instance, args, kwargs, chunks)
    answer = _StreamedAnswer(guard)
    return model_turn_stream(
        chunks,
        lambda: answer.read(instance),
        package="langchain",
        add=answer.add,
        # made in a run, read after it: the call is outside it
        applies=lambda: current_run() is not None,
    )


def _delivering(
    wrapped: Callable[..., Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    chunks: Any,
) -> Any:
    """``chunks``, or (when a recommendation is delivered at the first pull, which the kit's
    stream makes after its pre-flight check) the stream made again from the input carrying
    it. The first stream was never read, so it never reached the provider."""
    call = ModelCall(instance, args, kwargs)

    def request() -> Any:
        if deliver_waiting(get_guard(), call, _deliver_input, "langchain") is None:
            return None
        return wrapped(*call.args, **call.kwargs)

    if is_async_stream(chunks):
        return _adelivering(chunks, request)
    return _sync_delivering(chunks, request)


def _sync_delivering(chunks: Iterator[Any], request: Callable[[], Any]) -> Iterator[Any]:
    made = request()
    if made is not None:
        close_stream(None, chunks)  # never started: nothing was sent
        chunks = made
    yield from chunks


async def _adelivering(
    chunks: AsyncIterator[Any], request: Callable[[], Any]
) -> AsyncIterator[Any]:
    made = request()
    if made is not None:
        await aclose_stream(None, chunks)
        chunks = made
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await aclose_stream(None, chunks)


def _deliver_input(call: ModelCall, message: str) -> bool:
    """``stream(input, config=None, *, stop=None, **kwargs)``: the recommendation at the end
    of the input's messages (a copy; a string or a prompt value becomes its messages)."""
    named = not call.args
    model_input = call.kwargs.get("input") if named else call.args[0]
    messages = _input_messages(model_input)
    if messages is None:
        return False
    messages = [*messages, internal_message(message)]
    if named:
        call.kwargs = {**call.kwargs, "input": messages}
    else:
        call.args = (messages, *call.args[1:])
    return True


def _input_messages(model_input: Any) -> list[BaseMessage] | None:
    """The messages a chat model makes of its input (``BaseChatModel._convert_input``)."""
    from langchain_core.messages import HumanMessage, convert_to_messages
    from langchain_core.prompt_values import PromptValue

    if isinstance(model_input, PromptValue):
        return model_input.to_messages()
    if isinstance(model_input, str):
        return [HumanMessage(content=model_input)]
    if isinstance(model_input, Sequence):
        return convert_to_messages(model_input)
    return None


class _StreamedAnswer:
    """What the turn report needs of a streamed answer, added up as the chunks pass.

    The chunks are added up a batch at a time with ``AIMessageChunk`` addition, and the
    running total drops its text after each batch (``_text`` remembers whether any was
    non-blank). Tool call pieces ride in ``additional_kwargs`` until the end: an
    ``AIMessageChunk`` holding ``tool_call_chunks`` re-parses all their arguments as
    partial JSON, in Python, on every addition, which for a long argument (a file a
    coding agent writes, 100 kB in thousands of pieces) cost seconds per turn.
    ``additional_kwargs`` lists are joined by the same ``merge_lists``, without the parse;
    :meth:`read` parses the joined calls once.

    A failure of ours (a chunk langchain cannot add) is counted and logged once; the turn
    is then not reported, and the stream goes on.
    """

    __slots__ = ("_failed", "_guard", "_pending", "_text", "_total")

    def __init__(self, guard: Any) -> None:
        self._guard = guard
        self._pending: list[Any] = []
        self._total: Any = None
        self._text = False
        self._failed = False

    def add(self, chunk: Any) -> None:
        if self._failed:
            return
        try:
            if not self._text:
                self._text = has_text(getattr(chunk, "content", None))
            calls = getattr(chunk, "tool_call_chunks", None)
            if calls:
                chunk = chunk.model_copy(
                    update={"tool_call_chunks": [], "additional_kwargs": {_CALLS: calls}}
                )
            self._pending.append(chunk)
            if len(self._pending) >= _MERGE_EVERY:
                self._merge()
        except Exception as exc:  # never let our bookkeeping break the caller's stream
            self._failed = True
            self._pending = []
            self._guard.telemetry.internal_error("langchain.model_stream", exc)

    def read(self, model: Any) -> dict[str, Any] | None:
        """The report's arguments (the kit's ``report_turn`` catches our errors)."""
        if self._failed:
            return None
        self._merge()
        total = self._total
        if total is None:
            return None
        calls = _carried_calls(total)
        if calls:  # one AIMessageChunk made of the joined pieces parses them, once
            total = type(total)(
                content="",
                tool_call_chunks=calls,
                usage_metadata=total.usage_metadata,
                response_metadata=total.response_metadata,
            )
        return read_message(model, total, self._text)

    def _merge(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        # the batch added up first (short strings), then to the total: a long tool argument
        # is copied once a batch, not once a chunk
        total = pending[0] + pending[1:] if len(pending) > 1 else pending[0]
        if self._total is not None:
            total = self._total + total
        calls = _carried_calls(total)
        self._total = total.model_copy(
            update={"content": "", "additional_kwargs": {_CALLS: calls} if calls else {}}
        )


def _carried_calls(message: Any) -> Any:
    extra = getattr(message, "additional_kwargs", None)
    return extra.get(_CALLS) if isinstance(extra, dict) else None
