"""Names a package exports but loads on first use (PEP 562 module ``__getattr__``).

The public face and the kit re-export names from modules that import OpenTelemetry or other
modules of their own; loading them on first use keeps ``import otel_loopguard`` cheap, keeps
the engine importable where OpenTelemetry is absent, and lets one kit module load without
the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(
    package: str, names: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports the module of ``names`` (module -> the names it
    gives; written like the ``TYPE_CHECKING`` imports beside it) when one of its names is
    first read, and keeps the value in ``namespace`` (the package's ``globals()``), so the
    next read is a plain global."""
    modules = {name: module for module, given in names.items() for name in given}

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
