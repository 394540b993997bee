"""Model prices, so cost limits can be enforced from token usage.

Prices come from the user (``OTEL_LOOPGUARD_PRICES``, a JSON file of model -> input and
output price per one million tokens) and, for models the file does not list, from a
maintained price table when one is installed (PyPI ``genai-prices``, pydantic's; the
``otel-loopguard[prices]`` extra, Python >= 3.11): prices change too often to ship our
own. The file wins per model. A model neither knows makes the run's cost *unknown*
(``None``), never an error and never a guess, so a cost limit is not enforced on a number
that could be wrong. ``genai-prices`` is imported at the first model the file does not
price (it loads its snapshot then, a few hundred ms once), and its price of a model is the
price of one million input and one million output tokens, asked once per model name
(tiered prices are read at their first tier).

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

import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from otel_loopguard.engine.config import LoopGuardConfig, ModelPrice

_VERSION_WORDS = r"latest|preview|exp|v\d+(?:\.\d+)*"
_VERSION_SUFFIX = re.compile(
    rf"[-@:](?:\d{{2,}}|{_VERSION_WORDS})(?:[-@:.](?:\d+|{_VERSION_WORDS}))*",
)
_CACHE_LIMIT = 1024

logger = logging.getLogger("otel_loopguard.engine.pricing")

#: ``fallback(model) -> ModelPrice | None``: prices the user's file does not list
Fallback = Callable[[str], "ModelPrice | None"]


class InstalledPrices:
    """The ``genai-prices`` table, imported on first use; ``None`` for a model it does not
    know, and for every model when the package is absent or fails (said once)."""

    def __init__(self) -> None:
        self._calc: Callable[..., object] | None = None
        self._usage: Callable[..., object] | None = None
        self._lock = threading.Lock()
        self._unusable = False

    @staticmethod
    def installed() -> bool:
        import importlib.util

        try:
            return importlib.util.find_spec("genai_prices") is not None
        except (ImportError, ValueError):  # pragma: no cover
            return False

    def __call__(self, model: str) -> ModelPrice | None:
        if self._unusable:
            return None
        if self._calc is None:
            with self._lock:
                if self._calc is None and not self._load():
                    return None
        name = model.strip()
        provider = None
        if "/" in name:
            provider, _, rest = name.partition("/")
            attempts = [(rest, provider), (rest, None), (name, None)]
        else:
            attempts = [(name, None)]
        for ref, provider_id in attempts:
            price = self._price(ref, provider_id)
            if price is not None:
                return price
        return None

    def _load(self) -> bool:
        try:
            from genai_prices import Usage, calc_price
        except Exception as exc:
            self._unusable = True
            logger.warning("otel-loopguard: the genai-prices table cannot be used: %r", exc)
            return False
        self._usage, self._calc = Usage, calc_price
        return True

    def _price(self, ref: str, provider_id: str | None) -> ModelPrice | None:
        calc, usage = self._calc, self._usage
        assert calc is not None and usage is not None
        try:
            per_input: Any = calc(usage(input_tokens=1_000_000), ref, provider_id=provider_id)
            per_output: Any = calc(usage(output_tokens=1_000_000), ref, provider_id=provider_id)
            return ModelPrice(
                input=float(per_input.total_price), output=float(per_output.total_price)
            )
        except LookupError:  # a model (or provider) it does not know
            return None
        except Exception:  # a price it cannot compute: unknown, never an error
            return None


class PriceTable:
    """Looks up prices by model name; thread-safe (lookups only read or replace dict items)."""

    def __init__(
        self, prices: Mapping[str, ModelPrice] | None = None, fallback: Fallback | None = None
    ) -> None:
        self._prices = {name.strip().lower(): price for name, price in (prices or {}).items()}
        self._fallback = fallback
        # longest first, so the most specific listed name wins the snapshot rule
        self._by_length = sorted(self._prices, key=len, reverse=True)
        self._resolved: dict[str, ModelPrice | None] = {}

    @classmethod
    def from_config(cls, config: LoopGuardConfig) -> PriceTable:
        """The user's table (``OTEL_LOOPGUARD_PRICES``; empty when unset or unusable), and
        the installed ``genai-prices`` table for the models it does not list."""
        return cls(config.load_prices(), InstalledPrices() if InstalledPrices.installed() else None)

    def __len__(self) -> int:
        return len(self._prices)

    def price(self, model: str | None) -> ModelPrice | None:
        """The price of ``model`` by the module's matching rule, or ``None`` if unknown."""
        if not model or not (self._prices or self._fallback):
            return None
        try:
            return self._resolved[model]
        except KeyError:
            pass
        found = self._lookup(model.strip().lower()) if self._prices else None
        if found is None and self._fallback is not None:
            found = self._fallback(model)
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
