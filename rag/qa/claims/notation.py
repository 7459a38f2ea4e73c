"""Numbers, units, formulas and math symbols read one way, so a statement and its abstract compare.

An abstract writes ``$10^{-3}$``, ``18.6\\%``, ``50\u00d7``, ``$\\widetilde{O}(T^{5/8})$`` and ``$\\ell_1$``; an answer
writes 0.001, "18.6 percent", "fifty-fold", "\u00d5(T^0.625)" and "L1". ``quantities`` finds every quantity of a
text (digits with their units, scientific and LaTeX notation, numbers in words, fractions, multipliers, orders of
magnitude) with the values it equals in other units; ``source_values`` and ``matches`` say whether a quantity is
one a source states, rounds or derives; ``formula_spans`` and ``canonical`` find asymptotic and power expressions
and write them as one token sequence; ``fold_symbols`` spells math names as words. Used by ``rag.qa.claims``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

_MATH = re.compile(r"(?<!\\)\$(?!\$)((?:\\\$|[^$])+?)(?<!\\)\$")
_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
          "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
          "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ",
          "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
          "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω"}
_GREEK_NAME = {v: k.lower() for k, v in _GREEK.items() if not k.startswith("var")} | {"ϵ": "epsilon", "µ": "mu"}
GREEK_NAMES = frozenset(_GREEK_NAME.values())  # the Greek letters as words: "alpha", "beta"…
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


_GLUED_MATH = re.compile(r"(?<=[A-Za-z])(?=\$\\[A-Za-z])")  # a word, then math opening with a command


def fold_symbols(text: str) -> str:
    """Math names as an answer writes them in words: ``$\\ell_1$`` → "l1", ``$L^2$`` → "L2", α → "alpha",
    ``\\infty`` → "inf"; the ``$``, braces, ``^`` and ``_`` go."""
    # Math glued to the word before it ("within$\\ell_1$", a lost space) starts a word of its own.
    text = _GLUED_MATH.sub(" ", text)
    s = unicodedata.normalize("NFKC", text.replace("\u2113", "l"))  # ℓ, and ² → 2
    s = re.sub(r"\\ell(?![A-Za-z])", "l", s)
    s = re.sub(r"\\(?:infty)(?![A-Za-z])|\u221e", "inf", s)
    s = re.sub(r"\\(var)?([A-Za-z]+)", lambda m: m.group(2).lower() if m.group(0)[1:] in _GREEK else "", s)
    s = "".join(_GREEK_NAME.get(c, c) for c in s)
    return re.sub(r"[${}^_\\]", "", s)


def decimal(v: float) -> str:
    """A number as written: 7.0 → "7", 0.25 → "0.25"."""
    s = f"{v:.12f}".rstrip("0").rstrip(".")
    return s or "0"


# A root of a number, with an optional factor: ``2\sqrt{2}``, "3√2" (a constant: 2.83, not the numbers 2 and 2).
_NUMERIC_ROOT = re.compile(r"(?<![\w.^{/])(?:(\d+(?:\.\d+)?)\s*)?(?:\\sqrt\s*\{\s*(\d+(?:\.\d+)?)\s*\}|"
                           r"\u221a\s*(\d+(?:\.\d+)?)(?![\d.]))(?![A-Za-z(\\{])")


def _root_value(m: re.Match[str]) -> str:
    factor = float(m.group(1)) if m.group(1) else 1.0
    return decimal(round(factor * math.sqrt(float(m.group(2) or m.group(3))), 6))


def numeric_text(text: str) -> str:
    """Text whose numbers read one way: ``\\%`` → %, ``$99.42\\%$`` → 99.42%, ``$10^{-3}$``, 10^-3, 1e-3 →
    0.001, ``2\\times 10^{4}`` → 20000, ``$\\times 2$`` → 2×, thin spaces and ``{,}`` dropped, Unicode minus → -."""
    s = text.replace("\\\\%", "%").replace("\\%", "%").replace("\u2212", "-").replace("{,}", ",")
    s = re.sub(r"\\[,;!: ]|~", " ", s)
    s = re.sub(r"\\(?:times|cdot)(?![A-Za-z])", "×", s)
    s = re.sub(r"\\(?:text|mathrm|mathit|textrm)\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mu(?![A-Za-z])", "µ", s)
    s = re.sub(r"(?<![\d.])10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)", lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), s)

    def power(m: re.Match[str]) -> str:
        base = float(m.group(1)) if m.group(1) else 1.0
        return decimal(base * 10 ** int(m.group(2)))

    # the space after a bare power ("10^4 images") is not the power's
    s = re.sub(r"(?<![\w.^])(?:(\d+(?:\.\d+)?)\s*[×x·]\s*)?10\s*\^\s*\{?\s*([-+]?\d{1,2})(?:\s*\})?(?!\d|\.\d)",
               power, s)
    s = _NUMERIC_ROOT.sub(_root_value, s)
    s = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([-+]?\d{1,2})(?!\w|\.\d)",
               lambda m: decimal(float(m.group(1)) * 10 ** int(m.group(2))), s)
    s = re.sub(r"(?<![\w\d])×\s*(\d+(?:\.\d+)?)(?![\d.])", r"\1×", s)  # "×2" → "2×"
    # Math that is now only a number ("$64$", "$99.42%$", "$0.001$") loses its dollars.
    return re.sub(r"\$\s*([-+]?[\d.,]+\s*[%×]?\s*(?:µ\w*)?)\s*\$", r"\1", s)


# ---- numbers -------------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w.^_\\])(?<![A-Za-z]-)"  # not part of a name: CIFAR-10, x2, L2, n^2
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+)"
    r"(?:\s?(%|per\s?cent(?:age)?(?:\s+points?)?|pp\b|×|x\b|-?times\b|-?fold\b|[kKMB]\b|thousand\b|million\b|"
    r"billion\b|orders?\s+of\s+magnitude\b))?"
    r"(?![\d])")
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
# A value stated as a ratio is a multiplier: "a ratio of wall to stream velocity of 2.92" is "2.92 times" (the
# value's text must follow "ratio" within the clause).
_RATIO = re.compile(r"\bratios?\b[^.;:()]{0,60}\b(?:of|is|was|equals?|=)\s*$")
# Words that count as numbers in a source but are too common to check in a statement ("one of", "a single").
_SOURCE_ONLY = {"one": 1, "single": 1, "once": 1, "pair": 2, "both": 2, "dual": 2, "binary": 2}
# A multiplier of a reduction is also the fraction left: "four times less data" is a quarter of it, "two orders of
# magnitude smaller" a hundredth, "10x faster" a tenth of the time.
_REDUCTION = re.compile(r"\s*(?:less|fewer|smaller|lower|reductions?|cheaper|shorter|faster|quicker|decrease)\b",
                        re.IGNORECASE)
_TIMES = {"\u00d7", "x", "times", "fold"}
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "billion": 1e9}


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


def _digit_quantities(text: str) -> list[Quantity]:
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        raw, unit = m.group(1), re.sub(r"\s+", " ", (m.group(2) or "").lower()).strip("-")
        after = text[m.end():m.end() + 1]
        if after.isalpha() and not unit:  # "3D", "2nd", "83ms": part of a word
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
            if p.endswith("fold") and p[:-4] in _UNITS | _SCALES:
                out += [p[:-4], "fold"]
            else:
                out.append(p)
    return out


def _with_reciprocal(q: Quantity) -> Quantity:
    """A multiplier of a reduction ("four times less", "10x faster") also equals the fraction it leaves (0.25, 0.1)."""
    return Quantity(q.text, q.unit, q.value, q.decimals, q.values | {round(1 / q.value, 9)}) if q.value else q


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
        p = parts[i]
        nxt = parts[i + 1] if i + 1 < len(parts) else ""
        card = _cardinal(parts, i)
        if p in {"a", "an"} and nxt in _DENOMINATORS and nxt not in {"half", "halves"}:
            out.append(_quantity(f"{p} {nxt}", 1 / _DENOMINATORS[nxt], ""))
            i += 2
        elif p in {"a", "an", "one"} and parts[i + 1:i + 4] in (["order", "of", "magnitude"],):
            out.append(_reduced(_quantity(f"{p} order of magnitude", 10, "x"), parts, i + 4))
            i += 4
        elif p == "orders" and parts[i + 1:i + 3] == ["of", "magnitude"]:
            # "orders of magnitude" with no count: a hundredfold or more
            out.append(Quantity("orders of magnitude", "x", 100, 0, frozenset({100.0, 1000.0, 10000.0})))
            i += 3
        elif p == "half":
            if nxt in {"a", "of"} and i + 2 < len(parts) and parts[i + 2] in {"percent", "per"}:
                out.append(_quantity("half a percent", 0.5, "%"))
                i += 3
            elif nxt in {"a", "an"} and i + 2 < len(parts) and parts[i + 2] in _SCALES:
                out.append(_quantity(f"half a {parts[i + 2]}", _SCALES[parts[i + 2]] / 2, ""))  # half a dozen: 6
                i += 3
            else:
                out.append(_quantity("half", 0.5, ""))
                i += 1
        elif p in _MULTIPLIERS:
            out.append(_quantity(p, _MULTIPLIERS[p], "x"))
            i += 1
        elif card is not None:
            value, used = card
            j = i + used
            after = parts[j] if j < len(parts) else ""
            written = " ".join(parts[i:j])
            if after in _DENOMINATORS and after not in {"half", "halves"}:
                out.append(_quantity(f"{written} {after}", value / _DENOMINATORS[after], ""))
                j += 1
            elif after in {"fold", "times"}:
                out.append(_reduced(_quantity(f"{written} {after}", value, "x"), parts, j + 1))
                j += 1
            elif after in {"percent", "per"}:
                out.append(_quantity(f"{written} percent", value, "%"))
                j += 1 + (after == "per")
            elif after in {"order", "orders"} and parts[j + 1:j + 3] == ["of", "magnitude"]:
                out.append(_reduced(_quantity(f"{written} orders of magnitude", 10 ** value, "x"), parts, j + 3))
                j += 3
            elif source or written != "one":
                factor = _FACTOR_OF.search(" ".join(parts[max(0, i - 4):i]) + " ")
                out.append(_quantity(written, value, "x" if factor else ""))
            i = j
        else:
            if source and p in _SOURCE_ONLY:
                out.append(_quantity(p, _SOURCE_ONLY[p], ""))
            i += 1
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
        out.append((value, first, (m.group(3) or "").casefold()))
    return out


_COUNT_UNITS = {"times", "fold", "percent", "per", "orders", "order", "of", "and", "or", "to", "thousand", "million",
                "billion", "hundred", "k", "m", "b", "x"}


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


def source_values(texts: Iterable[str]) -> tuple[Values, Values]:
    """Every value the sources state and the differences and ratios of like values stated together in one
    sentence (those a statement may derive: "from 60% to 70%" → "10 points")."""
    stated, derived = Values(strict_times=True), Values()
    for s in texts:
        qs = quantities(blank_formulas(s), source=True)
        stated.in_formulas |= {q.value for q in quantities(s, source=True) if not q.unit}
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


# ---- formulas ------------------------------------------------------------------------------------
_HEADS = {"O", "Ω", "Θ", "o", "ω"}
_DECORATION = re.compile(r"\\(?:widetilde|tilde|widehat|hat|bar|overline|mathcal|mathrm|mathbf|mathbb|mathit|"
                         r"operatorname|text|textrm|math|boldsymbol|mathsf)\s*\{([^{}]*)\}")
_PLAIN_HEAD = re.compile(r"(?<![\w\\])(?:[OΩΘ]\u0303?|Õ|Omega|Theta|o)\s*\(")
_POWER_RUN = re.compile(r"[^\s,;:]*(?:\^|[²³⁴⁵⁶⁷⁸⁹⁰¹⁻]|√)[^\s,;:]*")
_FORMULA_TOKEN = re.compile(r"\d+(?:\.\d+)?|(?:polylog|poly|log|ln|exp|sqrt|max|min|ceil|floor|nnz|sup|lim|det|OPT)"
                            r"|[A-Za-z]|[^\sA-Za-z\d]")


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesis group opening at or after ``start`` (or the text's end)."""
    depth = 0
    for k in range(start, len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


def _groups(s: str, command: str, n: int) -> str:
    """``\\command{a}{b}`` (nested braces allowed) → "((a)/(b))" for frac, "(a)^(1/2)" for sqrt."""
    out: list[str] = []
    i = 0
    while True:
        k = s.find("\\" + command, i)
        if k < 0:
            return "".join(out) + s[i:]
        args, j = [], k + len(command) + 1
        for _ in range(n):
            while j < len(s) and s[j] == " ":
                j += 1
            if j >= len(s) or s[j] != "{":
                break
            depth, start = 0, j
            for j in range(start, len(s)):
                depth += {"{": 1, "}": -1}.get(s[j], 0)
                if depth == 0:
                    break
            args.append(s[start + 1:j])
            j += 1
        if len(args) < n:
            out.append(s[i:k + len(command) + 1])
            i = k + len(command) + 1
            continue
        out.append(s[i:k] + ("((" + args[0] + ")/(" + args[1] + "))" if n == 2 else "(" + args[0] + ")^(1/2)"))
        i = j


_ROOT_DEGREE = {"square": 2, "cube": 3, "cubic": 3, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "eighth": 8}
# "the fourth root of K", "square root of $n$": a power written in words.
_ROOT_WORDS = re.compile(r"\b(" + "|".join(_ROOT_DEGREE) + r")\s+root\s+of\s+(?:the\s+)?\$?\s*([A-Za-z])\s*\$?(?!\w)",
                         re.IGNORECASE)


# LaTeX math commands with a standard meaning (kept as their names); any other command is a macro the paper
# defined for itself (``\nX`` for |X|, ``\R`` for the reals), which a statement cannot write the same way.
_KNOWN_COMMANDS = {"log", "ln", "exp", "min", "max", "sup", "inf", "lim", "liminf", "limsup", "det", "sum", "prod",
                   "int", "in", "notin", "mid", "to", "infty", "partial", "nabla", "ldots", "dots", "cdots", "top",
                   "prime", "star", "ast", "pm", "mp", "approx", "sim", "simeq", "propto", "neq", "ne", "ll", "gg",
                   "setminus", "cup", "cap", "subset", "subseteq", "forall", "exists", "rightarrow", "leftarrow",
                   "Rightarrow", "mapsto", "langle", "rangle", "lVert", "rVert", "Vert", "vert", "lvert", "rvert",
                   "quad", "qquad", "ell", "hbar", "emptyset", "polylog", "poly", "arg", "argmin", "argmax", "Pr",
                   "mathbb", "mathbf", "mathrm", "ceil", "floor", "tr", "rank", "diag", "sign", "cos", "sin", "tan",
                   "choose", "binom", "equiv", "circ", "otimes", "oplus", "wedge", "vee", "neg", "cdot", "times",
                   "div", "le", "ge", "lesssim", "gtrsim", "asymp", "leq", "geq", "mathsf", "mathit", "bf",
                   "rm", "it", "cal", "displaystyle", "textstyle", "limits", "nolimits", "over", "atop"}
WILDCARD = "\u00a4"  # a paper's own macro in a source formula: it stands for some run of symbols


def _command(m: re.Match[str]) -> str:
    name = m.group(0)[1:]
    if name in _GREEK:
        return _GREEK[name]
    return m.group(2) if m.group(2) in _KNOWN_COMMANDS or m.group(1) else f" {WILDCARD} "


def canonical(expr: str) -> tuple[str, ...]:
    """A formula as tokens that read the same however it was written: LaTeX or Unicode or plain text,
    ``\\widetilde{O}`` = Õ = O, ``\\sqrt{n}`` = √n = n^{1/2}, n² = n^2, exponents evaluated (5/8 → 0.625),
    braces and ``\\left(`` as parentheses, subscripts, implicit products and spacing dropped,
    ε = epsilon = ``\\epsilon``."""
    s = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+", lambda m: "^(" + m.group(0).translate(_SUPERSCRIPT) + ")", expr)
    s = unicodedata.normalize("NFKD", s).replace("\u0303", "")  # Õ → O
    s = s.replace("$", " ").replace("\u2212", "-").replace("\u2013", "-").replace("\\\\", "\\")
    prev = None
    while prev != s:
        prev, s = s, _DECORATION.sub(r"\1", s)
    s = re.sub(r"\\(?:tilde|widetilde|hat|widehat|bar|mathcal|operatorname|left|right|(?:big|Big|bigg|Bigg)[lrm]?)"
               r"(?![A-Za-z])", "", s)
    s = re.sub(r"\\(?:geq?|geqslant)(?![A-Za-z])|>=", "≥", s)
    s = re.sub(r"\\(?:leq?|leqslant)(?![A-Za-z])|<=", "≤", s)
    s = _ROOT_WORDS.sub(lambda m: f"({m.group(2)})^(1/{_ROOT_DEGREE[m.group(1).casefold()]})", s)
    s = re.sub(r"\\l(ceil|floor)(?![A-Za-z])", r" \1(", s)
    s = re.sub(r"\\r(?:ceil|floor)(?![A-Za-z])", ")", s)
    s = s.replace("⌈", " ceil(").replace("⌉", ")").replace("⌊", " floor(").replace("⌋", ")")
    s = _groups(_groups(s, "frac", 2), "sqrt", 1)
    s = re.sub(r"√\s*(\([^()]*\)|\{[^{}]*\}|[\w.]+)", r"(\1)^(1/2)", s)
    s = re.sub(r"\bsqrt\s*(\([^()]*\))", r"(\1)^(1/2)", s)
    s = re.sub(r"_(?:\{[^{}]*\}|\\?[A-Za-z0-9]+|[^\s{])", "", s)  # subscripts: o_n(1) is o(1)
    s = re.sub(r"\\(var)?([A-Za-z]+)", _command, s)
    s = re.sub(r"\b(var)?(epsilon|eps|alpha|beta|gamma|delta|lambda|sigma|theta|mu|Omega|Theta)\b",
               lambda m: _GREEK.get(m.group(2), "ε" if m.group(2) == "eps" else m.group(2)), s)
    s = s.replace("ϵ", "ε").replace("{", "(").replace("}", ")").replace("[", "(").replace("]", ")")
    s = re.sub(r"[×·*~\s]|\\[,;!: ]", "", s)
    return tuple(_reciprocals(_simplify(_FORMULA_TOKEN.findall(s))))


def _number_token(v: Fraction | float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else f"{f:.4f}".rstrip("0")


def _evaluate(tokens: Sequence[str]) -> Fraction | None:
    """The value of a purely numeric token run ("5", "/", "8"; "-", "1"), else None."""
    text = "".join(tokens)
    if not re.fullmatch(r"[-+]?\d+(?:\.\d+)?(?:/[-+]?\d+(?:\.\d+)?)?", text):
        return None
    try:
        num, _, den = text.partition("/")
        value = Fraction(num) / (Fraction(den) if den else 1)
    except (ValueError, ZeroDivisionError):
        return None
    return value


def _closing(tokens: Sequence[str], i: int) -> int:
    """Index of the parenthesis closing the one at ``i`` (or the last index)."""
    depth = 0
    for k in range(i, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[k], 0)
        if depth == 0:
            return k
    return len(tokens) - 1


def _simplify(tokens: list[str]) -> list[str]:
    """Exponents evaluated (^(5/8) → ^0.625, ^(1/2) → ^0.5), parentheses around one token dropped unless they
    hold a head's argument (O(1) stays, log^2(n) → log^2 n)."""
    out = list(tokens)
    changed = True
    while changed:
        changed = False
        for i in range(len(out) - 2):
            if out[i] == "(" and out[i + 2] == ")" and (i == 0 or out[i - 1] not in _HEADS):
                out[i:i + 3] = [out[i + 1]]
                changed = True
                break
            if out[i] == "(" and out[i + 1] == "(":
                m = _closing(out, i + 1)
                if m + 1 < len(out) and out[m + 1] == ")" and _closing(out, i) == m + 1:
                    del out[m + 1], out[i]  # ((x)) → (x)
                    changed = True
                    break
            if out[i] == "^" and out[i + 1] == "(":
                depth, k = 0, i + 1
                for k in range(i + 1, len(out)):
                    depth += {"(": 1, ")": -1}.get(out[k], 0)
                    if depth == 0:
                        break
                value = _evaluate(out[i + 2:k])
                if value is not None:
                    out[i + 1:k + 1] = [_number_token(value)]
                    changed = True
                    break
        for i in range(len(out)):
            if re.fullmatch(r"\d+\.\d+|\d+", out[i]) and out[i] != _number_token(float(out[i])):
                out[i] = _number_token(float(out[i]))
    return out


_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
_AFTER_TERM = {")", "+", "-", ",", "/", "|"}


def _is_atom(token: str) -> bool:
    """One symbol a power may apply to: a letter or a Greek letter (not a function name such as log)."""
    return len(token) == 1 and (token.isalpha() or token == "ε")


def _reciprocals(tokens: list[str]) -> list[str]:
    """Division by a symbol written as a negative power, so 1/T^2 = T^{-2}, 1/√p = p^{-1/2}, n/T = n T^{-1}:
    "1", "/", "T", "^", "2" → "T", "^", "-2". Only a letter or a parenthesised group with an optional numeric
    power that ends a term is rewritten ("1/T log T" is left alone); numeric denominators stay (1/2)."""
    out = list(tokens)
    for i in range(len(out) - 2):  # "^", "-", "2" → "^", "-2"
        if out[i] == "^" and out[i + 1] == "-" and _NUMERIC.fullmatch(out[i + 2]):
            out[i + 1:i + 3] = ["-" + out[i + 2]]
            if i + 3 >= len(out):
                break
    changed = True
    while changed:
        changed = False
        for i, t in enumerate(out):
            if t != "/" or i + 1 >= len(out):
                continue
            j = i + 1
            if _is_atom(out[j]):
                end = j + 1
            elif out[j] == "(":
                end = _closing(out, j) + 1
            else:
                continue
            power = Fraction(1)
            if end + 1 < len(out) and out[end] == "^" and _NUMERIC.fullmatch(out[end + 1]):
                power, end_all = Fraction(out[end + 1]), end + 2
            else:
                end_all = end
            if end_all < len(out) and out[end_all] not in _AFTER_TERM:
                continue
            base = out[j:end]
            inner = base[1:-1] if base[0] == "(" else []
            if len(inner) == 3 and _is_atom(inner[0]) and inner[1] == "^" and _NUMERIC.fullmatch(inner[2]):
                base, power = [inner[0]], power * Fraction(inner[2])  # 1/(√T) = T^{-1/2}
            start = i
            if i >= 1 and out[i - 1] == "1" and (i == 1 or out[i - 2] in {"(", "+", "-", ",", "/"}):
                start = i - 1  # the "1" of 1/T goes
            out[start:end_all] = base + ["^", _number_token(-power)]
            changed = True
            break
    return out


def formula_spans(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` writes formulas: ``$…$`` math, asymptotic heads with their parentheses ("O(n log n)"), and
    runs holding a power or a root ("n²/ε²", "T^{3/5}", "(1+ε)√n")."""
    spans: list[tuple[int, int, str]] = [(m.start(), m.end(), m.group(1)) for m in _MATH.finditer(text)]

    def free(a: int, b: int) -> bool:
        return not any(a < e and s < b for s, e, _ in spans)

    for m in _ROOT_WORDS.finditer(text):
        if free(m.start(), m.end()):
            spans.append((m.start(), m.end(), m.group(0)))
    for m in _PLAIN_HEAD.finditer(text):
        end = _balanced(text, m.end() - 1)
        if free(m.start(), end):
            spans.append((m.start(), end, text[m.start():end]))
    for m in _POWER_RUN.finditer(text):
        a, b = m.start(), m.end()
        while b > a and (text[b - 1] in ".,;:" or text[b - 1] == ")" and text.count("(", a, b) < text.count(")", a, b)):
            b -= 1
        while a < b and text[a] == "(" and text.count("(", a, b) > text.count(")", a, b):
            a += 1
        words_around = re.fullmatch(r"((?:[A-Za-z]{2,}-)*)(.*?)((?:-[A-Za-z]{2,})*)", text[a:b])
        if words_around:  # "KL-χ²", "χ²-divergence": the formula is χ²
            a, b = a + len(words_around.group(1)), b - len(words_around.group(3))
        if free(a, b):
            spans.append((a, b, text[a:b]))
    return sorted(spans)


def checked(tokens: Sequence[str]) -> bool:
    """A formula worth checking: an asymptotic head or a power with a letter in it (a bare number or a symbol
    name like ``$\\ell_1$`` is left to the number and name rules)."""
    letters = any(t.isalpha() or t in _GREEK_NAME or t == "ε" for t in tokens)
    # An inequality on a symbol ("p ≥ 4", "k < 10") bounds it: its number is the formula's, checked with it.
    bound = any(t in _RELATIONS for t in tokens) and any(_NUMERIC.fullmatch(t) for t in tokens)
    return letters and (any(t in _HEADS for t in tokens) or "^" in tokens or bound)


_RELATIONS = {"\u2265", "\u2264", "<", ">"}


def _grouping(tokens: Sequence[str], i: int) -> bool:
    """The parenthesis at ``i`` only groups: it holds no head's or function's argument, no exponent, and takes no
    power."""
    if i and (tokens[i - 1] in _HEADS or tokens[i - 1] == "^" or len(tokens[i - 1]) > 1 and tokens[i - 1].isalpha()):
        return False
    end = _closing(tokens, i)
    return not (end + 1 < len(tokens) and tokens[end + 1] == "^")


def loose(tokens: Sequence[str]) -> tuple[str, ...]:
    """``tokens`` without parentheses that only group ("O((dk)/(ε^2))" reads as "O(dk ε^-2)"), so two
    writings that bracket a product differently compare; a head's argument and a powered group keep theirs."""
    drop: set[int] = set()
    for i, t in enumerate(tokens):
        if t == "(" and _grouping(tokens, i):
            drop |= {i, _closing(tokens, i)}
    return tuple(t for i, t in enumerate(tokens) if i not in drop)


def contains(hay: Sequence[str], needle: Sequence[str]) -> bool:
    """``needle`` is a run of ``hay``; a macro of ``hay`` (``WILDCARD``) inside the run stands for one to four
    needle tokens that are symbols (letters, bars, macros), never numbers, parentheses or operators."""
    n = len(needle)
    if WILDCARD not in hay:
        return any(tuple(hay[i:i + n]) == tuple(needle) for i in range(len(hay) - n + 1))

    def at(i: int, j: int) -> bool:  # hay from i matches the rest of needle from j
        if j == n:
            return True
        if i == len(hay):
            return False
        if hay[i] == WILDCARD and not j:
            return needle[0] == WILDCARD and at(i + 1, 1)  # a run starts on a macro only where the needle's does
        if hay[i] == WILDCARD:
            k = 0
            while k < min(4, n - j) and _symbolic(needle[j + k]):
                k += 1
                if at(i + 1, j + k):
                    return True
            return False
        return hay[i] == needle[j] and at(i + 1, j + 1)

    return any(at(i, 0) for i in range(len(hay)))


def _symbolic(token: str) -> bool:
    return token.isalpha() or token in {"|", WILDCARD}


def blank_formulas(text: str) -> str:
    """``text`` with its checked formulas (see ``checked``) blanked out: their numbers are a formula's, not
    quantities the text states."""
    for a, b, f in reversed(formula_spans(text)):
        if checked(canonical(f)):
            text = text[:a] + " " * (b - a) + text[b:]
    return text


def _factors(tokens: Sequence[str]) -> list[tuple[str, ...]] | None:
    """A product's factors in order ("n", "log", "r", "log", "(", "n", "r", ")" → n | log r | log (n r)), each
    with its power; none when the tokens are not a plain product (a sum, a quotient, a relation, a comma)."""
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t in {"+", "-", "/", ",", "=", "\u00b1"} or t in _RELATIONS or t == ")":
            return None
        start = i
        if len(t) > 1 and t.isalpha() and t not in _GREEK_NAME:  # a function: log, exp, its power, its argument
            i += 1
            if i + 1 < len(tokens) and tokens[i] == "^":
                i += 2
            if i == len(tokens):
                return None
        if tokens[i] == "(":
            i = _closing(tokens, i) + 1
        else:
            i += 1
        if i + 1 < len(tokens) and tokens[i] == "^":
            i += 2
        out.append(tuple(tokens[start:i]))
    return out


def reordered(hay: Sequence[str], needle: Sequence[str]) -> bool:
    """``needle`` is ``hay`` with the factors of a head's product in another order: "O(n log r log(nr))" is
    "O(n log(nr) log r)", while "O(n² m)" is not "O(m² n)" (each factor keeps its power)."""
    if len(hay) != len(needle) or len(needle) < 4 or needle[0] not in _HEADS or needle[1] != "(":
        return False
    if tuple(hay[:2]) != tuple(needle[:2]):
        return False
    if _closing(needle, 1) != len(needle) - 1 or _closing(hay, 1) != len(hay) - 1:
        return False
    mine, theirs = _factors(needle[2:-1]), _factors(hay[2:-1])
    return mine is not None and theirs is not None and sorted(mine) == sorted(theirs)
