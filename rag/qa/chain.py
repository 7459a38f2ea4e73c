"""The answer chain: one conversation turn, from the question as typed to a verified, cited ``Answer``.

A turn passes through seven stages, in this order, each a function ``TurnState → TurnState`` composed as
LangChain runnables (listed together in ``AnswerChain.__init__``):

    filters   authors, categories and years named in the question (rag.qa.question_filters), merged with
              the explicit filters; a question that names only filters ("papers by X") becomes a listing
    condense  a follow-up rewritten as a standalone question (rag.qa.condense)
    retrieve  the papers for it (rag.qa.retrieval); a follow-up keeps the paper under discussion first
    generate  answer text with [n] markers, extractive or by an LLM (rag.qa.generate)
    guard     sentences obeying an instruction planted in a paper or the question dropped (rag.qa.injection)
    verify    citations checked against the cited abstracts and renumbered (rag.qa.verify); each cited
              statement judged by the rules, or by the LLM judge when ``verify.judge`` picks it (rag.qa.llm_judge)
    answer    the ``Answer``, with its timings and warnings; a citation of a full-text passage names its page

With full text stored, retrieve also picks each paper's best evidence, its abstract or one of its passages
(rag.qa.passages), which the later stages read as they read an abstract.

``AnswerChain.stream`` is the one driver: it yields the answer text as it is produced, then the ``Answer``;
``ask`` drains it, so both give the same answer. ``Conversation`` keeps the turns for multi-turn use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from langchain_core.runnables import RunnableLambda, RunnableSequence

from rag.answer import Answer, AnswerLength, check_length, filter_phrases, papers_considered
from rag.config import Settings
from rag.errors import ConfigError, EmptyLibrary, InputError, UpstreamError
from rag.index.embeddings import WrappedEmbedder
from rag.index.paper_query import PaperQuery
from rag.limits import check_question
from rag.qa.condense import (
    Condensed,
    Turn,
    as_turns,
    is_follow_up,
    is_selection,
    llm_condense,
    offline_condense,
    prefer_previous,
)
from rag.qa.evidence import EvidenceIndex, QuestionScorer, content_terms
from rag.qa.findings import Judge
from rag.qa.generate import AnswerMode, Generation, GenerationInput, Generator
from rag.qa.generate.extractive import ExtractiveGenerator
from rag.qa.injection import guard_stream
from rag.qa.llm_judge import LLMJudge, uses_llm_judge
from rag.qa.passages import choose_evidence, cite_pages
from rag.qa.question_filters import catalog_for, filters_dict, mentions_collection, merge_filters, parse_question
from rag.qa.retrieval import PaperHit, Retriever
from rag.qa.verify import Verified, verify
from rag.qa.why import explain, scope_filters, steer
from rag.runtime import Runtime

if TYPE_CHECKING:
    from rag.qa.generate.llm import LLMGenerator

log = logging.getLogger(__name__)


@dataclass
class TurnState:
    """What the stages of one turn hand each other: the request, then each stage's output, in stage order.
    A stage fills its own fields and reads only those of the stages before it."""

    # the request
    question: str  # as asked, within the limits
    history: list[Answer]  # the conversation's earlier turns
    k: int  # papers to retrieve
    explicit: PaperQuery | None  # filters given beside the question (CLI flags, UI controls)
    mode: AnswerMode
    live: bool  # the reader watches the text arrive; else the model's reply is requested whole
    length: AnswerLength = "normal"  # brief, normal or thorough (``rag.answer.AnswerLength``)
    pin: list[str] = field(default_factory=list)  # papers that must be considered (rag.qa.why)
    exclude: list[str] = field(default_factory=list)  # papers never cited
    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds per stage, as in Answer.timings
    warnings: list[str] = field(default_factory=list)  # for the reader, added stage by stage
    # filters
    filters: PaperQuery = field(default_factory=PaperQuery)  # the explicit ones merged with those named
    scoped: PaperQuery | None = None  # ``filters`` with a named collection applied (its members as paper ids)
    named_filters: bool = False  # the question itself names filters
    cleaned: str = ""  # the question without its filter phrases
    listing: bool = False  # it names only filters: the answer lists the matching papers
    # condense
    condensed: Condensed | None = None  # the standalone question, and for a follow-up the papers cited before
    # retrieve
    hits: list[PaperHit] = field(default_factory=list)
    total_matches: int | None = None  # papers matching the filters (listings say "5 of 8")
    query_vector: np.ndarray | None = None
    focus_scorer: QuestionScorer | None = None  # a follow-up's own words, scored against the hits to re-rank them
    # generate and guard: the answer text as it will be produced (``stream`` runs it), then what it gave
    output: Iterator[str | Generation] = field(default_factory=lambda: iter(()))
    generation: Generation | None = None
    # verify
    checked: Verified | None = None
    # answer
    answer: Answer | None = None


Stage = Callable[[TurnState], TurnState]


def _stage(fn: Stage) -> RunnableLambda[TurnState, TurnState]:
    return RunnableLambda(fn, name=fn.__name__.lstrip("_"))


def _add_ms(state: TurnState, key: str, t0: float) -> None:
    """Add the time since ``t0`` to ``state.timings[key]`` (filters and condense share condense_ms)."""
    state.timings[key] = state.timings.get(key, 0.0) + (time.perf_counter() - t0) * 1000


def _whole(generator: Generator, inp: GenerationInput) -> Iterator[Generation]:
    """The generation as a one-item stream, produced when the driver reaches it (so it is timed there)."""
    yield generator.generate(inp)


class _MemoEmbedder(WrappedEmbedder):
    """The runtime's embedder seen through the evidence index's memo, so the question is embedded once."""

    def __init__(self, index: EvidenceIndex) -> None:
        super().__init__(index.embedder)
        self._index = index

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._index.embed(texts)


def describe_filters(q: PaperQuery) -> str:
    """Filters in words, for listing answers: "author: Shiqing Gao; category: Deep RL"."""
    return "; ".join(filter_phrases(filters_dict(q)))


def resolve_mode(settings: Settings, mode: str | None) -> AnswerMode:
    """The requested mode, else llm when an endpoint is configured, else extractive."""
    if mode is None:
        return "extractive" if settings.offline else "llm"
    if mode not in ("extractive", "llm"):
        raise InputError(f"unknown mode {mode!r}: use extractive or llm")
    if mode == "llm" and settings.offline:
        raise ConfigError("--mode llm needs an OpenAI-compatible endpoint: set PAPERCHAT_LLM__BASE_URL "
                          "(and PAPERCHAT_LLM__MODEL / PAPERCHAT_LLM__API_KEY)")
    return mode  # type: ignore[return-value]


class AnswerChain:
    """Questions in, verified and cited ``Answer``s out, in extractive or llm mode."""

    def __init__(self, runtime: Runtime, settings: Settings | None = None) -> None:
        """``settings`` overrides the runtime's for answering (e.g. another LLM endpoint); the store,
        embedder and retrieval settings come from the runtime."""
        self.runtime = runtime
        self.settings = settings or runtime.settings
        self.evidence = EvidenceIndex(runtime.scoring_embedder, runtime.lexical.idf)
        # Retrieval compares the question with stored vectors: the exact encoder, memoised on its own when
        # sentences are scored with the int8 copy.
        exact = self.evidence if runtime.scoring_embedder is runtime.embedder else EvidenceIndex(
            runtime.embedder, runtime.lexical.idf, max_papers=0, max_texts=256)
        self.retriever = Retriever(runtime.store, _MemoEmbedder(exact), runtime.lexical, runtime.settings.retrieval)
        self.extractive = ExtractiveGenerator(self.evidence)
        self._llm: LLMGenerator | None = None
        self._judge: LLMJudge | None = None
        uses_llm_judge(self.settings, "llm")  # verify.judge = llm without an endpoint fails here, not after an answer
        # The stages of a turn, in order. generate and guard set up the answer text without producing it:
        # `stream` runs it between the two halves, passing its pieces on as they come.
        self.until_text: RunnableSequence[TurnState, TurnState] = RunnableSequence(
            _stage(self._filters), _stage(self._condense), _stage(self._retrieve), _stage(self._generate),
            _stage(self._guard), name="until_text")
        self.after_text: RunnableSequence[TurnState, TurnState] = RunnableSequence(
            _stage(self._verify), _stage(self._answer), name="after_text")

    # ---- public API ---------------------------------------------------------------------------
    def stream(self, question: str, history: Sequence[Turn] | None = None, k: int | None = None,
               filters: PaperQuery | None = None, mode: AnswerMode | None = None, *,
               live: bool = True, length: str | None = None, pin: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> Iterator[str | Answer]:
        """Answer text pieces as they are produced, then the verified ``Answer`` (whose text may differ:
        invalid citations removed, numbers renumbered). When the model's stream breaks off, the ``Answer`` is
        the verified part received with ``complete=False``; if that part cites nothing, ``UpstreamError``.

        ``live=False`` yields the ``Answer`` alone, and a model is asked for its whole reply at once, so a
        reply cut off midway is retried instead of kept (``ask``). ``length``: brief, normal (None) or thorough.

        ``pin``: paper ids that must be considered (added to the candidates, first); ``exclude``: ids never cited
        (rag.qa.why)."""
        start = self._start(question, history, k, filters, mode, live)
        start.length = check_length(length)
        start.k = papers_considered(start.k, start.length, explicit=k is not None)
        start.pin, start.exclude = list(pin), list(exclude)
        state = self.until_text.invoke(start)
        t0 = time.perf_counter()
        for item in state.output:
            if isinstance(item, Generation):
                state.generation = item
            else:
                yield item
        _add_ms(state, "generate_ms", t0)
        answer = self.after_text.invoke(state).answer
        assert answer is not None
        yield answer

    def ask(self, question: str, history: Sequence[Turn] | None = None, k: int | None = None,
            filters: PaperQuery | None = None, mode: AnswerMode | None = None, length: str | None = None, *,
            pin: Sequence[str] = (), exclude: Sequence[str] = ()) -> Answer:
        """Answer one turn; ``history`` holds the conversation's earlier answers. The same driver as
        ``stream``, drained: only how the model's reply arrives differs."""
        *_, answer = self.stream(question, history, k, filters, mode, live=False, length=length, pin=pin,
                                 exclude=exclude)
        assert isinstance(answer, Answer)
        return answer

    def generator(self, mode: AnswerMode) -> Generator:
        """The generator for a mode (the llm one is built on first use)."""
        return self.extractive if mode == "extractive" else self._llm_generator()

    def resolve_mode(self, mode: str | None) -> AnswerMode:
        """The requested mode, else llm when an endpoint is configured, else extractive."""
        return resolve_mode(self.settings, mode)

    def verdict_judge(self, mode: AnswerMode) -> Judge | None:
        """The judge of cited statements besides the rules that ``verify.judge`` picks for an answer written in
        ``mode``: the LLM judge (built on first use), or None for the rules alone."""
        if not uses_llm_judge(self.settings, mode):
            return None
        if self._judge is None:
            self._judge = LLMJudge.from_settings(self.settings)
        return self._judge

    def _llm_generator(self) -> LLMGenerator:
        if self._llm is None:
            from rag.qa.generate.llm import LLMGenerator  # the OpenAI client stack loads only for llm mode

            self._llm = LLMGenerator(self.settings.llm, self.settings.limits)
        return self._llm

    def _start(self, question: str, history: Sequence[Turn] | None, k: int | None, filters: PaperQuery | None,
               mode: str | None, live: bool) -> TurnState:
        question = check_question(question, self.settings.limits)
        if k is not None and not 1 <= k <= 50:
            raise InputError(f"k must be between 1 and 50, got {k}")
        return TurnState(question=question, history=as_turns(history), k=k or self.settings.retrieval.k,
                         explicit=filters, mode=self.resolve_mode(mode), live=live)

    # ---- stages, in order ---------------------------------------------------------------------
    def _filters(self, state: TurnState) -> TurnState:
        t0 = time.perf_counter()
        if not self.runtime.store.count_chunks():  # before the catalog, whose absence would be all it could report
            raise EmptyLibrary()
        names = self.runtime.collections().names() if mentions_collection(state.question) else []
        parsed = parse_question(state.question, catalog_for(self.runtime.lexical, self.runtime.store), names)
        state.filters = merge_filters(parsed.filters, state.explicit)
        if state.filters.collection:
            state.scoped = self.runtime.collections().scope(state.filters)
            state.filters.collection = state.scoped.collection
        state.named_filters = not parsed.filters.is_empty()
        state.cleaned = parsed.cleaned
        state.listing = not state.filters.is_empty() and not content_terms(parsed.cleaned)
        state.warnings += parsed.notes
        _add_ms(state, "condense_ms", t0)  # reading the question is one figure: its filters, then condensing
        return state

    def _condense(self, state: TurnState) -> TurnState:
        t0 = time.perf_counter()
        # A question naming its own filters ("What has Shiqing Gao worked on?") is short without being a follow-up.
        follow = not state.listing and is_follow_up(state.cleaned, state.history, allow_short=not state.named_filters)
        if not follow:
            state.condensed = Condensed(state.question, state.cleaned)
        elif state.mode == "llm":  # the model sees the question as asked, names and all
            state.condensed = llm_condense(state.question, state.history, self._llm_generator().chat)
        else:
            state.condensed = offline_condense(state.cleaned, state.history, follow_up=True)
        state.warnings += state.condensed.warnings
        _add_ms(state, "condense_ms", t0)
        return state

    def _retrieve(self, state: TurnState) -> TurnState:
        t0 = time.perf_counter()
        condensed = state.condensed
        assert condensed is not None
        query = condensed.standalone
        filters = state.scoped or state.filters
        result = self.retriever.search(query, k=state.k + len(state.exclude), filters=filters)
        hits = result.hits
        if state.pin or state.exclude:  # the reader's steering (rag.qa.why)
            hits = steer(hits, self.retriever.read_papers, [], state.exclude, state.k)
        if condensed.prefer_ids and hits:
            state.focus_scorer = QuestionScorer(self.evidence, condensed.question)
            hits = self._prefer(hits, condensed, state.focus_scorer)
        if state.listing:
            # Counted from the lexical index's filter fields: a category of a 100k-paper store can match
            # tens of thousands of papers, whose rows are never read just to be counted.
            allowed = self.retriever.allowed(filters)
            state.total_matches = 0 if allowed is None else len(allowed)
            if not hits and allowed is not None and len(allowed):  # nothing scored (an empty query): list them
                ids = sorted(self.retriever.lexical.paper_ids[i] for i in allowed)[:state.k]
                stored = {p.id: p for p in self.retriever.read_papers(ids)}
                hits = [PaperHit(p, 0.0, paper=stored[p]) for p in ids if p in stored]
        if state.pin:
            hits = steer(hits, self.retriever.read_papers, state.pin, state.exclude, state.k)
        state.query_vector = self.evidence.embed([query])[0]
        if any(h.passages for h in hits):  # full text: each paper's best evidence, its abstract or a passage
            choose_evidence(hits, self.evidence, QuestionScorer(self.evidence, query, state.query_vector))
        state.hits = hits
        for name, ms in result.timings.items():
            if name != "retrieve_ms":
                state.timings[f"retrieve_{name}"] = ms
        _add_ms(state, "retrieve_ms", t0)
        return state

    def _generate(self, state: TurnState) -> TurnState:
        generator = self.generator(state.mode)
        inp = self._generation_input(state)
        state.output = generator.stream(inp) if state.live else _whole(generator, inp)
        return state

    def _guard(self, state: TurnState) -> TurnState:
        # Text is held back to sentence ends and a sentence obeying an injection is dropped before it is shown.
        state.output = guard_stream(state.output, state.hits, state.question)
        return state

    def _verify(self, state: TurnState) -> TurnState:
        t0 = time.perf_counter()
        gen = state.generation
        assert gen is not None
        checked = verify(gen, self.evidence, self.verdict_judge(state.mode))
        if gen.incomplete and not checked.answerable:
            # The stream broke before the model cited anything: there is no verified part to show, and the
            # cannot-answer sentence would blame the papers for an outage.
            raise UpstreamError(f"{gen.incomplete}, before it cited any paper, so there is nothing verified to "
                                "show; ask again")
        state.checked = checked
        state.warnings += checked.warnings
        _add_ms(state, "verify_ms", t0)
        return state

    def _answer(self, state: TurnState) -> TurnState:
        gen, checked, condensed = state.generation, state.checked, state.condensed
        assert gen is not None and checked is not None and condensed is not None
        state.timings["total_ms"] = (time.perf_counter() - state.started) * 1000
        if not state.hits and not state.filters.is_empty():
            state.warnings.append(f"no paper matches the filters ({describe_filters(state.filters)})")
        applied = scope_filters(filters_dict(state.filters), state.pin, state.exclude)
        why, not_cited = explain(condensed.standalone, state.hits, checked.citations, applied, state.pin)
        state.answer = Answer(
            question=state.question, standalone_question=condensed.standalone,
            answer=cite_pages(checked.text, checked.citations, state.hits),
            answerable=checked.answerable, mode=state.mode, filters=applied, why=why, not_cited=not_cited,
            citations=checked.citations, statements=checked.statements,
            retrieved=[{"paper_id": h.paper_id, "score": float(h.score)} for h in state.hits],
            timings=state.timings, warnings=list(dict.fromkeys(state.warnings)), complete=gen.incomplete is None,
            removed_citations=checked.removed_citations,
            closest=[] if checked.answerable else [{"paper_id": h.paper_id, "title": h.paper.heading} for h in
                                                   (gen.closest if gen.closest is not None else state.hits[:3])])
        return state

    # ---- helpers of the stages ----------------------------------------------------------------
    def _prefer(self, hits: list[PaperHit], condensed: Condensed, scorer: QuestionScorer) -> list[PaperHit]:
        """Keep the previously cited paper first unless a candidate fits the follow-up's own words (``scorer``)
        clearly better."""
        evs = self.evidence.papers([h.paper for h in hits])
        focus = {h.paper_id: max((s.score for s in row), default=0.0)
                 for h, row in zip(hits, scorer.sentences(evs))}
        order = prefer_previous([h.paper_id for h in hits], condensed.prefer_ids, focus,
                                selecting=is_selection(condensed.question))
        by_id = {h.paper_id: h for h in hits}
        return [by_id[p] for p in order]

    def _generation_input(self, state: TurnState) -> GenerationInput:
        condensed = state.condensed
        assert condensed is not None
        # The extractive generator scores sentences against the question without its filter phrases; a
        # model reads the question as asked (or its standalone rewrite).
        question = condensed.standalone
        if state.mode == "llm" and not condensed.follow_up:
            question = state.question
        return GenerationInput(question, state.hits, state.query_vector,
                               focus=condensed.question if condensed.follow_up else None,
                               focus_scorer=state.focus_scorer,
                               restrict_to=list(condensed.prefer_ids) if condensed.follow_up and is_selection(
                                   condensed.question) else None,
                               filtered=not state.filters.is_empty(), listing=state.listing,
                               filter_text=describe_filters(state.filters), total_matches=state.total_matches,
                               length=state.length)


