"""The Redis store (``OTEL_LOOPGUARD_STORE=redis://...``): a run shared by every process
that points at the same server and key prefix.

Key layout (the protocol another language's agent may read; ``docs/fleet.md``):

- ``{prefix}run:{run_id}``, a hash, expiring ``OTEL_LOOPGUARD_RUN_TTL`` seconds after its
  last write: ``stop`` (``"1"`` once stopped; one ``HGET`` before a tool call is enough),
  ``stop_detectors`` (comma-separated), ``stop_reason``, ``stop_time`` (Unix seconds),
  ``stop_decision`` (the decision as JSON); counters ``steps``, ``tool_calls``,
  ``input_tokens``, ``output_tokens``, ``cost``, ``cost_unknown`` (``"1"``), ``started``
  (Unix seconds); ``state`` (the monitor's exported run, JSON) and ``state_version``.
- ``{prefix}user:{user}``, a hash of usage buckets (``t<n>`` tokens, ``c<n>`` cost; bucket
  ``n`` is ``floor(unix_seconds / (window / 60))``) for fleet budgets.

Each operation is one round trip (a Lua script, so the gate's "veto if stopped, else count"
is atomic), sent by :class:`_Wire` on a connection no other call uses meanwhile: redis-py
opens it (URL, TLS, password, unix socket, timeouts are redis-py's), but the gate does not
go through redis-py's client, pool and ``Script`` layers, which cost more CPU per call than
the round trip itself on loopback, time every thread of an agent service waits for on the
GIL. Fail-open: every call waits at most the timeout (no retries); after a failure
the store is not asked again for :data:`RETRY_AFTER` seconds (calls answer ``None`` at
once), then it reconnects by itself. One warning per outage, one per run key holding a
value that is not ours. ``redis`` (redis-py) is imported when a store is opened, never
when this module is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from otel_loopguard.engine.store import base
from otel_loopguard.engine.store.window import BUCKETS, bucket_seconds

logger = logging.getLogger("otel_loopguard.store")

#: seconds an unreachable server is left alone before the next attempt
RETRY_AFTER = 1.0
_MAX_WARNED_KEYS = 1_000
_STOP_FIELDS = (b"stop", b"stop_detectors", b"stop_reason", b"stop_time", b"stop_decision")

_GATE = """
local run = KEYS[1]
local s = redis.call('HMGET', run, 'stop', 'stop_detectors', 'stop_reason', 'stop_time',
                     'stop_decision')
if s[1] == '1' then
  return {'stop', s[2] or '', s[3] or '', s[4] or '', s[5] or ''}
end
redis.call('HSETNX', run, 'started', ARGV[2])
local fields = {'steps', 'tool_calls', 'input_tokens', 'output_tokens'}
for i = 1, 4 do
  if ARGV[i + 2] ~= '0' then redis.call('HINCRBY', run, fields[i], ARGV[i + 2]) end
end
if ARGV[8] == '1' then redis.call('HSET', run, 'cost_unknown', '1') end
if ARGV[7] ~= '0' then redis.call('HINCRBYFLOAT', run, 'cost', ARGV[7]) end
redis.call('EXPIRE', run, ARGV[1])
local c = redis.call('HMGET', run, 'steps', 'tool_calls', 'input_tokens', 'output_tokens',
                     'cost', 'cost_unknown', 'started')
local reply = {'run', c[1] or '0', c[2] or '0', c[3] or '0', c[4] or '0', c[5] or '0',
               c[6] or '0', c[7] or ARGV[2]}
