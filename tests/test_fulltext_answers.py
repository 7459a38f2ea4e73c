"""Answers from full text (issue 31 item 4): the sample corpus plus a GFS-like PDF whose chunk size is only in its
body; extractive mode, the real embedder and Chroma."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import SAMPLE

from rag.answer import Answer
from rag.config import get_settings
from rag.qa.chain import AnswerChain
from rag.qa.prompts import CANNOT_ANSWER
from rag.runtime import Runtime
from tests.gfs_fixture import write_gfs

QUESTION = "What chunk size does the Google File System use?"


SAMPLE_QUESTION = "How many training samples does Video-MTR need?"


@pytest.fixture(scope="module")
def stores(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Answer], Runtime]]:
    """The sample corpus and the PDF ingested with abstracts only (its answers kept), then the same store with the
    PDF's full text added (only its passages embedded)."""
    pdf = write_gfs(tmp_path_factory.mktemp("pdfs") / "gfs.pdf")
    home = tmp_path_factory.mktemp("home")
    plain = Runtime(get_settings(home=home), _embedder=embedder)
    assert plain.ingestor(progress=False).ingest([*SAMPLE, pdf]).added == 41
    chain = AnswerChain(plain)
    before = {q: chain.ask(q, mode="extractive") for q in (QUESTION, SAMPLE_QUESTION)}
    plain.close()
    full = Runtime(get_settings(home=home, ingest={"full_text": True}), _embedder=embedder)
    report = full.ingestor(progress=False).ingest([pdf])
    assert (report.unchanged, report.embedded_chunks, report.full_text) == (1, 0, 1)
    yield before, full
    full.close()


def test_a_body_only_fact_is_answered_from_the_passage_and_cited_to_its_page(stores) -> None:
    _, full = stores
    answer = AnswerChain(full).ask(QUESTION, mode="extractive")
    assert answer.answerable and "64 MB" in answer.answer, answer.answer
    gfs = next(c for c in answer.citations if c.title == "The Google File System")
    assert f"[{gfs.n}, p. 3]" in answer.answer, answer.answer
    assert (gfs.page, gfs.page_end, gfs.section, gfs.coverage) == (3, 3, "2.5 Chunk Size", "full text")
    assert "64 MB" in gfs.passage and gfs.evidence and gfs.evidence.split(". ")[0] in gfs.passage
    assert "64 MB" not in gfs.abstract and gfs.abstract.startswith("We have designed and implemented")
    d = answer.to_dict()["citations"][gfs.n - 1]
    assert (d["page"], d["section"], d["coverage"]) == (3, "2.5 Chunk Size", "full text")
    assert len({c.paper_id for c in answer.citations}) == len(answer.citations)  # one paper, cited once
    others = [c for c in answer.citations if c.n != gfs.n]
    assert all(c.coverage == "abstract only" and c.page is None for c in others)


def test_a_question_the_abstract_answers_keeps_the_abstract(stores) -> None:
    _, full = stores
    answer = AnswerChain(full).ask("Which distributed file system runs on inexpensive commodity hardware?",
                                   mode="extractive")
    gfs = next(c for c in answer.citations if c.title == "The Google File System")
    assert gfs.page is None and gfs.coverage == "full text" and f"[{gfs.n}]" in answer.answer, answer.answer


def test_without_full_text_the_body_fact_is_not_invented(stores) -> None:
    before, full = stores
    answer = before[QUESTION]
    assert "64 MB" not in answer.answer
    assert answer.answer == CANNOT_ANSWER or all(c.page is None for c in answer.citations)
    # a question on the sample corpus gets the same answer with and without the PDF's passages stored
    a, b = before[SAMPLE_QUESTION], AnswerChain(full).ask(SAMPLE_QUESTION, mode="extractive")
    assert a.answer == b.answer and [c.paper_id for c in a.citations] == [c.paper_id for c in b.citations]
    assert a.citations and all(c.coverage == "abstract only" for c in b.citations)
