"""The answer object every front end shares: the CLI prints it, the UI renders it, evals score it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypedDict, cast

from rag.display import author_list
from rag.qa.findings import Verdict

AnswerMode = Literal["extractive", "llm"]  # who wrote the answer: the offline extractive generator or an LLM
# How long an answer is: brief (2-3 sentences citing at most 3 papers), normal, or thorough (every retrieved
# paper that bears on the question, grouped by what each says)
AnswerLength = Literal["brief", "normal", "thorough"]
LENGTHS: tuple[AnswerLength, ...] = ("brief", "normal", "thorough")


def check_length(length: str | None) -> AnswerLength:
    """An answer length as given by a front end (None: normal); ``InputError`` naming the choices."""
    from rag.errors import InputError

    value = (length or "normal").strip().lower()
    if value not in LENGTHS:
        raise InputError(f"unknown answer length {length!r}: give one of {', '.join(LENGTHS)}")
    return value


THOROUGH_REACH = 2  # a thorough answer considers this many times the papers a normal one does


def papers_considered(k: int, length: str, explicit: bool = False) -> int:
    """How many papers are retrieved for an answer of ``length`` given ``retrieval.k`` (or the request's own
    ``k``, ``explicit``, which is kept as asked): a thorough answer reaches ``THOROUGH_REACH`` times further
    (at most 50), so that every paper that bears on the question can be cited, not only the first k."""
    return k if explicit or length != "thorough" else min(50, k * THOROUGH_REACH)


class AppliedFilters(TypedDict, total=False):
    """The filters an answer applied, only the set ones, in ``rag.index.paper_query.PaperQuery``'s field order."""

    author: str
    category: str
    year_from: int
    year_to: int
    paper_ids: list[str]
    collection: str  # a reading list (``paperchat collection``), resolved into paper_ids for retrieval
    pinned: list[str]  # papers the reader pinned for this turn: always among the candidates (rag.qa.why)
    excluded: list[str]  # papers the reader excluded for this turn: never cited


class Retrieved(TypedDict):
    """One retrieved paper, best first: its id and fused retrieval score."""

    paper_id: str
    score: float


class Closest(TypedDict):
    """For a refusal: a stored paper that came closest (not cited)."""

    paper_id: str
    title: str


class Why(TypedDict):
    """What put a paper in an answer (``Answer.why``) or near it (``Answer.not_cited``), from rag.qa.why."""

    paper_id: str
    title: str
    n: int | None  # its [n]; None for a paper not cited
    rank: int  # 1-based place in the fused retrieval ranking (pinned papers first)
    score: float  # fused retrieval score (0 for a pinned paper retrieval did not find)
    matched: list[str]  # the question's words the paper holds (the lexical, BM25 side)
    dense: float | None  # cosine of its closest chunk to the question; None when the dense side did not find it
    dense_rank: int | None  # its rank by ``dense`` among the retrieved papers
    scope: list[str]  # what scoped it: "pinned", the filters and collection in words; empty: the whole library


@dataclass
class Citation:
    """A paper cited in an answer as ``[n]``."""

    n: int
    paper_id: str
    title: str  # the title, else the display label
    authors: list[str]
    categories: list[str]
    year: int | None
    abstract: str
    summary: str  # what the paper says about the question (1-2 sentences)
    evidence: str  # the abstract sentence(s) that best support the cited statements
    supported: bool  # no statement citing it is contradicted by the abstract (statements[].verdict says more)
    url: str | None = None
    # full text (``ingest.full_text``): whether the paper has its body stored, and when the answer quotes one of
    # its passages instead of its abstract, that passage with its pages and section (``rag.qa.passages``)
    coverage: str = "abstract only"  # or "full text"
    page: int | None = None  # first page of the passage quoted (1-based, the PDF's own page order)
    page_end: int | None = None
    section: str | None = None
    passage: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        """The inverse of ``to_dict`` (keys it does not know are ignored)."""
        return cls(**{k: data[k] for k in _field_names(cls) if k in data})


@dataclass
class StatementCheck:
    """One cited statement of an answer and whether its cited abstracts say it."""

    text: str  # the statement without its [n] markers
    cited: list[int]  # the [n] it cites
    supported: bool  # verdict == "supported"
    why: str = ""  # why not, quoting what disagrees; when supported, empty or a "caution: …" the checks raised
    verdict: Verdict = "supported"  # supported | contradicted | not_in_source (rag.qa.findings)
    rule: str = ""  # the rule behind the verdict ("numbers", "negation", "on_topic", "llm"…); empty when supported
    said: str = ""  # what the statement says that the verdict is about
    source_says: str = ""  # what the cited source says: the sentence that supports or contradicts it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StatementCheck:
        """The inverse of ``to_dict`` (keys it does not know are ignored)."""
        return cls(**{k: data[k] for k in _field_names(cls) if k in data})


