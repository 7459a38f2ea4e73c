"""Chunks fit the embedding model's window and cover every sentence."""

from __future__ import annotations

from rag.ingest.chunking import chunk_paper
from rag.records import Paper
from rag.text import plain_text, split_sentences


def _long_abstract(n: int) -> str:
    return " ".join(f"Sentence number {i} describes a distinct experimental finding about model {i} in detail."
                    for i in range(n))


def test_short_abstract_is_one_chunk_with_title(embedder) -> None:
    p = Paper(id="x", abstract="We propose a method. It works well.", title="A Method")
    chunks = chunk_paper(p, embedder.count_tokens, embedder.max_tokens)
    assert len(chunks) == 1
    assert chunks[0].text == "A Method. We propose a method. It works well."
    assert chunks[0].llm_tokens > 0


def test_long_abstract_is_split_within_window_and_loses_nothing(embedder) -> None:
    p = Paper(id="x", abstract=_long_abstract(60), title="Findings")
    chunks = chunk_paper(p, embedder.count_tokens, embedder.max_tokens)
    assert len(chunks) > 2
    sizes = embedder.count_tokens([c.text for c in chunks])
    assert max(sizes) <= embedder.max_tokens  # nothing silently truncated
    assert all(c.text.startswith("Findings. ") for c in chunks)
    covered = " ".join(c.text for c in chunks)
    for s in split_sentences(p.abstract):
        assert plain_text(s) in covered
    # neighbouring windows overlap by a sentence so no statement is cut from its context
    assert all(a.end_sentence > b.start_sentence for a, b in zip(chunks, chunks[1:]))


def test_a_single_huge_sentence_is_split_on_words(embedder) -> None:
    p = Paper(id="x", abstract=" ".join(f"token{i}" for i in range(2000)))
    chunks = chunk_paper(p, embedder.count_tokens, 64)
    assert len(chunks) > 10
    assert max(embedder.count_tokens([c.text for c in chunks])) <= 64
    assert " ".join(c.text for c in chunks).split() == p.abstract.split()
