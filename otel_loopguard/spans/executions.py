"""One real execution seen by two instrumentations counts once.

A user who adds our framework package keeps the tracing they already have (OpenInference,
OpenLLMetry): one tool execution then has our gate's span and theirs, one model call our
wrapper's report and their model span. Their spans cannot be told apart by the tree:
OpenInference's and Traceloop's LangChain tracers parent a tool span to their own chain span
(they build the tree from callback run ids, not the current context), so it is neither
inside our gate's span nor its parent. What both sides carry is what this module compares:

* a **tool-call id** on both: the same id, at overlapping times, is the same execution
  (the names may be spelled differently);
* else the **tool name** (model calls: none) and **overlapping time** in the same trace; a
  tool span that does not say which tool ran (OpenLLMetry's LlamaIndex ``FunctionTool.task``
  without content: the tool is named only in its result) is recorded without a name and
  matches any tool at overlapping times;
* a model call's **response id** (``gen_ai.response.id``) is its call id, and the one
  answer seen twice at overlapping times is one call whichever source reported it: the
  Anthropic SDK's own ``chat`` span and OpenLLMetry's sibling span of the same request
  both write the GenAI conventions (one kind attribute, so one source by it), and counted
  twice they doubled the run's steps and tokens (a cached answer keeps its id, but a
  second call of it does not overlap the first).

Each side records what it saw in its trace's :class:`Executions` (the gate when its tool
span opens, or when its wrapper reports a model turn; the follower for every tool or model
span it fed), and a span of another source that matches a recorded execution is not fed.
An execution is matched at most once per source, so two parallel calls of the same tool,
seen by both, pair off one to one rather than both with the first.

Bounded: a trace keeps its most recent :data:`MAX_EXECUTIONS`; a look-up scans them
(a few in practice: the ones of the current step). No lock: a dict's get, insert and
delete are single steps under the GIL; two threads claiming one execution at once both
read a duplicate, which is what each is.
"""

from __future__ import annotations

from typing import Any, Final

#: the source of what our gate fed itself
GATE: Final = "loopguard"
#: executions a trace remembers (the oldest dropped first)
MAX_EXECUTIONS: Final = 64
#: the end of an execution still running
_OPEN: Final = 1 << 62


class Execution:
    """One tool execution or model call as one source saw it (times in Unix ns; ``end``
    0 while it runs)."""

    __slots__ = ("call_id", "claimed", "end", "kind", "name", "source", "start")

    def __init__(
        self, kind: str, name: str | None, call_id: str | None, start: int, end: int, source: str
    ) -> None:
        self.kind = kind
        self.name = name
        self.call_id = call_id
        self.start = start
        self.end = end
        self.source = source
        #: sources whose view of this execution was matched already (a tuple: nearly
        #: every execution is never claimed, and an empty tuple is not allocated)
        self.claimed: tuple[str, ...] = ()


class Executions:
    """The recent executions of one trace, by a key of the recorder's (a span id)."""

    def __init__(self) -> None:
        self.recorded: dict[Any, Execution] = {}
        #: the sources that ever recorded here (a set's add is one step under the GIL): a
        #: trace only one source records (no second instrumentation, the common case)
        #: answers :meth:`claim` without a scan
        self.sources: set[str] = set()
        #: the response ids of the model calls recorded (bounded loosely: emptied past
        #: 4 x MAX_EXECUTIONS): a model span of the one source whose answer id is not among
        #: them answers :meth:`claim` without a scan
        self.answers: set[str] = set()

    def record(
        self,
        key: Any,
        kind: str,
        name: str | None,
        call_id: str | None,
        start: int,
        end: int,
        source: str,
    ) -> None:
        recorded = self.recorded
        recorded[key] = Execution(kind, name, call_id, start, end, source)
        self.sources.add(source)
        if call_id and kind == "llm":
            answers = self.answers
            if len(answers) >= 4 * MAX_EXECUTIONS:
                answers.clear()
            answers.add(call_id)
        if len(recorded) > MAX_EXECUTIONS:
            # another thread may have taken it first (a try, not contextlib.suppress: past
            # the first MAX_EXECUTIONS spans of a trace this runs for every span)
            try:  # noqa: SIM105
                del recorded[next(iter(recorded))]
            except (KeyError, RuntimeError, StopIteration):
                pass

    def ended(self, key: Any, end: int) -> None:
        """An open execution (the gate's tool span) ended at ``end``."""
        execution = self.recorded.get(key)
        if execution is not None:
            execution.end = end

    def claim(
        self,
        kind: str,
        name: str | None,
        call_id: str | None,
        start: int,
        end: int,
        source: str,
        *,
        answer_id: bool = False,
    ) -> bool:
        """True when this span (of ``source``) describes an execution another source
        recorded already (module docstring); it is then claimed for ``source``. With
        ``answer_id`` (``call_id`` is a model answer's response id), a record of the
        same source with the same id matches too."""
        sources = self.sources
        if not sources:
            return False
        if len(sources) == 1 and source in sources and not (answer_id and call_id in self.answers):
            return False  # no other source recorded here, nor this answer: nothing to match
        for execution in tuple(self.recorded.values()):
            if execution.kind != kind:
                continue
            if execution.source == source and not (answer_id and execution.call_id == call_id):
                continue
            if source in execution.claimed:
                continue
            if call_id and execution.call_id:
                if call_id != execution.call_id:
                    continue
            elif name != execution.name and name is not None:
                continue  # (a tool of no known name: any tool at the same time)
            other_end = execution.end or _OPEN
            if execution.start > end or start > other_end:
                continue  # not at the same time
            execution.claimed = (*execution.claimed, source)
            return True
        return False
