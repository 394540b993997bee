"""Export and restore of detector state kept in small dataclasses.

A reloaded conversation continues where it was, so per-run state goes out as a JSON-able
dict and comes back. Exports written by an older version, or edited by hand, must not
break the host: a missing key or a value of the wrong type falls back to the field's
default instead of raising.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

StateT = TypeVar("StateT")


def export_dataclass(state: Any) -> dict[str, Any]:
    """The state's fields as a dict; tuples become lists so the dict is JSON-able as is."""
    return {
        field.name: _jsonable(getattr(state, field.name)) for field in dataclasses.fields(state)
    }


def restore_dataclass(cls: type[StateT], data: Any) -> StateT:
    """A new ``cls`` from ``data``, keeping only values whose type matches the default's."""
    state = cls()
    if not isinstance(data, dict):
        return state
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name not in data:
            continue
        value = data[field.name]
        default = getattr(state, field.name)
        if _same_type(value, default):
            setattr(state, field.name, tuple(value) if isinstance(default, tuple) else value)
    return state


def _same_type(value: Any, default: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, tuple):
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if default is None:
        return value is None or isinstance(value, (str, int, float))
    return isinstance(value, type(default))


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
