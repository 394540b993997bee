"""``python benchmarks/run_all.py --quick`` makes its one table (a smoke test: no timing asserted).

The figures depend on the machine; what must hold everywhere is that the one command runs
every benchmark and prints one row per measurement, each with a ratio.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED_ROWS = (
    "tool span, 1 thread",
    "tool span, 8 threads",
    "concurrent asyncio runs",
    "monitor, 1 run of",
    "monitor, per-event cost after",
    "live runs",
    "memory held after every run ended",
    "analyze,",
    "analyze, peak RSS",
    "looping run 'stuck-search'",
    "looping run 'healthy'",
    "signature of a 10 MB value",
)


def test_quick_run_prints_one_table_with_every_measure() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "cores (nproc)" in out and "Python 3." in out  # machine details come first
    table = [line for line in out.splitlines() if line.startswith("| ")]
    header, rows = table[0], table[1:]
    assert "ratio" in header and "baseline" in header
    for expected in EXPECTED_ROWS:
        matching = [row for row in rows if expected in row]
        assert matching, f"no row for {expected!r}:\n{out}"
        for row in matching:
            ratio = row.split("|")[4].strip()
            assert ratio and ratio[0] in "0123456789+", row
    assert "Traceback" not in result.stderr
