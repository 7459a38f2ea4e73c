"""The answer chain as LangChain runnables: condense → retrieve → generate → verify, producing an ``Answer``.

``AnswerChain(runtime).ask(question, history=…)`` answers one turn; ``.stream(…)`` yields text pieces
and then the ``Answer``; ``Conversation`` keeps the turns for multi-turn use. Filters named in the
question are parsed first (rag.qa.question_filters) and merged with explicit ones; a question that only
names filters ("papers by X") is answered as a listing of the matching papers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from langchain_core.runnables import Runnable, RunnableLambda

from rag.answer import Answer
from rag.config import Settings
from rag.errors import ConfigError, InputError, UpstreamError
from rag.index.catalog import PaperQuery, paper_from_metadata
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
from rag.qa.generate import Generation, GenerationInput, Generator, Mode
from rag.qa.generate.extractive import ExtractiveGenerator
from rag.qa.injection import guard_generation, guard_stream
from rag.qa.question_filters import catalog_for, filters_dict, merge_filters, parse_question
from rag.qa.retrieval import PaperHit, Retriever
from rag.qa.verify import verify
from rag.runtime import Runtime

log = logging.getLogger(__name__)

State = dict[str, Any]


class _MemoEmbedder:
    """The runtime's embedder seen through the evidence index's memo, so the question is embedded once."""

    def __init__(self, index: EvidenceIndex) -> None:
        self._index = index
        self._inner = index.embedder

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self._inner.count_tokens(texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._index.embed(texts)


def describe_filters(q: PaperQuery) -> str:
    """Filters in words, for listing answers: "author: Shiqing Gao; category: Deep RL"."""
    parts = []
    if q.author:
        parts.append(f"author: {q.author}")
    if q.category:
        parts.append(f"category: {q.category}")
    if q.year_from or q.year_to:
        lo, hi = q.year_from, q.year_to
        parts.append(f"year: {lo}" if lo == hi else f"years: {lo or '…'}\u2013{hi or '…'}")
    if q.paper_ids:
        parts.append(f"{len(q.paper_ids)} selected paper{'s' if len(q.paper_ids) != 1 else ''}")
    return "; ".join(parts)


def resolve_mode(settings: Settings, mode: str | None) -> Mode:
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
        self.evidence = EvidenceIndex(runtime.embedder, runtime.lexical.idf)
        self.retriever = Retriever(runtime.store, _MemoEmbedder(self.evidence), runtime.lexical,
                                   runtime.settings.retrieval)
        self.extractive = ExtractiveGenerator(self.evidence)
        self._llm: Any = None
        self.pipeline: Runnable[State, Answer] = (
            RunnableLambda(self._condense, name="condense")
            | RunnableLambda(self._retrieve, name="retrieve")
            | RunnableLambda(self._generate, name="generate")
            | RunnableLambda(self._verify, name="verify")
        )

    # ---- public API ---------------------------------------------------------------------------
    def ask(self, question: str, history: Sequence[Turn] | None = None, k: int | None = None,
            filters: PaperQuery | None = None, mode: Mode | None = None) -> Answer:
        """Answer one turn; ``history`` holds the conversation's earlier answers."""
        return self.pipeline.invoke(self._start(question, history, k, filters, mode))

    def stream(self, question: str, history: Sequence[Turn] | None = None, k: int | None = None,
               filters: PaperQuery | None = None, mode: Mode | None = None) -> Iterator[str | Answer]:
        """Answer text pieces as they are produced, then the verified ``Answer`` (whose text may differ:
        invalid citations removed, numbers renumbered). When the model's stream breaks off, the ``Answer`` is
        the verified part received with ``complete=False``; if that part cites nothing, ``UpstreamError``."""
        state = self._retrieve(self._condense(self._start(question, history, k, filters, mode)))
        t0 = time.perf_counter()
        gen: Generation | None = None
        inp = self._generation_input(state)
        for item in guard_stream(self.generator(state["mode"]).stream(inp), inp.hits, state["question"]):
            if isinstance(item, Generation):
                gen = item
            else:
                yield item
        assert gen is not None
        state["generation"] = gen
        state["timings"]["generate_ms"] = (time.perf_counter() - t0) * 1000
        yield self._verify(state)

    def generator(self, mode: Mode) -> Generator:
        """The generator for a mode (the llm one is built on first use)."""
        if mode == "extractive":
            return self.extractive
        if self._llm is None:
            from rag.qa.generate.llm import LLMGenerator

            self._llm = LLMGenerator(self.settings.llm, self.settings.limits)
        return self._llm

    def resolve_mode(self, mode: str | None) -> Mode:
        """The requested mode, else llm when an endpoint is configured, else extractive."""
        return resolve_mode(self.settings, mode)

    # ---- stages -------------------------------------------------------------------------------
    def _start(self, question: str, history: Sequence[Turn] | None, k: int | None, filters: PaperQuery | None,
               mode: str | None) -> State:
        question = check_question(question, self.settings.limits)
        if k is not None and not 1 <= k <= 50:
            raise InputError(f"k must be between 1 and 50, got {k}")
        return {"question": question, "history": as_turns(history), "k": k or self.settings.retrieval.k,
                "explicit": filters, "mode": self.resolve_mode(mode), "timings": {}, "t0": time.perf_counter()}

    def _condense(self, state: State) -> State:
        t0 = time.perf_counter()
        question, history = state["question"], state["history"]
        parsed = parse_question(question, catalog_for(self.runtime.lexical, self.runtime.store))
        filters = merge_filters(parsed.filters, state["explicit"])
        cleaned = parsed.cleaned
        listing = not filters.is_empty() and not content_terms(cleaned)
        # A question naming its own filters ("What has Shiqing Gao worked on?") is short without being a follow-up.
        follow = not listing and is_follow_up(cleaned, history, allow_short=parsed.filters.is_empty())
        condensed: Condensed
        if not follow:
            condensed = Condensed(question, cleaned)
        elif state["mode"] == "llm":  # the model sees the question as asked, names and all
            condensed = llm_condense(question, history, self.generator("llm").chat)  # type: ignore[attr-defined]
        else:
            condensed = offline_condense(cleaned, history, follow_up=True)
        state.update(parsed=parsed, filters=filters, listing=listing, condensed=condensed)
        state["timings"]["condense_ms"] = (time.perf_counter() - t0) * 1000
        return state

    def _retrieve(self, state: State) -> State:
        t0 = time.perf_counter()
        filters: PaperQuery = state["filters"]
        condensed: Condensed = state["condensed"]
        k = state["k"]
        query = condensed.standalone
        result = self.retriever.search(query, k=k, filters=filters)
        hits = result.hits
        if condensed.prefer_ids and hits:
            hits = self._prefer(hits, condensed)
        state["total_matches"] = None
        if state["listing"]:
            # Counted from the lexical index's filter fields: a category of a 100k-paper store can match
            # tens of thousands of papers, whose rows are never read just to be counted.
            allowed = self.retriever.allowed(filters)
            state["total_matches"] = 0 if allowed is None else len(allowed)
            if not hits and allowed is not None and len(allowed):  # nothing scored (an empty query): list them
                ids = sorted(self.retriever.lexical.paper_ids[i] for i in allowed)[:k]
                rows = {md["paper_id"]: md for md in self.runtime.store.papers(ids)}
                hits = [PaperHit(p, 0.0, paper=paper_from_metadata(rows[p])) for p in ids if p in rows]
        state["hits"] = hits
        state["query_vector"] = self.evidence.embed([query])[0]
        for name, ms in result.timings.items():
            if name != "retrieve_ms":
                state["timings"][f"retrieve_{name}"] = ms
        state["timings"]["retrieve_ms"] = (time.perf_counter() - t0) * 1000
        return state

    def _prefer(self, hits: list[PaperHit], condensed: Condensed) -> list[PaperHit]:
        """Keep the previously cited paper first unless a candidate fits the follow-up's own words clearly better."""
        evs = self.evidence.papers([h.paper for h in hits])
        scorer = QuestionScorer(self.evidence, condensed.question)
        focus = {h.paper_id: max((s.score for s in row), default=0.0)
                 for h, row in zip(hits, scorer.sentences(evs))}
        order = prefer_previous([h.paper_id for h in hits], condensed.prefer_ids, focus,
                                selecting=is_selection(condensed.question))
        by_id = {h.paper_id: h for h in hits}
        return [by_id[p] for p in order]

    def _generation_input(self, state: State) -> GenerationInput:
        filters: PaperQuery = state["filters"]
        condensed: Condensed = state["condensed"]
        # The extractive generator scores sentences against the question without its filter phrases; a
        # model reads the question as asked (or its standalone rewrite).
        question = condensed.standalone
        if state["mode"] == "llm" and not condensed.follow_up:
            question = state["question"]
        return GenerationInput(question, state["hits"], state.get("query_vector"),
                               focus=condensed.question if condensed.follow_up else None,
                               restrict_to=list(condensed.prefer_ids) if condensed.follow_up and is_selection(
                                   condensed.question) else None,
                               filtered=not filters.is_empty(), listing=state["listing"],
                               filter_text=describe_filters(filters), total_matches=state.get("total_matches"))

    def _generate(self, state: State) -> State:
        t0 = time.perf_counter()
        generation = self.generator(state["mode"]).generate(self._generation_input(state))
        state["generation"] = guard_generation(generation, state["question"])  # drops obeyed injections
        state["timings"]["generate_ms"] = (time.perf_counter() - t0) * 1000
        return state

    def _verify(self, state: State) -> Answer:
        t0 = time.perf_counter()
        gen: Generation = state["generation"]
        checked = verify(gen, self.evidence)
        if gen.incomplete and not checked.answerable:
            # The stream broke before the model cited anything: there is no verified part to show, and the
            # cannot-answer sentence would blame the papers for an outage.
            raise UpstreamError(f"{gen.incomplete}, before it cited any paper, so there is nothing verified to "
                                "show; ask again")
        timings = state["timings"]
        timings["verify_ms"] = (time.perf_counter() - t0) * 1000
        timings["total_ms"] = (time.perf_counter() - state["t0"]) * 1000
        filters: PaperQuery = state["filters"]
        warnings = state["parsed"].notes + state["condensed"].warnings + checked.warnings
        if not state["hits"] and not filters.is_empty():
            warnings.append(f"no paper matches the filters ({describe_filters(filters)})")
        elif not state["hits"] and self.runtime.store.count_chunks() == 0:
            warnings.append("the collection is empty: add papers with `paperchat ingest FILE...`")
        return Answer(
            question=state["question"], standalone_question=state["condensed"].standalone, answer=checked.text,
            answerable=checked.answerable, mode=state["mode"], filters=filters_dict(filters),
            citations=checked.citations,
            retrieved=[{"paper_id": h.paper_id, "score": float(h.score)} for h in state["hits"]],
            timings=timings, warnings=list(dict.fromkeys(warnings)), complete=gen.incomplete is None)


class Conversation:
    """A multi-turn conversation over one chain; every ``ask`` sees the earlier turns."""

    def __init__(self, chain: AnswerChain, k: int | None = None, filters: PaperQuery | None = None,
                 mode: Mode | None = None) -> None:
        self.chain, self.k, self.filters, self.mode = chain, k, filters, mode
        self.turns: list[Answer] = []

    def ask(self, question: str) -> Answer:
        """Answer the next turn and remember it."""
        answer = self.chain.ask(question, history=self.turns, k=self.k, filters=self.filters, mode=self.mode)
        self.turns.append(answer)
        return answer

    def stream(self, question: str) -> Iterator[str | Answer]:
        """Stream the next turn (text pieces, then the Answer) and remember it."""
        for item in self.chain.stream(question, history=self.turns, k=self.k, filters=self.filters, mode=self.mode):
            if isinstance(item, Answer):
                self.turns.append(item)
            yield item

    def reset(self) -> None:
        self.turns.clear()