class Conversation:
    """A multi-turn conversation over one chain; every ``ask`` sees the earlier turns."""

    def __init__(self, chain: AnswerChain, k: int | None = None, filters: PaperQuery | None = None,
                 mode: AnswerMode | None = None, length: str | None = None) -> None:
        self.chain, self.k, self.filters, self.mode, self.length = chain, k, filters, mode, length
        self.turns: list[Answer] = []
        self.pin: list[str] = []  # steering for the turns that follow (``/pin``, ``/exclude``; rag.qa.why)
        self.exclude: list[str] = []

    def ask(self, question: str) -> Answer:
        """Answer the next turn and remember it."""
        answer = self.chain.ask(question, history=self.turns, k=self.k, filters=self.filters, mode=self.mode,
                               length=self.length, pin=self.pin, exclude=self.exclude)
        self.turns.append(answer)
        return answer

    def stream(self, question: str) -> Iterator[str | Answer]:
        """Stream the next turn (text pieces, then the Answer) and remember it."""
        for item in self.chain.stream(question, history=self.turns, k=self.k, filters=self.filters, mode=self.mode,
                                      length=self.length, pin=self.pin, exclude=self.exclude):
            if isinstance(item, Answer):
                self.turns.append(item)
            yield item

    def reset(self) -> None:
        self.turns.clear()
        self.pin.clear()
        self.exclude.clear()
