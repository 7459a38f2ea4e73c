"""Every quantity of a text: digits with their units, numbers in words (``number_words``) and durations
("60-second", "1 hour and 26 minutes"); and the counts of a text (what each whole number counts).
"""

from __future__ import annotations

import re

from rag.qa.claims.number_words import _UNITS, _cardinal, _word_quantities
from rag.qa.claims.quantity import _FACTOR_OF, _REDUCTION, Quantity, _quantity, _with_reciprocal
from rag.qa.claims.symbols import numeric_text
from rag.qa.claims.units import glued_unit

_NUMBER = re.compile(
    r"(?<![\w.^_\\])(?<![A-Za-z]-)"  # not part of a name: CIFAR-10, x2, L2, n^2
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+)"
    r"(?:\s?(%|per\s?cent(?:age)?(?:\s+points?)?|pp\b|×|x\b|-?times\b|-?fold\b|[kKMB]\b|thousand\b|million\b|"
    r"billion\b|orders?\s+of\s+magnitude\b))?"
    r"(?![\d])")


_TIMES = {"\u00d7", "x", "times", "fold"}
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "billion": 1e9}


def _digit_quantities(text: str) -> list[Quantity]:
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        raw, unit = m.group(1), re.sub(r"\s+", " ", (m.group(2) or "").lower()).strip("-")
        after = text[m.end():m.end() + 1]
        if after.isalpha() and not unit and not glued_unit(text, m.end()):  # "3D", "2nd": part of a word
            continue
        v = float(raw.replace(",", ""))
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        if "magnitude" in unit:
            out.append(_quantity(m.group(0), 10 ** v, "x"))
            continue
        kind = "%" if unit.startswith(("%", "per", "pp")) else "x" if unit in _TIMES else ""
        if not unit and _FACTOR_OF.search(text, 0, m.start()):
            kind = "x"  # "by a factor of 3" is 3×
        q = _quantity(m.group(0), v, kind, decimals)
        if unit in _SCALE:
            # "40K" is 40,000 only; "40 K" may be 40 of something named K, so it keeps 40 too.
            scaled = round(v * _SCALE[unit], 9)
            if " " in m.group(0) and unit in {"k", "m", "b"}:
                q = Quantity(q.text, "", v, decimals, q.values | {scaled})
            else:
                # "40K times less": a scaled multiplier
                times = "x" if re.match(r"[\s-]*(?:times\b|×|-?fold\b)", text[m.end():]) else ""
                q = Quantity(q.text, times, scaled, 0, frozenset({scaled}))
        elif kind == "x" and _REDUCTION.match(text, m.end()):
            q = _with_reciprocal(q)
        out.append(q)
    return out


_TIME_UNITS = {"ns": 1e-9, "nanosecond": 1e-9, "µs": 1e-6, "us": 1e-6, "microsecond": 1e-6, "ms": 1e-3,
               "millisecond": 1e-3, "s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0, "h": 3600.0,
               "hr": 3600.0, "hour": 3600.0, "day": 86400.0, "week": 604800.0}
_TIME_WORDS = r"(?i:(?:nano|micro|milli)?seconds?|minutes?|hours?|days?|weeks?)"
_DURATION = re.compile(
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)[\s-]?(ns|µs|us|ms|s|h|hrs?|mins?|secs?|" + _TIME_WORDS + r")"
    r"|((?:an?\s+)?(?:half|quarter)\s+(?:of\s+)?an?|[A-Za-z]+(?:-[a-z]+)*)[\s-]+(" + _TIME_WORDS + r"))(?![\w-])")
_COMPOUND_GAP = re.compile(r"\s*,?\s*(?:and\s+)?")


def _time_unit(unit: str) -> float:
    u = unit.lower()
    return _TIME_UNITS.get(u) or _TIME_UNITS[u.rstrip("s")]


