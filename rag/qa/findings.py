"""What a check of a cited statement found, as data: ``Finding(rule, verdict, said, source_says)``.

A verdict is one of three, as the reference benchmarks use (SciFact, FEVER): the cited source *supports* the
statement, *contradicts* it (says otherwise: a flipped direction, a denied claim, another number), or the
statement is *not in the source* (an unseen number or name, an off-topic statement). A judge (``rag.qa.verify``:
the offline rules of ``rag.qa.claims`` or an LLM) returns findings per statement; the statement's verdict is the
most severe of them (``verdict_of``), so front ends and evals read fields instead of parsing warning text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

Verdict = Literal["supported", "contradicted", "not_in_source"]
VERDICTS: tuple[Verdict, ...] = ("supported", "not_in_source", "contradicted")  # least to most severe


@dataclass(frozen=True)
class Finding:
    """One rule's (or the judge's) finding about one statement.

    ``rule``: the family and rule that found it ("numbers.unseen", "negation.flipped", "on_topic", "llm"…);
    ``said``: what the statement says (a quote of it); ``source_says``: what the source says instead, quoted from
    the source (empty when the source says nothing about it)."""

    rule: str
    verdict: Verdict
    said: str
    source_says: str = ""

    @property
    def family(self) -> str:
        return self.rule.split(".", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reason(self) -> str:
        """One line for a warning or a statement's ``why``."""
        if self.source_says:
            return f"{self.said} (the source says \u201c{self.source_says}\u201d)"
        return self.said


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """The most severe verdict among ``findings``; "supported" when there are none."""
    worst: Verdict = "supported"
    for f in findings:
        if VERDICTS.index(f.verdict) > VERDICTS.index(worst):
            worst = f.verdict
    return worst


@dataclass(frozen=True)
class Claim:
    """One cited statement as a judge sees it: its text, the ``[n]`` it cites, the cited sources' texts (one per
    citation, in ``cited`` order) and the source sentence that best matches it (``evidence``, empty when none)."""

    text: str
    cited: tuple[int, ...]
    sources: tuple[str, ...]
    evidence: str = ""


class JudgeUnavailable(Exception):
    """A judge could not give verdicts (timeout, refusal, unparsable reply): the rules judge instead."""


class Judge(Protocol):
    """Gives each claim of one answer its findings, in one go (an LLM judge makes one batched call per answer).

    Returns one entry per claim, in order: a list of findings (empty for a statement with nothing to report), or
    ``None`` when it has no verdict for that claim (its quote is not in the source, it skipped the claim), so
    the rules' verdict stands. A finding with verdict "supported" quotes what says it (``source_says``). Raises
    ``JudgeUnavailable`` when it cannot judge at all."""

    name: str

    def judge(self, claims: Sequence[Claim]) -> list[list[Finding] | None]: ...
