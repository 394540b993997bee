"""Progress on stderr for long inputs, and silence otherwise.

Shown when stderr is a terminal (one line redrawn in place, at most twice a second) or when
the inputs are large (a plain line every 15 seconds, for CI logs). Small inputs written to
a pipe, which is what tests and scripts do, print nothing.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

#: inputs at least this large show progress even when stderr is not a terminal
LARGE_INPUT_BYTES = 256 << 20


def _total_size(paths: list[str]) -> int | None:
    """Bytes of all inputs (compressed size for .gz); ``None`` when unknown (stdin)."""
    total = 0
    for path in paths:
        if path == "-":
            return None
        try:
            total += os.path.getsize(path)
        except OSError:
            return None
    return total


class Progress:
    def __init__(self, stream: TextIO, paths: list[str], force: bool | None = None) -> None:
        self._stream = stream
        self._tty = _isatty(stream)
        self._sizes = {path: _size(path) for path in paths}
        total = _total_size(paths)
        if force is None:
            self.enabled = self._tty or (total is not None and total >= LARGE_INPUT_BYTES)
        else:
            self.enabled = force
        self._interval = 0.5 if self._tty else 15.0
        self._started = time.monotonic()
        self._last = self._started
        self._drawn = False

    def update(self, path: str, position: int, spans: int, runs: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        self._last = now
        size = self._sizes.get(path)
        where = f" {100 * position / size:4.1f}% of {path}" if size and position >= 0 else ""
        line = self._line(now, spans, runs) + where
        if self._tty:
            self._stream.write("\r\x1b[2K" + line)
            self._drawn = True
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def _line(self, now: float, spans: int, runs: int) -> str:
        elapsed = max(now - self._started, 1e-9)
        return f"analyze: {spans:,} spans ({spans / elapsed:,.0f}/s), {runs:,} runs finished"

    def close(self, spans: int | None = None, runs: int | None = None) -> None:
        """Clear the progress line; with counts, end with a last line saying the totals."""
        if not self.enabled:
            return
        if self._drawn:
            self._stream.write("\r\x1b[2K")
        if spans is not None and runs is not None:
            now = time.monotonic()
            self._stream.write(f"{self._line(now, spans, runs)} in {now - self._started:.1f}s\n")
        self._stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _size(path: str) -> int | None:
    if path == "-":
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None
