"""The instrumentation dialects as data: per instrumentation, the attribute names it uses.

Users run many GenAI instrumentations; each names the same things differently. This module
is the one place that knows those names: :data:`DIALECTS` holds one :class:`Dialect` entry
per instrumentation, and per concept (what a span is, a tool's name, arguments and result,
the agent, the conversation, the model, tokens, finish reason, output messages, handoffs)
the attribute keys or span-name forms that instrumentation writes:

* OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name`` = ``execute_tool``,
  ``invoke_agent``, ``invoke_workflow``, ``chat``, ``text_completion``,
  ``generate_content``; ``gen_ai.tool.call.arguments`` / ``.result``);
* pydantic-ai / Logfire (``running tool`` spans with ``tool_arguments`` /
  ``tool_response`` in instrumentation version 1, ``execute_tool`` in later versions);
* OpenInference (``openinference.span.kind`` TOOL / LLM / AGENT / CHAIN, ``tool.name``,
  ``input.value`` / ``output.value``, ``llm.token_count.*``, ``llm.output_messages.*``);
* OpenLLMetry (``traceloop.span.kind`` tool / agent / workflow / task,
  ``traceloop.entity.*``, ``gen_ai.completion.N.*``, ``llm.request.type``; its LlamaIndex
  tracer's tool runs are ``task`` spans named after the tool's class, ``FunctionTool.task``);
* Langfuse's Python SDK 3+ (``langfuse.observation.type`` agent / tool / generation,
  ``langfuse.observation.input`` / ``.output``, ``.usage_details`` as one JSON object);
* Google ADK's legacy telemetry schema (``gcp.vertex.agent.tool_call_args`` /
  ``.tool_response``);
* MCP (``mcp.method.name`` = ``tools/call``: the transport's view of a tool call);
* handoffs: ``transfer_to_<agent>`` / ``handoff_to_<agent>`` tool calls and the handoff
  spans of agent SDKs (``handoff to X`` / ``Handoff: A → B``).

A new dialect is one more entry. The readers (:mod:`~otel_loopguard.spans.classify`,
:mod:`~otel_loopguard.spans.identity`, :mod:`~otel_loopguard.spans.events`) never name an
attribute of a dialect: they read the lookups below, built once at import by joining the
entries' keys in table order. Where two entries name a key for the same concept, the one
earlier in the table wins (first match), so the order of :data:`DIALECTS` is the precedence.
Classification applies its rules by rule kind, each kind in table order: kind attributes
(the first entry's first, before anything else), then span-name rules, then marker
attributes, then handoff span names.

What every span has alike (``error.type``, status, ``exception`` events, HTTP/gRPC status
codes) is OpenTelemetry's general conventions, not a dialect's: events read it directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

#: how a kind attribute's value is compared with the keys of :attr:`Dialect.kinds`
EXACT: Final = "exact"
UPPER: Final = "upper"  # upper-cased first: the keys are upper case
LOWER: Final = "lower"  # lower-cased first: the keys are lower case
CASES: Final = (EXACT, UPPER, LOWER)


@dataclass(frozen=True)
class SpanName:
    """A span-name rule: a span named ``prefix``... (exactly ``prefix`` when ``whole``) that
    carries the attribute ``requires`` (when set) is of class ``span_class``."""

    prefix: str
    span_class: str
    requires: str = ""
    whole: bool = False
    #: a tool span named after the tool's class, not the tool (OpenLLMetry's LlamaIndex
    #: ``FunctionTool.task``): the tool's name is the one its recorded result gives
    #: (:func:`~otel_loopguard.spans.payloads.wrapped_tool_name`), else this name
    class_named: bool = False


@dataclass(frozen=True)
class Dialect:
    """One instrumentation's attribute names, per concept; every field but ``name`` is
    optional. Key tuples are read in order, first usable value wins. Span classes are the
    values of :class:`~otel_loopguard.spans.classify.SpanClass` (``"tool"``, ``"llm"``,
    ``"agent"``, ``"workflow"``, ``"handoff"``)."""

    name: str

    # -- what a span is ----------------------------------------------------------------------
    #: the attribute that says what a span describes; its string values, compared as
    #: ``kind_case`` says, map to a span class by ``kinds`` (an unknown value decides nothing)
    kind_key: str = ""
    kind_case: str = EXACT
    kinds: Mapping[str, str] = field(default_factory=dict)
    #: the dialect's tool spans are a transport's view of a call (MCP ``tools/call``): never
    #: a handoff themselves; inside another tool span, that span is the one to feed
    transport: bool = False
    #: span-name rules, for spans that carry no kind attribute
    span_names: tuple[SpanName, ...] = ()
    #: instrumentation scopes whose spans carry the kind attribute only from their end
    #: (OpenInference's LangChain and LlamaIndex tracers set it when the run ends) or from
    #: just after their start (OpenLLMetry's LlamaIndex tracer, Langfuse): the outermost
    #: such span is followed from its start as a possible agent (the follower's
    #: ``started_late``)
    late_kind_scopes: tuple[str, ...] = ()
    #: span-name endings of spans of the model class that are no model call (OpenInference's
    #: LlamaIndex tracer marks every method of an LLM class ``LLM``, its preparation of the
    #: request too): not read as a model turn
    not_model_call_suffixes: tuple[str, ...] = ()
    #: attributes whose string value alone makes the class (read after the name rules)
    marker_keys: Mapping[str, str] = field(default_factory=dict)

    # -- tool spans --------------------------------------------------------------------------
    tool_name_keys: tuple[str, ...] = ()
    #: span-name prefixes followed by the tool's name (when no tool-name key says)
    tool_name_prefixes: tuple[str, ...] = ()
    call_id_keys: tuple[str, ...] = ()
    argument_keys: tuple[str, ...] = ()
    result_keys: tuple[str, ...] = ()
    #: arguments and result under keys other spans use too (``input.value``): read only on
    #: a span whose kind attribute says tool (compared as written: a key of ``kinds``)
    kind_argument_keys: tuple[str, ...] = ()
    kind_result_keys: tuple[str, ...] = ()

    # -- agents and conversations ------------------------------------------------------------
    agent_name_keys: tuple[str, ...] = ()
    #: span-name prefixes followed by the agent's name
    agent_name_prefixes: tuple[str, ...] = ()
    #: kind values (as written) of spans that are an agent and name it: by
    #: ``entity_name_keys`` (of any dialect), else by the span's name
    agent_kinds: tuple[str, ...] = ()
    entity_name_keys: tuple[str, ...] = ()
    conversation_keys: tuple[str, ...] = ()

    # -- model calls -------------------------------------------------------------------------
    model_keys: tuple[str, ...] = ()
    #: the answer's id: two model spans of one trace with the same id at overlapping
    #: times are one call (the Anthropic SDK's own span beside OpenLLMetry's)
    response_id_keys: tuple[str, ...] = ()
    input_token_keys: tuple[str, ...] = ()
    output_token_keys: tuple[str, ...] = ()
    #: older names of the token counts, read when the keys above give no count (or 0)
    legacy_input_token_keys: tuple[str, ...] = ()
    legacy_output_token_keys: tuple[str, ...] = ()
    #: an array of finish reasons (a plain string is taken as the one reason)
    finish_reasons_keys: tuple[str, ...] = ()
    #: one finish reason
    finish_reason_keys: tuple[str, ...] = ()
    #: token usage as one JSON object string (Langfuse's ``usage_details``): the input and
    #: output counts under the keys below, read when no count attribute says
    usage_json_keys: tuple[str, ...] = ()
    usage_json_input: tuple[str, ...] = ()
    usage_json_output: tuple[str, ...] = ()
    #: output messages as one JSON string: ``[{"parts": [{"type": "tool_call", "name",
    #: "arguments"} | {"type": "text", "content"}]}]``
    output_messages_keys: tuple[str, ...] = ()
    #: output messages as indexed attributes: ``{i}`` is the message's index, the message
    #: has ``content`` and ``role`` under this prefix, its tool calls are under
    #: ``output_call_prefix`` (``{j}`` the call's index, after the message's prefix), each
    #: with ``name`` and ``arguments``
    output_message_prefix: str = ""
    output_call_prefix: str = ""
    #: input messages (the model request) as one JSON string: ``[{"role", "parts": [...]}]``;
    #: read for the last user message only (kept as a hash, never as text)
    input_messages_keys: tuple[str, ...] = ()
    #: input messages as indexed attributes: ``{i}`` is the message's index, ``role`` and
    #: ``content`` under this prefix
    input_message_prefix: str = ""

    # -- handoffs ----------------------------------------------------------------------------
    #: a tool named ``<prefix><agent>`` hands off to ``<agent>``
    handoff_tool_prefixes: tuple[str, ...] = ()
    #: tools named like handoffs that name no agent (their target is an argument)
    non_handoff_tools: tuple[str, ...] = ()
    #: a span whose name starts with this word (any case) is a handoff span when its name
    #: matches one of the patterns (case-insensitive, named groups ``target`` and, optional,
    #: ``source``) or it carries a ``handoff_target_keys`` attribute
    handoff_span_prefix: str = ""
    handoff_span_patterns: tuple[str, ...] = ()
    handoff_source_keys: tuple[str, ...] = ()
    handoff_target_keys: tuple[str, ...] = ()
    handoff_call_id_keys: tuple[str, ...] = ()

    # -- hidden content ----------------------------------------------------------------------
    #: values written in place of content the user chose not to record (OpenInference's
    #: ``__REDACTED__`` with inputs or outputs hidden): read as "not recorded", never as
    #: content (every call would otherwise look identical)
    placeholders: tuple[str, ...] = ()
    #: content keys the instrumentation writes as an empty JSON object (``{}``) when told
    #: not to record content (Google ADK's legacy schema): ``{}`` there is "not recorded"
    empty_when_hidden_keys: tuple[str, ...] = ()


DIALECTS: Final[tuple[Dialect, ...]] = (
    Dialect(
        "OpenTelemetry GenAI semantic conventions",
        kind_key="gen_ai.operation.name",
        kinds={
            "execute_tool": "tool",
            "invoke_agent": "agent",
            "invoke_workflow": "workflow",
            "chat": "llm",
            "text_completion": "llm",
            "generate_content": "llm",
            "handoff": "handoff",  # not (yet) in the conventions; Sentry's agents SDK spans
        },
        span_names=(SpanName("invoke_agent", "agent"),),
        tool_name_keys=("gen_ai.tool.name",),
        tool_name_prefixes=("execute_tool ",),
        call_id_keys=("gen_ai.tool.call.id",),
        argument_keys=("gen_ai.tool.call.arguments",),
        result_keys=("gen_ai.tool.call.result",),
        agent_name_keys=("gen_ai.agent.name",),
        agent_name_prefixes=("invoke_agent ",),
        conversation_keys=("gen_ai.conversation.id",),
        model_keys=("gen_ai.response.model", "gen_ai.request.model"),
        response_id_keys=("gen_ai.response.id",),
        input_token_keys=("gen_ai.usage.input_tokens",),
        output_token_keys=("gen_ai.usage.output_tokens",),
        legacy_input_token_keys=("gen_ai.usage.prompt_tokens",),  # OpenLLMetry writes these
        legacy_output_token_keys=("gen_ai.usage.completion_tokens",),
        finish_reasons_keys=("gen_ai.response.finish_reasons",),
        output_messages_keys=("gen_ai.output.messages",),
        input_messages_keys=("gen_ai.input.messages",),
    ),
    Dialect(
        "pydantic-ai / Logfire",
        span_names=(
            SpanName("running tool", "tool", requires="gen_ai.tool.name"),  # version 1
            SpanName("execute_tool", "tool", requires="gen_ai.tool.name"),  # later versions
            SpanName("agent run", "agent", requires="agent_name", whole=True),
        ),
        tool_name_prefixes=("running tool: ",),
        argument_keys=("tool_arguments",),
        result_keys=("tool_response",),
        agent_name_keys=("agent_name",),
    ),
    Dialect(
        "OpenInference",
        kind_key="openinference.span.kind",
        kind_case=UPPER,
        kinds={"TOOL": "tool", "LLM": "llm", "AGENT": "agent", "CHAIN": "workflow"},
        late_kind_scopes=(
            "openinference.instrumentation.langchain",
            "openinference.instrumentation.llama_index",
        ),
        not_model_call_suffixes=("._prepare_chat_with_tools",),
        tool_name_keys=("tool.name",),
        call_id_keys=("tool_call.id",),
        kind_argument_keys=("input.value",),
        kind_result_keys=("output.value",),
        agent_name_keys=("agent.name",),
        agent_kinds=("AGENT",),
        conversation_keys=("session.id",),
        model_keys=("llm.model_name",),
        input_token_keys=("llm.token_count.prompt",),
        output_token_keys=("llm.token_count.completion",),
        output_message_prefix="llm.output_messages.{i}.message.",
        output_call_prefix="tool_calls.{j}.tool_call.function.",
        input_message_prefix="llm.input_messages.{i}.message.",
        placeholders=("__REDACTED__",),  # OPENINFERENCE_HIDE_INPUTS / _OUTPUTS / _TEXT
    ),
    Dialect(
        "OpenLLMetry (Traceloop)",
        kind_key="traceloop.span.kind",
        kind_case=LOWER,
        kinds={"tool": "tool", "agent": "agent", "workflow": "workflow", "llm": "llm"},
        # its LlamaIndex tracer sets the kind after the span started; a tool's run is a
        # ``task`` span named after the tool's class, the tool named in its result only
        late_kind_scopes=("opentelemetry.instrumentation.llamaindex",),
        span_names=tuple(
            SpanName(
                f"{tool_class}.task",
                "tool",
                requires="traceloop.span.kind",
                whole=True,
                class_named=True,
            )
            for tool_class in ("FunctionTool", "QueryEngineTool", "RetrieverTool")
        ),
        marker_keys={"llm.request.type": "llm"},
        tool_name_keys=("traceloop.entity.name",),
        argument_keys=("traceloop.entity.input",),
        result_keys=("traceloop.entity.output",),
        agent_kinds=("agent", "workflow"),
        entity_name_keys=("traceloop.entity.name",),
        conversation_keys=(
            "traceloop.association.properties.conversation_id",
            "traceloop.association.properties.session_id",
            "traceloop.association.properties.thread_id",
            "traceloop.association.properties.chat_id",
        ),
        finish_reason_keys=("gen_ai.completion.0.finish_reason", "llm.response.finish_reason"),
        output_message_prefix="gen_ai.completion.{i}.",
        output_call_prefix="tool_calls.{j}.",
        input_message_prefix="gen_ai.prompt.{i}.",
    ),
    Dialect(
        "Langfuse (Python SDK 3+: @observe, start_as_current_observation)",
        kind_key="langfuse.observation.type",
        kind_case=LOWER,
        kinds={"tool": "tool", "agent": "agent", "generation": "llm"},
        # an observation's attributes are set after its span started
        late_kind_scopes=("langfuse-sdk",),
        # on every observation type: read only on a tool observation
        kind_argument_keys=("langfuse.observation.input",),
        kind_result_keys=("langfuse.observation.output",),
        agent_kinds=("agent",),
        model_keys=("langfuse.observation.model.name",),
        usage_json_keys=("langfuse.observation.usage_details",),
        usage_json_input=("input", "prompt_tokens", "input_tokens"),
        usage_json_output=("output", "completion_tokens", "output_tokens"),
    ),
    Dialect(
        # ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1 (supported until 2027-03): its execute_tool
        # spans are GenAI ones, the content under ADK's own keys, "{}" when
        # ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false (the response is always an object:
        # {"result": ...} around anything else, so an empty one is no answer to read)
        "Google ADK (legacy telemetry schema)",
        # its root span, around the invocation's agents, with no attribute at all: the
        # run's agent span (the default schema's is ``invoke_workflow``)
        span_names=(SpanName("invocation", "workflow", whole=True),),
        argument_keys=("gcp.vertex.agent.tool_call_args",),
        result_keys=("gcp.vertex.agent.tool_response",),
        empty_when_hidden_keys=(
            "gcp.vertex.agent.tool_call_args",
            "gcp.vertex.agent.tool_response",
        ),
    ),
    Dialect(
        "MCP",
        kind_key="mcp.method.name",
        kinds={"tools/call": "tool"},
        transport=True,
        tool_name_prefixes=("tools/call ",),
    ),
    Dialect(
        "agent handoffs (agent SDKs, Google ADK, Strands, MLflow, Sentry)",
        handoff_tool_prefixes=("transfer_to_", "handoff_to_"),
        # Google ADK's one transfer tool, Strands' swarm handoff tool
        non_handoff_tools=("transfer_to_agent", "handoff_to_agent"),
        # "Handoff: a → b" (Logfire), "handoff from a to b" (Sentry), "handoff to b"; a bare
        # "Handoff" span (MLflow) carries from_agent / to_agent attributes
        handoff_span_prefix="handoff",
        handoff_span_patterns=(
            r"^handoff:\s*(?P<source>.+?)\s*(?:→|->)\s*(?P<target>.+)$",
            r"^handoff\s+from\s+(?P<source>.+?)\s+to\s+(?P<target>.+)$",
            r"^handoff\s+to\s+(?P<target>.+)$",
        ),
        handoff_source_keys=("from_agent", "gen_ai.agent.name"),
        handoff_target_keys=("to_agent",),
        handoff_call_id_keys=("gen_ai.tool.call.id",),
    ),
)


def _check(dialect: Dialect) -> None:
    """A malformed entry fails at import, not as a silently missed span."""
    if dialect.kind_case not in CASES:
        raise ValueError(f"{dialect.name}: kind_case {dialect.kind_case!r} not in {CASES}")
    for value in dialect.kinds:
        if (dialect.kind_case == UPPER and value != value.upper()) or (
            dialect.kind_case == LOWER and value != value.lower()
        ):
            raise ValueError(f"{dialect.name}: kind {value!r} is not {dialect.kind_case} case")
    if bool(dialect.kinds) != bool(dialect.kind_key):
        raise ValueError(f"{dialect.name}: kind_key and kinds go together")
    indexed = dialect.output_message_prefix or dialect.output_call_prefix
    if indexed and (
        dialect.output_message_prefix.count("{i}") != 1
        or dialect.output_call_prefix.count("{j}") != 1
    ):
        raise ValueError(f"{dialect.name}: indexed output messages need {{i}} and {{j}}")


for _dialect in DIALECTS:
    _check(_dialect)
# the first kind attribute is read on every span, before anything else: as written
if next(d.kind_case for d in DIALECTS if d.kind_key) != EXACT:
    raise ValueError("the first entry with a kind attribute must compare it as written")


def _joined(keys_of: Callable[[Dialect], tuple[str, ...]]) -> tuple[str, ...]:
    """A concept's keys over all entries, in table order, each once."""
    return tuple(dict.fromkeys(key for dialect in DIALECTS for key in keys_of(dialect)))


