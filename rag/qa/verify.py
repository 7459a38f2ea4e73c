"""Citation checks: every ``[n]`` must name a source, every cited statement gets a verdict against its abstracts.

Invalid markers (``[9]`` with five sources) are removed and reported. Each statement carrying a marker is scored
against the cited abstract: idf-weighted share of the statement's terms found in the abstract, and embedding cosine
with the abstract's best-matching sentence (which becomes the citation's ``evidence``). A score says the statement
is on topic, not that the abstract says it, so each statement also goes through the claim checks of
``rag.qa.claims`` (numbers, formulas, names, negation, direction…) against its cited abstracts and best-matching
sentence. Each finding counts as its family's severity says (``rag.qa.claims.table``): the statement's ``verdict``
is *contradicted* (the source says otherwise: a warning "contradicted: …", and every citation it carries is marked
unsupported), *not_in_source* (the source does not say it: a quiet note "not in the cited abstract: …"; a support
score under ``SUPPORTED`` can only say this) or *supported*; a caution-level finding is quoted ("caution: …") and
leaves the verdict alone. Each check carries the deciding ``rule``, what the statement ``said`` and what the source
says (``source_says``). Only papers cited in the final text become citations, renumbered 1..m in order of first
appearance.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rag.answer import Citation, StatementCheck
from rag.qa import claims
from rag.qa.claims.table import TABLE
from rag.qa.evidence import EvidenceIndex, content_terms, term_in
from rag.qa.findings import Claim, Finding, Judge, JudgeUnavailable, verdict_of
from rag.qa.generate import Generation
from rag.qa.prompts import CANNOT_ANSWER, is_cannot_answer
from rag.text import split_sentences

log = logging.getLogger(__name__)

MARKER = re.compile(r"([ \t]?)\[(\d+(?:\s*(?:,|;|-|\u2013)\s*\d+)*)\]")
_REFERENCE_LINE = re.compile(r"^\s*\[(\d+)\]\s")
# Support score (mean of term share and best-sentence cosine) under which a statement is "not in the source"
# (rule "on_topic"). 0.5 before issue 29 marked 12 true paraphrases of the committed sets, 0.4 marks 3 and still
# catches 66 of their 69 off-topic statements (python -m bench.claims; claims.table has the precision).
SUPPORTED = 0.4


@dataclass
class Verified:
    """The checked answer: cleaned text, citations in [n] order, and what was wrong."""

    text: str
    citations: list[Citation]
    answerable: bool
    warnings: list[str] = field(default_factory=list)
    statements: list[StatementCheck] = field(default_factory=list)  # every cited statement, in text order
    # what each rule family found about each statement, (family, reason), before its severity (bench.claims)
    hits: list[list[tuple[str, str]]] = field(default_factory=list)
    removed_citations: int = 0  # markers that named no source, dropped by ``renumber`` (each has a warning)


@dataclass
class Statement:
    text: str
    cites: list[int]  # renumbered


def parse_marker(group: str) -> list[int]:
    """"1, 3" → [1, 3]; "2-4" → [2, 3, 4]."""
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group.strip()):
        m = re.fullmatch(r"(\d+)\s*[-\u2013]\s*(\d+)", part)
        if m and 0 <= int(m.group(2)) - int(m.group(1)) <= 20:
            out.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.isdigit():
            out.append(int(part))
    return out


def statement_text(sentence: str) -> str:
    """A cited sentence without its markers — the claim that is checked."""
    return re.sub(r"\s+", " ", MARKER.sub("", sentence)).strip()


def renumber(text: str, n_sources: int) -> tuple[str, list[int], list[str]]:
    """Drop markers that name no source, renumber the rest by first appearance.

    Returns the new text, the original source numbers in their new order, and warnings."""
    order: list[int] = []
    invalid: list[int] = []

    def sub(m: re.Match[str]) -> str:
        nums = parse_marker(m.group(2))
        good = []
        for n in nums:
            if 1 <= n <= n_sources:
                if n not in order:
                    order.append(n)
                new = order.index(n) + 1
                if new not in good:
                    good.append(new)
            elif n not in invalid:
                invalid.append(n)
        if not good:
            return ""
        return m.group(1) + "".join(f"[{n}]" for n in sorted(good))

    new = MARKER.sub(sub, text)
    new = re.sub(r"[ \t]+([.,;:!?])", r"\1", new)
    warnings = [f"removed citation [{n}]: there {'is' if n_sources == 1 else 'are'} only {n_sources} source"
                f"{'' if n_sources == 1 else 's'}" for n in invalid]
    return new, order, warnings


def statements(text: str) -> list[Statement]:
    """Sentences carrying markers; a reference line "[n] Label — summary" counts as its summary."""
    out: list[Statement] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        ref = _REFERENCE_LINE.match(line)
        if ref:
            _, dash, rest = line.partition(" \u2014 ")
            if dash and rest.strip():
                out.append(Statement(statement_text(rest), [int(ref.group(1))]))
            continue
        for sentence in split_sentences(line):
            nums: list[int] = []
            for m in MARKER.finditer(sentence):
                nums.extend(n for n in parse_marker(m.group(2)) if n not in nums)
            text_only = statement_text(sentence)
            if nums and len(text_only.split()) >= 3:
                out.append(Statement(text_only, nums))
    return out


def _share(weights: dict[str, float], total: float, terms: frozenset[str]) -> float:
    return sum(w for t, w in weights.items() if term_in(t, terms)) / total if total else 0.0


def verify(gen: Generation, evidence: EvidenceIndex, judge: Judge | None = None) -> Verified:
    """Check a generation's citations; see the module docstring.

    ``judge``: another judge of the cited statements (an LLM); its findings replace the rules' for the statements
    it judged. When it is unavailable the rules' findings stand and a warning says so."""
    warnings = list(gen.warnings)
    if is_cannot_answer(gen.text) or not gen.text.strip():
        return Verified(CANNOT_ANSWER, [], False, warnings)
    text, order, bad = renumber(gen.text, len(gen.sources))
    warnings += bad
    if not order:
        snippet = re.sub(r"\s+", " ", gen.text).strip()[:200]
        warnings.append(f"the answer cited none of the retrieved papers, so it was withheld: \u201c{snippet}\u201d")
        return Verified(CANNOT_ANSWER, [], False, warnings, removed_citations=len(bad))
    sources = [gen.sources[n - 1] for n in order]
    evs = evidence.papers([h.paper for h in sources])
    stmts = statements(text)
    vecs = evidence.embed([s.text for s in stmts]) if stmts else None
    best: dict[int, list[tuple[float, int, int]]] = {i: [] for i in range(1, len(sources) + 1)}
    parsed: dict[tuple[int, ...], claims.Source] = {}  # cited abstracts as the claim checks read them
    checks: list[StatementCheck] = []
    claims_seen: list[Claim] = []  # what a judge sees, one per check
    hits: list[list[tuple[str, str]]] = []  # what each family found, per check, before its severity
    for si, st in enumerate(stmts):
        terms = content_terms(st.text)
        weights = evidence.idf(terms)
        total = sum(weights.values())
        top: tuple[float, str] | None = None  # the best-matching sentence over all cited abstracts
        cited = [n for n in st.cites if n in best]
        found: list[tuple[str, str, str]] = []  # (family, reason, source sentence)
        for n in cited:
            ev = evs[n - 1]
            if not len(ev.sentences) or vecs is None:
                continue
            cos = ev.vectors @ vecs[si]
            # The evidence is the sentence closest in meaning and in words to the statement.
            both = [0.5 * float(cos[j]) + 0.5 * _share(weights, total, ev.terms[j]) for j in range(len(cos))]
            j = max(range(len(both)), key=both.__getitem__)
            if top is None or both[j] > top[0]:
                top = (both[j], ev.sentences[j])
            lex = _share(weights, total, ev.all_terms)
            support = 0.5 * float(cos.max()) + 0.5 * lex
            best[n].append((round(both[j], 6), -si, j))  # ties (float noise) go to the earlier statement
            if support < SUPPORTED:
                found.append(("on_topic", f"[{n}] is about something else (support {support:.2f})",
                              ev.sentences[int(cos.argmax())]))
        if top is not None:
            key = tuple(cited)
            if key not in parsed:  # each set of cited abstracts is parsed once per answer, not per statement
                papers = [sources[n - 1].paper for n in cited]
                parsed[key] = claims.Source.of(
                    [s for n in cited for s in evs[n - 1].sentences],
                    frozenset().union(*(evs[n - 1].all_terms for n in cited)),
                    " ".join(f"{p.title or ''} {p.label} {p.year or ''}" for p in papers))
            found += [(family, reason, top[1]) for family, reason in claims.hits(st.text, parsed[key], top[1])]
        if cited:
            checks.append(_check(st.text, cited, found, top))
            claims_seen.append(Claim(st.text, tuple(cited), tuple(sources[n - 1].paper.abstract for n in cited),
                                     top[1] if top else ""))
            hits.append([(family, reason) for family, reason, _ in found])
    if judge is not None and checks:
        warnings += _rejudge(judge, claims_seen, checks)
    warnings += [w for check in checks for w in _warnings(check)]
    failed = {n for check in checks if check.verdict == "contradicted" for n in check.cited}
    citations = []
    for n, hit in enumerate(sources, start=1):
        p = hit.paper
        ev = evs[n - 1]
        picked = sorted(set(j for *_, j in sorted(best[n], reverse=True)[:2]))
        evidence_text = " ".join(ev.sentences[j] for j in picked)
        old = order[n - 1]
        summary = gen.summaries.get(old) or " ".join(s.text for s in stmts if n in s.cites)[:600]
        citations.append(Citation(
            n=n, paper_id=hit.paper_id, title=p.heading, authors=list(p.authors), categories=list(p.categories),
            year=p.year, abstract=p.abstract, summary=summary, evidence=evidence_text,
            supported=n not in failed, url=p.url))
    return Verified(text.strip(), citations, gen.answerable, warnings, checks, hits, removed_citations=len(bad))


