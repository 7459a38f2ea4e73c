"""The names family: methods, datasets and metrics a statement names and its source does not, in any of
their forms (``forms``).
"""

from __future__ import annotations

import re

import rag.qa.claims.notation as notation
from rag.analysis import analyze
from rag.qa.claims.forms import (
    _DIGIT_NAME,
    _PROPER,
    _expands,
    _squash,
    abbreviated_in,
    adjective_of,
    named_otherwise,
)
from rag.qa.claims.source import Source
from rag.qa.evidence import ENTITY, term_in


def name_reasons(statement: str, source: Source) -> list[str]:
    """Named methods, datasets and metrics of the statement that the source never names. A name with digits
    ("rank-16", "llama-guard-2") must match with its digits, which analysed terms leave out; an acronym may
    be spelled out in the source instead; a capitalised word inside the sentence ("Kronecker") is a name too.
    Symbols compare folded: "L1" is ``$\\ell_1$``, "L2" is ``$L^2$``."""
    folded = notation.fold_symbols(statement)
    bad: list[str] = []
    for m in _DIGIT_NAME.finditer(folded):
        name = m.group(0).rstrip(".")
        if not re.search(r"(?<!\w)" + re.escape(_squash(name)) + r"(?!\w)", source.squashed):
            bad.append(name)
    missing: set[str] = set()
    named = [frozenset(t for part in m.group(0).split("-") if re.search(r"[A-Z0-9]", part) for t in analyze(part))
             for m in ENTITY.finditer(folded)]  # the names evidence.entities finds, as written
    # A hyphenated name counts when each part is named ("Kth-order" for "$K$th order").
    named += [frozenset(t for part in m.group(0).split("-") for t in analyze(part)) for m in _PROPER.finditer(folded)]
    for terms in named:
        for t in terms:
            if not t.isascii() or term_in(t, source.terms) or adjective_of(t, source.terms):
                continue  # math symbols ("χ²") are written many ways; "Newtonian" names Newton
            if t.isalpha() and 2 <= len(t) <= 6 and _expands(t, source.parts()):
                continue
            if t.isalpha() and 3 <= len(t) <= 7 and t.endswith("s") and (
                    term_in(t[:-1], source.terms) or _expands(t[:-1], source.parts())):
                continue  # a plural acronym: "SVMs" for "SVM", "MDPs" for "Markov decision processes"
            missing.add(t)
    for m in re.finditer(r"[^\s,;:()\[\]]+", folded):
        word = m.group(0).rstrip(".")
        if missing & set(analyze(word)) and word not in bad:
            bad.append(word)
    raw = " ".join((*source.sentences, source.extra))
    bad = [name for name in bad
           if not named_otherwise(name, source.squashed) and not abbreviated_in(name, statement, raw)]
    return [f"{', '.join(bad)} not named in the abstract"] if bad else []
