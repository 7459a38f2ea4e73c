"""Numbers written in words: cardinals ("twenty five", "a hundred"), fractions ("a third", "two-fifths"),
multipliers ("twice", "three-fold", "ten times") and orders of magnitude, read as ``Quantity``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.qa.claims.quantity import _FACTOR_OF, _REDUCTION, Quantity, _quantity, _with_reciprocal

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
          "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9}
_DENOMINATORS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                 "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "seventh": 7, "sevenths": 7,
                 "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9, "tenth": 10, "tenths": 10, "hundredth": 100,
                 "hundredths": 100, "thousandth": 1000, "thousandths": 1000}
_MULTIPLIERS = {"twice": 2, "double": 2, "doubles": 2, "doubled": 2, "doubling": 2, "triple": 3, "triples": 3,
                "tripled": 3, "tripling": 3, "quadruple": 4, "quadruples": 4, "quadrupled": 4,
                "halve": 0.5, "halves": 0.5, "halved": 0.5, "halving": 0.5}
# Words that count as numbers in a source but are too common to check in a statement ("one of", "a single").
_SOURCE_ONLY = {"one": 1, "single": 1, "once": 1, "unity": 1, "pair": 2, "both": 2, "dual": 2, "binary": 2}


def _cardinal(parts: Sequence[str], i: int) -> tuple[float, int] | None:
    """A number written in words from ``parts[i]`` ("twenty five", "one hundred", "fifty"): (value, words used)."""
    total, current, j = 0.0, 0.0, i
    last = ""  # what the previous word was: "unit" (0-19), "tens" (20-90), "scale" or "and"
    while j < len(parts):
        p = parts[j]
        if p in _UNITS:
            v = _UNITS[p]
            # A unit follows only tens ("twenty five") or a scale ("hundred and five"): "three, five and nine"
            # is a list of three numbers, not 17.
            if last == "unit" or last == "tens" and not 0 < v < 10 or v >= 20 and last == "tens":
                break
            current += v
            last = "tens" if v >= 20 else "unit"
        elif j == i and p in {"a", "an"} and j + 1 < len(parts) and parts[j + 1] in _SCALES:
            current = 1  # "a hundred", "a dozen", "a million"
            last = "unit"
        elif p in _SCALES and (current or j > i):
            current = max(current, 1) * _SCALES[p]
            if _SCALES[p] >= 1000:
                total, current = total + current, 0.0
            last = "scale"
        elif p == "and" and last == "scale" and j + 1 < len(parts) and parts[j + 1] in _UNITS:
            last = "and"
        else:
            break
        j += 1
    return (total + current, j - i) if j > i else None


def _word_parts(text: str) -> list[str]:
    """Lower-cased words, hyphenated ones as their parts ("two-fifths" → two, fifths; "tenfold" → ten, fold)."""
    out: list[str] = []
    for w in re.findall(r"[a-z]+(?:-[a-z]+)*", text.casefold()):
        for p in w.split("-"):
            if p.endswith("fold") and (p[:-4] in _UNITS or p[:-4] in _SCALES):
                out += [p[:-4], "fold"]
            else:
                out.append(p)
    return out


def _reduced(q: Quantity, parts: Sequence[str], j: int) -> Quantity:
    """``q`` with its reciprocal when a reduction word follows it ("two orders of magnitude smaller")."""
    return _with_reciprocal(q) if j < len(parts) and _REDUCTION.fullmatch(parts[j]) else q


def _word_quantities(text: str, source: bool) -> list[Quantity]:
    """Numbers written in words: cardinals, fractions ("a third", "two-fifths", "half a percent"), multipliers
    ("twice", "three-fold", "ten times") and orders of magnitude. A statement's "one" alone is not a quantity."""
    parts = _word_parts(text)
    out: list[Quantity] = []
    i = 0
    while i < len(parts):
        found, i = _word_quantity(parts, i, source)
        out += found
    return out