if #KEYS > 1 then
  local user = KEYS[2]
  local size = tonumber(ARGV[9])
  local count = tonumber(ARGV[10])
  local current = math.floor(tonumber(ARGV[2]) / size)
  local oldest = current - count
  local dtokens = tonumber(ARGV[5]) + tonumber(ARGV[6])
  if dtokens ~= 0 then redis.call('HINCRBY', user, 't' .. current, dtokens) end
  if ARGV[7] ~= '0' then redis.call('HINCRBYFLOAT', user, 'c' .. current, ARGV[7]) end
  local all = redis.call('HGETALL', user)
  local tokens, cost = 0, 0
  for i = 1, #all, 2 do
    local name = all[i]
    local b = tonumber(string.sub(name, 2))
    if b == nil or b <= oldest then
      redis.call('HDEL', user, name)
    elseif string.sub(name, 1, 1) == 't' then
      tokens = tokens + tonumber(all[i + 1])
    else
      cost = cost + tonumber(all[i + 1])
    end
  end
  redis.call('EXPIRE', user, math.ceil(size * (count + 1)))
  reply[#reply + 1] = string.format('%d', tokens)
  reply[#reply + 1] = string.format('%.17g', cost)
end
return reply
"""

_WRITE_STOP = """
if redis.call('HGET', KEYS[1], 'stop') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'stop', '1', 'stop_detectors', ARGV[1], 'stop_reason', ARGV[2],
           'stop_time', ARGV[3], 'stop_decision', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""

_LOAD_STATE = """
local v = redis.call('HGET', KEYS[1], 'state_version')
if not v then return {0} end
local n = tonumber(v)
if n == nil then return redis.error_reply('state_version is not a number') end
if n <= tonumber(ARGV[1]) then return {n} end
return {n, redis.call('HGET', KEYS[1], 'state') or ''}
"""

_SAVE_STATE = """
local v = redis.call('HGET', KEYS[1], 'state_version')
local n = 0
if v then
  n = tonumber(v)
  if n == nil then return redis.error_reply('state_version is not a number') end
end
if n ~= tonumber(ARGV[1]) then return -1 end
redis.call('HSET', KEYS[1], 'state_version', n + 1, 'state', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return n + 1
"""


class _Script:
    """A Lua script, sent as ``EVALSHA`` (``EVAL`` once when the server does not know it:
    a restarted or flushed server)."""

    __slots__ = ("head", "source")

    def __init__(self, source: str) -> None:
        self.source = source.encode()
        self.head = hashlib.sha1(self.source, usedforsecurity=False).hexdigest().encode()


def _packed(parts: list[bytes]) -> bytes:
    """One command in the Redis protocol (RESP): an array of bulk strings."""
    return b"*%d\r\n%b" % (
        len(parts),
        b"".join([b"$%d\r\n%b\r\n" % (len(part), part) for part in parts]),
    )


def _encoded(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return (value if isinstance(value, str) else str(value)).encode()


def _script_command(script: _Script, keys: list[Any], args: list[Any]) -> list[bytes]:
    """``EVALSHA sha numkeys key... arg...`` as bytes (bytes given pass as they are)."""
    return [
        b"EVALSHA",
        script.head,
        b"%d" % len(keys),
        *[_encoded(k) for k in keys],
        *[_encoded(a) for a in args],
    ]


class _Wire:
    """The store's connections to the server, made by redis-py's connection class from the
    client's settings. A call takes one from a free list and puts it back when its reply
    is read (``list.pop`` and ``append`` are atomic: no lock on the gate's way), so a
    process holds as many as it has calls in flight at once, threads and greenlets
    reusing them. A connection whose reply may still be on its way is disconnected before
    it goes back (it reconnects on its next use); one left by an exception that is not an
    error (``KeyboardInterrupt`` mid-read) is never put back. A forked child starts with
    none (the parent's sockets are not touched). :meth:`close` disconnects the free ones
    and each busy one as it comes back."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._free: list[Any] = []
        self._pid = os.getpid()
        self.closed = False

    def take(self) -> Any:
        if os.getpid() != self._pid:  # forked: the inherited sockets are the parent's
            self._pid = os.getpid()
            self._free = []
        try:
            return self._free.pop()
        except IndexError:
            pool = self._pool
            return pool.connection_class(**pool.connection_kwargs)

    def give_back(self, connection: Any) -> None:
        if self.closed or getattr(connection, "pid", self._pid) != self._pid:
            with contextlib.suppress(Exception):
                connection.disconnect()
            return
        self._free.append(connection)

    def close(self) -> None:
        self.closed = True
        free, self._free = self._free, []
        for connection in free:
            with contextlib.suppress(Exception):
                connection.disconnect()


@dataclass(slots=True)
class _Pending:
    """A command sent whose reply is still to be read, on the connection it holds."""

    operation: str
    key: str
    parts: list[bytes]
    script: _Script | None
    started: float
    connection: Any = None


@dataclass(slots=True)
class _GateCall:
    """What :meth:`RedisStore.gate_begin` hands :meth:`RedisStore.gate_end`."""

    sent: _Pending | None
    key: str
    user: bool


def redacted(url: str) -> str:
    """The URL without its password (what logs may show)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rsplit("@", 1)[1]
        user = parts.username or ""
        return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
    except ValueError:
        return "<unparsable store URL>"


def split_timeout(url: str) -> tuple[str, float | None]:
    """``(url without ?timeout=, the timeout in ms or None)``: ``timeout`` is ours, not
    redis-py's (which would reject it)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    timeout: float | None = None
    kept = []
    for key, value in query:
        if key == "timeout":
            try:
                timeout = float(value)
            except ValueError:
                logger.warning(
                    "otel-loopguard: ignoring timeout=%r in the store URL (expected ms)", value
                )
            else:
                if not math.isfinite(timeout) or timeout <= 0:
                    logger.warning(
                        "otel-loopguard: ignoring timeout=%r in the store URL (expected ms > 0)",
                        value,
                    )
                    timeout = None
        else:
            kept.append((key, value))
    return urlunsplit(parts._replace(query=urlencode(kept))), timeout


class RedisStore(base.RunStore):
    """A :class:`RunStore` on a Redis server; see the module docstring."""

    shared: ClassVar[bool] = True
    name: ClassVar[str] = "redis"

    def __init__(
        self,
        url: str,
        *,
        timeout_ms: float = 50.0,
        prefix: str = "loopguard:",
        ttl: float = 3600.0,
        on_error: base.ErrorSink | None = None,
        on_latency: base.LatencySink | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        import redis  # the optional extra: imported only when a Redis store is opened
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._redis = redis
        url, url_timeout = split_timeout(url)
        self.timeout_ms = url_timeout if url_timeout is not None else timeout_ms
        seconds = self.timeout_ms / 1000.0
        self.url = redacted(url)
        self.prefix = prefix
        self._ttl = max(1, math.ceil(ttl))
        self._ttl_text = b"%d" % self._ttl
        self.on_error = on_error
        self.on_latency = on_latency
        self._clock = clock
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=seconds,
            socket_connect_timeout=seconds,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            decode_responses=True,
        )
        self._wire = _Wire(self._client.connection_pool)
        self._gate = _Script(_GATE)
        self._write_stop = _Script(_WRITE_STOP)
        self._load_state = _Script(_LOAD_STATE)
        self._save_state = _Script(_SAVE_STATE)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down = False
        self._warned_keys: set[str] = set()

    # -- keys ------------------------------------------------------------------------------

    def run_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def user_key(self, user: str) -> str:
        return f"{self.prefix}user:{user}"

    # -- the one way every call goes: timed, fail-open -------------------------------------

    def _call(
        self, operation: str, key: str, script: _Script, keys: list[str], args: list[Any]
    ) -> Any:
        """Run one script; ``None`` when the server cannot answer (outage) or the key holds
        something that is not ours (corrupt); never raises."""
        return self._send(operation, key, _script_command(script, keys, args), script)

    def _send(self, operation: str, key: str, parts: list[bytes], script: _Script | None) -> Any:
        """One command, one reply, on a connection of its own: see :meth:`_call`."""
        return self._finish(self._start(operation, key, parts, script))

    def _start(
        self, operation: str, key: str, parts: list[bytes], script: _Script | None
    ) -> _Pending | None:
        """Send one command; ``None`` when the store is away or the send failed (said)."""
        if self._wire.closed or (self._down and self._clock() < self._down_until):
            return None
        pending = _Pending(operation, key, parts, script, time.perf_counter())
        try:
            pending.connection = self._wire.take()
            pending.connection.send_packed_command([_packed(parts)], check_health=False)
        except Exception as exc:  # ConnectionError, TimeoutError, OSError...
            self._failed(pending, exc)
            return None
        return pending

    def _finish(self, pending: _Pending | None) -> Any:
        """The reply of a command :meth:`_start` sent; ``None`` as in :meth:`_call`."""
        if pending is None:
            return None
        connection = pending.connection
        try:
            try:
                reply = connection.read_response()
            except self._redis.exceptions.NoScriptError:
                script = pending.script
                if script is None:
                    raise
                parts = pending.parts
                parts[0], parts[1] = b"EVAL", script.source  # and the server keeps it
                connection.send_packed_command([_packed(parts)], check_health=False)
                reply = connection.read_response()
        except self._redis.exceptions.ResponseError as exc:
            self._wire.give_back(connection)  # the whole error reply was read: still in step
            self._latency(pending)
            self._corrupt(pending.key, exc)
            return None
        except Exception as exc:  # ConnectionError, TimeoutError, OSError...
            self._failed(pending, exc)
            return None
        self._wire.give_back(connection)
        self._latency(pending)
        if self._down:
            with self._lock:
                was_down, self._down = self._down, False
            if was_down:
                logger.warning("otel-loopguard: the run store %s answers again", self.url)
        return reply

    def _failed(self, pending: _Pending, exc: BaseException) -> None:
        connection = pending.connection
        if connection is not None:  # a reply may still be on its way: start afresh
            with contextlib.suppress(Exception):
                connection.disconnect()
            self._wire.give_back(connection)
        self._latency(pending)
        self._outage(exc)

    def _latency(self, pending: _Pending) -> None:
        if self.on_latency is not None:
            with contextlib.suppress(Exception):  # a metrics callback must not matter
                self.on_latency(time.perf_counter() - pending.started, pending.operation)

    def _outage(self, exc: BaseException) -> None:
        with self._lock:
            first = not self._down
            self._down = True
            self._down_until = self._clock() + RETRY_AFTER
        if first:
            logger.warning(
                "otel-loopguard: the run store %s does not answer within %g ms (%s: %s); "
                "runs go on with this process's local state and share again when it is "
                "back (said once per outage)",
                self.url,
                self.timeout_ms,
                type(exc).__name__,
                exc,
            )
        self._report("unavailable", exc)

    def _corrupt(self, key: str, exc: BaseException) -> None:
        self.note_corrupt(key, exc)

    def note_corrupt(self, key: str, exc: BaseException) -> None:
        """A value under ``key`` is not what this store writes: warn once per key, count."""
        with self._lock:
            first = key not in self._warned_keys and len(self._warned_keys) < _MAX_WARNED_KEYS
            if first:
                self._warned_keys.add(key)
        if first:
            logger.warning(
                "otel-loopguard: ignoring the value under %r in the run store %s (%s: %s); "
                "not written by otel-loopguard? The run goes on with local state",
                key,
                self.url,
                type(exc).__name__,
                exc,
            )
        self._report("corrupt", exc)

    def _report(self, kind: str, exc: BaseException) -> None:
        if self.on_error is not None:
            with contextlib.suppress(Exception):
                self.on_error(kind, exc)

    # -- the interface ---------------------------------------------------------------------

    def read_stop(self, run_id: str) -> base.StopRecord | None:
        key = self.run_key(run_id)
        fields = self._send("read_stop", key, [b"HMGET", key.encode(), *_STOP_FIELDS], None)
        if not fields or fields[0] != "1":
            return None
        return self._stop_record(key, fields[1:])

    def write_stop(self, run_id: str, record: base.StopRecord) -> bool | None:
        key = self.run_key(run_id)
        decision = json.dumps(record.decision) if record.decision is not None else ""
        reply = self._call(
            "write_stop",
            key,
            self._write_stop,
            [key],
            [",".join(record.detectors), record.reason, repr(record.time), decision, self._ttl],
        )
        return None if reply is None else bool(reply)

    def gate(
        self, run_id: str, delta: base.CounterDelta, now: float, user: base.UserWindow | None = None
    ) -> base.GateAnswer | None:
        return self.gate_end(self.gate_begin(run_id, delta, now, user))

    def gate_begin(
        self, run_id: str, delta: base.CounterDelta, now: float, user: base.UserWindow | None = None
    ) -> object:
        """Sends the gate script; :meth:`gate_end` reads its answer."""
        key = self.run_key(run_id)
        script = self._gate
        keys = [key] if user is None else [key, self.user_key(user.user)]
        args = [  # bytes already: the gate is on every call's way
            self._ttl_text,
            repr(now).encode(),
            b"%d" % delta.steps,
            b"%d" % delta.tool_calls,
            b"%d" % delta.input_tokens,
            b"%d" % delta.output_tokens,
            repr(delta.cost).encode() if delta.cost else b"0",
            b"1" if delta.cost_unknown else b"0",
        ]
        if user is not None:
            args += (repr(bucket_seconds(user.seconds)).encode(), b"%d" % BUCKETS)
        parts = _script_command(script, keys, args)
        return _GateCall(self._start("gate", key, parts, script), key, user is not None)

    def gate_end(self, pending: object) -> base.GateAnswer | None:
        if not isinstance(pending, _GateCall):  # pragma: no cover - not ours: no answer
            return None
        reply = self._finish(pending.sent)
        key = pending.key
        if reply is None:
            return None
        try:
            if reply[0] == "stop":
                return base.GateAnswer(self._stop_record(key, reply[1:]), None)
            cost_unknown = reply[6] == "1"
            totals = base.RunTotals(
                int(reply[1]),
                int(reply[2]),
                int(reply[3]),
                int(reply[4]),
                None if cost_unknown else float(reply[5]),
                float(reply[7]),
            )
            usage = base.Usage(int(reply[8]), float(reply[9])) if pending.user else None
        except (ValueError, IndexError, TypeError) as exc:
            self._corrupt(key, exc)
            return None
        return base.GateAnswer(None, totals, usage)

    def load_state(self, run_id: str, newer_than: int = 0) -> base.StoredState | None:
        key = self.run_key(run_id)
        reply = self._call("load_state", key, self._load_state, [key], [newer_than])
        if not reply or not reply[0]:
            return None
        version = int(reply[0])
        if len(reply) < 2:
            return base.StoredState(version, None)
        try:
            data = json.loads(reply[1])
            if not isinstance(data, dict):
                raise ValueError(f"a {type(data).__name__}, not an object")
        except ValueError as exc:
            self._corrupt(key, exc)
            return None
        return base.StoredState(version, data)

    def save_state(self, run_id: str, data: dict[str, Any], expected_version: int) -> int | None:
        key = self.run_key(run_id)
        try:
            text = json.dumps(data, separators=(",", ":"), default=str)
        except (TypeError, ValueError) as exc:  # pragma: no cover - exports are JSON-able
            self._report("corrupt", exc)
            return None
        reply = self._call(
            "save_state", key, self._save_state, [key], [expected_version, text, self._ttl]
        )
        return None if reply is None else int(reply)

    def close(self) -> None:
        self._wire.close()
        with contextlib.suppress(Exception):
            self._client.close()

    # -- reading what we wrote -------------------------------------------------------------

    def _stop_record(self, key: str, fields: list[Any]) -> base.StopRecord:
        """A STOP from its hash fields; a field another program filled oddly falls back
        (the run is stopped all the same: ``stop`` is ``"1"``)."""
        detectors_text, reason, when, decision_text = (list(fields) + [None] * 4)[:4]
        detectors = tuple(d for d in (detectors_text or "").split(",") if d)
        try:
            stopped_at = float(when) if when else 0.0
        except ValueError:
            stopped_at = 0.0
        decision: dict[str, Any] | None = None
        if decision_text:
            try:
                loaded = json.loads(decision_text)
                decision = loaded if isinstance(loaded, dict) else None
            except ValueError as exc:
                self.note_corrupt(key, exc)
        return base.StopRecord(detectors, str(reason or ""), stopped_at, decision)
