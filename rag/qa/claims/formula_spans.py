"""Where a text writes formulas (``formula_spans``), which of them are worth checking (``checked``), and how a
statement's formula is found in a source formula (``contains``, ``loose``, ``reordered``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.qa.claims.formula_tokens import _HEADS, _NUMERIC, _ROOT_WORDS, WILDCARD, _closing, canonical
from rag.qa.claims.symbols import _GREEK_NAME, _MATH

_PLAIN_HEAD = re.compile(r"(?<![\w\\])(?:[OΩΘ]\u0303?|Õ|Omega|Theta|o)\s*\(")
_POWER_RUN = re.compile(r"[^\s,;:]*(?:\^|[²³⁴⁵⁶⁷⁸⁹⁰¹⁻]|√)[^\s,;:]*")


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