def _word_quantity(parts: Sequence[str], i: int, source: bool) -> tuple[list[Quantity], int]:
    """The quantity written in words from ``parts[i]`` (none when there is none) and the index after it."""
    p = parts[i]
    nxt = parts[i + 1] if i + 1 < len(parts) else ""
    if p in {"a", "an"} and nxt in _DENOMINATORS and nxt not in {"half", "halves"}:
        return [_quantity(f"{p} {nxt}", 1 / _DENOMINATORS[nxt], "")], i + 2
    if p in {"a", "an", "one"} and parts[i + 1:i + 4] in (["order", "of", "magnitude"],):
        return [_reduced(_quantity(f"{p} order of magnitude", 10, "x"), parts, i + 4)], i + 4
    if p == "orders" and parts[i + 1:i + 3] == ["of", "magnitude"]:
        # "orders of magnitude" with no count: a hundredfold or more
        return [Quantity("orders of magnitude", "x", 100, 0, frozenset({100.0, 1000.0, 10000.0}))], i + 3
    if p == "half":
        return _half(parts, i)
    if p in _MULTIPLIERS:
        return [_quantity(p, _MULTIPLIERS[p], "x")], i + 1
    card = _cardinal(parts, i)
    if card is not None:
        return _cardinal_quantity(parts, i, card, source)
    return ([_quantity(p, _SOURCE_ONLY[p], "")] if source and p in _SOURCE_ONLY else []), i + 1


def _half(parts: Sequence[str], i: int) -> tuple[list[Quantity], int]:
    """ "half a percent", "half a dozen" (6), or "half" alone, from ``parts[i]`` == "half"."""
    nxt = parts[i + 1] if i + 1 < len(parts) else ""
    if nxt in {"a", "of"} and i + 2 < len(parts) and parts[i + 2] in {"percent", "per"}:
        return [_quantity("half a percent", 0.5, "%")], i + 3
    if nxt in {"a", "an"} and i + 2 < len(parts) and parts[i + 2] in _SCALES:
        return [_quantity(f"half a {parts[i + 2]}", _SCALES[parts[i + 2]] / 2, "")], i + 3  # half a dozen: 6
    return [_quantity("half", 0.5, "")], i + 1


def _cardinal_quantity(parts: Sequence[str], i: int, card: tuple[float, int],
                       source: bool) -> tuple[list[Quantity], int]:
    """A cardinal read with the word after it: a fraction ("two fifths"), a multiplier ("ten times"), a
    percentage, an order of magnitude, or a plain number (a statement's "one" alone is none)."""
    value, used = card
    j = i + used
    if parts[j:j + 2] in (["and", "a"], ["and", "an"]) and j + 2 < len(parts) and parts[j + 2] in _DENOMINATORS:
        value, j = value + 1 / _DENOMINATORS[parts[j + 2]], j + 3  # "one and a half", "two and a quarter"
    after = parts[j] if j < len(parts) else ""
    written = " ".join(parts[i:j])
    if after in _DENOMINATORS and after not in {"half", "halves"}:
        return [_quantity(f"{written} {after}", value / _DENOMINATORS[after], "")], j + 1
    if after in {"fold", "times"}:
        return [_reduced(_quantity(f"{written} {after}", value, "x"), parts, j + 1)], j + 1
    if after in {"percent", "per"}:
        return [_quantity(f"{written} percent", value, "%")], j + 1 + (after == "per")
    if after in {"order", "orders"} and parts[j + 1:j + 3] == ["of", "magnitude"]:
        return [_reduced(_quantity(f"{written} orders of magnitude", 10 ** value, "x"), parts, j + 3)], j + 3
    if source or written != "one":
        factor = _FACTOR_OF.search(" ".join(parts[max(0, i - 4):i]) + " ")
        return [_quantity(written, value, "x" if factor else "")], j
    return [], j