# -- classification --------------------------------------------------------------------------

#: (kind attribute, case, value -> span class, transport) per entry that has one
KIND_RULES: Final[tuple[tuple[str, str, dict[str, str], bool], ...]] = tuple(
    (d.kind_key, d.kind_case, dict(d.kinds), d.transport) for d in DIALECTS if d.kind_key
)
#: (span-name rule, transport of its entry)
NAME_RULES: Final[tuple[tuple[SpanName, bool], ...]] = tuple(
    (rule, d.transport) for d in DIALECTS for rule in d.span_names
)
#: (marker attribute, span class)
MARKER_RULES: Final[tuple[tuple[str, str], ...]] = tuple(
    (key, cls) for d in DIALECTS for key, cls in d.marker_keys.items()
)
#: Every attribute key a rule other than a bare span-name rule needs. Most spans of a
#: service (HTTP, database, messaging) have none of them: one set operation in C then
#: decides, instead of a dozen lookups and string tests per span.
CLASS_KEYS: Final[frozenset[str]] = frozenset(
    [key for key, _case, _kinds, _transport in KIND_RULES]
    + [key for key, _cls in MARKER_RULES]
    + [rule.requires for rule, _transport in NAME_RULES if rule.requires]
)
#: (kind attribute, value as written) of a transport's tool request (MCP ``tools/call``)
TRANSPORT_TOOL_KINDS: Final[tuple[tuple[str, str], ...]] = tuple(
    (d.kind_key, value)
    for d in DIALECTS
    if d.transport
    for value, cls in d.kinds.items()
    if cls == "tool"
)

