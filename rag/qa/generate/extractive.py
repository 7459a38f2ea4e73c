"""The offline generator: a cited synthesis from the most question-relevant abstract sentences, no LLM.

Sentences are scored against the question (embedding cosine + idf-weighted term overlap, see
``evidence``). The lead paper is the top-ranked one when its evidence answers; another paper is cited
only when its own evidence answers too: for a question that asks for several papers ("which papers…",
"compare…") strong evidence close to the lead's, and for a question after one answer, a best passage
that covers the question's rare terms and a best sentence about as well as the lead's (sharing some
words is not enough). The answer is 2-4 of the best non-redundant sentences (grouped by paper, "we"
turned into the authors' names, each made to read on its own: ``standalone``), then one line per cited paper
on what it contributes. At ``length`` brief, at most 3 papers and 2-3 sentences, the lines naming the papers
only; at thorough, also every other paper whose evidence reaches the floor a second paper needs, one paragraph
per group of papers whose best sentences say alike things. When no paper's
evidence is strong enough, or the papers it would cite never mention a name the question uses (a method,
language or dataset: "Transformer", "English-German", see ``names``), the reply is the fixed cannot-answer
sentence; the generation names the papers that came closest (not cited) so the user can rephrase, and for a
missing name, a warning says which names no such paper mentions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag import contribution
from rag.display import prose_surnames
from rag.index.lexical import paper_text
from rag.qa.evidence import (
    EvidenceIndex,
    PaperEvidence,
    QuestionScorer,
    SentenceScore,
    entities,
    outside_math,
    term_in,
)
from rag.qa.generate import AnswerMode, Generation, GenerationInput
from rag.qa.generate.names import SpecificTerm, missing_terms
from rag.qa.generate.standalone import drop_connective, leans_back, name_subject, standalone, third_person
from rag.qa.injection import drop_markers, payload_terms
from rag.qa.prompts import CANNOT_ANSWER
from rag.qa.retrieval import PaperHit
from rag.quarantine import is_instruction

log = logging.getLogger(__name__)

_CONTRIBUTION = re.compile(r"\b(?:we|this (?:paper|work|study))\s+(?:\w+ly\s+|also\s+|further\s+|then\s+|first\s+)?"
                           r"(?:propose|introduce|present|develop|design|show|demonstrate|prove|find|identify|"
                           r"establish|derive|achieve|build|construct|release|provide)|\b(?:achiev|outperform|"
                           r"improv|reduc|surpass)\w*", re.I)
_RELEASE = re.compile(r"https?://|\b(?:code|implementation|data(?:set)?s?|models?)\b[^.]{0,60}\b(?:available|released?|"
                      r"public(?:ly)?)\b", re.I)
_BACKGROUND = re.compile(r"^(?:however|despite|although|while|recent(?:ly)?|existing|current(?:ly)?|traditional(?:ly)?|"
                         r"prior|previous|most|many|conventional)\b", re.I)
_SUBJECT = re.compile(r"^(?:(?:in|with) this (?:paper|work|study|article),?\s+|here,?\s+|to this end,?\s+)?we\s+", re.I)
_THIS_WORK = re.compile(r"^this (paper|work|study|article)\b", re.I)
_ADVERB = re.compile(r"^((?:\w+ly|also|further|then|first|next|finally|here)\s+)?([a-z]+)\b(.*)$", re.S)
_TERMINAL = re.compile(r"([.!?]+)([\"\u201d')\]]*)\s*$")
# Lower case or capitalised only: "US" (unconditioned stimulus) or "OUR" are acronyms, not pronouns.
_FIRST_PERSON = re.compile(r"\b(?:[Ww]e|[Oo]ur|[Oo]urs|[Uu]s|[Oo]urselves)\b")
_QUOTED = re.compile(r"(\"[^\"]*\"|\u201c[^\u201d]*\u201d)")


# The question asks for several papers: "which papers…", "compare…", "what approaches…", "how do they differ".
_SEVERAL = re.compile(
    r"^(?:compare|contrast)\b|"
    r"\b(?:compare|contrast|comparison of|survey|overview of) (?:the |these |those |different )?"
    r"(?:\w+ ){0,2}?(?:papers|works|studies|approaches|methods|techniques)\b|"
    r"\b(?:which|what|any|other|are there|list(?: the)?|all(?: the)?) (?:\w+ ){0,2}?(?:papers|works|studies|"
    r"articles|approaches|methods|techniques|lines of work)\b|"
    r"\b(?:papers|works|studies|articles) (?:on|about|that|which|in|use|using|address\w*|propos\w*)\b|"
    r"\bwhat (?:work|research) (?:is there|exists)\b|"
    r"\bhow do (?:they|these|those|the (?:\w+ ){0,2}?\w+s) differ\b", re.I)


def asks_for_several(question: str) -> bool:
    """The question asks for more than one paper or method ("Which papers…", "Compare…"), so every paper that
    answers it is cited, not only the best one."""
    return bool(_SEVERAL.search(question))


@dataclass(frozen=True)
class _Judgement:
    cited: list[int]  # indices into the hits, the lead first; empty: the cannot-answer reply
    rows: list[list[SentenceScore]]
    closest: list[int]  # for a refusal: the papers that came closest, best first
    missing: list[SpecificTerm] = field(default_factory=list)  # a refusal for want of these names


@dataclass(frozen=True)
class _Pick:
    paper: int
    sentence: int
    score: float


def _pronouns(text: str) -> str:
    """First person plural → third person, outside math."""
    table = {"we": "they", "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves"}

    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        out = table[w.lower()]
        return out.capitalize() if w[0].isupper() else out

    def plain(part: str) -> str:
        # Quoted words are the authors' own (a term, a title): leave them as written.
        pieces = _QUOTED.split(part)
        return "".join(p if i % 2 else _FIRST_PERSON.sub(swap, p) for i, p in enumerate(pieces))

    return outside_math(text, plain)


def attribute(sentence: str, authors: list[str], first: bool) -> str:
    """Re-word an abstract sentence for an answer: "We propose…" → "Miao et al. propose…".

    ``first``: the authors are not named yet in this part of the answer, so the sentence's first "we"
    (or "this work", or a leading "Our") names them; every other first person becomes "they"."""
    who = prose_surnames(authors)
    if first and who:
        m = _SUBJECT.match(sentence)
        if m:
            rest = sentence[m.end():]
            if len(authors) == 1:  # "We propose" → "Rudin proposes"
                vm = _ADVERB.match(rest)
                if vm and vm.group(2) not in ("can", "may", "will", "must", "should", "could", "would"):
                    rest = (vm.group(1) or "") + third_person(vm.group(2)) + vm.group(3)
            sentence = f"{who} {rest}"
        elif _THIS_WORK.match(sentence):
            sentence = _THIS_WORK.sub(lambda m: f"The {m.group(1).lower()} by {who}", sentence, count=1)
        elif len(authors) > 1 and re.match(r"Our\s", sentence):
            sentence = f"{who}'s {sentence[4:]}"
        elif len(authors) > 1:  # "To address this, we offer…" → "…, Zhao and Zhang offer…"
            done = [False]

            def name_first(part: str) -> str:
                if done[0]:
                    return part
                new = re.sub(r"\bwe\b", who, part, count=1)
                done[0] = new != part
                return new

            sentence = outside_math(sentence, name_first)
    return _pronouns(sentence)


def cite(sentence: str, n: int) -> str:
    """Put ``[n]`` before the sentence's final punctuation."""
    sentence = sentence.strip()
    m = _TERMINAL.search(sentence)
    if m and m.start() > 0:
        # Closing quotes and brackets stay with the words they close: 'the "Twin Paradox" [1].'
        return f"{sentence[:m.start()]}{m.group(2)} [{n}]{m.group(1)}"
    return f"{sentence} [{n}]."


