"""A quantity as a text states it: its value, its unit (a percentage, a multiplier, a count) and the values it
equals in other units; a multiplier of a reduction also equals the fraction it leaves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A multiplier of a reduction is also the fraction left: "four times less data" is a quarter of it, "two orders of
# magnitude smaller" a hundredth, "10x faster" a tenth of the time.
_REDUCTION = re.compile(r"\s*(?:less|fewer|smaller|lower|reductions?|cheaper|shorter|faster|quicker|decrease)\b",
                        re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    text: str  # as written
    unit: str  # "%", "x" (times), or "" (a count, a plain number)
    value: float  # as written: 65 for "65%"
    decimals: int  # digits after the point as written (how far it may round a source value)
    values: frozenset[float]  # what it equals in other units too (65% → 65, 0.65; 8K → 8000)
    seconds: float | None = None  # a duration in seconds ("one minute", "60-second", "1 hour and 26 minutes")


def _quantity(text: str, value: float, unit: str, decimals: int = 0) -> Quantity:
    vals = {value}
    if unit == "%":
        vals.add(value / 100)  # 65% is 0.65 (a fraction is a percentage only of a percentage: see ``matches``)
    return Quantity(text, unit, value, decimals, frozenset(round(v, 9) for v in vals))


_FACTOR_OF = re.compile(r"\bfactors?\s+of\s+(?:(?:about|roughly|approximately|around|nearly|almost|up\s+to|"
                        r"at\s+(?:least|most)|over|more\s+than|less\s+than)\s+)?$", re.IGNORECASE)


def _with_reciprocal(q: Quantity) -> Quantity:
    """A multiplier of a reduction ("four times less", "10x faster") also equals the fraction it leaves (0.25, 0.1)."""
    return Quantity(q.text, q.unit, q.value, q.decimals, q.values | {round(1 / q.value, 9)}) if q.value else q
