"""The numbers family: quantities and formulas of a statement that the source neither states nor implies
(rounded, re-expressed or derived), and counts the source gives to another thing.
"""

from __future__ import annotations

import rag.qa.claims.notation as notation
from rag.qa.claims.lexicon import DERIVED, ROUNDED
from rag.qa.claims.source import Source, _counted
from rag.qa.claims.words import _shares


def formula_reasons(statement: str, source: Source) -> tuple[list[str], str]:
    """Formulas of the statement that are no run of a source formula; also the statement with its checked
    formulas blanked out (their numbers are judged here, not by the number rule)."""
    bad: list[str] = []
    blanked = statement
    for a, b, text in reversed(notation.formula_spans(statement)):
        tokens = notation.canonical(text)
        if not notation.checked(tokens):
            continue
        blanked = blanked[:a] + " " * (b - a) + blanked[b:]
        loose = notation.loose(tokens)
        if not any(notation.contains(f, tokens) or notation.reordered(f, tokens) for f in source.formulas) and not any(
                notation.contains(f, loose) for f in source.loose_formulas):
            bad.append(statement[a:b])
    return ([f"{', '.join(reversed(bad))} not in the abstract"] if bad else []), blanked


def number_reasons(statement: str, source: Source) -> list[str]:
    """Quantities of the statement that neither appear in nor follow from the source."""
    bad = [q.text for q in notation.quantities(statement)
           if not notation.matches(q, source.stated, ROUNDED) and not notation.matches(q, source.derived, DERIVED)]
    return [f"{', '.join(dict.fromkeys(bad))} not in the abstract"] if bad else []


def count_reasons(statement: str, source: Source) -> list[str]:
    """A count the source states, but of something else, where the source counts the statement's thing with
    another number: "6 models and 5 datasets" for "5 models and 6 datasets"."""
    bad = []
    for value, first, second in notation.counts(statement):
        mine = _counted(first, second)
        if not mine or value not in source.stated.exact:
            continue  # a number the source never states is the number rule's
        theirs = [v for v, terms in source.counts if _shares(mine, terms)]
        if theirs and value not in theirs:
            bad.append(f"{notation.decimal(value)} {first}".strip())
    return [f"{', '.join(bad)}: the abstract counts {'these' if len(bad) > 1 else 'this'} differently"] if bad else []
