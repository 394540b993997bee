"""The docs' Python examples run, and print what they say (issue 30, point 7).

Every ```python block of README.md, docs/*.md and the framework packages' READMEs is one of:

* executed here, as a program of its own (``python -c``, a scratch folder, no
  ``OTEL_*`` setting but those its first line names, no network, a minute at most).
  A first line ``# OTEL_LOOPGUARD_MODE=enforce python agent.py`` says how to run it and is
  how it is run. ``<!-- executed after: CODE -->`` right before the block names what a
  snippet assumes exists (README's ``provider``), run first. Where a ``print(...)`` has a
  comment, the comment is what it prints (up to a ``(remark)`` or ``...``), in order;
* ``<!-- executed by PATH -->``: run by that framework suite's test, which reads the block
  from this page (the path must exist and name the page);
* ``<!-- not executed: REASON -->``: signatures, or what cannot run here (a Redis server,
  a live key); counted, so the count of skipped blocks cannot grow unnoticed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent for p in (ROOT / "instrumentation").glob("*/pyproject.toml"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES += [package / "README.md" for package in PACKAGES]
MARKER = re.compile(r"^<!-- (not executed|executed by|executed after):? (.+?) -->$")
#: the most blocks marked "not executed"; a new one must be argued for here
MOST_NOT_EXECUTED = 3  # ARCHITECTURE's three signature blocks


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    marker: str | None = None
    argument: str = ""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            if lines[index].strip() != "```python":
                index += 1
                continue
            end = lines.index("```", index + 1)
            before = lines[index - 1].strip() if index else ""
            marked = MARKER.match(before)
            found.append(
                Example(
                    page,
                    index + 1,
                    "\n".join(lines[index + 1 : end]) + "\n",
                    marked.group(1) if marked else None,
                    marked.group(2) if marked else "",
                )
            )
            index = end + 1
    return found


EXAMPLES = examples()
EXECUTED = [e for e in EXAMPLES if e.marker in (None, "executed after")]


def claims(code: str) -> list[str]:
    """What each commented ``print`` says it prints, in order (each prints once)."""
    said = []
    for line in code.splitlines():
        line = line.strip()
        if line.startswith("print(") and "  # " in line:
            comment = line.split("  # ", 1)[1].strip()
            said.append(re.split(r" \(| \.\.\.", comment, maxsplit=1)[0])
    return said


def run(
    example: Example, tmp_path: Path, *, as_written: bool = True, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run the block (with the variables of its first line unless ``as_written`` is off,
    after ``prelude``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    first = example.code.splitlines()[0]
    how = re.match(r"# ((?:[A-Z_]+=\S+ )+)python ", first)
    if how and as_written:
        env.update(pair.split("=", 1) for pair in how.group(1).split())
    if example.marker == "executed after":
        prelude = example.argument + "\n" + prelude
    return subprocess.run(
        [sys.executable, "-c", prelude + example.code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("example", EXECUTED, ids=lambda e: e.name)
def test_the_example_runs_and_prints_what_it_says(example: Example, tmp_path: Path) -> None:
    done = run(example, tmp_path)
    assert done.returncode == 0, done.stderr
    said = claims(example.code)
    if said:
        printed = done.stdout.splitlines()
        assert len(printed) == len(said), (printed, said)
        for line, claim in zip(printed, said, strict=True):
            assert line.startswith(claim), (line, claim)


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if e.marker == "executed by"], ids=lambda e: e.name
)
def test_a_block_run_elsewhere_is_read_there(example: Example) -> None:
    test = ROOT / example.argument
    assert test.is_file(), f"{example.name}: no {example.argument}"
    assert example.page.name in test.read_text(encoding="utf-8")


def test_every_block_is_executed_or_says_why_not() -> None:
    skipped = [e for e in EXAMPLES if e.marker == "not executed"]
    assert all(e.argument.strip() for e in skipped)
    assert len(skipped) <= MOST_NOT_EXECUTED, [e.name for e in skipped]
    assert len(EXECUTED) >= 4, [e.name for e in EXECUTED]


def test_the_agent_example_stops_the_third_search_and_says_so(tmp_path: Path) -> None:
    """python-api's hand-written agent, as its first line runs it (enforce): the third
    identical search runs, the fourth never does, and one WARNING line says why."""
    (example,) = [e for e in EXECUTED if "def search(" in e.code and "agent_run" in e.code]
    done = run(example, tmp_path)
    assert done.stdout.splitlines()[-1] == "search ran 3 times"
    warnings = [line for line in done.stderr.splitlines() if "STOP interrupted run" in line]
    assert len(warnings) == 1, done.stderr
    # the line the page quotes, up to its "…"
    quoted = re.search(r"`(otel-loopguard: STOP interrupted run[^`]*)`", example.page.read_text())
    assert quoted, "the page quotes no interrupt line"
    for part in " ".join(quoted.group(1).split()).split("…"):
        assert part.strip(" ;") in warnings[0], (part, warnings[0])


def test_the_agent_example_run_plainly_says_what_to_add(tmp_path: Path) -> None:
    """The same program run as plain ``python agent.py``: observe mode with no SDK records
    nothing and interrupts nothing, so one line says so and what to add; with an SDK
    provider (the page's span-processor block first) the decisions are recorded: no line."""
    (example,) = [e for e in EXECUTED if "def search(" in e.code and "agent_run" in e.code]
    plain = run(example, tmp_path, as_written=False)
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1] == "search ran 20 times"
    said = [line for line in plain.stderr.splitlines() if "observe mode decided STOP" in line]
    assert len(said) == 1, plain.stderr
    assert "OTEL_LOOPGUARD_MODE=enforce" in said[0] and "SDK" in said[0]
    (sdk,) = [e for e in EXECUTED if "provider.add_span_processor" in e.code and e.marker is None]
    recorded = run(example, tmp_path, as_written=False, prelude=sdk.code)
    assert recorded.returncode == 0 and "observe mode" not in recorded.stderr


def test_readme_states_python_versions_and_enables_before_the_contributors_section() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"Python 3\.10 to 3\.13", quick)
    assert readme.index("## Enable with opentelemetry-instrument") < readme.index(
        "## Running the tests"
    )
    assert len(readme.splitlines()) <= 200
