"""All the families run on one statement: ``hits`` (family, reason) before severity, ``findings`` after it
(``table``), and the older string API (``review``, ``check``).
"""

from __future__ import annotations

from rag.qa.claims.direction import direction_reasons
from rag.qa.claims.exclusivity import _restricted_claims
from rag.qa.claims.names import name_reasons
from rag.qa.claims.negation import _denied_claims, _negated_claims
from rag.qa.claims.numbers import count_reasons, formula_reasons, number_reasons
from rag.qa.claims.opposites import _prefixed_opposites
from rag.qa.claims.source import Source
from rag.qa.claims.table import TABLE
from rag.qa.claims.words import words
from rag.qa.findings import Finding


# ---- all rules -----------------------------------------------------------------------------------
def review(statement: str, source: Source, evidence: str) -> tuple[list[str], list[str]]:
    """(reasons, cautions): why ``statement`` is not what its ``source`` says (empty when every rule passes), and
    what a rule of weak precision on unseen wording found (shown as a warning; the statement stays supported).

    ``source``: the cited abstracts parsed once (``Source.of``); ``evidence``: the source sentence that best
    matches the statement."""
    cautions: list[str] = []
    formulas, rest = formula_reasons(statement, source)
    ws = words(statement)
    ev = source.evidence_index(evidence)
    reasons = (formulas + number_reasons(rest, source) + count_reasons(rest, source) + name_reasons(rest, source)
               + _negated_claims(ws, source, cautions) + _denied_claims(ws, source, ev)
               + _prefixed_opposites(ws, source, ev) + _restricted_claims(ws, source, ev)
               + direction_reasons(statement, source, evidence))
    return reasons, cautions


def hits(statement: str, source: Source, evidence: str) -> list[tuple[str, str]]:
    """What each rule family finds wrong with ``statement`` against its ``source``, as (family, reason), before
    the family's severity decides what it means; empty when every rule passes."""
    formulas, rest = formula_reasons(statement, source)
    ws = words(statement)
    ev = source.evidence_index(evidence)
    contrasts: list[str] = []
    negated = _negated_claims(ws, source, contrasts)
    by_family = (("formulas", formulas), ("numbers", number_reasons(rest, source)),
                 ("counts", count_reasons(rest, source)), ("names", name_reasons(rest, source)),
                 ("negation", negated), ("contrast", contrasts), ("denial", _denied_claims(ws, source, ev)),
                 ("opposites", _prefixed_opposites(ws, source, ev)),
                 ("exclusivity", _restricted_claims(ws, source, ev)),
                 ("direction", direction_reasons(statement, source, evidence)))
    return [(family, reason) for family, reasons in by_family for reason in reasons]


def findings(statement: str, source: Source, evidence: str) -> list[Finding]:
    """What the rules find wrong with ``statement`` against its ``source``, one ``Finding`` per reason, tagged with
    the family that found it and its severity's verdict (``table.TABLE``); empty when every rule passes. A
    caution-level family's findings are not findings (``hits`` has them)."""
    return [Finding(rule=family, verdict=verdict, said=reason, source_says="")
            for family, reason in hits(statement, source, evidence) if (verdict := TABLE[family].verdict)]


def check(statement: str, source: Source, evidence: str) -> list[str]:
    """Why ``statement`` is not what its ``source`` says; empty when every rule passes (cautions not counted)."""
    return review(statement, source, evidence)[0]