def _finish(sentence: str) -> str:
    sentence = drop_markers(sentence).strip()  # the abstract's own "[7]" is no citation of ours
    return sentence if _TERMINAL.search(sentence) else sentence + "."


def _readable(sentence: str, authors: list[str]) -> str:
    """An abstract sentence as it reads alone (``standalone``); one that leans on the sentence before keeps
    its pronoun (it was picked only for want of another), without a leading connective."""
    return standalone(sentence, authors) or drop_connective(sentence)


def _display_label(hit: PaperHit) -> str:
    """The paper's title or label, unless it carries an injected instruction or its payload: then its
    authors and year (the card still shows the title, escaped, as data)."""
    label = hit.paper.heading
    if is_instruction(label) or _tokens_of(label) & payload_terms([hit.paper]):
        who = prose_surnames(list(hit.paper.authors)) or "Untitled"
        year = hit.paper.year
        return f"{who} ({year})" if year else f"{who} ({hit.paper_id})"
    return label


def _paper_texts(hit: PaperHit) -> list[str]:
    """What a cited paper says about itself: what BM25 reads of it (title, authors, categories, abstract) and the
    label it is shown by."""
    return [paper_text(hit.paper), hit.paper.label or ""]


def _missing_note(missing: list[SpecificTerm], closest: list[PaperHit]) -> str:
    """"none of the papers that came closest mentions “Transformer” or “English-German”; the closest is …"."""
    names = [f"\u201c{t.text}\u201d" for t in missing]
    said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    note = f"none of the papers that came closest mentions {said}"
    if closest:
        note += f"; the closest is \u201c{_display_label(closest[0])}\u201d"
    return note


