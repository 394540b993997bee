"""No new information: calls whose arguments keep changing while their results bring nothing
the run has not seen (issue 28, families 1 and 5).

Progress is new information, not calls that differ. The run keeps a bounded table of
fingerprints of what it has seen: the (masked) signature of every tool result, and, for
read-like calls (a tool in ``OTEL_LOOPGUARD_READ_ONLY_TOOLS``, an editor's ``view``, a shell
tool running a read-only command such as ``sed -n 10,50p file``), the fingerprints of the
lines they read (a viewer's line-number prefixes and its "(10 more lines above)" lines left
out, so a shifted view of the same lines is no news). A result is *news* when its
signature is unseen (a read: when one of its lines is); a call whose identity-bearing
values (numbers, tokens with a digit, ``@`` or ``/``: ids, emails, paths; whole values
that are code, a command, a patch or a path) the tool has not had before is new work,
news too: twenty different recipients each answered ``{"success": true}`` are twenty pieces of work.

A result that is not news is *stale*. Stale results are counted per group (the tool, or for
reads the resource: its path, whichever tool or command reads it) while the run brings
nothing new anywhere (a run-level epoch moves at every piece of news) and the call's
arguments changed since the group's previous call (an identical call is ``no_progress``'s)
only in wording, order or status flags: at least 60 % of its content words were already in
the group's calls (a search reworded, a plan whose steps change status). A call about other
things (a different topic, all empty) starts the group's count again. At
``no_new_information_threshold`` (3; reads: ``no_new_information_read_threshold``, 4: an
agent zooming into parts of a file it read is common) stale results in a row it fires (kind
``stale``, with a recommendation; the default policy answers ``replan`` and the ladder stops
a run that goes on after the delivered nudge), and again at each further stale result; at
``no_new_information_stop`` stale results (0, off, by default) it fires kind
``persistent``, on which the policy stops without a nudge.

Failures are neither news nor stale (a new error text is news): repeated failures are the
failure detectors'. Results whose content was not recorded (no content, no signature) are
never stale. Bounded: the seen results are at least the latest ``seen_results``
fingerprints, the lines at least the latest half of ``seen_lines`` (each two generations of
a small bit set; the lines' allocated at the run's first read with content), the groups
:data:`GROUPS`; per event O(1): at most :data:`MAX_LINES` lines of
the first :data:`MAX_CHARS` characters of a read are looked at, and argument words only for
a stale result. Evidence holds counts, the tool or resource fingerprint and signatures, never
content (the resource path only with ``capture_content``).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable, fingerprint
from otel_loopguard.engine.detectors.read_only_commands import (
    command_text,
    is_editor_view,
    is_read_only_command,
)
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.signatures import _code_shaped, _verbatim_key

_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT
_EPOCH_MASK = 0xFFFFFFFF

GROUPS = 32  # tools / resources whose stale streak is followed
MAX_CHARS = 32_768  # of a read's text, looked at for lines
MAX_LINES = 400  # lines of a read looked at
MAX_VALUES = 64  # argument values looked at for words and identities
MIN_LINE = 3  # shorter lines (a brace, a blank) are neither news nor stale
WORDING_OVERLAP = 0.6  # share of a call's content words already in the streak: a rewording
# a line number a viewer puts before each line (``  11:``, ``11\t``, ``11 |``), and a
# viewer's header or footer line ("(10 more lines above)", "[File: x (300 lines total)]"):
# not what was read
_LINE_PREFIX = re.compile(r"(?m)^[ \t]*\d+(?:[:|\t\u2192]| {2,}| ?$)")
_VIEWER_LINE = re.compile(r"(?m)^.*(?:\bmore lines? (?:above|below)\b|\blines total\b|^\[File:).*$")
_WORD = re.compile(r"[a-z][a-z]{2,}")
_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "uri", "url", "target_file")
_STOP_TEXT = (
    "the and for with from that this what which please find show give list get all any are "
    "can you your our into about some more most other than then there their them they was "
    "were will would could should have has had not but how why when where who whom does did "
    "done let lets let's just also only very"
)
_STOPWORDS = frozenset(_STOP_TEXT.split())
#: keys whose text is what a call writes or sends (a message, a todo item): the work itself,
#: identity-bearing like an id, never wording (a status flag beside it is wording)
_PAYLOAD_KEYS = frozenset(
    {"text", "message", "msg", "body", "content", "subject", "title", "comment", "reply", "answer"}
)
_EDITOR_TOOLS = ("str_replace_editor", "str_replace_based_edit_tool")
_READ_SHELL_PROGRAMS = frozenset({"sed", "head", "tail", "cat", "nl", "awk", "less", "more"})


class SeenLines:
    """Fingerprints of lines a run has read: two generations of a bit set (two bits a line).

    The current generation takes ``per_generation`` lines, then becomes the previous one
    and a fresh one starts: at least the latest ``per_generation`` and at most twice as
    many lines are remembered. A line taken for seen that is not (a false positive) is
    below 1 % per line at the default size; a read is stale only when all its lines are
    seen, so one new line among several is never missed in practice.
    """

    __slots__ = ("bits", "count", "current", "per_generation", "previous")

    def __init__(self, per_generation: int) -> None:
        self.per_generation = per_generation
        self.bits = max(1 << 12, 1 << (per_generation * 32 - 1).bit_length())
        self.current = bytearray(self.bits // 8)
        self.previous = bytearray(self.bits // 8)
        self.count = 0

    def seen_add(self, key: int) -> bool:
        """Was ``key`` seen (in either generation)? Remember it in the current one."""
        mask = self.bits - 1
        a, b = key & mask, (key >> 16 ^ key * 40503) & mask
        current, previous = self.current, self.previous
        a_byte, a_bit, b_byte, b_bit = a >> 3, 1 << (a & 7), b >> 3, 1 << (b & 7)
        if current[a_byte] & a_bit and current[b_byte] & b_bit:
            return True
        seen = bool(previous[a_byte] & a_bit and previous[b_byte] & b_bit)
        current[a_byte] |= a_bit
        current[b_byte] |= b_bit
        self.count += 1
        if self.count >= self.per_generation:
            self.previous, self.current = current, bytearray(len(current))
            self.count = 0
        return seen


class StaleResultsState:
    __slots__ = ("epoch", "groups", "last_arguments", "last_call", "lines", "seen")

    def __init__(self, seen_results: int) -> None:
        # result signatures and call identities the run has seen (a bit set: two bits a
        # fingerprint, cheaper per event than a table lookup)
        self.seen = SeenLines(seen_results)
        # group fingerprint -> (stale results in a row, epoch, last call, words seen in
        # the streak's calls as a 64-bit mask)
        self.groups = FingerprintTable(GROUPS, "HIIQ")
        self.epoch = 0
        self.last_call = 0
        self.last_arguments: Any = None  # the latest call's, until its result (not exported)
        self.lines: SeenLines | None = None


@mypyc_attr(allow_interpreted_subclasses=True)
class StaleResultsDetector:
    """Changing calls of one tool (or reads of one resource) that bring nothing new."""

    name: ClassVar[str] = "no_new_information"
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.no_new_information_threshold
        self.read_threshold = config.no_new_information_read_threshold
        stop = config.no_new_information_stop
        self.stop_at = max(stop, self.threshold + 1) if stop else 0
        self.seen_size = config.seen_results
        self.lines_size = max(64, config.seen_lines // 2)
        self._read_tools = ToolNameMatcher(config.read_only_tools)
        self._shell = ToolNameMatcher(config.shell_tools)
        self._editors = ToolNameMatcher(_EDITOR_TOOLS)

    def new_state(self) -> StaleResultsState:
        return StaleResultsState(self.seen_size)

    def observe(
        self, event: Event, state: StaleResultsState, counters: RunCounters
    ) -> Signal | None:
        call = counters.call_key
        if event.kind is _TOOL_CALL:
            state.last_call = call
            state.last_arguments = event.arguments
            return None
        arguments = state.last_arguments if call and call == state.last_call else None
        state.last_arguments = None
        output = counters.outcome_key
        seen = state.seen
        if counters.failed:
            if not seen.seen_add(output):  # a new error text is news
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
            return None
        tool = event.tool_name or ""
        resource = (
            self._resource(tool, arguments)
            if arguments is not None
            and (self._read_tools[tool] or self._shell[tool] or self._editors[tool])
            else None
        )
        if resource is None:
            if not seen.seen_add(output):  # the usual case: a result not seen before
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                return None
            if event.details.get("content_recorded") is False or arguments is None:
                return None  # nothing to compare the call with
            group = fingerprint("tool:" + tool) ^ counters.agent_key
        else:
            text = event.output
            news = self._new_lines(text, state) if isinstance(text, str) and text else None
            if news:
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                return None
            if news is False:
                pass  # every line of it was read before
            elif not seen.seen_add(output):  # no text to read lines from: the signature
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                return None
            elif event.details.get("content_recorded") is False:
                return None
            group = fingerprint("read:" + resource) ^ counters.agent_key
        entry = state.groups.get(group)
        if entry is not None and entry[2] == call:
            return None  # the identical call again: no_progress's to judge (before parsing it)
        words, identity = _words_and_identity(arguments)
        if resource is None and identity:
            work = fingerprint(f"work:{tool}:{identity}") ^ counters.agent_key
            if not seen.seen_add(work):  # identity-bearing values not had before: new work
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                return None
        return self._stale(event, state, group, call, words, resource, entry)

    def _stale(
        self,
        event: Event,
        state: StaleResultsState,
        group: int,
        call: int,
        words: int,
        resource: str | None,
        entry: Any,
    ) -> Signal | None:
        groups = state.groups
        if entry is None:
            entry = (0, state.epoch, 0, words)
            groups.insert(group, *entry)
        streak, epoch, last_call, seen_words = entry
        if call == last_call:
            return None  # the identical call again: no_progress's to judge
        if epoch != state.epoch:  # news since the group's last stale result
            streak, seen_words = 0, 0
        elif words and seen_words and _overlap(words, seen_words) < WORDING_OVERLAP:
            streak, seen_words = 0, 0  # about other things: other work for the tool
        streak = min(streak + 1, FingerprintTable.MAX_COUNT)
        groups.update(group, streak, state.epoch, call, seen_words | words)
        threshold = self.threshold if resource is None else self.read_threshold
        if streak < threshold:
            return None
        persistent = bool(self.stop_at) and streak >= max(self.stop_at, threshold + 1)
        what = (
            f"the reads of one resource ({event.tool_name or 'a tool'})"
            if resource
            else (f"the calls of {event.tool_name or 'a tool'}")
        )
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "stale_results": streak,
            "threshold": threshold,
            "group": group,
            "output_signature": event.signature,
        }
        if resource is not None:
            evidence["read"] = True
            if self.config.capture_content:
                evidence["resource"] = resource[:200]
        message = (
            f"the last {streak} of {what} brought nothing new (their arguments changed, "
            "their results were all seen before in the run)"
        )
        return Signal(
            detector=self.name,
            kind="persistent" if persistent else "stale",
            score=growing_score(streak, threshold, 0.5),
            message=message,
            evidence=evidence,
            recommendation=(
                None
                if persistent
                else f"The last {streak} calls of {event.tool_name or 'this tool'} returned "
                "nothing you have not already seen: rewording or reordering the same request "
                "will not change the answer. Use what you have, change your approach, or "
                "finish and report what you found."
            ),
        )

    def _resource(self, tool: str, arguments: Any) -> str | None:
        """The file or resource a read-like call reads, else None."""
        if self._read_tools[tool] or (self._editors[tool] and is_editor_view(tool, arguments)):
            found = _path_argument(arguments)
            return found if found is not None else None
        if self._shell[tool]:
            command = command_text(arguments)
            if command and is_read_only_command(command):
                return _command_path(command)
        return None

    def _new_lines(self, text: str, state: StaleResultsState) -> bool | None:
        """Does ``text`` hold a line the run has not read? (Remembers its lines.) None when
        it holds no line long enough to tell."""
        lines = state.lines
        if lines is None:
            lines = state.lines = SeenLines(self.lines_size)
        new = False
        looked = 0
        text = _LINE_PREFIX.sub("", text[:MAX_CHARS])
        if "line" in text or "[File:" in text:
            text = _VIEWER_LINE.sub("", text)
        for line in text.splitlines():
            line = line.strip()
            if len(line) < MIN_LINE:
                continue
            if not lines.seen_add(zlib.crc32(line.encode("utf-8", "surrogatepass"))):
                new = True
            looked += 1
            if looked >= MAX_LINES:
                break
        return new if looked else None

    def export_state(self, state: StaleResultsState) -> dict[str, Any]:
        seen = state.seen
        data: dict[str, Any] = {
            "seen": [seen.current.hex(), seen.previous.hex(), seen.count],
            "groups": state.groups.to_json(),
            "epoch": state.epoch,
        }
        lines = state.lines
        if lines is not None:  # bits of hashes, no content
            data["lines"] = [lines.current.hex(), lines.previous.hex(), lines.count]
        return data

    def restore_state(self, data: dict[str, Any]) -> StaleResultsState:
        state = StaleResultsState(self.seen_size)
        _load_bits(state.seen, data.get("seen"))
        state.groups.load_json(data.get("groups"))
        state.epoch = int(data.get("epoch") or 0) & _EPOCH_MASK
        saved = data.get("lines")
        if saved is not None:
            lines = SeenLines(self.lines_size)
            if _load_bits(lines, saved):
                state.lines = lines
        return state


def _load_bits(bits: SeenLines, saved: Any) -> bool:
    """Restore exported bit sets into ``bits``; False (left empty) when unusable."""
    if not isinstance(saved, list) or len(saved) != 3:
        return False
    try:
        current, previous = bytearray.fromhex(saved[0]), bytearray.fromhex(saved[1])
        count = int(saved[2] or 0)
    except (TypeError, ValueError):
        return False
    if not len(current) == len(bits.current) == len(previous):
        return False
    bits.current, bits.previous = current, previous
    bits.count = min(max(count, 0), bits.per_generation - 1)
    return True


def _overlap(words: int, seen: int) -> float:
    """The share of a call's words (bits) already among the streak's."""
    return (words & seen).bit_count() / words.bit_count()


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str) and arguments[:1] in "{[" and len(arguments) <= 65536:
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _path_argument(arguments: Any) -> str | None:
    arguments = _parsed(arguments)
    if isinstance(arguments, Mapping):
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
    if isinstance(arguments, str) and arguments and " " not in arguments.strip():
        return arguments.strip()  # SWE-agent's `open path`
    return None


def _command_path(command: str) -> str | None:
    """The file a simple read-only command reads (``sed -n 10,50p f``, ``head -n 5 f``)."""
    words = command.split()
    if not words or words[0].rsplit("/", 1)[-1] not in _READ_SHELL_PROGRAMS:
        return None
    for word in reversed(words[1:]):
        word = word.strip("'\"")
        if word and not word.startswith("-") and ("/" in word or "." in word):
            if word[0].isdigit() and word.rstrip("p").replace(",", "").isdigit():
                continue
            return word
    return None


_MEMO_CAP = 4096  # argument names and words remembered (emptied when full)
#: argument name -> its value is identity-bearing whole (a payload, code, a command, a path)
_whole_keys: dict[str, bool] = {}
#: content word -> its bit of the words mask (0 for a stop word)
_word_bits: dict[str, int] = {}
_IDENTITY_CHAR = re.compile(r"[\d@/]")


def _whole_key(key: str) -> bool:
    whole = key.lower() in _PAYLOAD_KEYS or _verbatim_key(key)
    if len(_whole_keys) >= _MEMO_CAP:
        _whole_keys.clear()
    _whole_keys[key] = whole
    return whole


def _word_bit(word: str) -> int:
    bit = 0
    if word not in _STOPWORDS:
        stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
        bit = 1 << (zlib.crc32(stem.encode()) & 63)
    if len(_word_bits) >= _MEMO_CAP:
        _word_bits.clear()
    _word_bits[word] = bit
    return bit


def _words_and_identity(arguments: Any) -> tuple[int, str]:
    """(a 64-bit mask of the arguments' content words, their identity-bearing values).

    Identity-bearing: numbers, tokens with a digit, ``@`` or ``/``, a single dotted token
    (a file, a host), and whole values under a key that names code, a command, a patch, a
    path or a URL, or what is written or sent (:data:`_PAYLOAD_KEYS`: a message's text, a
    todo item's content), or shaped like code (an edit is the work it does, whatever its
    words).
    Everything else is wording: its content words (stop words left out, a plural ``s``
    dropped) set bits of the mask.
    """
    mask = 0
    identities: set[str] = set()
    stack: list[tuple[str, Any]] = [("", _parsed(arguments))]
    looked = 0
    while stack and looked < MAX_VALUES:
        key, value = stack.pop()
        looked += 1
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            identities.add(f"{key}={value!r}")
        elif isinstance(value, str):
            text = value[:2000]
            whole = _whole_keys.get(key) if key else False  # (argument names come back)
            if whole is None:
                whole = _whole_key(key)
            if whole or _code_shaped(text):
                identities.add(f"{key}#{zlib.crc32(value.encode('utf-8', 'surrogatepass'))}")
                continue
            tokens = text.split()
            single = len(tokens) == 1
            for token in tokens:
                if token.isalpha():
                    continue  # a plain word: no digit, "@", "/" nor "."
                if _IDENTITY_CHAR.search(token) is not None or (
                    # a digit (\d misses superscripts, which str.isdigit counts), "@", "/"
                    not token.isascii() and any(c.isdigit() for c in token)
                ):
                    identities.add(token.strip(".,;:()[]{}\"'"))
                elif single and "." in token.strip("."):
                    identities.add(token)
            bits = _word_bits
            for word in _WORD.findall(text.lower()):
                bit = bits.get(word)
                if bit is None:
                    bit = _word_bit(word)
                mask |= bit
        elif isinstance(value, Mapping):
            for count, (name, item) in enumerate(value.items()):
                if count >= MAX_VALUES:
                    break
                stack.append((str(name), item))
        elif isinstance(value, (list, tuple)):
            stack.extend((key, item) for item in value[:MAX_VALUES])
    return mask, "\x1f".join(sorted(identities)[:MAX_VALUES])
