"""Sentence-level evidence: abstracts split into sentences, embedded once, scored against a question.

Shared by the extractive generator (which sentences answer the question), the chain's follow-up
re-ranking and verification (which abstract sentence supports a cited statement). Sentence vectors
are cached in memory by paper id + abstract hash, so a warm ``ask`` embeds nothing but the question.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from rag.analysis import analyze
from rag.index.embeddings import Embedder
from rag.quarantine import sentences_of
from rag.records import StoredPaper
from rag.text import plain_text

IdfFn = Callable[[Iterable[str]], dict[str, float]]

# Words that shape a question but say nothing about its topic ("which papers propose…").
_QUESTION_WORDS = """
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can could did do does doing done down during each either else ever few for from further
get gets got had has have having he her here hers herself him himself his how however i if in into is it its
itself just kind kinds let like many may me might more most much must my myself need needs no nor not now of
off on once one ones only or other others otherwise our ours ourselves out over own per please rather really
same say says shall she should show shows so some something such tell than that the their theirs them
themselves then there therefore these they this those though through thus to too under until up upon us use
used uses using very via was we were what whatever when where whether which while who whom whose why will
with within without would yes yet you your yours yourself
paper papers work works worked working study studies studied article articles publication publications
research approach approaches method methods propose proposes proposed proposing present presents presented
introduce introduces introduced list listed give find found finds summarize summarise summary explain
describe describes described discuss discusses know known anything everything something someone somebody
there's what's which's it's exist exists existing author authors group groups lab team colleague colleagues
coauthor coauthors co-author co-authors collaborator collaborators et al compare compared comparison
difference differences differ mention mentions mentioned talk talks related relate regarding concerning
collection corpus
"""


@lru_cache(maxsize=1)
def question_stopterms() -> frozenset[str]:
    """Stemmed words that never count as a question's topic."""
    return frozenset(analyze(_QUESTION_WORDS)) | frozenset(_QUESTION_WORDS.split())


def content_terms(text: str) -> list[str]:
    """The stemmed topic terms of a question, in order, without duplicates.

    ``analyze`` adds the joined form of a hyphenated word after its parts ("kv-cache" → kv, cach,
    kvcach); the joined form is dropped here so one word is not counted twice."""
    stop = question_stopterms()
    raw = analyze(text)
    out: list[str] = []
    for i, t in enumerate(raw):
        if any(i >= n and t == "".join(raw[i - n:i]) for n in (2, 3, 4)):
            continue
        if t not in stop and len(t) > 1 and not t.isdigit() and t not in out:
            out.append(t)
    return out


@lru_cache(maxsize=65536)
def _stubs(terms: frozenset[str]) -> frozenset[str]:
    """Each term with its last one or two letters cut (at least 5 left): "learner" → "learne", "learn"."""
    return frozenset(v[:-k] for v in terms for k in (1, 2) if len(v) - k >= 5)


def term_in(term: str, terms: frozenset[str]) -> bool:
    """``term`` or a stemming variant of it (classifi/classif, learn/learner) is in ``terms``: equal, or one
    a prefix of the other, both at least 5 letters and at most 2 apart."""
    if term in terms:
        return True
    n = len(term)
    if n < 5:
        return False
    return any(term[:k] in terms for k in range(max(5, n - 2), n)) or term in _stubs(terms)


@dataclass(frozen=True)
class PaperEvidence:
    """One paper's abstract as scored sentences."""

    paper_id: str
    sentences: tuple[str, ...]  # display text ($math$ and *emphasis* kept)
    terms: tuple[frozenset[str], ...]  # analysed terms of each sentence
    vectors: np.ndarray  # (n_sentences, dim), L2-normalised
    all_terms: frozenset[str]  # abstract + label + title terms


@dataclass(frozen=True)
class SentenceScore:
    paper_index: int  # index into the evidence list
    sentence: int
    score: float
    cosine: float
    lexical: float


