"""The ``otel-loopguard`` command: one subcommand per module.

Each module in :data:`SUBCOMMANDS` has ``add_parser(subparsers)``, which adds its parser
and sets ``handler`` (``args -> exit code``) as a default. Adding a subcommand is adding
its module's import path to that tuple. A listed module that is not installed (an optional
part) is left out of the help; any other import error surfaces.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

SUBCOMMANDS: tuple[str, ...] = (
    "otel_loopguard.analyze.command",
    "otel_loopguard.demo",
    "otel_loopguard.serve.command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-loopguard",
        description="Detect and stop AI agent loops from OpenTelemetry spans.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for module_name in SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue  # an optional subcommand that is not there
            raise
        module.add_parser(subparsers)
    return parser


def _version() -> str:
    """The installed distribution's version, else the package's own."""
    try:
        return importlib.metadata.version("otel-loopguard")
    except importlib.metadata.PackageNotFoundError:
        from otel_loopguard import __version__

        return __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        print("otel-loopguard: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
