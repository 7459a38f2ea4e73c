"""The Chroma row schema: the metadata a paper is written as is pinned (stores built earlier must keep
opening and answering without a re-ingest), and a chunk-0 row reads back as the same paper."""

from __future__ import annotations

from conftest import SAMPLE
from helpers import rename_metadata_key

from rag.index import rows
from rag.records import Paper, StoredPaper

PAPER = Paper(id="arxiv:2501.00001", abstract="We propose FooNet. It is fast.", title="FooNet",
              authors=["Ada Lovelace", "Grace B. Hopper"], categories=["Deep Learning", " "], year=2025,
              url="https://arxiv.org/abs/2501.00001", arxiv_id="2501.00001", origin_file="a.jsonl", origin_line=3)


def test_a_paper_is_written_as_the_pinned_metadata() -> None:
    assert rows.chunk_metadata(PAPER, "c0ffee", 0, 2, 17) == {
        "paper_id": "arxiv:2501.00001", "content_hash": "c0ffee", "chunk": 0, "n_chunks": 2, "label": "FooNet",
        "abstract_hash": PAPER.abstract_hash, "origin": "a.jsonl:3", "llm_tokens": 17, "title": "FooNet",
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
                                origin="a.jsonl:3")
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


def test_a_store_written_under_the_old_origin_key_reads_the_same_papers(make_runtime) -> None:
    """Rows written before ``origin`` was named so hold the record's file:line under ``source``: they read back as
    the same papers, and an ingest of the same file leaves them as they are."""
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE[:1])
    before = rt.store.papers()
    assert before and all(p.origin and p.origin.startswith(f"{SAMPLE[0]}:") for p in before)
    assert rename_metadata_key(rt.store.chroma_collection, rows.ORIGIN, rows.OLD_ORIGIN) > 0
    metadatas = rt.store.chroma_collection.get(include=["metadatas"])["metadatas"]
    assert not any(rows.ORIGIN in md for md in metadatas) and all(rows.OLD_ORIGIN in md for md in metadatas)
    assert rt.store.papers() == before
    again = rt.ingestor(progress=False).ingest(SAMPLE[:1])
    assert again.unchanged == len(before) and again.added == again.updated == 0
    assert rt.store.papers() == before and [p.to_dict()["origin"] for p in before] == [p.origin for p in before]
