"""Answer generators behind one interface: ``extractive`` (no LLM) and ``llm`` (any OpenAI-compatible endpoint).

A generator turns a question and the retrieved papers into answer text with ``[n]`` markers, where
``n`` numbers ``Generation.sources``; verification (rag.qa.verify) then checks and renumbers them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from rag.answer import AnswerLength, AnswerMode
from rag.qa.evidence import QuestionScorer
from rag.qa.retrieval import PaperHit


@dataclass
class GenerationInput:
    """What a generator gets: the question (standalone, filter phrases removed), the papers, and context."""

    question: str
    hits: Sequence[PaperHit]
    vector: np.ndarray | None = None  # the question's embedding, if already computed
    focus: str | None = None  # a follow-up's own words (``question`` is then the expanded standalone one)
    # ``focus`` already scored against the hits (the chain's follow-up re-ranking did), so it is not scored again
    focus_scorer: QuestionScorer | None = None
    restrict_to: list[str] | None = None  # "which of them…": only these papers (and the first hit) may be cited
    filtered: bool = False  # the user (or the question) restricted the papers
    listing: bool = False  # the question only asks which papers match the filters
    filter_text: str = ""  # the filters in words, for listing answers
    total_matches: int | None = None  # papers matching the filters (listing answers say "5 of 8")
    length: AnswerLength = "normal"  # brief (2-3 sentences, <= 3 papers), normal, thorough (every paper that bears)


@dataclass
class Generation:
    """Answer text with ``[n]`` markers over ``sources``, and what each source contributes."""

    text: str
    sources: list[PaperHit]
    summaries: dict[int, str] = field(default_factory=dict)  # n → 1-2 sentences on the question
    answerable: bool = True
    warnings: list[str] = field(default_factory=list)
    incomplete: str | None = None  # why the text stops early (the stream broke); None for a whole answer
    # A refusal: the papers that came closest (not cited), best first; None: the generator did not judge, and
    # the chain names the top retrieved papers.
    closest: list[PaperHit] | None = None


class Generator(Protocol):
    """One answer backend."""

    mode: AnswerMode

    def generate(self, inp: GenerationInput) -> Generation:
        """The whole answer at once."""
        ...

    def stream(self, inp: GenerationInput) -> Iterator[str | Generation]:
        """Text pieces as they are produced, then the finished ``Generation`` as the last item."""
        ...


__all__ = ["AnswerLength", "AnswerMode", "Generation", "GenerationInput", "Generator"]
