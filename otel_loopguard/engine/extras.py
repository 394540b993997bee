"""How a message tells the user to install one of the core's extras.

otel-loopguard installs from a checkout of its repository (no index serves it), so a hint
that named the distribution (``pip install 'otel-loopguard[serve]'``) would send a user to
an install that fails; every message that asks for an extra says it here, one way.
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """``pip install '.[serve]'`` with where to run it, for the ``serve`` extra."""
    return f"pip install '.[{extra}]' in a checkout of otel-loopguard"
