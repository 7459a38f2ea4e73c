"""What a source states (``source_values``: every value in every unit, and what one sentence derives) and
whether a statement's quantity is one of them, rounded or re-expressed (``matches``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rag.qa.claims.formula_spans import blank_formulas, formula_spans
from rag.qa.claims.formula_tokens import _NUMERIC, canonical
from rag.qa.claims.number_words import _SOURCE_ONLY
from rag.qa.claims.quantities import quantities
from rag.qa.claims.quantity import Quantity

# A value stated as a ratio is a multiplier: "a ratio of wall to stream velocity of 2.92" is "2.92 times" (the
# value's text must follow "ratio" within the clause).
_FRACTION = re.compile(r"\\[dt]?frac\s*\{\s*(\d+(?:\.\d+)?)\s*\}\s*\{\s*(\d+(?:\.\d+)?)\s*\}"
                       r"|(?<![\w./])(\d+)\s*/\s*(\d+)(?![\w./])")
_RATIO = re.compile(r"\bratios?\b[^.;:()]{0,60}\b(?:of|is|was|equals?|=)\s*$")


@dataclass
class Values:
    """What a source states: every value in every unit (for equality) and the values as written (which a
    statement may round); both for values stated and for values derived within one sentence."""

    exact: set[float] = field(default_factory=set)
    written: set[float] = field(default_factory=set)
    percents: set[float] = field(default_factory=set)  # percentages as written (18.6 for 18.6%)
    times: set[float] = field(default_factory=set)  # multipliers ("3×", "three-fold", "a factor of 3", "twice")
    strict_times: bool = False  # a statement's multiplier must match one of ``times`` (values stated, not derived)
    in_formulas: set[float] = field(default_factory=set)  # plain numbers inside formulas ("1" of (1+ε)√n)
    durations: set[float] = field(default_factory=set)  # in seconds
    counts: set[float] = field(default_factory=set)  # counts said by a word ("both", "binary"): counts only
    timed: bool = False  # the sources state a duration: a statement's durations must then match one


def _fractions(text: str) -> set[float]:
    """The values of the numeric fractions of ``text`` (``\\frac{1}{20}``, "1/20")."""
    out = set()
    for m in _FRACTION.finditer(text):
        num, den = m.group(1) or m.group(3), m.group(2) or m.group(4)
        if float(den):
            out.add(round(float(num) / float(den), 9))
    return out


def source_values(texts: Iterable[str]) -> tuple[Values, Values]:
    """Every value the sources state and the differences and ratios of like values stated together in one
    sentence (those a statement may derive: "from 60% to 70%" → "10 points")."""
    stated, derived = Values(strict_times=True), Values()
    for s in texts:
        qs = quantities(blank_formulas(s), source=True)
        stated.in_formulas |= {q.value for q in quantities(s, source=True) if not q.unit}
        # A numeric fraction is also its value: ``\\frac{1}{20}`` and "1/20" are 0.05.
        stated.in_formulas |= _fractions(s)
        # A formula's numeric exponents too: T^{2/3} is "T to the power two-thirds".
        if "^" in s or "sqrt" in s or "\u221a" in s:
            stated.in_formulas |= {float(t) for _, _, f in formula_spans(s) for t in _exponents(canonical(f))}
        for q in qs:
            if q.text.casefold() in _SOURCE_ONLY:
                stated.counts.add(q.value)
                continue
            stated.exact |= q.values
            stated.written.add(q.value)
            if q.unit == "%":
                stated.percents.add(q.value)
            if q.unit == "x" or not q.unit and _RATIO.search(s[:s.find(q.text)] if q.text in s else ""):
                stated.times |= q.values
            if q.seconds is not None:
                stated.durations.add(q.seconds)
        times = [q.seconds for q in qs if q.seconds is not None][:12]
        derived.durations |= {round(abs(a - b), 9) for i, a in enumerate(times) for b in times[i + 1:]}
        # Only like with like (two percentages, two counts), and never a year: 2025 - 1 is not a claim.
        like = [q for q in qs if q.seconds is None and q.text.casefold() not in _SOURCE_ONLY
                and not (1900 <= q.value <= 2100 and q.value.is_integer())][:12]
        for i, qa in enumerate(like):
            for qb in like[i + 1:]:
                if qa.unit != qb.unit:
                    continue
                a, b = qa.value, qb.value
                found = {round(abs(a - b), 6)} | ({round(max(a, b) / min(a, b), 6)} if a and b else set())
                derived.written |= found
                derived.exact |= found | ({round(x / 100, 8) for x in found} if qa.unit == "%" else set())
                if qa.unit == "%":
                    derived.percents |= found
    stated.timed = derived.timed = bool(stated.durations)
    return stated, derived


def _duration_matches(q: Quantity, source: Values, rel: float) -> bool:
    """A duration equals a source duration in any unit (60 seconds = one minute), or rounds one in its own unit
    ("1.4 hours" for 86 minutes)."""
    seconds = q.seconds or 0.0
    per = seconds / q.value if q.value else 1.0
    tol = 0.5 * 10 ** -q.decimals + 1e-9
    for d in source.durations:
        if math.isclose(seconds, d, rel_tol=1e-6, abs_tol=1e-12):
            return True
        v = d / per
        if _decimals(v) > q.decimals and abs(q.value - v) <= min(tol, rel * abs(v)):
            return True
    return False


def matches(q: Quantity, source: Values, rel: float) -> bool:
    if q.seconds is not None and source.timed:
        return _duration_matches(q, source, rel)
    if q.seconds is not None and q.value == 1 and not q.text[:1].isdigit():
        return True  # "twice a day", "within an hour": a statement's "one" is checked only against durations
    if not q.unit and q.value in source.counts:
        return True  # "two classes" for "binary", not "two times"
    # A multiplier ("three times", "3×") equals a multiplier of the source, not a count that happens to have its
    # value ("Mach 3", "3 levels"); a ratio of two source values (``derived``) has no unit and may be one.
    strict = q.unit == "x" and source.strict_times
    pool = source.times if strict else source.exact
    if any(math.isclose(s, v, rel_tol=1e-6, abs_tol=1e-9) for s in q.values for v in pool):
        return True
    # A plain number of a formula the statement writes out of it ("(1+ε)" in "L = (1+ε) n^{1/2}"); not a
    # multiplier or a percentage ("3-fold" is not the 3 of T^{2/3}).
    if not q.unit and any(math.isclose(q.value, v, rel_tol=1e-9, abs_tol=6e-5) for v in source.in_formulas):
        return True
    # A percentage quotes a fraction of a formula ("significant at the 5% level" for "$p < 0.05$").
    if q.unit == "%" and 0 < q.value < 100 and any(math.isclose(q.value / 100, v, rel_tol=1e-9)
                                                   for v in source.in_formulas if 0 < v < 1):
        return True
    # A fraction quotes a percentage ("a tenth", 0.1 for 10%), not a count: 0.01 is not the "1" of "rank-1".
    if not q.unit and 0 < q.value < 1 and any(math.isclose(q.value * 100, v, rel_tol=0.015) for v in source.percents):
        return True
    # A source value rounded ("2.7x" from 2.65x, "99%" from 99.15%), never the other way round, and only a
    # little ("1%" is not 1.3%); compared as written, so "1%" is not a rounded 0.98 (98%).
    tol = 0.5 * 10 ** -q.decimals + 1e-9
    if q.unit == "%" and any(0 < v < 1 and _decimals(v * 100) > q.decimals and abs(q.value - v * 100) <= tol
                             for v in source.written):
        return True  # "33%" rounds "a third", "67%" "two thirds"
    return any(_decimals(v) > q.decimals and abs(q.value - v) <= min(tol, rel * abs(v))
               for v in (source.times if strict else source.written))


def _exponents(tokens: Sequence[str]) -> list[str]:
    """The numeric exponents of a canonical formula ("T", "^", "0.6667" → "0.6667")."""
    return [tokens[i + 1] for i in range(len(tokens) - 1) if tokens[i] == "^" and _NUMERIC.fullmatch(tokens[i + 1])]


def _decimals(v: float) -> int:
    s = f"{v:.6f}".rstrip("0")
    return len(s.split(".")[1]) if "." in s else 0
