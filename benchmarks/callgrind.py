"""Instructions a Python child process runs, counted by ``valgrind --tool=callgrind``: the
``--instructions`` mode of the benchmarks that need a figure the machine's load cannot
move (``span_overhead.py``, ``store_latency.py``)."""

from __future__ import annotations

import re
import subprocess
import sys


def collected(script: str, *arguments: str) -> int:
    """Instructions callgrind counted for ``python script arguments`` (the whole process)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        script,
        *arguments,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind failed for {arguments}: {done.stderr.strip()[-300:]}")
    return int(found.group(1).replace(",", ""))
