"""Wrapped tool payloads unwrapped to what the tool really got and returned.

Some instrumentations record a tool's arguments or result wrapped in what their callback
was handed, not the tool's own input and output. Signed as they are, the wrapper's ids and
metadata change every call (a LangGraph step number, a tool-call id), so a tool called again
and again with the same arguments and the same empty result never looks repeated, and the
loop is reduced to a warning. The shapes, as data:

* OpenLLMetry (Traceloop)'s LangChain callback envelope for the arguments: ``{"input_str":
  "{'query': 'x'}", "tags": [...], "metadata": {"langgraph_step": 2, ...}, "inputs":
  {"query": "x"}, "kwargs": {"tool_call_id": "call_0", ...}}``: the tool got ``inputs``
  (else ``input_str``); the tool-call id it carries is the call's id;
* its envelope for the result: ``{"output": ..., "kwargs": {...}}``: the tool returned
  ``output``;
* a LangChain ``ToolMessage`` as the result, serialized (``{"lc": 1, "type": "constructor",
  "id": [..., "ToolMessage"], "kwargs": {"content": ..., "tool_call_id": ...}}``) or as its
  plain dict (``{"type": "tool", "content": ..., "tool_call_id": ...}``), or as
  ``message_to_dict`` makes it (OpenInference's LangChain tool spans' ``output.value``:
  ``{"type": "tool", "data": {"content": ..., "tool_call_id": ..., "status": ...}}``): the
  tool returned ``content``;
* a Google GenAI ``FunctionResponse`` as the result (OpenInference's Google ADK tool spans'
  ``output.value``: ``{"id": "call_7", "name": "search", "response": {"result": ...}}``, the
  id new with every call): the tool returned ``response`` (ADK's dict of what the function
  returned);
* a Python call's bound arguments as the arguments, ``{"args": [...], "kwargs": {...}}``
  (Langfuse's ``@observe`` input) or ``{"kwargs": {...}}`` (OpenLLMetry's LlamaIndex
  ``FunctionTool.task`` input): the tool got the keyword arguments (the positional ones when
  it got only those);
* a LlamaIndex ``ToolOutput`` as the result (OpenLLMetry's LlamaIndex ``FunctionTool.task``
  output: ``{"blocks": [...], "tool_name": ..., "raw_input": ..., "raw_output": ...,
  "is_error": ...}``): the tool returned ``raw_output``, its name is ``tool_name``, and
  ``is_error`` says it failed.

Anything else is returned as it is. Cost: a few dict look-ups on a decoded payload; a
payload that is not a dict costs one type check.
"""

from __future__ import annotations

from typing import Any, Final

#: keys of a callback envelope of arguments (``input_str`` and one of the others)
_ARGUMENT_ENVELOPE: Final = "input_str"
_ENVELOPE_CONTEXT: Final = ("metadata", "tags", "kwargs")
#: the keys a result envelope may have, ``output`` among them
_RESULT_ENVELOPE: Final = frozenset(("output", "kwargs"))
#: a LangChain message a tool returned, as ``dumpd`` serializes it
_SERIALIZED_TOOL_MESSAGE: Final = "ToolMessage"
#: the fields of a Google GenAI ``FunctionResponse`` (``name`` and ``response`` among them)
_FUNCTION_RESPONSE: Final = frozenset(
    ("id", "name", "response", "will_continue", "scheduling", "parts")
)
#: the keys of a Python call's bound arguments (``kwargs`` among them)
_BOUND_ARGUMENTS: Final = frozenset(("args", "kwargs"))
#: the fields every LlamaIndex ``ToolOutput`` has (beside ``blocks`` / ``content``)
_TOOL_OUTPUT: Final = frozenset(("tool_name", "raw_input", "raw_output"))


def unwrap_arguments(value: Any) -> tuple[Any, str | None]:
    """``(what the tool got, the tool-call id the wrapper carries)``; a value that is not
    a known envelope is returned unchanged, with no id."""
    if not isinstance(value, dict):
        return value, None
    if _ARGUMENT_ENVELOPE not in value:
        if "kwargs" in value and _BOUND_ARGUMENTS.issuperset(value):
            return _bound(value), None
        return value, None
    if not any(key in value for key in _ENVELOPE_CONTEXT):
        return value, None  # a tool whose own argument is named input_str
    kwargs = value.get("kwargs")
    call_id = kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None
    inputs = value.get("inputs")
    arguments = inputs if isinstance(inputs, dict) and inputs else value[_ARGUMENT_ENVELOPE]
    return arguments, call_id if isinstance(call_id, str) and call_id else None


def _bound(value: dict[str, Any]) -> Any:
    """The arguments a call's bound arguments hold: the keyword ones, else the positional
    ones, else (both given) the whole."""
    args = value.get("args")
    kwargs = value["kwargs"]
    if not args:
        return kwargs
    if not kwargs:
        return args
    return value


def unwrap_result(value: Any) -> Any:
    """What the tool returned: the envelope's ``output``, a ``ToolMessage``'s content, a
    ``FunctionResponse``'s ``response``, a ``ToolOutput``'s ``raw_output``."""
    value = _opened(value)
    if not isinstance(value, dict):
        return value
    if "raw_output" in value and _TOOL_OUTPUT.issubset(value):
        return value["raw_output"]
    if value.get("lc") == 1 and value.get("type") == "constructor":
        path = value.get("id")
        kwargs = value.get("kwargs")
        if (
            isinstance(path, list)
            and path
            and path[-1] == _SERIALIZED_TOOL_MESSAGE
            and isinstance(kwargs, dict)
            and "content" in kwargs
        ):
            return kwargs["content"]
        return value
    if value.get("type") == "tool":
        if "content" in value and "tool_call_id" in value:
            return value["content"]
        data = value.get("data")
        if isinstance(data, dict) and "content" in data and "tool_call_id" in data:
            return data["content"]
    if "response" in value and "name" in value and _FUNCTION_RESPONSE.issuperset(value):
        return value["response"]
    return value


def wrapped_tool_name(value: Any) -> str | None:
    """The tool a LlamaIndex ``ToolOutput`` came from (its ``tool_name``), else None."""
    if isinstance(value, dict) and "tool_name" in value and _TOOL_OUTPUT.issubset(value):
        name = value["tool_name"]
        return name if isinstance(name, str) and name else None
    return None


def wrapped_failure(value: Any) -> str | None:
    """The error text of a LangChain ``ToolMessage`` with ``status="error"`` (a tool's
    exception that LangGraph's ``ToolNode(handle_tool_errors=True)`` handed to the model as
    text), or of a LlamaIndex ``ToolOutput`` with ``is_error``, in any of the shapes above;
    None for anything else."""
    value = _opened(value)
    if not isinstance(value, dict):
        return None
    if value.get("is_error") is True and _TOOL_OUTPUT.issubset(value):
        raw = value["raw_output"]
        return raw if isinstance(raw, str) and raw else "tool error"
    message = value.get("kwargs") if value.get("type") == "constructor" else value
    if isinstance(message, dict) and isinstance(message.get("data"), dict):
        message = message["data"]
    if not isinstance(message, dict) or message.get("status") != "error":
        return None
    content = message.get("content")
    return content if isinstance(content, str) and content else "tool error"


def _opened(value: Any) -> Any:
    """A result envelope's ``output`` (what the tool returned), else ``value`` itself."""
    if isinstance(value, dict) and "output" in value and _RESULT_ENVELOPE.issuperset(value):
        return value["output"]
    return value
