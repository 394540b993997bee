"""The dists suite's fixtures: every distribution built once per run, and fresh venvs
holding all the wheels (and no agent framework), as a user who installs everything has.

What a release ships (docs/releasing.md): the sdist and the pure-Python wheel of every
distribution, and for the core also wheels compiled with mypyc for each platform and
CPython a wheel can be built for; pip takes the compiled one where it matches. So the
``installed`` venv comes twice: ``pure`` (every pure wheel) and ``compiled`` (the core's
wheel built from its sdist with ``HATCH_BUILD_HOOK_ENABLE_MYPYC=true``, as the release's
wheel builder does; the frameworks' pure wheels), and every test that uses it runs on both.

Builds and installs go through uv, as the suite runner's do; everything else runs as a
subprocess of that venv, from a scratch directory, so the source tree is never on its
``sys.path``: what runs is what the wheels hold.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from archives import wheel_metadata
from distributions import CORE, PROJECTS, Project
from packaging.specifiers import SpecifierSet


def uv() -> list[str]:
    """The uv installed beside this suite's Python (the runner installs it), else PATH's."""
    beside = Path(sys.executable).with_name("uv")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak the source tree or the runner's
    settings into the venv's programs (PYTHONPATH, OTEL_*, a virtualenv's VIRTUAL_ENV)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"))
    }
    environment.update(extra)
    return environment


def run(
    command: Sequence[str | Path], cwd: Path, timeout: float = 600, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"$ {' '.join(done.args)}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"


@dataclass(frozen=True)
class Built:
    project: Project
    sdist: Path | None = None
    wheel: Path | None = None
    error: str = ""

    def require(self) -> Built:
        if self.error:
            pytest.fail(f"{self.project.name} did not build:\n{self.error}")
        return self


def _build(project: Project, out: Path) -> Built:
    """The sdist from the source folder, then the wheel from that sdist, as a user (or pip,
    from PyPI) builds one: a file the sdist lacks is missing from the wheel too."""
    out.mkdir()
    python = ["--python", sys.executable]
    done = run([*uv(), "build", "--sdist", *python, "--out-dir", out, project.directory], out)
    sdists = list(out.glob("*.tar.gz"))
    if done.returncode or len(sdists) != 1:
        return Built(project, error=explain(done))
    return _wheel_from(project, sdists[0], out)


def _wheel_from(project: Project, sdist: Path, out: Path, **env: str) -> Built:
    """The wheel built from ``sdist`` into ``out`` (``env``: the build's switches)."""
    python = ["--python", sys.executable]
    done = run([*uv(), "build", "--wheel", *python, "--out-dir", out, sdist], out, **env)
    wheels = list(out.glob("*.whl"))
    if done.returncode or len(wheels) != 1:
        return Built(project, sdist, error=explain(done))
    return Built(project, sdist, wheels[0])


#: the switch of pyproject's mypyc build hook (hatch's HATCH_BUILD_HOOK_ENABLE_<NAME>)
COMPILE_SWITCH = {"HATCH_BUILD_HOOK_ENABLE_MYPYC": "true"}
#: the two builds of the core a release ships
BUILDS = ("pure", "compiled")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Every distribution's sdist and wheel (pure Python, no mypyc), by project name."""
    out = tmp_path_factory.mktemp("dists")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda p: _build(p, out / p.wheel_filename_prefix()), PROJECTS)
        return {result.project.name: result for result in results}


@pytest.fixture(scope="session")
def compiled_core(tmp_path_factory: pytest.TempPathFactory, built: dict[str, Built]) -> Built:
    """The core's wheel compiled with mypyc, built from the same sdist as the pure one (a
    C compiler and Python's headers needed: scripts/test.sh installs them)."""
    out = tmp_path_factory.mktemp("compiled")
    core = built[CORE.name].require()
    assert core.sdist is not None
    return _wheel_from(CORE, core.sdist, out, **COMPILE_SWITCH)


@dataclass(frozen=True)
class Venv:
    path: Path
    scratch: Path  # the working directory of every program run in it
    #: the distributions installed: those whose Requires-Python admits this Python
    projects: tuple[Project, ...]
    #: which build of the core it holds: "pure" or "compiled" (BUILDS)
    build: str = "pure"

    def require(self, project: Project) -> None:
        if project not in self.projects:
            pytest.skip(f"{project.name} does not support Python {platform.python_version()}")

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

    def run(
        self, *command: str | Path, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run(command, self.scratch, timeout=timeout, **env)


@pytest.fixture(scope="session", params=BUILDS)
def installed(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    built: dict[str, Built],
) -> Venv:
    """A fresh venv with every wheel that supports this Python (pydantic-ai's needs 3.11),
    and opentelemetry-distro (what `opentelemetry-instrument` needs to set up an SDK), and
    nothing else: no agent framework. Once with each build of the core (``BUILDS``)."""
    build: str = request.param
    python = platform.python_version()
    supported = [
        result.require()
        for result in built.values()
        if python in SpecifierSet(wheel_metadata(result.require().wheel)["Requires-Python"])
    ]
    if build == "compiled":
        core = request.getfixturevalue("compiled_core").require()
        supported = [core if result.project is CORE else result for result in supported]
    wheels = [result.wheel for result in supported]
    home = tmp_path_factory.mktemp(f"installed-{build}")
    venv = Venv(home / "venv", home / "work", tuple(result.project for result in supported), build)
    venv.scratch.mkdir()
    done = run([*uv(), "venv", "--python", sys.executable, venv.path], home)
    assert done.returncode == 0, explain(done)
    done = run(
        [*uv(), "pip", "install", "--python", venv.python, *wheels, "opentelemetry-distro"], home
    )
    assert done.returncode == 0, explain(done)
    return venv
