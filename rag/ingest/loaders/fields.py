"""Cleaning of record fields: text, titles, years, author names and category lists.

Re-exported by ``rag.ingest.loaders.common``; every loader goes through these so names and titles look alike
whatever the source format.
"""

from __future__ import annotations

import html
import re
from typing import Any

from rag.latex import latex_text

YEAR_MIN, YEAR_MAX = 1800, 2100


def squash_spaces(s: str) -> str:
    """Collapse all whitespace runs to single spaces and strip."""
    return re.sub(r"\s+", " ", s).strip()


def as_text(value: Any) -> str | None:
    """A scalar field as text: strings as is, numbers formatted, lists of strings joined; else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return None


_ACCENTED_DOTLESS_I = re.compile(r"(\\['`^\"~=.])\s*(?:\{\\i\}|\\i(?![A-Za-z]) ?)")


def fix_latex(s: str) -> str:
    """Work around LaTeX that ``rag.latex`` misreads: an accent on a dotless i (``{\\'\\i}`` → ``\\'i``)."""
    return _ACCENTED_DOTLESS_I.sub(r"\1i", s) if "\\i" in s else s


_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);", re.I)


def unescape_entities(s: str) -> str:
    """HTML entities decoded before a list is split on ";" (a WoS "Pereira, Jo&#227;o" is one name, not two,
    "Astronomy &amp; Astrophysics" one category)."""
    return html.unescape(s) if "&" in s and _ENTITY.search(s) else s


def clean_title(raw: str | None) -> str | None:
    """Title text: text-mode LaTeX (accents, commands, case-protection braces) decoded outside its formulas,
    whitespace folded; None when empty."""
    if not raw or not isinstance(raw, str):
        return None
    return squash_spaces(latex_text(fix_latex(raw))) or None


def parse_year(value: Any) -> int | None:
    """A year within 1800..2100 from an int or a date-like string ("2019-08-19", RFC 2822, "2020"), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if YEAR_MIN <= value <= YEAR_MAX else None
    if not isinstance(value, str):
        return None
    for m in re.finditer(r"(?<![\d.])(\d{4})(?![\d])", value):
        year = int(m.group(1))
        if YEAR_MIN <= year <= YEAR_MAX:
            return year
    return None


_INITIALS = re.compile(r"^(?:[A-Za-z]{1,2}[.\-]\s*)+[A-Za-z]?\.?$|^[A-Z]{1,3}$")
_DROP_NAMES = {"others", "et al", "et al.", "and others", "anonymous"}


def clean_name(raw: str) -> str:
    """One author name: LaTeX decoded, leftover braces dropped, whitespace folded, stray punctuation trimmed."""
    s = latex_text(fix_latex(raw)).replace("{", "").replace("}", "")
    s = squash_spaces(s).strip(" ,;")
    return "" if s.lower() in _DROP_NAMES or not re.search(r"\w", s) else s


def _split_top(s: str, sep: re.Pattern[str]) -> list[str]:
    """Split ``s`` on ``sep`` only outside braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        ch = s[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            m = sep.match(s, i)
            if m and m.end() > i:
                parts.append(s[start:i])
                start = i = m.end()
                continue
        i += 1
    parts.append(s[start:])
    return parts


_BIB_AND = re.compile(r"\s+and\s+", re.I)
_PLAIN_SEP = re.compile(r"\s*(?:,\s*and\s+|,|\s+and\s+|\s+&\s+)\s*", re.I)


def _flip(last_first: str) -> str:
    parts = [p.strip() for p in _split_top(last_first, re.compile(r","))]
    if len(parts) == 2:  # Last, First
        return f"{parts[1]} {parts[0]}"
    if len(parts) >= 3:  # Last, Jr, First
        return f"{parts[2]} {parts[0]} {parts[1]}"
    return last_first


def split_authors(value: Any, style: str = "plain") -> list[str]:
    """Author names from a list or a string.

    ``style="bibtex"``: ``"Last, First and Last2, First2"``. ``style="plain"``: names separated by ``;``
    (each maybe ``Last, First``), or by ``,``/``and``/``&`` — where ``"Smith, J. and Doe, A. B."`` style pairs
    of surname and initials are recognised and flipped to ``"J. Smith"``.
    """
    if isinstance(value, list):
        names = []
        for item in value:
            if isinstance(item, str):
                names.append(item)
            elif isinstance(item, dict):
                name = item.get("name") or " ".join(
                    str(item[k]) for k in ("given", "first", "family", "last") if isinstance(item.get(k), str))
                if isinstance(name, str):
                    names.append(name)
        return _dedupe(clean_name(n) for n in names)
    if not isinstance(value, str) or not value.strip():
        return []
    s = squash_spaces(unescape_entities(value))
    if style == "bibtex":
        return _dedupe(clean_name(_flip(p)) for p in _split_top(s, _BIB_AND))
    if ";" in s:
        return _dedupe(clean_name(_flip(p) if p.count(",") == 1 else p) for p in _split_top(s, re.compile(";")))
    tokens = [t.strip() for t in _split_top(s, _PLAIN_SEP) if t.strip()]
    paired = len(tokens) % 2 == 0 and tokens and (
        all(_INITIALS.match(t) for t in tokens[1::2])
        or (len(tokens) == 2 and "," in s and " and " not in s.lower() and all(" " not in t for t in tokens)))
    if paired:
        tokens = [f"{first} {last}" for last, first in zip(tokens[::2], tokens[1::2], strict=True)]
    return _dedupe(clean_name(t) for t in tokens)


def split_list(value: Any, seps: str = r"[;,]") -> list[str]:
    """Categories/keywords from a list or a delimited string, stripped, de-duplicated, order kept."""
    if isinstance(value, list):
        items = [as_text(v) or "" for v in value]
    elif isinstance(value, str):
        items = re.split(seps, unescape_entities(value))
    else:
        return []
    return _dedupe(squash_spaces(latex_text(i)) for i in items)


def _dedupe(items: Any) -> list[str]:
    seen: dict[str, None] = {}
    for it in items:
        if it and it not in seen:
            seen[it] = None
    return list(seen)
