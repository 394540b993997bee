"""Model prices, so cost limits can be enforced from token usage.

Prices come only from the user (``OTEL_LOOPGUARD_PRICES``, a JSON file of model -> input
and output price per one million tokens): they change too often to ship. A model that is
not in the table makes the run's cost *unknown* (``None``), never an error and never a
guess, so a cost limit is not enforced on a number that could be wrong.

Model names are matched case-insensitively:

1. exactly (``gpt-4o``);
2. without a provider prefix ending in ``/`` (``openai/gpt-4o``, ``models/gemini-2.0-flash``);
3. as a dated or versioned snapshot of a listed model: the listed name, then ``-``, ``@``
   or ``:`` and version parts only (numbers such as ``2024-08-06``, ``20241022``, ``0613``,
   ``002``, or ``latest``, ``preview``, ``exp``, ``v1``). The longest listed name wins. So
   ``gpt-4o-2024-08-06`` and ``claude-sonnet-4-5@20250929`` find ``gpt-4o`` and
   ``claude-sonnet-4-5``, while ``gpt-4o-mini`` does not take ``gpt-4o``'s price (``mini``
   is a different model, not a version) and ``claude-3-5-sonnet`` does not take
   ``claude-3``'s (a version must start with two or more digits).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from otel_loopguard.engine.config import LoopGuardConfig, ModelPrice

_VERSION_WORDS = r"latest|preview|exp|v\d+(?:\.\d+)*"
_VERSION_SUFFIX = re.compile(
    rf"[-@:](?:\d{{2,}}|{_VERSION_WORDS})(?:[-@:.](?:\d+|{_VERSION_WORDS}))*",
)
_CACHE_LIMIT = 1024


class PriceTable:
    """Looks up prices by model name; thread-safe (lookups only read or replace dict items)."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self._prices = {name.strip().lower(): price for name, price in (prices or {}).items()}
        # longest first, so the most specific listed name wins the snapshot rule
        self._by_length = sorted(self._prices, key=len, reverse=True)
        self._resolved: dict[str, ModelPrice | None] = {}

    @classmethod
    def from_config(cls, config: LoopGuardConfig) -> PriceTable:
        """The user's table (``OTEL_LOOPGUARD_PRICES``); empty when unset or unusable."""
        return cls(config.load_prices())

    def __len__(self) -> int:
        return len(self._prices)

    def price(self, model: str | None) -> ModelPrice | None:
        """The price of ``model`` by the module's matching rule, or ``None`` if unknown."""
        if not model or not self._prices:
            return None
        try:
            return self._resolved[model]
        except KeyError:
            pass
        found = self._lookup(model.strip().lower())
        if len(self._resolved) >= _CACHE_LIMIT:  # many distinct names: start over, stay bounded
            self._resolved = {}
        self._resolved[model] = found
        return found

    def cost(
        self, model: str | None, input_tokens: int | None, output_tokens: int | None
    ) -> float | None:
        """Cost of one model call in the table's currency, or ``None`` for an unknown model."""
        price = self.price(model)
        if price is None:
            return None
        return ((input_tokens or 0) * price.input + (output_tokens or 0) * price.output) / 1e6

    def _lookup(self, name: str) -> ModelPrice | None:
        candidates = [name]
        if "/" in name:
            candidates.append(name.rsplit("/", 1)[1])
        for candidate in candidates:
            if candidate in self._prices:
                return self._prices[candidate]
        for candidate in candidates:
            for listed in self._by_length:
                if candidate.startswith(listed) and _VERSION_SUFFIX.fullmatch(
                    candidate, len(listed)
                ):
                    return self._prices[listed]
        return None