def _tokens_of(text: str) -> set[str]:
    return {w.casefold().strip("-:") for w in re.findall(r"[^\W_][\w\-:]*", text)}


class ExtractiveGenerator:
    """Answers from abstract sentences only; see the module docstring."""

    mode: AnswerMode = "extractive"
    ANSWERABLE = 0.9  # best paper's support (topic coverage + best-sentence cosine) needed to answer
    ANSWERABLE_FILTERED = 0.5  # lower when the user already narrowed the papers down (author, category…)
    SECONDARY = 0.9  # support another paper needs to be cited too…
    RELATIVE = 0.6  # …and at least this share of the best paper's support
    KEY_RELATIVE = 0.9  # one answer asked for: another paper's best passage covers the rare terms this well…
    BEST_RELATIVE = 0.9  # …and its best sentence scores this share of the lead's
    CLOSEST = 0.5  # support from which a paper is named as close when the answer is the cannot-answer reply
    MAX_CLOSEST = 3
    TOP_FLOOR = 0.6  # a paper holding a rare name the question uses is cited with less
    RARE = 2.5  # idf from which a named thing is rare (in a few papers only)
    MISSING_NAME = 0.2  # extra support needed when a name in the question appears in no candidate paper
    MAX_SENTENCES = 4
    REDUNDANT = 0.9  # cosine above which two sentences say the same thing
    MIN_WORDS = 6
    BRIEF_PAPERS = 3  # --length brief: at most this many papers…
    BRIEF_SENTENCES = 3  # …and sentences (2 from a single paper)
    GROUP = 0.45  # --length thorough: cosine of two papers' best sentences from which they say the same thing

    def __init__(self, evidence: EvidenceIndex) -> None:
        self.evidence = evidence

    # ---- interface -----------------------------------------------------------------------------
    def generate(self, inp: GenerationInput) -> Generation:
        return self._compose(inp)[1]

    def stream(self, inp: GenerationInput) -> Iterator[str | Generation]:
        pieces, gen = self._compose(inp)
        yield from pieces
        yield gen

    # ---- composition ---------------------------------------------------------------------------
    def _compose(self, inp: GenerationInput) -> tuple[list[str], Generation]:
        hits = list(inp.hits)
        if not hits:
            return [CANNOT_ANSWER], Generation(CANNOT_ANSWER, [], answerable=False)
        evs = self.evidence.papers([h.paper for h in hits])
        if inp.listing:
            return self._listing(inp, hits, evs)
        judged = self._judge(inp, evs)
        if not judged.cited:
            closest = [hits[i] for i in judged.closest]
            why = [_missing_note(judged.missing, closest)] if judged.missing else []
            return [CANNOT_ANSWER], Generation(CANNOT_ANSWER, [], answerable=False, closest=closest, warnings=why)
        picks = self._pick_sentences(judged.cited, evs, judged.rows, inp.length)
        order = [i for i in judged.cited if any(p.paper == i for p in picks)]
        groups = self._groups(order, picks, evs) if inp.length == "thorough" else [order]
        return self._render(hits, evs, judged.rows, groups, picks, brief=inp.length == "brief")

    def _judge(self, inp: GenerationInput, evs: list[PaperEvidence]) -> _Judgement:
        """Which papers answer the question (empty: none does), best first, with their sentence scores."""
        hits = list(inp.hits)
        question = inp.focus or inp.question
        scorer = QuestionScorer(self.evidence, inp.question, inp.vector)
        rows = scorer.sentences(evs)
        support = [scorer.lexical(ev.all_terms) + max((s.cosine for s in row), default=0.0)
                   for ev, row in zip(evs, rows)]
        closest = sorted((i for i, s in enumerate(support) if s >= self.CLOSEST), key=lambda i: -support[i])
        closest = closest[:self.MAX_CLOSEST]
        floor = self.ANSWERABLE_FILTERED if inp.filtered else self.ANSWERABLE
        named = entities(question)
        anchored = self._anchored(named, evs)
        if any(not any(all(term_in(t, ev.all_terms) for t in e) for ev in evs) for e in named):
            floor += self.MISSING_NAME  # the question names something (AlphaFold, BLEU) no candidate mentions
        log.debug("extractive support %s (floor %.2f, anchored %s)", [round(s, 2) for s in support], floor, anchored)
        if max(support) < floor and not any(support[i] >= self.TOP_FLOOR for i in anchored):
            return _Judgement([], rows, closest)
        ranking = support
        if inp.focus and inp.focus != inp.question:
            # A follow-up: the expanded question finds the papers, the follow-up's own words pick what to say.
            focus = inp.focus_scorer
            if focus is None or focus.question != inp.focus:
                focus = QuestionScorer(self.evidence, inp.focus)
            frows = focus.sentences(evs)
            rows = [[SentenceScore(a.paper_index, a.sentence, (a.score + b.score) / 2, (a.cosine + b.cosine) / 2,
                                   (a.lexical + b.lexical) / 2) for a, b in zip(r, fr)] for r, fr in zip(rows, frows)]
            ranking = [(s + focus.lexical(ev.all_terms) + max((x.cosine for x in fr), default=0.0)) / 2
                       for s, ev, fr in zip(support, evs, frows)]
            scorer = focus
        top = max(ranking)
        second = min(floor, self.SECONDARY)
        # The lead: the top-ranked paper when its evidence answers (retrieval already judged it best overall)
        # or it holds the rare name asked about, else the paper with the strongest evidence.
        if support[0] >= floor or (0 in anchored and support[0] >= self.TOP_FLOOR):
            lead = 0
        else:
            lead = max(range(len(ranking)), key=lambda i: ranking[i])
        several = asks_for_several(question) or len(anchored) >= 2
        best = [max((s.score for s in row), default=0.0) for row in rows]
        key = [self._key_coverage(scorer, ev) for ev in evs]

        def answers_too(i: int) -> bool:
            if i in anchored and several and support[i] >= self.TOP_FLOOR:
                return True  # "Compare EVO and MICE": each named thing's paper
            if ranking[i] < second or ranking[i] < self.RELATIVE * top:
                return False
            if several:
                return True
            # One answer is asked for: another paper joins only when its own evidence answers the question
            # about as well as the lead's: its best passage covers the question's rare terms (not just some of
            # its words) and its best sentence is nearly as close to the question.
            return key[i] >= self.KEY_RELATIVE * key[lead] and best[i] >= self.BEST_RELATIVE * best[lead]

        cited = [lead] + [i for i in range(len(hits)) if i != lead and answers_too(i)]
        cited = self._by_length(cited, ranking, second, inp.length)
        if inp.restrict_to is not None:
            cited = [i for i in cited if i == 0 or hits[i].paper_id in inp.restrict_to]
        log.debug("extractive lead %d, several %s, key %s, best %s -> %s", lead, several,
                  [round(k, 2) for k in key], [round(b, 2) for b in best], cited)
        # The question's names (Transformer, English-German, WMT14) must be in what the answer cites: evidence
        # that holds none of a name answers another question (BLEU on English-French), however close it reads.
        missing = missing_terms(question, (text for i in cited for text in _paper_texts(hits[i])))
        if missing:
            log.debug("extractive refusal: the cited papers never mention %s", [t.text for t in missing])
            near = cited + [i for i in closest if i not in cited]
            return _Judgement([], rows, near[:self.MAX_CLOSEST], missing)
        return _Judgement(cited, rows, closest)

    def _by_length(self, cited: list[int], ranking: list[float], floor: float, length: str) -> list[int]:
        """The papers cited at an answer length: brief, the first ``BRIEF_PAPERS``; thorough, also every other
        paper whose evidence reaches the ``floor`` a second paper needs (best first); normal, as judged."""
        if length == "brief":
            return cited[:self.BRIEF_PAPERS]
        if length == "thorough":
            return cited + sorted((i for i in range(len(ranking)) if i not in cited and ranking[i] >= floor),
                                  key=lambda i: -ranking[i])
        return cited

    def _key_coverage(self, scorer: QuestionScorer, ev: PaperEvidence) -> float:
        """How much of the question's rare content the paper's best passage (one or two adjacent sentences,
        or the title) covers."""
        passages = [t | ev.terms[j + 1] if j + 1 < len(ev.terms) else t for j, t in enumerate(ev.terms)]
        return max((scorer.rare_coverage(t) for t in passages), default=0.0)

    def _anchored(self, named: Sequence[frozenset[str]], evs: list[PaperEvidence]) -> set[int]:
        """Papers holding a rare thing the question names ("Compare EVO and MICE"), provided every named
        thing is found among the papers and each is held by few of them (a name most candidates share,
        like "LLM" among LLM papers, tells none apart); empty otherwise."""
        if not named:
            return set()
        idf = self.evidence.idf({t for e in named for t in e})
        holders = [{i for i, ev in enumerate(evs) if all(term_in(t, ev.all_terms) for t in e)} for e in named]
        if not all(holders):
            return set()
        rare = [h for e, h in zip(named, holders) if max(idf[t] for t in e) >= self.RARE
                and len(h) <= max(1, len(evs) // 3)]
        return set().union(*rare) if rare else set()

    @staticmethod
    def _prior(ev: PaperEvidence, i: int) -> float:
        """Findings beat background: a contribution or a number scores a little more; an opening or
        "existing work…" sentence that only sets the scene, or a code-availability note, less."""
        text = ev.sentences[i]
        if _RELEASE.search(text):
            return -0.2
        if _CONTRIBUTION.search(text) or re.search(r"\d", text):
            return 0.05
        if i == 0 or _BACKGROUND.match(text):
            return -0.1
        return 0.0

    def _usable(self, ev: PaperEvidence, i: int) -> bool:
        return len(ev.sentences[i].split()) >= self.MIN_WORDS

    def _pick_sentences(self, cited: list[int], evs: list[PaperEvidence], rows: list[list[SentenceScore]],
                        length: str = "normal") -> list[_Pick]:
        picks: list[_Pick] = []
        most = {"brief": self.BRIEF_SENTENCES, "thorough": len(cited) + 2}.get(length, self.MAX_SENTENCES)

        def redundant(pi: int, si: int) -> bool:
            v = evs[pi].vectors[si]
            return any(float(np.dot(v, evs[p.paper].vectors[p.sentence])) > self.REDUNDANT for p in picks)

        ranked = {i: self._alone(evs[i], sorted((s for s in rows[i] if self._usable(evs[i], s.sentence)
                                                 or len(rows[i]) == 1),
                                                key=lambda s: -(s.score + self._prior(evs[i], s.sentence))))
                  for i in cited}
        for i in cited:  # the best sentence of every cited paper first
            if len(picks) >= most:
                break
            for s in ranked[i]:
                if not redundant(i, s.sentence):
                    picks.append(_Pick(i, s.sentence, s.score))
                    break
        # Then more from the strongest papers while they stay close to that paper's best sentence.
        extra = sorted((s for i in cited for s in ranked[i][1:3]),
                       key=lambda s: -(s.score + self._prior(evs[s.paper_index], s.sentence)))
        limit = (3 if length != "brief" else 2) if len(cited) == 1 else most
        for s in extra:
            if len(picks) >= limit:
                break
            top = ranked[s.paper_index][0].score if ranked[s.paper_index] else 0.0
            close = len(picks) < 2 or s.score >= 0.75 * top
            new = not any(p.paper == s.paper_index and p.sentence == s.sentence for p in picks)
            if close and new and not redundant(s.paper_index, s.sentence):
                picks.append(_Pick(s.paper_index, s.sentence, s.score))
        return picks

    def _contribution(self, ev: PaperEvidence, row: list[SentenceScore], used: set[int]) -> tuple[list[int], str]:
        """The sentence(s) saying what the paper contributes, preferring ones not already in the synthesis: the
        contribution sentence (``rag.contribution``), else the finding or result closest to the question; a
        background sentence only when the abstract has nothing else left."""
        cands = self._alone(ev, [s for s in row if s.sentence not in used and self._usable(ev, s.sentence)
                                 and not _RELEASE.search(ev.sentences[s.sentence])])
        if not cands:
            return [], ""
        c = contribution.analyse(ev.sentences)
        # The role decides (a proposal or finding over a result over anything else); the question breaks ties.
        best = max(cands, key=lambda s: (s.sentence == c.main, c.roles[s.sentence] != contribution.Role.BACKGROUND,
                                         min(int(c.roles[s.sentence]), int(contribution.Role.FINDING)), s.score))
        idx = [best.sentence]
        nxt = best.sentence + 1
        if len(ev.sentences[best.sentence].split()) < 14 and nxt < len(ev.sentences) and nxt not in used \
                and c.roles[nxt] != contribution.Role.BACKGROUND:
            idx.append(nxt)
        return idx, " ".join(ev.sentences[i] for i in idx)

    @staticmethod
    def _alone(ev: PaperEvidence, scores: list[SentenceScore]) -> list[SentenceScore]:
        """The sentences that read on their own (``standalone``), when any; else all of them."""
        alone = [s for s in scores if not leans_back(ev.sentences[s.sentence])]
        return alone or scores

    def _groups(self, order: list[int], picks: list[_Pick], evs: list[PaperEvidence]) -> list[list[int]]:
        """The cited papers grouped by what they say: a paper joins the first group whose first paper's best
        sentence is close to its own (cosine ≥ ``GROUP``), else starts a group."""
        best = {p.paper: evs[p.paper].vectors[p.sentence] for p in reversed(picks)}
        groups: list[list[int]] = []
        for i in order:
            home = next((g for g in groups if float(np.dot(best[g[0]], best[i])) >= self.GROUP), None)
            if home is None:
                groups.append([i])
            else:
                home.append(i)
        return groups

    def _main(self, ev: PaperEvidence) -> tuple[list[int], str]:
        """What a paper is about, question aside: its contribution sentence (``rag.contribution``), else its
        best-ranked sentence that is not background."""
        c = contribution.analyse(ev.sentences)
        for i in c.ranked():
            if self._usable(ev, i) and not _RELEASE.search(ev.sentences[i]):
                return [i], ev.sentences[i]
        return ([0], ev.sentences[0]) if ev.sentences else ([], "")

    def _render(self, hits: list[PaperHit], evs: list[PaperEvidence], rows: list[list[SentenceScore]],
                groups: list[list[int]], picks: list[_Pick], brief: bool = False) -> tuple[list[str], Generation]:
        """The synthesis (one paragraph per group of papers), then one line per cited paper (its label alone
        for a brief answer)."""
        pieces: list[str] = []
        order = [i for g in groups for i in g]
        sources = [hits[i] for i in order]
        summaries: dict[int, str] = {}
        for n, i in enumerate(order, start=1):
            authors = list(hits[i].paper.authors)
            mine = sorted((p for p in picks if p.paper == i), key=lambda p: p.sentence)
            named = False
            gap = "\n\n" if any(g[0] == i for g in groups[1:]) else " "  # a new group: a new paragraph
            for p in mine:
                clean = _readable(evs[i].sentences[p.sentence], authors)
                statement = _finish(attribute(clean, authors, first=not named))
                named = named or prose_surnames(authors) in statement
                self.evidence.remember(statement, evs[i].vectors[p.sentence])
                pieces.append(("" if not pieces else gap) + cite(statement, n))
                gap = " "
        for n, i in enumerate(order, start=1):
            used = {p.sentence for p in picks if p.paper == i}
            idx, text = self._contribution(evs[i], rows[i], used)
            authors = list(hits[i].paper.authors)
            clean = _readable(text, authors)
            summary = _finish(name_subject(attribute(clean, [], first=False), clean, authors)) if text else ""
            if summary:
                vec = evs[i].vectors[idx].mean(axis=0)
                self.evidence.remember(summary, vec / max(float(np.linalg.norm(vec)), 1e-9))
            summaries[n] = summary or _finish(evs[i].sentences[next(p.sentence for p in picks if p.paper == i)])
            line = f"[{n}] {_display_label(hits[i])}" + (f" \u2014 {summary}" if summary and not brief else "")
            pieces.append(("\n\n" if n == 1 else "\n") + line)
        return pieces, Generation("".join(pieces), sources, summaries, answerable=True)

    def _listing(self, inp: GenerationInput, hits: list[PaperHit],
                 evs: list[PaperEvidence]) -> tuple[list[str], Generation]:
        """"Which papers by X?" — one line per matching paper with what it contributes."""
        total = inp.total_matches if inp.total_matches is not None else len(hits)
        what = f" ({inp.filter_text})" if inp.filter_text else ""
        head = (f"{total} paper{'s' if total != 1 else ''} match{'es' if total == 1 else ''}{what}"
                + (f"; the {len(hits)} most relevant:" if total > len(hits) else ":"))
        pieces = [head]
        summaries: dict[int, str] = {}
        for n, (hit, ev) in enumerate(zip(hits, evs), start=1):
            idx, text = self._main(ev)
            summary = _finish(attribute(_readable(text, list(hit.paper.authors)), list(hit.paper.authors),
                                        first=True)) if text else ""
            if summary:
                vec = ev.vectors[idx].mean(axis=0)
                self.evidence.remember(summary, vec / max(float(np.linalg.norm(vec)), 1e-9))
            summaries[n] = summary
            pieces.append(f"\n[{n}] {_display_label(hit)}" + (f" \u2014 {summary}" if summary else ""))
        return pieces, Generation("".join(pieces), hits, summaries, answerable=True)
