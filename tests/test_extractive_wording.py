"""Issue 18 item 6 end to end: the extractive answer re-words an abstract's first person without touching
acronyms or quoted text, and its sentences keep their closing punctuation and quotes (real embedding model,
real evidence index, real sentence splitter; no store, no LLM)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from rag.analysis import analyze
from rag.index.lexical import paper_text
from rag.qa.evidence import EvidenceIndex
from rag.qa.generate import GenerationInput
from rag.qa.generate.extractive import ExtractiveGenerator
from rag.qa.retrieval import PaperHit
from rag.records import StoredPaper
from rag.text import split_sentences

CONDITIONING = StoredPaper(
    id="doi:10.1000/fear", label="Fear conditioning in mice", title="Fear conditioning in mice",
    authors=("Ann Keller", "Bo Ruiz", "Cy Tan"), categories=("Neuroscience",), year=2020, url=None,
    abstract=("We pair a tone with a mild shock, the unconditioned stimulus (US), in forty mice. "
              "Our mice freeze when the tone sounds without the US, a response we call \"our fear trace.\" "
              "Freezing lasts longer after repeated pairings."))
TWINS = StoredPaper(
    id="doi:10.1000/twins", label="Clocks on a round trip", title="Clocks on a round trip",
    authors=("Dee Moss", "Eli Park"), categories=("Physics",), year=2019, url=None,
    abstract=("A clock that travels away and back runs slow against one that stays; this is known as the "
              "\"Twin Paradox.\" We resolve it with the travelling clock's change of frame. "
              "Is the effect \u201creal?\u201d Measurements on aircraft say yes."))


@pytest.fixture(scope="module")
def gen(embedder) -> ExtractiveGenerator:
    papers = (CONDITIONING, TWINS)
    df: Counter[str] = Counter()
    for p in papers:
        df.update(set(analyze(paper_text(p))))
    n = len(papers)
    return ExtractiveGenerator(EvidenceIndex(embedder, lambda terms: {
        t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) if df[t] else 0.0 for t in terms}))


def answer(gen: ExtractiveGenerator, question: str, *papers: StoredPaper) -> str:
    g = gen.generate(GenerationInput(question, [PaperHit(p.id, 1.0 - i / 10, paper=p)
                                                for i, p in enumerate(papers)]))
    assert g.answerable, g.text
    return g.text.split("\n\n")[0]


def test_sentences_keep_their_closing_quotes() -> None:
    assert split_sentences(TWINS.abstract) == [
        "A clock that travels away and back runs slow against one that stays; this is known as the "
        "\"Twin Paradox.\"",
        "We resolve it with the travelling clock's change of frame.",
        "Is the effect \u201creal?\u201d",
        "Measurements on aircraft say yes."]
    assert split_sentences("(We did this.) Then that.") == ["(We did this.)", "Then that."]


def test_the_answer_keeps_acronyms_and_quoted_words(gen: ExtractiveGenerator) -> None:
    text = answer(gen, "What do mice do when the tone sounds without the unconditioned stimulus?", CONDITIONING)
    assert "(US)" in text or "the US" in text, text
    assert "Them" not in text and "(them)" not in text, text
    assert "\"our fear trace\"" in text, text  # the authors' own term, quoted, stays as written
    assert "Their mice freeze" in text or "Keller et al.'s mice freeze" in text, text


def test_the_answer_keeps_the_closing_quote_before_its_citation(gen: ExtractiveGenerator) -> None:
    text = answer(gen, "What is the Twin Paradox of a travelling clock?", TWINS)
    assert "\"Twin Paradox\" [1]." in text, text
    assert "\"Twin Paradox [1]" not in text