def _check(text: str, cited: list[int], found: list[tuple[str, str, str]],
           top: tuple[float, str] | None) -> StatementCheck:
    """One statement's check from what the families found (family, reason, source sentence), each weighed by its
    severity in ``claims.table.TABLE``: the verdict is the most severe finding's; a caution is quoted in ``why``
    and leaves the verdict alone."""
    if top is None:
        return StatementCheck(text=text, cited=cited, supported=False, why="no abstract text to check",
                              verdict="not_in_source", rule="no_text")
    weighed = [Finding(family, verdict, reason, said) for family, reason, said in found
               if (verdict := TABLE[family].verdict)]
    cautions = [f"caution: {reason}" for family, reason, _ in found if TABLE[family].severity == "caution"]
    verdict = verdict_of(weighed)
    decisive = next((f for f in weighed if f.verdict == verdict), None)
    why = [f.said for f in weighed if f.verdict == verdict] + cautions
    return StatementCheck(text=text, cited=cited, supported=verdict == "supported", why="; ".join(why),
                          verdict=verdict, rule=decisive.rule if decisive else "",
                          said=decisive.said if decisive else "",
                          source_says=decisive.source_says if decisive else top[1])


def _warnings(check: StatementCheck) -> list[str]:
    """What the reader is told about one checked statement: a contradiction prominently, what the cited abstract
    does not say as a quiet note, a caution as a check to make."""
    marks = "".join(f"[{n}]" for n in check.cited)
    quoted = f"\u201c{check.text[:160]}\u201d"
    parts = check.why.split("; ") if check.why else []
    reasons = "; ".join(p for p in parts if not p.startswith("caution: "))
    cautions = "; ".join(p.removeprefix("caution: ") for p in parts if p.startswith("caution: "))
    out = []
    if check.verdict == "contradicted":
        out.append(f"{marks} contradicted: {quoted} ({reasons})")
    elif check.verdict == "not_in_source":
        out.append(f"{marks} not in the cited abstract: {quoted} ({reasons})")
    if cautions:
        out.append(f"{marks} check: {quoted} (caution: {cautions})")
    return out