def _durations(text: str) -> list[tuple[int, int, Quantity]]:
    """Durations with their spans: "60-second", "one minute", "an hour", "2.5 h", "83ms"; a run of them joined
    by "and" or a comma from larger to smaller units is one more ("1 hour and 26 minutes" = 86 minutes)."""
    found: list[tuple[int, int, Quantity, float]] = []
    for m in _DURATION.finditer(text):
        digits, word, unit = m.group(1), m.group(3), m.group(2) or m.group(4)
        if digits is not None:
            value, decimals = float(digits), len(digits.split(".")[1]) if "." in digits else 0
            if unit in {"s", "h"} and m.group(0)[len(digits):][:1] != " " and "." not in digits and value >= 100:
                continue  # "1990s"
        else:
            w = word.casefold()
            if "half" in w or "quarter" in w:
                value = 0.5 if "half" in w else 0.25  # half an hour, a quarter of a second
            elif w in {"a", "an"}:
                if unit.lower() == "second":
                    continue  # "a second stage" is an ordinal
                value = 1.0
            else:
                parts = w.split("-")
                card = _cardinal(parts, 0)
                if card is None or card[1] != len(parts):
                    continue
                value = card[0]
            decimals = 0
        per = _time_unit(unit)
        found.append((m.start(), m.end(), Quantity(m.group(0), "", value, decimals, frozenset({value}),
                                                   round(value * per, 9)), per))
    out = [(a, b, q) for a, b, q, _ in found]
    k = 0
    while k < len(found):
        run = [found[k]]
        while (k + len(run) < len(found) and run[-1][3] > found[k + len(run)][3]
               and _COMPOUND_GAP.fullmatch(text, run[-1][1], found[k + len(run)][0])):
            run.append(found[k + len(run)])
        if len(run) > 1:
            total = sum(q.seconds or 0.0 for _, _, q, _ in run)
            smallest = run[-1][3]
            a, b = run[0][0], run[-1][1]
            out.append((a, b, Quantity(text[a:b], "", round(total / smallest, 9), 0,
                                       frozenset({round(total / smallest, 9)}), round(total, 9))))
        k += len(run)
    return out


def quantities(text: str, source: bool = False) -> list[Quantity]:
    """Every quantity of ``text``; a duration is read once, as a duration (its number is not also a count)."""
    s = numeric_text(text)
    durations = _durations(s)
    for a, b, _ in durations:
        s = s[:a] + " " * (b - a) + s[b:]
    return _digit_quantities(s) + _word_quantities(s, source) + [q for _, _, q in durations]


_COUNT = re.compile(r"(?<![\w.,^_\\$-])(\d+|" + "|".join(w for w, v in _UNITS.items() if 2 <= v <= 20) +
                    r")\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?", re.IGNORECASE)


def counts(text: str) -> list[tuple[float, str, str]]:
    """Whole numbers with the two words after them ("5 benchmark datasets" → (5, "benchmark", "datasets")): what
    each number counts. Not years, not numbers with a unit or a decimal point."""
    out: list[tuple[float, str, str]] = []
    for m in _COUNT.finditer(numeric_text(text)):
        raw = m.group(1).casefold()
        value = float(raw) if raw.isdigit() else float(_UNITS[raw])
        first = m.group(2).casefold()
        if 1900 <= value <= 2100 or first in _COUNT_UNITS or re.fullmatch(_TIME_WORDS, first):
            continue  # a duration ("86 minutes" = "1 hour and 26 minutes") is the duration rule's
        if _LISTED.search(m.string, 0, m.start()):
            continue  # the last of a list or range ("3, 5 and 7 cones", "3 to 6 layers"): the list counts them
        out.append((value, first, (m.group(3) or "").casefold()))
    return out


# A number that ends a list or a range of numbers: what follows it is what each of them counts.
_LISTED = re.compile(r"(?:\d|\b(?:" + "|".join(_UNITS) + r"))\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|to\s+|-\s*)$",
                     re.IGNORECASE)
_COUNT_UNITS = {"times", "fold", "percent", "per", "orders", "order", "of", "and", "or", "to", "thousand", "million",
                "billion", "hundred", "k", "m", "b", "x"}
