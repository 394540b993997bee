"""The dists suite's fixtures: every distribution built once per run, and one fresh venv
holding all the wheels (and no agent framework), as a user who installs everything has.

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
from distributions import PROJECTS, Project
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
    done = run([*uv(), "build", "--wheel", *python, "--out-dir", out, sdists[0]], out)
    wheels = list(out.glob("*.whl"))
    if done.returncode or len(wheels) != 1:
        return Built(project, sdists[0], error=explain(done))
    return Built(project, sdists[0], wheels[0])


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Every distribution's sdist and wheel (pure Python, no mypyc), by project name."""
    out = tmp_path_factory.mktemp("dists")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda p: _build(p, out / p.wheel_filename_prefix()), PROJECTS)
        return {result.project.name: result for result in results}


@dataclass(frozen=True)
class Venv:
    path: Path
    scratch: Path  # the working directory of every program run in it
    #: the distributions installed: those whose Requires-Python admits this Python
    projects: tuple[Project, ...]

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


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory, built: dict[str, Built]) -> Venv:
    """A fresh venv with every wheel that supports this Python (pydantic-ai's needs 3.11),
    and opentelemetry-distro (what `opentelemetry-instrument` needs to set up an SDK), and
    nothing else: no agent framework."""
    python = platform.python_version()
    supported = [
        result.require()
        for result in built.values()
        if python in SpecifierSet(wheel_metadata(result.require().wheel)["Requires-Python"])
    ]
    wheels = [result.wheel for result in supported]
    home = tmp_path_factory.mktemp("installed")
    venv = Venv(home / "venv", home / "work", tuple(result.project for result in supported))
    venv.scratch.mkdir()
    done = run([*uv(), "venv", "--python", sys.executable, venv.path], home)
    assert done.returncode == 0, explain(done)
    done = run(
        [*uv(), "pip", "install", "--python", venv.python, *wheels, "opentelemetry-distro"], home
    )
    assert done.returncode == 0, explain(done)
    return venv
