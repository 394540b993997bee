#!/usr/bin/env python3
"""Run every test suite of the repository, each in its own virtual environment.

Agent frameworks pin conflicting versions (CrewAI pins mcp 1.x while the MCP package is at
2.x, for one), so, as opentelemetry-python-contrib does with tox, the core and each
``instrumentation/<framework>/`` package are installed and tested in a separate venv under
``.venvs/``. Suites are discovered: adding ``instrumentation/foo/pyproject.toml`` with a
``test`` extra adds a suite, nothing else to edit. Every suite's venv but the ``dists`` one
also gets the suites' shared test helpers, ``testing/otel-loopguard-testing/``
(``otel_loopguard_testing``, editable; not a suite and not shipped).

The core's tests run twice, on the source (``core``) and on the mypyc-compiled wheel users
can build (``compiled``); so does each framework's (``<framework>`` on the source core,
``<framework>-compiled`` on the compiled wheel: compiled code checks declared types at run
time, so a framework handing the core a value of another type shows up there). The wheel is
built once per run and interpreter. A release ships compiled wheels for every supported
CPython, and each carries the hand-written C modules too, so the compiled core's tests also
run on the newest one (``compiled-py3.13``; see ``COMPILED_ON_OTHER_PYTHONS``).

The ``dists`` suite tests what users install instead of the source: it builds the sdist and
the wheel of every distribution (the core and each ``instrumentation/<framework>/``), checks
what they hold, installs all the wheels into a fresh venv and runs the command-line tools and
``opentelemetry-instrument`` from there. Its tests are ``tests/dists/`` (their own pytest.ini;
the core suites leave that folder out) and its venv holds only what they drive: pytest,
packaging, uv and cibuildwheel (asked which wheels a release would build, not run).

Every suite runs on the interpreter that runs this script (or ``LOOPGUARD_TEST_PYTHON``),
but the package claims every Python from 3.10 on, and users run newer ones than CI's: so the
core's tests also run, on the source, on each other supported CPython this machine has
(``core-py3.10``, ``core-py3.12``, ``core-py3.13``; see ``OTHER_PYTHONS``). An interpreter
that cannot be found makes its suite "skipped" in the table (counted as one skipped, not a
failure), so a machine without it still passes but says what it did not test.

Usage: ``python scripts/run_tests.py [SUITE ...] [--jobs N] [--list] [-- PYTEST ARGS]``
(``SUITE`` is ``core``, ``compiled``, ``core-py3.X``, ``dists``, ``collector``, a folder name under
``instrumentation/``, or that name with ``-compiled``, or ``compat-<name>`` for a folder under
``compat/``; ``--list`` prints them all).

The ``collector`` suite (``tests/collector/``, run last, once, on the source core) runs the
real OpenTelemetry Collector and Jaeger, built with Go by ``scripts/build-collector.sh`` and
``scripts/build-jaeger.sh`` (``scripts/test.sh`` starts those builds in the background
first, so they overlap the other suites); the core's suites leave that folder out.

``compat/<name>/`` folders test the core (and our framework packages) beside a third-party
instrumentation (OpenInference, OpenLLMetry, the official GenAI ones), one venv each, on the
source core only: see ``_compat_suite``.

The last line is ``total: N passed, N failed, N skipped`` over all suites; the exit code is
non-zero when any suite failed, did not install, or ran no test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venvs"
PYTHON = os.environ.get("LOOPGUARD_TEST_PYTHON", sys.executable)
#: the supported CPythons the core's tests also run on, besides PYTHON (CI's is 3.11)
OTHER_PYTHONS = ("3.10", "3.12", "3.13")
#: the CPythons the compiled core's tests also run on (``compiled-py<version>``): the newest,
#: whose C API moves the most under mypyc's and the native modules' code
COMPILED_ON_OTHER_PYTHONS = ("3.13",)
#: framework suites that also run on another CPython (``<framework>-py<version>``)
FRAMEWORKS_ON_OTHER_PYTHONS = {"openai": ("3.13",), "langchain": ("3.13",)}
#: the suites' shared test helpers, installed (editable) into every venv but the dists suite's
TESTING = ROOT / "testing" / "otel-loopguard-testing"
#: the dists suite's tests: the core's suites must not collect them (tests/conftest.py)
DISTS_TESTS = "tests/dists"
#: the Collector suite's tests: the real Collector and Jaeger, built with Go (not on every
#: Python the core runs on: tests/conftest.py leaves them out of the core's suites)
COLLECTOR_TESTS = "tests/collector"
#: all the dists suite's venv holds: its tests build and install the distributions themselves
DISTS_REQUIREMENTS = (
    "pytest>=8",
    "packaging>=23",
    "uv",
    "tomli>=2; python_version < '3.11'",
    # asked which wheels the release's builder would make (pyproject's [tool.cibuildwheel])
    "cibuildwheel>=3,<5",
)


@dataclass
class Suite:
    name: str
    project: Path  # the folder whose [test] extra is installed and whose tests/ runs
    extra_installs: tuple[str, ...] = ()
    #: install the mypyc-compiled wheel of the core instead of an editable install
    compiled: bool = False
    #: run on this CPython version ("3.13") instead of PYTHON; found by find_python
    python_version: str | None = None
    #: what pytest collects, relative to ``project``
    tests: str = "tests"
    #: when set, the venv gets only these requirements, not the project's [test] extra
    requirements: tuple[str, ...] | None = None


@dataclass
class Outcome:
    suite: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    status: str = "ok"
    seconds: float = 0.0
    #: each failed test: its id and the end of its failure (what CI's output shows of it)
    failures: list[str] = field(default_factory=list)


def discover() -> list[Suite]:
    # every suite runs twice: on the source core, and on the compiled wheel users can build
    testing = (str(TESTING),)
    suites = [Suite("core", ROOT, testing), Suite("compiled", ROOT, testing, compiled=True)]
    suites += [Suite(f"core-py{v}", ROOT, testing, python_version=v) for v in OTHER_PYTHONS]
    suites += [
        Suite(f"compiled-py{v}", ROOT, testing, compiled=True, python_version=v)
        for v in COMPILED_ON_OTHER_PYTHONS
    ]
    # the built distributions, installed as users install them (tests/dists/)
    suites.append(Suite("dists", ROOT, tests=DISTS_TESTS, requirements=DISTS_REQUIREMENTS))
    instrumentation = ROOT / "instrumentation"
    if instrumentation.is_dir():
        for child in sorted(instrumentation.iterdir()):
            if (child / "pyproject.toml").is_file() and (child / "tests").is_dir():
                helpers = (str(TESTING), *_siblings(child))
                suites.append(Suite(child.name, child, extra_installs=(str(ROOT), *helpers)))
                suites.append(Suite(f"{child.name}-compiled", child, helpers, compiled=True))
                suites += [
                    Suite(f"{child.name}-py{v}", child, (str(ROOT), *helpers), python_version=v)
                    for v in FRAMEWORKS_ON_OTHER_PYTHONS.get(child.name, ())
                ]
    compat = ROOT / "compat"
    if compat.is_dir():
        for child in sorted(compat.iterdir()):
            if (child / "pyproject.toml").is_file() and (child / "tests").is_dir():
                suites.append(_compat_suite(child))
    # last: it waits for the Go builds scripts/test.sh started, which the suites before it
    # overlap (tests/collector/binaries.py)
    # (with the OpenAI package and SDK: a real framework's agent goes through the pipeline)
    openai = ROOT / "instrumentation" / "openai"
    collector_installs = (*testing, f"{openai}[test]") if openai.is_dir() else testing
    suites.append(Suite("collector", ROOT, collector_installs, tests=COLLECTOR_TESTS))
    return suites


def _compat_suite(folder: Path) -> Suite:
    """``compat/<name>/``: our core (and, with ``install-also``, our framework packages)
    beside a third-party instrumentation from PyPI, pinned at the version tested. Not a
    distribution: its pyproject.toml lists the suite's requirements under
    ``[tool.loopguard-tests] requirements`` (the third party's own pins conflict with other
    suites', which is why each gets a venv of its own)."""
    table = _tests_table(folder)
    siblings = tuple(str(ROOT / "instrumentation" / name) for name in table.get("install-also", []))
    return Suite(
        f"compat-{folder.name}",
        folder,
        extra_installs=(f"{ROOT}[test]", str(TESTING), *siblings),
        requirements=tuple(table.get("requirements", [])),
    )


def _tests_table(package: Path) -> dict[str, list[str]]:
    """The ``[tool.loopguard-tests]`` table of a suite folder's pyproject.toml."""
    try:
        import tomllib
    except ModuleNotFoundError:  # this script run by Python 3.10: tomli is the same parser
        import tomli as tomllib

    data = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))
    return data.get("tool", {}).get("loopguard-tests", {})