#: scopes whose spans say what they are only at their end or just after their start
#: (Dialect.late_kind_scopes)
LATE_KIND_SCOPES: Final[frozenset[str]] = frozenset(_joined(lambda d: d.late_kind_scopes))
#: names of tool spans named after the tool's class (SpanName.class_named): the tool's
#: name is in the span's result
CLASS_NAMED_TOOLS: Final[frozenset[str]] = frozenset(
    rule.prefix for rule, _transport in NAME_RULES if rule.class_named and rule.whole
)
#: model-class spans that are no model call (a tuple: ``str.endswith`` takes one)
NOT_MODEL_CALL_SUFFIXES: Final = _joined(lambda d: d.not_model_call_suffixes)

# -- tool spans ------------------------------------------------------------------------------

TOOL_NAME_KEYS: Final = _joined(lambda d: d.tool_name_keys)
TOOL_NAME_PREFIXES: Final = _joined(lambda d: d.tool_name_prefixes)
CALL_ID_KEYS: Final = _joined(lambda d: d.call_id_keys)
ARGUMENT_KEYS: Final = _joined(lambda d: d.argument_keys)
RESULT_KEYS: Final = _joined(lambda d: d.result_keys)


def _kind_keys(
    keys_of: Callable[[Dialect], tuple[str, ...]],
) -> tuple[tuple[str, str, str], ...]:
    """(kind attribute, its tool value as written, key) for each key of ``keys_of`` in
    the entries whose kind attribute names tool spans."""
    return tuple(
        (d.kind_key, value, key)
        for d in DIALECTS
        for value, cls in d.kinds.items()
        if cls == "tool"
        for key in keys_of(d)
    )


