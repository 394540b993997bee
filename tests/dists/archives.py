"""Reading built distributions: a wheel's files and METADATA, an sdist's files."""

from __future__ import annotations

import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if not name.endswith("/")}


def wheel_text(wheel: Path, suffix: str) -> str:
    """The text of the one ``*.dist-info/<suffix>`` file of a wheel."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [
            n
            for n in archive.namelist()
            if n.split("/", 1)[0].endswith(".dist-info") and n.split("/", 1)[1] == suffix
        ]
        return archive.read(name).decode("utf-8")


def wheel_member(wheel: Path, name: str) -> str:
    """The text of one file of a wheel, by its path in the archive (``pkg/module.py``)."""
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(name).decode("utf-8")


def wheel_metadata(wheel: Path) -> Message:
    return Parser().parsestr(wheel_text(wheel, "METADATA"))


def sdist_files(sdist: Path) -> set[str]:
    """The sdist's files, relative to its top folder (``name-version/``)."""
    with tarfile.open(sdist) as archive:
        return {
            member.name.split("/", 1)[1]
            for member in archive.getmembers()
            if member.isfile() and "/" in member.name
        }