@dataclass
class Answer:
    """One turn's answer, with verified, renumbered citations.

    ``to_dict()`` (one line per turn of ``paperchat ask --json``)::

        question             str   the turn as asked
        standalone_question  str   what retrieval used (follow-ups rewritten, filter phrases removed)
        answer               str   text with [n] markers, or exactly CANNOT_ANSWER
        answerable           bool  false for the cannot-answer reply
        complete             bool  false when the model's stream broke off: ``answer`` is the part received
                                   (its citations verified like any other), and a warning says why
        mode                 str   "extractive" | "llm"
        filters              dict  applied filters, only the set ones: author, category, year_from, year_to,
                                   paper_ids, collection (``AppliedFilters``)
        citations            list  in [n] order: n, paper_id, title (title or display label), authors,
                                   categories, year, abstract, summary (1-2 sentences on the question),
                                   evidence (supporting abstract sentence(s)), supported (bool), url,
                                   coverage ("abstract only" | "full text"), and where the evidence is a
                                   full-text passage: page, page_end, section, passage (the text then
                                   cites "[n, p. 5]"; page and section are null otherwise)
        retrieved            list  {paper_id, score}, best first (score: fused retrieval score)
        timings              dict  milliseconds per stage (condense_ms, retrieve_ms, retrieve_*_ms,
                                   generate_ms, verify_ms) and total_ms
        warnings             list  str: removed citations, contradicted statements and ones not in the cited
                                   abstract, a judge that was unavailable, ignored filters, why an
                                   answer is incomplete…
        removed_citations    int   how many [n] markers named no retrieved paper and were removed (each also
                                   has a warning)
        closest              list  {paper_id, title}, best first: for the cannot-answer reply, the stored papers
                                   that came closest (not cited, so the user can rephrase); empty otherwise
        statements           list  {text, cited, verdict, rule, said, source_says, supported, why}: each cited
                                   statement (markers removed) and the [n] it cites; verdict: "supported" (a
                                   cited abstract says it), "contradicted" (a cited abstract says otherwise) or
                                   "not_in_source" (the cited abstracts do not say it); rule: what gave the
                                   verdict (a rule family of the offline checks, "on_topic", or "llm" for the
                                   LLM judge, verify.judge); said: what the statement says that the verdict is
                                   about; source_says: the abstract sentence that says it or says otherwise
                                   ("" when the source says nothing about it); supported (verdict ==
                                   "supported") and why (the reasons, quoted) as before. A citation's
                                   ``supported`` is false when a statement citing it is contradicted
        why                  list  per citation, in [n] order: {paper_id, title, n, rank, score, matched, dense,
                                   dense_rank, scope}: what put it there (``Why``, rag.qa.why)
        not_cited            list  the same for the close retrieved papers that were not cited, best first
    """

    question: str
    standalone_question: str
    answer: str
    answerable: bool
    mode: AnswerMode
    filters: AppliedFilters = field(default_factory=lambda: AppliedFilters())
    citations: list[Citation] = field(default_factory=list)
    retrieved: list[Retrieved] = field(default_factory=list)  # best first
    timings: dict[str, float] = field(default_factory=dict)  # ms per stage and total_ms
    warnings: list[str] = field(default_factory=list)
    removed_citations: int = 0  # markers that named no retrieved paper, dropped by the verifier
    complete: bool = True  # false: the LLM stream broke off and ``answer`` is the verified part received
    closest: list[Closest] = field(default_factory=list)  # refusals: the papers that came closest, not cited
    statements: list[StatementCheck] = field(default_factory=list)  # cited statements as the verifier judged them
    why: list[Why] = field(default_factory=list)  # per citation: what put it there
    not_cited: list[Why] = field(default_factory=list)  # close retrieved papers left out, best first

    def to_dict(self) -> dict[str, Any]:
        """The JSON schema of ``paperchat ask --json`` (one object per turn)."""
        return {
            "question": self.question,
            "standalone_question": self.standalone_question,
            "answer": self.answer,
            "answerable": self.answerable,
            "complete": self.complete,
            "mode": self.mode,
            "filters": dict(self.filters),
            "citations": [c.to_dict() for c in self.citations],
            "retrieved": [{"paper_id": r["paper_id"], "score": round(float(r["score"]), 6)} for r in self.retrieved],
            "timings": {k: round(float(v), 2) for k, v in self.timings.items()},
            "warnings": list(self.warnings),
            "removed_citations": self.removed_citations,
            "closest": [{"paper_id": c["paper_id"], "title": c["title"]} for c in self.closest],
            "statements": [s.to_dict() for s in self.statements],
            "why": [dict(w) for w in self.why],
            "not_cited": [dict(w) for w in self.not_cited],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        """An Answer from its ``to_dict()`` (a saved turn): ``from_dict(a.to_dict()).to_dict() == a.to_dict()``.
        A missing required field or a wrong shape is a ``ValueError`` naming it."""
        try:
            mode = data["mode"]
            if mode not in ("extractive", "llm"):
                raise ValueError(f"an answer whose mode is {mode!r}, not 'extractive' or 'llm'")
            return cls(
                question=str(data["question"]), standalone_question=str(data.get("standalone_question",
                                                                                  data["question"])),
                answer=str(data["answer"]), answerable=bool(data["answerable"]), mode=mode,
                filters=cast(AppliedFilters, dict(data.get("filters") or {})),
                citations=[Citation.from_dict(c) for c in data.get("citations") or []],
                retrieved=[Retrieved(paper_id=str(r["paper_id"]), score=float(r["score"]))
                           for r in data.get("retrieved") or []],
                timings={k: float(v) for k, v in (data.get("timings") or {}).items()},
                warnings=[str(w) for w in data.get("warnings") or []],
                removed_citations=int(data.get("removed_citations", 0)), complete=bool(data.get("complete", True)),
                closest=[Closest(paper_id=str(c["paper_id"]), title=str(c.get("title") or ""))
                          for c in data.get("closest") or []],
                statements=[StatementCheck.from_dict(s) for s in data.get("statements") or []],
                why=[cast(Why, dict(w)) for w in data.get("why") or []],
                not_cited=[cast(Why, dict(w)) for w in data.get("not_cited") or []])
        except KeyError as e:
            raise ValueError(f"an answer without its {e.args[0]!r} field") from None
        except (TypeError, AttributeError) as e:
            raise ValueError(f"an answer of the wrong shape: {e}") from None

    @property
    def cited_ids(self) -> list[str]:
        """Paper ids in citation order."""
        return [c.paper_id for c in self.citations]

    @property
    def contradicted(self) -> set[int]:
        """The ``[n]`` cited by a statement whose verdict is "contradicted"; for an answer without statement
        checks, the citations marked unsupported."""
        if self.statements:
            return {n for s in self.statements if s.verdict == "contradicted" for n in s.cited}
        return {c.n for c in self.citations if not c.supported}


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


def closest_line(answer: Answer) -> str:
    """For a refusal: "Closest papers in the library: A; B" (titles only, plain text, not citations)."""
    return "Closest papers in the library: " + "; ".join(c["title"] or c["paper_id"] for c in answer.closest)


def render_text(answer: Answer, show_question: bool = True) -> str:
    """The answer for a terminal: question, answer, then numbered references with authors and category."""
    lines = [f"Q: {answer.question}"] if show_question else []
    if answer.filters:
        lines.append("   filters: " + ", ".join(f"{k}={v}" for k, v in answer.filters.items()))
    lines += ["", answer.answer]
    if answer.closest:
        lines += ["", closest_line(answer)]
    if answer.citations:
        lines += ["", "References:"]
        flagged = answer.contradicted
        for c in answer.citations:
            meta = " · ".join(x for x in (author_list(c.authors), "; ".join(c.categories),
                                              str(c.year or "")) if x)
            flag = "  (contradicted: see the warnings)" if c.n in flagged else ""
            lines.append(f"  [{c.n}] {c.title}{flag}")
            if meta:
                lines.append(f"      {meta}")
    return "\n".join(lines)


def filter_phrases(filters: AppliedFilters) -> list[str]:
    """The set filters of an answer (``Answer.filters``) in words, one phrase each: "author: Shiqing Gao",
    "years: 2020–2024", "3 selected papers". The chain's texts join them with "; ", the UI with " · "."""
    parts = []
    for name in ("collection", "author", "category"):
        if filters.get(name):
            parts.append(f"{name}: {filters[name]}")
    lo, hi = filters.get("year_from"), filters.get("year_to")
    if lo or hi:
        parts.append(f"year: {lo}" if lo == hi else f"years: {lo or '…'}\u2013{hi or '…'}")
    ids = filters.get("paper_ids") or []
    if ids:
        parts.append(f"{len(ids)} selected paper{'s' if len(ids) != 1 else ''}")
    for name, steered in (("pinned", filters.get("pinned") or []), ("excluded", filters.get("excluded") or [])):
        if steered:
            parts.append(f"{len(steered)} {name}")
    return parts