KIND_ARGUMENT_KEYS: Final = _kind_keys(lambda d: d.kind_argument_keys)
KIND_RESULT_KEYS: Final = _kind_keys(lambda d: d.kind_result_keys)

# -- agents and conversations ----------------------------------------------------------------

AGENT_NAME_KEYS: Final = _joined(lambda d: d.agent_name_keys)
AGENT_NAME_PREFIXES: Final = _joined(lambda d: d.agent_name_prefixes)
#: (kind attribute, its values as written that make a span an agent naming itself); a
#: tuple, not a set: an attribute value may be a list, which a set cannot look up
AGENT_KINDS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = tuple(
    (d.kind_key, d.agent_kinds) for d in DIALECTS if d.agent_kinds
)
ENTITY_NAME_KEYS: Final = _joined(lambda d: d.entity_name_keys)
#: every key :func:`~otel_loopguard.spans.identity.agent_name` reads: a span with none of
#: them (tool spans mostly) is named by its span name only
AGENT_KEYS: Final[frozenset[str]] = frozenset(
    AGENT_NAME_KEYS + tuple(key for key, _values in AGENT_KINDS)
)
CONVERSATION_KEYS: Final = _joined(lambda d: d.conversation_keys)
CONVERSATION_KEY_SET: Final[frozenset[str]] = frozenset(CONVERSATION_KEYS)

