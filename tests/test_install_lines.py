"""Every install line in the docs installs from the checkout (issue 30, point 6).

No index serves otel-loopguard or its framework packages: a reader who copies
``pip install 'otel-loopguard[serve]'`` gets "no matching distribution". Every ``pip install``
and ``uv pip install`` in README.md, docs/ and the framework packages' READMEs must name our
distributions by their path in the checkout (``'.[serve]'``,
``'./instrumentation/langchain[instruments,langgraph]'``), the path must hold a
distribution, and each extra it asks for must exist there. A framework package's own
install line asks for every extra that installs a framework it instruments (package.py's
``_instruments``: ``instruments``; each ``_supports_<extra>``: that extra).
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent for p in (ROOT / "instrumentation").glob("*/pyproject.toml"))
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *(package / "README.md" for package in PACKAGES),
    ROOT / "testing" / "otel-loopguard-testing" / "README.md",
]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
#: where one shell command ends and the next begins
COMMAND_END = re.compile(r"\s(?:&&|\|\||;|\|)\s|\s#")
#: pip / uv options that take a value (the value is no requirement)
OPTIONS_WITH_VALUE = {"-p", "--python", "-r", "--requirement", "-c", "--constraint", "-i"}


def _pyproject(directory: Path) -> dict:
    return tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))


def _our_distributions() -> set[str]:
    return {
        canonicalize_name(_pyproject(directory)["project"]["name"])
        for directory in (ROOT, *PACKAGES)
    }


def install_commands(text: str) -> Iterator[str]:
    """The arguments after each ``pip install`` (code blocks and inline code alike)."""
    blocks = FENCE.findall(text)
    prose = FENCE.sub("", text)
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    for chunk in [*(line for block in blocks for line in block.splitlines()), *spans]:
        for found in re.finditer(r"\bpip install\b", chunk):
            rest = chunk[found.end() :]
            yield COMMAND_END.split(" " + rest, maxsplit=1)[0].strip()


def problems(arguments: str, ours: set[str]) -> list[str]:
    """What is wrong with one install command's arguments, as sentences."""
    found = []
    words = shlex.split(arguments)
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word in OPTIONS_WITH_VALUE:
            skip_next = True
            continue
        if word.startswith("-") or "<" in word:  # an option; a placeholder such as <name>
            continue
        path, _, extras = word.partition("[")
        if path == "." or "/" in path:
            directory = ROOT / path
            if not (directory / "pyproject.toml").is_file():
                found.append(f"{word}: no distribution at {path}")
                continue
            declared = _pyproject(directory)["project"].get("optional-dependencies", {})
            for extra in filter(None, extras.rstrip("]").split(",")):
                if extra.strip() not in declared:
                    found.append(f"{word}: {path} has no extra {extra.strip()!r}")
            continue
        try:
            name = canonicalize_name(Requirement(word).name)
        except InvalidRequirement:
            continue
        if name in ours:
            found.append(f"{word}: no index serves {name}; install it from its path")
    return found


def declared_framework_extras(package: Path) -> set[str]:
    """The extras that install the frameworks package.py declares: ``instruments`` for
    ``_instruments``, ``<extra>`` for each ``_supports_<extra>``."""
    (source,) = (package / "src").glob("*/package.py")
    extras = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "_instruments":
                extras.add("instruments")
            elif name.startswith("_supports_"):
                extras.add(name.removeprefix("_supports_"))
    return extras


def test_the_checker_refuses_a_distribution_name_and_a_missing_extra() -> None:
    ours = _our_distributions()
    assert problems("'otel-loopguard[serve]'", ours)
    assert problems("otel_loopguard_langchain", ours)
    assert problems("'./instrumentation/langchain[instrument]'", ours)
    assert problems("-e ./instrumentation/nowhere", ours)
    assert not problems("-e '.[serve]' opentelemetry-distro './instrumentation/openai'", ours)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_install_line_installs_our_distributions_from_their_path(page: Path) -> None:
    ours = _our_distributions()
    wrong = [
        problem
        for command in install_commands(page.read_text(encoding="utf-8"))
        for problem in problems(command, ours)
    ]
    assert wrong == []


def test_the_pages_have_install_lines_to_check() -> None:
    commands = [c for page in PAGES for c in install_commands(page.read_text(encoding="utf-8"))]
    assert len(commands) >= len(PACKAGES) + 5, commands


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_a_package_readme_installs_every_framework_it_instruments(package: Path) -> None:
    wanted = declared_framework_extras(package)
    assert "instruments" in wanted, f"{package.name}: package.py declares no _instruments"
    declared = _pyproject(package)["project"]["optional-dependencies"]
    assert wanted <= set(declared), f"{package.name}: package.py names extras pyproject lacks"
    lines = [
        command
        for command in install_commands((package / "README.md").read_text(encoding="utf-8"))
        if f"instrumentation/{package.name}" in command
    ]
    assert lines, f"{package.name}: its README has no install line"
    for command in lines:
        asked = re.search(rf"instrumentation/{package.name}\[([^\]]*)\]", command)
        assert asked, command
        assert {extra.strip() for extra in asked.group(1).split(",")} >= wanted, command