def _rejudge(judge: Judge, seen: list[Claim], checks: list[StatementCheck]) -> list[str]:
    """Let ``judge`` give the verdicts; where it gives none (``None``: no quote found in the source, a statement
    it skipped) and when it fails, keep the rules' and say so."""
    try:
        judged = judge.judge(seen)
        if len(judged) != len(checks):
            raise JudgeUnavailable(f"it judged {len(judged)} statements of {len(checks)}")
    except JudgeUnavailable as e:
        log.warning("judge %s unavailable: %s", judge.name, e)
        return [f"the {judge.name} judge was unavailable ({e}); the offline rules judged the statements instead"]
    for check, found in zip(checks, judged):
        if found is None:
            continue
        verdict = verdict_of(found)
        decisive = next((f for f in found if f.verdict == verdict), None)
        check.verdict, check.supported = verdict, verdict == "supported"
        check.rule = decisive.rule if decisive else judge.name
        check.said = decisive.said if decisive else ""
        check.source_says = decisive.source_says if decisive else ""
        check.why = "; ".join(f.reason() for f in found if f.verdict != "supported")
    kept = sum(found is None for found in judged)
    if not kept:
        return []
    return [f"the {judge.name} judge gave no usable verdict for {kept} of {len(checks)} statement"
            f"{'s' if len(checks) != 1 else ''} (none given, or a quote not found in the cited abstract); the offline "
            f"rules judged "
            f"{'it' if kept == 1 else 'them'}"]
