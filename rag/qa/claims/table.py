"""Each rule family's severity: what its finding means for a statement's verdict, with the precision that earned it.

A family may say *contradicted* only when its findings were right at least ``CONTRADICTED_PRECISION`` of the time on
the committed labelled sets (``evals/sets/claims*.jsonl``), over all of them and on each set where it found at
least ``MIN_FINDINGS``; a family that finds what the source does not say (an unseen number or name) says
*not_in_source*; a family whose findings were too often wrong on new wording is a *caution* (quoted to the reader,
no effect on the verdict) or *off*. ``tests/test_claims_gate.py`` re-measures every family on every ``make test``
and fails when one falls under its bar.

Measured with ``python -m bench.claims --out reports/claims.json`` (per family: its findings ``n`` over
the seven committed sets, and ``precision``: the share of them on a pair whose label says the source contradicts
the statement, for a *contradicted* family, or does not support it, for a *not_in_source* one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rag.qa.findings import Verdict

Severity = Literal["contradicted", "not_in_source", "caution", "off"]
CONTRADICTED_PRECISION = 0.9  # a contradicted family's right share, over all committed sets and on each
NOT_IN_SOURCE_PRECISION = 0.8  # a not_in_source family's right share (its findings flag a pair the label rejects)
MIN_FINDINGS = 10  # a set where a family finds fewer than this says too little about it to gate on
MIN_CONTRADICTED_FINDINGS = 20  # … and over all the sets, the fewest findings that can earn "contradicted"
PARAPHRASES_CONTRADICTED = 0.03  # the most true paraphrases a release may mark contradicted, on every set


@dataclass(frozen=True)
class Family:
    """One rule family: its severity and the figures behind it (findings over the committed sets, right share)."""

    name: str
    severity: Severity
    findings: int  # over the seven committed sets
    precision: float  # right share of those findings (see the module docstring)
    what: str

    @property
    def verdict(self) -> Verdict | None:
        """The verdict a finding of this family gives; None when it does not change the verdict."""
        return self.severity if self.severity in ("contradicted", "not_in_source") else None


TABLE: dict[str, Family] = {f.name: f for f in (
    Family("formulas", "not_in_source", 0, 0.0, "a formula that is no run of a source formula"),
    Family("numbers", "not_in_source", 0, 0.0, "a quantity the source neither states nor implies"),
    Family("counts", "not_in_source", 0, 0.0, "a count the source gives to another thing"),
    Family("names", "not_in_source", 0, 0.0, "a method, dataset or metric name the source never uses"),
    Family("negation", "contradicted", 0, 0.0, "a negated word the source asserts"),
    Family("contrast", "caution", 0, 0.0, "\u201cA instead of B\u201d where the source asserts B"),
    Family("denial", "contradicted", 0, 0.0, "a word the source denies, asserted"),
    Family("opposites", "not_in_source", 0, 0.0, "a prefixed opposite of the source's word (tractable / intractable)"),
    Family("exclusivity", "not_in_source", 0, 0.0, "\u201conly X\u201d where the source names X with another thing"),
    Family("direction", "contradicted", 0, 0.0, "an opposite direction word about the same thing"),
    Family("on_topic", "not_in_source", 0, 0.0, "the support score under its threshold (rag.qa.verify)"),
)}
