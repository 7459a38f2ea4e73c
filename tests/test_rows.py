"""The Chroma row schema: the metadata a paper is written as is pinned (stores built earlier must keep
opening and answering without a re-ingest), and a chunk-0 row reads back as the same paper."""

from __future__ import annotations

from rag.index import rows
from rag.records import Paper, StoredPaper

PAPER = Paper(id="arxiv:2501.00001", abstract="We propose FooNet. It is fast.", title="FooNet",
              authors=["Ada Lovelace", "Grace B. Hopper"], categories=["Deep Learning", " "], year=2025,
              url="https://arxiv.org/abs/2501.00001", arxiv_id="2501.00001", source_file="a.jsonl", source_line=3)


def test_a_paper_is_written_as_the_pinned_metadata() -> None:
    assert rows.chunk_metadata(PAPER, "c0ffee", 0, 2, 17) == {
        "paper_id": "arxiv:2501.00001", "content_hash": "c0ffee", "chunk": 0, "n_chunks": 2, "label": "FooNet",
        "abstract_hash": PAPER.abstract_hash, "source": "a.jsonl:3", "llm_tokens": 17, "title": "FooNet",
        "year": 2025, "url": "https://arxiv.org/abs/2501.00001", "arxiv_id": "2501.00001",
        "authors": ["Ada Lovelace", "Grace B. Hopper"], "categories": ["Deep Learning", " "],
        "author_keys": ["ada lovelace", "grace b hopper", "hopper", "lovelace"], "category_keys": ["deep learning"],
        "abstract": "We propose FooNet. It is fast."}
    later = rows.chunk_metadata(PAPER, "c0ffee", 1, 2, 5)
    assert "abstract" not in later and later["chunk"] == 1 and later["author_keys"] == ["ada lovelace",
                                                                                       "grace b hopper", "hopper",
                                                                                       "lovelace"]


def test_a_first_chunk_row_reads_back_as_the_stored_paper() -> None:
    paper = rows.read_paper(rows.chunk_metadata(PAPER, "c0ffee", 0, 1, 17))
    assert paper == StoredPaper(id=PAPER.id, label="FooNet", title="FooNet",
                                authors=("Ada Lovelace", "Grace B. Hopper"), categories=("Deep Learning", " "),
                                year=2025, url=PAPER.url, arxiv_id="2501.00001", abstract=PAPER.abstract,
                                source="a.jsonl:3")
    assert paper.to_dict()["authors"] == ["Ada Lovelace", "Grace B. Hopper"] and paper.heading == "FooNet"


def test_absent_fields_are_left_out_and_read_back_as_defaults() -> None:
    bare = Paper(id="h:1", abstract="We study tides.")
    md = rows.chunk_metadata(bare, "h", 0, 1, 4)
    assert not {"title", "authors", "categories", "author_keys", "category_keys", "year", "doi"} & md.keys()
    paper = rows.read_paper(md)
    assert (paper.title, paper.authors, paper.categories, paper.year) == (None, (), (), None)
    assert paper.heading == paper.label == bare.label


def test_where_clauses_use_the_row_keys() -> None:
    assert rows.all_of(rows.FIRST_CHUNK, None) == {"chunk": 0}
    assert rows.all_of(rows.has_author("kolter"), rows.year_from(2020)) == {
        "$and": [{"author_keys": {"$contains": "kolter"}}, {"year": {"$gte": 2020}}]}
    assert rows.all_of() is None
    assert rows.paper_of_chunk(rows.chunk_id("doi:10.1/a#b", "h", 3)) == "doi:10.1/a#b"