# -- model calls -----------------------------------------------------------------------------

MODEL_KEYS: Final = _joined(lambda d: d.model_keys)
RESPONSE_ID_KEYS: Final = _joined(lambda d: d.response_id_keys)
INPUT_TOKEN_KEYS: Final = _joined(lambda d: d.input_token_keys)
OUTPUT_TOKEN_KEYS: Final = _joined(lambda d: d.output_token_keys)
LEGACY_INPUT_TOKEN_KEYS: Final = _joined(lambda d: d.legacy_input_token_keys)
LEGACY_OUTPUT_TOKEN_KEYS: Final = _joined(lambda d: d.legacy_output_token_keys)
FINISH_REASONS_KEYS: Final = _joined(lambda d: d.finish_reasons_keys)
FINISH_REASON_KEYS: Final = _joined(lambda d: d.finish_reason_keys)
OUTPUT_MESSAGES_KEYS: Final = _joined(lambda d: d.output_messages_keys)
USAGE_JSON_KEYS: Final = _joined(lambda d: d.usage_json_keys)
USAGE_JSON_INPUT: Final = _joined(lambda d: d.usage_json_input)
USAGE_JSON_OUTPUT: Final = _joined(lambda d: d.usage_json_output)


def _indexed(dialect: Dialect) -> tuple[str, str, str, str, str, str]:
    """(message prefix before and after the index, call prefix before and after the index,
    the first message's content and role keys: most spans have neither, and then no key
    is built at all)."""
    head, tail = dialect.output_message_prefix.split("{i}")
    call_head, call_tail = dialect.output_call_prefix.split("{j}")
    first = f"{head}0{tail}"
    return head, tail, call_head, call_tail, first + "content", first + "role"


