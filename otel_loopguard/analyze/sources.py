"""Opening inputs: files, ``-`` for stdin, gzip detected by its magic bytes.

Everything that can go wrong with an input (missing path, unreadable file, a broken gzip
stream, bytes that are not UTF-8 text) becomes an :class:`InputError` with one line that
names the input, so the command line can print it and exit 2 without a traceback.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, TextIO

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# errors a read of a (possibly compressed, possibly binary) stream can raise midway
READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # includes gzip.BadGzipFile
    EOFError,  # gzip stream cut short
    zlib.error,
    UnicodeDecodeError,
)


class InputError(Exception):
    """An input that cannot be analysed; ``str()`` is the one-line reason for the user."""


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def describe_read_error(exc: BaseException) -> str:
    """A short human phrase for an exception raised while reading an input."""
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text (binary data?)"
    if isinstance(exc, EOFError):
        return "compressed stream ends early (truncated .gz?)"
    if isinstance(exc, gzip.BadGzipFile | zlib.error):
        return f"broken gzip data ({exc})"
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


@contextmanager
def open_text(path: str) -> Iterator[tuple[TextIO, BinaryIO]]:
    """Open ``path`` (or stdin for ``-``) as UTF-8 text, decompressing gzip transparently.

    Yields the text stream and the raw byte stream underneath it; the raw stream's position
    tells how much of the input has been consumed, for progress reporting.
    """
    name = display_name(path)
    try:
        raw: BinaryIO = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"{name}: cannot open: {describe_read_error(exc)}") from None
    try:
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type,type-var]
        try:
            head = buffered.peek(4)[:4]  # type: ignore[attr-defined]
        except OSError as exc:
            raise InputError(f"{name}: cannot read: {describe_read_error(exc)}") from None
        if head.startswith(ZSTD_MAGIC):
            raise InputError(
                f"{name}: zstd-compressed input is not supported; decompress it first "
                "(zstd -d) or pipe it: zstd -dc FILE | otel-loopguard analyze -"
            )
        data: BinaryIO = buffered  # type: ignore[assignment]
        if head.startswith(GZIP_MAGIC):
            data = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
        text = io.TextIOWrapper(data, encoding="utf-8-sig", errors="strict", newline=None)
        try:
            yield text, raw
        finally:
            text.detach()
    finally:
        if path != "-":
            raw.close()
