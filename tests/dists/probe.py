"""Runs inside the venv of installed wheels (not in the suite's): what a user's Python sees.

Prints one JSON object: each entry point of our distributions loaded, each distribution's
version against its package's ``__version__``, what each instrumentor says it instruments
and what `opentelemetry-instrument` would think of it here, and every core module imported.
argv: the distribution names to look at.
"""

import importlib
import importlib.metadata as metadata
import json
import pkgutil
import sys
import traceback


def load(entry_point):
    try:
        loaded = entry_point.load()
    except BaseException:
        return {"error": traceback.format_exc()}
    return {"loaded": getattr(loaded, "__qualname__", getattr(loaded, "__name__", repr(loaded)))}


def instrumentor_facts(entry_point):
    from opentelemetry.instrumentation.dependencies import get_dist_dependency_conflicts
    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

    facts = {}
    try:
        cls = entry_point.load()
        facts["is_instrumentor"] = isinstance(cls, type) and issubclass(cls, BaseInstrumentor)
        facts["instruments"] = list(cls().instrumentation_dependencies())
    except BaseException:
        facts["error"] = traceback.format_exc()
    conflict = get_dist_dependency_conflicts(entry_point.dist)
    facts["conflict"] = None if conflict is None else str(conflict)
    return facts


def main(names):
    out = {"entry_points": [], "distributions": {}, "core_modules": {}, "frameworks": {}}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name not in names:
            continue
        top = (dist.read_text("top_level.txt") or "").split()
        packages = top or sorted(
            {f.parts[0] for f in dist.files or () if f.suffix == ".py" and len(f.parts) > 1}
        )
        info = {"version": dist.version, "packages": {}}
        for package in packages:
            try:
                module = importlib.import_module(package)
                info["packages"][package] = {
                    "version": getattr(module, "__version__", None),
                    "file": module.__file__,
                }
            except BaseException:
                info["packages"][package] = {"error": traceback.format_exc()}
        out["distributions"][name] = info
        for entry_point in dist.entry_points:
            record = {
                "dist": name,
                "group": entry_point.group,
                "name": entry_point.name,
                "value": entry_point.value,
                **load(entry_point),
            }
            if entry_point.group == "opentelemetry_instrumentor":
                record.update(instrumentor_facts(entry_point))
            out["entry_points"].append(record)
    try:
        core = importlib.import_module("otel_loopguard")
        out["core_modules"]["otel_loopguard"] = "ok"
        modules = [m.name for m in pkgutil.walk_packages(core.__path__, "otel_loopguard.")]
    except BaseException:
        out["core_modules"]["otel_loopguard"] = traceback.format_exc()
        modules = []
    for name in modules:
        try:
            importlib.import_module(name)
            out["core_modules"][name] = "ok"
        except BaseException:
            out["core_modules"][name] = traceback.format_exc()
    out["site_packages"] = [p for p in sys.path if p.endswith("site-packages")]
    print(json.dumps(out))


if __name__ == "__main__":
    main(set(sys.argv[1:]))
