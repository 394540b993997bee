"""The shipped configurations, loaded as they are and given the test's addresses.

The tests run every configuration *as shipped*: only addresses may change (listen
endpoints, the hosts they export to, file paths, scrape targets), never a component or a
pipeline. ``rewritten`` applies the test's addresses and then proves that nothing else
differs from the file in ``collector/``: a test that needed another change would fail here,
and the fix belongs in the shipped file.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from .binaries import ROOT

COLLECTOR = ROOT / "collector"
#: the keys whose values are addresses: the only ones a test may set
ADDRESS_KEYS = frozenset({"endpoint", "path", "hostnames", "targets", "rule_files", "host", "port"})
#: where the Collector's own metrics are served (port 8888 unless set): a test gives them a
#: free port, so two Collectors (or a Jaeger) on one machine do not collide
TELEMETRY_ADDRESS = ("service", "telemetry")

Path_ = tuple[str | int, ...]


def shipped(name: str) -> dict[str, Any]:
    return yaml.safe_load((COLLECTOR / name).read_text(encoding="utf-8"))


def shipped_collector_configs() -> list[Path]:
    """Every Collector configuration in ``collector/`` (a file with receivers and a service)."""
    configs = []
    for path in sorted(COLLECTOR.glob("*.y*ml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "receivers" in data and "service" in data:
            configs.append(path)
    return configs


def _set(tree: Any, path: Path_, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    if isinstance(tree, dict) and path[-1] not in tree:
        raise KeyError(f"{'.'.join(map(str, path))} is not in the shipped file")
    tree[path[-1]] = value


def _differences(before: Any, after: Any, path: Path_ = ()) -> list[Path_]:
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[Path_] = []
        for key in before.keys() | after.keys():
            if key not in before or key not in after:
                found.append((*path, key))
            else:
                found += _differences(before[key], after[key], (*path, key))
        return found
    if (
        isinstance(before, list)
        and isinstance(after, list)
        and len(before) == len(after)
        and any(isinstance(item, (dict, list)) for item in before)
    ):
        pairs = enumerate(zip(before, after, strict=True))
        return [d for i, (b, a) in pairs for d in _differences(b, a, (*path, i))]
    return [] if before == after else [path]


def _is_address(path: Path_) -> bool:
    if path[: len(TELEMETRY_ADDRESS)] == TELEMETRY_ADDRESS:
        return True
    names = [key for key in path if isinstance(key, str)]
    return bool(names) and names[-1] in ADDRESS_KEYS


def collector_telemetry(port: int) -> dict[str, Any]:
    """The ``service.telemetry`` section that serves the Collector's own metrics on ``port``."""
    prometheus = {"host": "127.0.0.1", "port": port}
    return {"metrics": {"readers": [{"pull": {"exporter": {"prometheus": prometheus}}}]}}


def rewritten(name: str, addresses: dict[Path_, Any], directory: Path) -> Path:
    """``collector/<name>`` with ``addresses`` set, written to ``directory``; fails if the
    result differs from the shipped file anywhere but at addresses."""
    original = shipped(name)
    config = copy.deepcopy(original)
    for path, value in addresses.items():
        if path == TELEMETRY_ADDRESS:
            config["service"]["telemetry"] = value
        else:
            _set(config, path, value)
    not_addresses = [p for p in _differences(original, config) if not _is_address(p)]
    assert not not_addresses, f"the test changed more than addresses in {name}: {not_addresses}"
    target = directory / name
    target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return target
