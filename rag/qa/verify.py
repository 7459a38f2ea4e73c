"""Citation checks: every ``[n]`` must name a source, every cited statement is scored against its abstract.

Invalid markers (``[9]`` with five sources) are removed and reported. Each statement carrying a marker
is scored against the cited abstract: idf-weighted share of the statement's terms found in the
abstract, and embedding cosine with the abstract's best-matching sentence (which becomes the
citation's ``evidence``). A score says the statement is on topic, not that the abstract says it, so each
statement also goes through the claim checks of ``rag.qa.claims`` (numbers, negation, direction, names)
against its cited abstracts and best-matching sentence. A statement that fails either is unsupported, with
the reason in ``Verified.statements`` and quoted in the warnings, and so is every citation it carries. What a
caution-level check finds (a rule too imprecise on new wording to overrule the score: ``claims.review``) is
quoted in the warnings and in the statement's ``why`` as "caution: …", and the statement stays supported.
Only papers cited in the final text become citations, renumbered 1..m in order of first appearance.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field

from rag.answer import Citation, StatementCheck
from rag.qa import claims
from rag.qa.evidence import EvidenceIndex, content_terms, term_in
from rag.qa.findings import Claim, Finding, Judge, JudgeUnavailable, verdict_of
from rag.qa.generate import Generation
from rag.qa.prompts import CANNOT_ANSWER, is_cannot_answer
from rag.text import split_sentences

log = logging.getLogger(__name__)

MARKER = re.compile(r"([ \t]?)\[(\d+(?:\s*(?:,|;|-|\u2013)\s*\d+)*)\]")
_REFERENCE_LINE = re.compile(r"^\s*\[(\d+)\]\s")
SUPPORTED = 0.5  # support score (mean of term share and best-sentence cosine) a statement needs


@dataclass
class Verified:
    """The checked answer: cleaned text, citations in [n] order, and what was wrong."""

    text: str
    citations: list[Citation]
    answerable: bool
    warnings: list[str] = field(default_factory=list)
    statements: list[StatementCheck] = field(default_factory=list)  # every cited statement, in text order


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
        return Verified(CANNOT_ANSWER, [], False, warnings)
    sources = [gen.sources[n - 1] for n in order]
    evs = evidence.papers([h.paper for h in sources])
    stmts = statements(text)
    vecs = evidence.embed([s.text for s in stmts]) if stmts else None
    best: dict[int, list[tuple[float, int, int]]] = {i: [] for i in range(1, len(sources) + 1)}
    scores: dict[int, list[float]] = {i: [] for i in range(1, len(sources) + 1)}
    failed: set[int] = set()  # citations carried by a statement that fails a claim check
    parsed: dict[tuple[int, ...], claims.Source] = {}  # cited abstracts as the claim checks read them
    checks: list[StatementCheck] = []
    claims_seen: list[Claim] = []  # what a judge sees, one per check
    for si, st in enumerate(stmts):
        terms = content_terms(st.text)
        weights = evidence.idf(terms)
        total = sum(weights.values())
        why: list[str] = []
        cautions: list[str] = []  # what a caution-level claim check found; the statement stays supported
        top: tuple[float, str] | None = None  # the best-matching sentence over all cited abstracts
        cited = [n for n in st.cites if n in best]
        found: list[Finding] = []
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
            scores[n].append(support)
            best[n].append((round(both[j], 6), -si, j))  # ties (float noise) go to the earlier statement
            if support < SUPPORTED:
                warnings.append(f"[{n}] may not support: \u201c{st.text[:160]}\u201d (support {support:.2f})")
                why.append(f"[{n}] is about something else (support {support:.2f})")
                found.append(Finding("on_topic", "not_in_source", f"[{n}] is about something else (support "
                                     f"{support:.2f})", ev.sentences[int(cos.argmax())]))
        if top is not None:
            key = tuple(cited)
            if key not in parsed:  # each set of cited abstracts is parsed once per answer, not per statement
                papers = [sources[n - 1].paper for n in cited]
                parsed[key] = claims.Source.of(
                    [s for n in cited for s in evs[n - 1].sentences],
                    frozenset().union(*(evs[n - 1].all_terms for n in cited)),
                    " ".join(f"{p.title or ''} {p.label} {p.year or ''}" for p in papers))
            wrong, caution = claims.review(st.text, parsed[key], top[1])
            found += [dataclasses.replace(f, source_says=f.source_says or top[1])
                      for f in claims.findings(st.text, parsed[key], top[1])]
            marks = "".join(f"[{n}]" for n in cited)
            if wrong:
                failed.update(cited)
                warnings.append(f"{marks} does not support: \u201c{st.text[:160]}\u201d ({'; '.join(wrong)})")
                why += wrong
            if caution:  # a check of weak precision on new wording: warned about, not counted as unsupported
                warnings.append(f"{marks} check: \u201c{st.text[:160]}\u201d (caution: {'; '.join(caution)})")
                cautions += [f"caution: {c}" for c in caution]
        if cited:
            checks.append(_check(st.text, cited, found, top, why + cautions))
            claims_seen.append(Claim(st.text, tuple(cited), tuple(sources[n - 1].paper.abstract for n in cited),
                                     top[1] if top else ""))
    if judge is not None and checks:
        warnings += _rejudge(judge, claims_seen, checks)
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
            supported=bool(scores[n]) and min(scores[n]) >= SUPPORTED and n not in failed, url=p.url))
    return Verified(text.strip(), citations, gen.answerable, warnings, checks)


def _check(text: str, cited: list[int], found: list[Finding], top: tuple[float, str] | None,
           why: list[str]) -> StatementCheck:
    """One statement's check from what the rules found: the verdict is the most severe finding's."""
    if top is None:
        return StatementCheck(text=text, cited=cited, supported=False, why="no abstract text to check",
                              verdict="not_in_source", rule="no_text")
    verdict = verdict_of(found)
    decisive = next((f for f in found if f.verdict == verdict), None)
    return StatementCheck(text=text, cited=cited, supported=not why or all(w.startswith("caution: ") for w in why),
                          why="; ".join(why), verdict=verdict, rule=decisive.rule if decisive else "",
                          said=decisive.said if decisive else "",
                          source_says=decisive.source_says if decisive else top[1])


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