_ALTERNATIVES = re.compile(r"\s+(?:or|versus|vs\.?)\s+", re.I)
ENTITY = re.compile(r"(?<![\w-])(?:[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*|[A-Za-z]+-?\d[\w-]*|[a-z]+-[A-Z][\w-]*)")


@lru_cache(maxsize=1024)
def entities(question: str) -> tuple[frozenset[str], ...]:
    """Named things in a question (acronyms, CamelCase, names with digits: "EVO", "FedGMT", "PMD-mean"),
    each as its analysed terms. Read once per question: retrieval's identifier anchor and the extractive
    generator's anchored papers both start from them."""
    out: list[frozenset[str]] = []
    for m in ENTITY.finditer(question):
        terms = frozenset(content_terms(m.group(0))) or frozenset(analyze(m.group(0)))
        if terms and terms not in out:
            out.append(terms)
    return tuple(out)


def _paper_key(paper: StoredPaper) -> str:
    h = hashlib.sha1(paper.abstract.encode()).hexdigest()[:16]
    return f"{paper.id}#{h}"


class EvidenceIndex:
    """Sentence vectors and terms of abstracts, cached in memory; text vectors memoised (small LRU)."""

    def __init__(self, embedder: Embedder, idf: IdfFn, max_papers: int = 20_000, max_texts: int = 2048) -> None:
        self.embedder = embedder
        self._idf = idf
        self._papers: OrderedDict[str, PaperEvidence] = OrderedDict()
        self._texts: OrderedDict[str, np.ndarray] = OrderedDict()
        self._max_papers, self._max_texts = max_papers, max_texts
        self._lock = threading.Lock()

    # ---- vectors ----------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts, memoised: a question embedded by retrieval is not embedded again."""
        with self._lock:
            known = {t: self._texts[t] for t in texts if t in self._texts}
            for t in known:
                self._texts.move_to_end(t)
        todo = list(dict.fromkeys(t for t in texts if t not in known))
        if todo:
            fresh = self.embedder.embed(todo)
            for t, v in zip(todo, fresh):
                self.remember(t, v)
                known[t] = v
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts]).astype(np.float32)

    def remember(self, text: str, vector: np.ndarray) -> None:
        """Record a text's vector (e.g. a statement that is an abstract sentence re-worded)."""
        with self._lock:
            self._texts[text] = np.asarray(vector, dtype=np.float32)
            self._texts.move_to_end(text)
            while len(self._texts) > self._max_texts:
                self._texts.popitem(last=False)

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lexical-index idf; terms the corpus lacks get a high weight (they are what is missing)."""
        terms = list(terms)
        got = self._idf(terms)
        top = max([v for v in got.values() if v > 0], default=3.0)
        return {t: (got.get(t) or top) for t in terms}

    # ---- papers -----------------------------------------------------------------------------
    def papers(self, papers: Sequence[StoredPaper]) -> list[PaperEvidence]:
        """Evidence for each paper; one batch embeds the new ones."""
        keys = [_paper_key(p) for p in papers]
        with self._lock:
            have = {k: self._papers[k] for k in keys if k in self._papers}
        missing = [(k, p) for k, p in zip(keys, papers) if k not in have]
        if missing:
            split = [(k, p, sentences_of(p.abstract)) for k, p in missing]
            flat = [plain_text(s) for _, _, sents in split for s in sents]
            vecs = self.embedder.embed(flat) if flat else np.zeros((0, self.embedder.dim), np.float32)
            i = 0
            for k, p, sents in split:
                v = vecs[i:i + len(sents)]
                i += len(sents)
                terms = tuple(frozenset(analyze(plain_text(s))) for s in sents)
                head = " ".join(x for x in (p.title or "", p.label) if x)
                every = frozenset().union(*terms, analyze(head)) if terms else frozenset(analyze(head))
                ev = PaperEvidence(p.id, tuple(sents), terms, np.asarray(v, np.float32), every)
                have[k] = ev
                with self._lock:
                    self._papers[k] = ev
                    while len(self._papers) > self._max_papers:
                        self._papers.popitem(last=False)
        return [have[k] for k in keys]


class QuestionScorer:
    """Scores abstract sentences against one question: embedding cosine plus idf-weighted term overlap.

    A paper's sentences are scored once per scorer: whoever holds the scorer next (a follow-up's scorer goes
    from the chain's re-ranking to the extractive generator) reads the same rows again, in its own order."""

    COSINE_WEIGHT = 0.6

    def __init__(self, index: EvidenceIndex, question: str, vector: np.ndarray | None = None) -> None:
        self.question = question
        self._rows: dict[tuple[str, tuple[str, ...]], list[SentenceScore]] = {}  # by paper id and sentences
        self.vector = vector if vector is not None else index.embed([question])[0]
        self.terms = content_terms(question)
        self.weights = index.idf(self.terms)
        self.total = sum(self.weights.values())
        # "X or Y": text that covers one alternative covers the question. Each alternative needs two topic
        # terms and a fair share of the question's weight, so a stray "or" does not make one word the topic.
        self.alternatives: list[dict[str, float]] = []
        parts = [content_terms(p) for p in _ALTERNATIVES.split(question)]
        if len(parts) > 1:
            for part in parts:
                w = {t: self.weights[t] for t in part if t in self.weights}
                if len(w) >= 2 and sum(w.values()) >= 0.3 * self.total:
                    self.alternatives.append(w)

    def lexical(self, terms: frozenset[str]) -> float:
        """Share of the question's topic (idf-weighted) that ``terms`` cover (of one alternative, if better)."""
        if not self.total:
            return 0.0
        full = sum(w for t, w in self.weights.items() if term_in(t, terms)) / self.total
        for alt in self.alternatives:
            full = max(full, sum(w for t, w in alt.items() if term_in(t, terms)) / sum(alt.values()))
        return full

    def rare_coverage(self, terms: frozenset[str]) -> float:
        """Like ``lexical`` with the weights squared, so the question's rare terms (the method, the object,
        the effect asked about) count far more than its common words: text that shares only "model",
        "learning" or "attack" with the question covers little of it."""
        total = sum(w * w for w in self.weights.values())
        if not total:
            return 0.0
        full = sum(w * w for t, w in self.weights.items() if term_in(t, terms)) / total
        for alt in self.alternatives:
            full = max(full, sum(w * w for t, w in alt.items() if term_in(t, terms)) / sum(w * w for w in alt.values()))
        return full

    def coverage(self, evidence: Sequence[PaperEvidence]) -> float:
        """Share of the question's topic found anywhere in these papers."""
        every: frozenset[str] = frozenset().union(*(e.all_terms for e in evidence)) if evidence else frozenset()
        return self.lexical(every)

    def sentences(self, evidence: Sequence[PaperEvidence]) -> list[list[SentenceScore]]:
        """Per paper, a score for every sentence (same order as the abstract); ``paper_index`` is the paper's
        place in ``evidence``. A paper this scorer has scored before is not scored again."""
        out: list[list[SentenceScore]] = []
        for pi, ev in enumerate(evidence):
            key = (ev.paper_id, ev.sentences)
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = self._score(pi, ev)
            elif row and row[0].paper_index != pi:
                row = [replace(s, paper_index=pi) for s in row]
            out.append(list(row))  # the caller's own list: the memo's stays as scored
        return out

    def _score(self, pi: int, ev: PaperEvidence) -> list[SentenceScore]:
        cos = ev.vectors @ self.vector if len(ev.sentences) else np.zeros(0)
        row = []
        for si in range(len(ev.sentences)):
            lex = self.lexical(ev.terms[si])
            c = float(cos[si])
            row.append(SentenceScore(pi, si, self.COSINE_WEIGHT * c + (1 - self.COSINE_WEIGHT) * lex, c, lex))
        return row


_MATH = re.compile(r"(?<!\\)\$(?!\$)(?:\\\$|[^$])+?(?<!\\)\$")


def outside_math(text: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the parts of ``text`` outside ``$math$``."""
    out, last = [], 0
    for m in _MATH.finditer(text):
        out.append(fn(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(fn(text[last:]))
    return "".join(out)
