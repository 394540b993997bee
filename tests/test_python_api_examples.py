"""docs/python-api.md's monitor example runs and prints what its comments say (issue 30,
point 7): the example is executed, in a process of its own, with no OTEL_LOOPGUARD_*
setting, and each printed line is checked against the comment beside its print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def _monitor_example() -> str:
    section = DOC.read_text(encoding="utf-8").split("\n## The monitor alone", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "no Python example under 'The monitor alone'"
    return block.group(1)


def test_the_monitor_example_prints_what_it_says(tmp_path: Path) -> None:
    code = _monitor_example()
    said = [
        line.split("#", 1)[1].strip()
        for line in code.splitlines()
        if line.startswith("print(") and "#" in line
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_LOOPGUARD_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert len(printed) == len(said) == 2
    # the comment is the printed line, up to its "(...)" remark or "..."
    for line, comment in zip(printed, said, strict=True):
        expected = re.split(r" \(| \.\.\.", comment, maxsplit=1)[0]
        assert line.startswith(expected), (line, comment)


def test_readme_states_python_versions_and_enables_before_the_contributors_section() -> None:
    readme = (DOC.parent.parent / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"Python 3\.10 to 3\.13", quick)
    assert readme.index("## Enable with opentelemetry-instrument") < readme.index(
        "## Running the tests"
    )
    assert len(readme.splitlines()) <= 200