INDEXED_OUTPUT_MESSAGES: Final[tuple[tuple[str, str, str, str, str, str], ...]] = tuple(
    _indexed(d) for d in DIALECTS if d.output_message_prefix
)

INPUT_MESSAGES_KEYS: Final = _joined(lambda d: d.input_messages_keys)
#: (message prefix before and after the index, the first message's role key) per dialect
#: with indexed input messages
INDEXED_INPUT_MESSAGES: Final[tuple[tuple[str, str, str], ...]] = tuple(
    (head, tail, f"{head}0{tail}role")
    for head, tail in (
        d.input_message_prefix.split("{i}") for d in DIALECTS if d.input_message_prefix
    )
)

# -- handoffs --------------------------------------------------------------------------------

HANDOFF_TOOL_PREFIXES: Final = _joined(lambda d: d.handoff_tool_prefixes)
#: ``<prefix><agent>``, the agent a group (``.`` stops at a line break, as ever)
HANDOFF_TOOL: Final = re.compile(
    "^(?:" + "|".join(re.escape(prefix) for prefix in HANDOFF_TOOL_PREFIXES) + ")(.+)$"
)
NON_HANDOFF_TOOLS: Final[frozenset[str]] = frozenset(_joined(lambda d: d.non_handoff_tools))
HANDOFF_SPAN_PREFIXES: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(d.handoff_span_prefix.lower() for d in DIALECTS if d.handoff_span_prefix)
)
HANDOFF_SPAN_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(pattern, re.IGNORECASE) for d in DIALECTS for pattern in d.handoff_span_patterns
)
HANDOFF_SOURCE_KEYS: Final = _joined(lambda d: d.handoff_source_keys)
HANDOFF_TARGET_KEYS: Final = _joined(lambda d: d.handoff_target_keys)
HANDOFF_CALL_ID_KEYS: Final = _joined(lambda d: d.handoff_call_id_keys)

# -- hidden content --------------------------------------------------------------------------

#: values instrumentations write in place of content they were told not to record, read as
#: "not recorded" whatever the span's dialect (a placeholder is never content: every call
#: would otherwise look identical): OpenInference's ``__REDACTED__``, Strands'
#: ``[REDACTED]`` (its redaction of tool arguments, results and messages), ``<redacted>``
#: (the OpenAI Agents SDK), and their usual spellings
COMMON_PLACEHOLDERS: Final[tuple[str, ...]] = (
    "__REDACTED__",
    "[REDACTED]",
    "[redacted]",
    "<redacted>",
    "<REDACTED>",
    "REDACTED",
    "<hidden>",
    "[hidden]",
)
#: keys whose ``{}`` means "not recorded" (Dialect.empty_when_hidden_keys)
EMPTY_WHEN_HIDDEN_KEYS: Final[frozenset[str]] = frozenset(
    _joined(lambda d: d.empty_when_hidden_keys)
)
PLACEHOLDERS: Final[frozenset[str]] = frozenset(
    COMMON_PLACEHOLDERS + _joined(lambda d: d.placeholders)
)