def _siblings(package: Path) -> tuple[str, ...]:
    """Other instrumentation packages a suite's tests also install (editable), from
    ``[tool.loopguard-tests] install-also = ["openai"]`` in its pyproject.toml: tests of
    two instrumentations at work in one process (each turn counted once, say)."""
    names = _tests_table(package).get("install-also", [])
    return tuple(str(package.parent / name) for name in names)


def find_python(version: str) -> str | None:
    """A working CPython ``version`` ("3.13") interpreter, or None.

    Looked for, in order: ``$PYENV_ROOT/versions/<version>.*`` (newest patch first; CI's
    image has its Pythons there, and ``uv python find`` does not look there), ``python<version>``
    on PATH, then ``uv python find --no-python-downloads`` (uv's own installs, the system's).
    Each candidate is run to check its version: a pyenv shim on PATH exists for every
    installed version but fails unless that version is selected.
    """
    candidates: list[str] = []
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installs = [
        path
        for path in (pyenv_root / "versions").glob(f"{version}.*")
        if re.fullmatch(rf"{re.escape(version)}\.\d+", path.name)
    ]
    installs.sort(key=lambda path: int(path.name.rsplit(".", 1)[1]), reverse=True)
    candidates += [str(path / "bin" / "python") for path in installs]
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    try:
        found = subprocess.run(
            [*_uv(), "python", "find", "--no-python-downloads", version],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if found.returncode == 0 and found.stdout.strip():
            candidates.append(found.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    for candidate in candidates:
        if _python_version(candidate) == version:
            return candidate
    return None


def _python_version(python: str) -> str | None:
    """``major.minor`` of a CPython interpreter, or None when it does not run."""
    probe = "import platform, sys; print(platform.python_implementation(), *sys.version_info[:2])"
    try:
        result = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = result.stdout.split()
    if result.returncode != 0 or len(parts) != 3 or parts[0] != "CPython":
        return None
    return f"{parts[1]}.{parts[2]}"


def _uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    return [PYTHON, "-m", "uv"]


def _run(cmd: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None) -> int:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"\n$ {' '.join(cmd)}\n")
        handle.flush()
        return subprocess.call(cmd, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, env=env)


def run_suite(suite: Suite, pytest_args: list[str]) -> Outcome:
    start = time.monotonic()
    outcome = Outcome(suite.name)
    venv = VENVS / suite.name
    log = VENVS / f"{suite.name}.log"
    VENVS.mkdir(exist_ok=True)
    log.write_text(f"suite {suite.name}\n", encoding="utf-8")
    interpreter = PYTHON
    if suite.python_version is not None:
        found = find_python(suite.python_version)
        if found is None:
            outcome.status = f"skipped: no {suite.python_version}"
            outcome.skipped = 1
            with log.open("a", encoding="utf-8") as handle:
                handle.write(_missing_python(suite.python_version) + "\n")
            outcome.seconds = time.monotonic() - start
            return outcome
        interpreter = found
    python = venv / "bin" / "python"
    if python.exists() and _python_version(str(python)) != _python_version(interpreter):
        # a venv left by an earlier run whose interpreter is gone or of another version
        # (another LOOPGUARD_TEST_PYTHON): reusing it would test the wrong Python
        shutil.rmtree(venv)
    venv_cmd = [*_uv(), "venv", "--python", interpreter, "--seed", str(venv)]
    if not python.exists() and _run(venv_cmd, log, ROOT):
        outcome.status = "venv failed"
        return outcome
    installs = [arg for path in suite.extra_installs for arg in ("-e", path)]
    if suite.requirements is not None:
        installs += suite.requirements
    elif suite.compiled:
        wheel = _compiled_wheel(log, interpreter)
        if wheel is None:
            outcome.status = "build failed"
            outcome.seconds = time.monotonic() - start
            return outcome
        if suite.project == ROOT:
            installs += ["--reinstall-package", "otel-loopguard", f"{wheel}[test]"]
        else:  # a framework package, on the compiled core
            installs += ["--reinstall-package", "otel-loopguard", str(wheel)]
            installs += ["-e", f"{suite.project}[test]"]
    else:
        installs += ["-e", f"{suite.project}[test]"]
    if _run([*_uv(), "pip", "install", "--python", str(python), *installs], log, ROOT):
        outcome.status = "install failed"
        outcome.seconds = time.monotonic() - start
        return outcome
    junit = VENVS / f"{suite.name}.junit.xml"
    if junit.exists():
        junit.unlink()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # ``python -m pytest`` would put the source tree first on sys.path, shadowing the
    # installed compiled modules; the venv's ``pytest`` script does not
    pytest = [str(venv / "bin" / "pytest")] if suite.compiled else [str(python), "-m", "pytest"]
    if suite.compiled:
        env["LOOPGUARD_EXPECT_COMPILED"] = "1"
    code = _run(
        [
            *pytest,
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            suite.tests,
            *pytest_args,
        ],
        log,
        suite.project,
        env,
    )
    if junit.exists():
        root = ET.parse(junit).getroot()
        for testsuite in root.iter("testsuite"):
            tests = int(testsuite.get("tests", 0))
            failures = int(testsuite.get("failures", 0)) + int(testsuite.get("errors", 0))
            skipped = int(testsuite.get("skipped", 0))
            outcome.failed += failures
            outcome.skipped += skipped
            outcome.passed += tests - failures - skipped
        outcome.failures = _failures(root)
    if code == 5:
        outcome.status = "no tests ran"
    elif code != 0:
        outcome.status = "failed" if outcome.failed else f"pytest exit {code}"
    outcome.seconds = time.monotonic() - start
    return outcome


_wheel_lock = threading.Lock()
#: the run's builds, one per interpreter (its result, once tried: None when it failed)
_wheels_built: dict[str, Path | None] = {}


def _compiled_wheel(log: Path, interpreter: str) -> Path | None:
    """The core's compiled wheel for ``interpreter``, built on the first call of the run for
    it (suites run in threads: the others wait for it)."""
    with _wheel_lock:
        if interpreter not in _wheels_built:
            _wheels_built[interpreter] = _build_compiled_wheel(log, interpreter)
        elif _wheels_built[interpreter] is None:
            with log.open("a", encoding="utf-8") as handle:
                handle.write("the compiled wheel failed to build earlier in this run\n")
        return _wheels_built[interpreter]


def _build_compiled_wheel(log: Path, interpreter: str) -> Path | None:
    """Build the core's wheel with the mypyc hook on, from a copy of the sources: the hook
    compiles in place, and compiled modules left in the tree would shadow the .py files of
    every editable install."""
    out = VENVS / "compiled-wheel"
    if interpreter != PYTHON:
        out = VENVS / f"compiled-wheel-py{_python_version(interpreter)}"
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as temp:
        source = Path(temp) / "src"
        source.mkdir()
        shutil.copytree(ROOT / "otel_loopguard", source / "otel_loopguard")
        # hatch_build.py: the hook that builds the native signature core into the wheel
        for name in ("pyproject.toml", "README.md", "LICENSE", "hatch_build.py"):
            if (ROOT / name).exists():
                shutil.copy2(ROOT / name, source / name)
        env = dict(os.environ, HATCH_BUILD_HOOK_ENABLE_MYPYC="true")
        # for the suite's interpreter: uv's own choice (python3 on PATH) may be another
        build = [*_uv(), "build", "--wheel", "--python", interpreter, "--out-dir", str(out)]
        if _run(build, log, source, env):
            return None
    wheels = sorted(out.glob("otel_loopguard-*.whl"))
    return wheels[-1] if wheels else None


def _missing_python(version: str) -> str:
    return (
        f"no CPython {version} found (looked in $PYENV_ROOT/versions/{version}.*, for "
        f"python{version} on PATH, and with uv python find {version}): its suite is skipped"
    )


def run_ruff(log_dir: Path) -> Outcome:
    outcome = Outcome("ruff")
    ruff = VENVS / "core" / "bin" / "ruff"
    if not ruff.exists():
        outcome.status = "ruff missing"
        return outcome
    log = log_dir / "ruff.log"
    log.write_text("", encoding="utf-8")
    # the linter, then the formatter's check: the style the project's files are written in
    if _run([str(ruff), "check", "."], log, ROOT):
        outcome.status = "lint failed"
        outcome.failed = 1
    elif _run([str(ruff), "format", "--check", "."], log, ROOT):
        outcome.status = "format check failed (ruff format)"
        outcome.failed = 1
    else:
        outcome.passed = 1
    return outcome


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", help="core or instrumentation folder names")
    parser.add_argument("--jobs", type=int, default=2, help="suites run at once (default 2)")
    parser.add_argument("--list", action="store_true", help="print the suites' names and exit")
    args = parser.parse_args(argv)

    suites = discover()
    if args.list:
        try:
            print("\n".join(suite.name for suite in suites), flush=True)
        except BrokenPipeError:  # read by `head`, which stopped reading: not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.suites:
        unknown = set(args.suites) - {s.name for s in suites}
        if unknown:
            print(f"unknown suites: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        suites = [s for s in suites if s.name in args.suites]

    # the core venv first: its ruff lints the whole tree, and others reuse its wheel cache
    ordered = sorted(suites, key=lambda s: s.name != "core")
    outcomes: list[Outcome] = []
    if ordered and ordered[0].name == "core":
        outcomes.append(run_suite(ordered.pop(0), pytest_args))
        print(_line(outcomes[-1]), flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for outcome in pool.map(lambda s: run_suite(s, pytest_args), ordered):
            outcomes.append(outcome)
            print(_line(outcome), flush=True)
    if not args.suites or "core" in args.suites:
        outcomes.append(run_ruff(VENVS))
        print(_line(outcomes[-1]), flush=True)

    for suite in suites:
        if suite.python_version is not None and any(
            o.suite == suite.name and o.status.startswith("skipped") for o in outcomes
        ):
            print(f"{suite.name}: {_missing_python(suite.python_version)}")
    bad = [o for o in outcomes if o.status != "ok" and not o.status.startswith("skipped")]
    for outcome in bad:
        print(f"see .venvs/{outcome.suite}.log for {outcome.suite}: {outcome.status}")
        for failure in outcome.failures:
            print(failure)
    passed = sum(o.passed for o in outcomes)
    failed = sum(o.failed for o in outcomes) + sum(1 for o in bad if o.failed == 0)
    skipped = sum(o.skipped for o in outcomes)
    print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if bad else 0


#: lines of a failure's text kept for the summary: the assertion and the code around it
FAILURE_TAIL = 12


def _failures(root: ET.Element) -> list[str]:
    """Each failed or erroring test case of a junit report: its id, then the last lines of
    its message, indented. CI keeps only this script's output, not the suites' logs."""
    found = []
    for case in root.iter("testcase"):
        for problem in (*case.findall("failure"), *case.findall("error")):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            text = (problem.text or problem.get("message") or "").rstrip().splitlines()
            tail = "\n".join(f"    {line}" for line in text[-FAILURE_TAIL:])
            found.append(f"  {name}\n{tail}")
    return found


def _line(outcome: Outcome) -> str:
    return (
        f"{outcome.suite:<24} {outcome.status:<18} {outcome.passed:>5} passed "
        f"{outcome.failed:>4} failed {outcome.skipped:>4} skipped  {outcome.seconds:6.1f}s"
    )


if __name__ == "__main__":
    sys.exit(main())
