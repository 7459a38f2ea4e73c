"""Ingest into a real embedded Chroma: counts, idempotency, updates in place, duplicates, refusal of
another model, and bad files that lose nothing already stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE

from rag.errors import ConfigError
from rag.records import Paper
from tests.helpers import chunk_ids, store_problems


def test_sample_listings_store_40_papers_and_rerun_embeds_nothing(make_runtime) -> None:
    rt = make_runtime()
    first = rt.ingestor(progress=False).ingest(SAMPLE)
    assert (first.added, first.updated, first.skipped, first.failed) == (40, 0, 0, 0)
    assert len(rt.store.paper_ids()) == 40
    chunks = rt.store.count_chunks()
    assert chunks >= 40
    again = rt.ingestor(progress=False).ingest(SAMPLE)
    assert (again.added, again.updated, again.unchanged, again.embedded_chunks) == (0, 0, 40, 0)
    assert rt.store.count_chunks() == chunks
    assert store_problems(rt.store) == []


def test_every_chunk_carries_paper_metadata_for_filtering(make_runtime) -> None:
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE)
    rows = rt.store.papers(where={"author_keys": {"$contains": "kolter"}})
    assert len(rows) == 1 and "Zico Kolter" in rows[0].authors
    texts = rt.store.documents(chunk_ids(rt.store))
    assert len(texts) == rt.store.count_chunks() and all(texts.values())
    for md in rt.store.iter_metadata():
        assert md["paper_id"] and md["label"]
        assert md["n_chunks"] >= 1


def test_changed_record_is_updated_in_place(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime()
    ing = rt.ingestor(progress=False)
    base = dict(id="doi:10.1/abc", title="Old title", abstract="We propose FooNet. It is fast. " * 3,
                authors=["Ada Lovelace"])
    assert ing.ingest_papers([Paper(**base)]).added == 1
    report = ing.ingest_papers([Paper(**{**base, "title": "New title", "abstract": "We propose BarNet instead."})])
    assert (report.added, report.updated) == (0, 1)
    rows = rt.store.papers()
    assert [r.title for r in rows] == ["New title"]
    assert store_problems(rt.store) == []
    texts = list(rt.store.documents(chunk_ids(rt.store)).values())
    assert texts and all("BarNet" in t for t in texts) and not any("FooNet" in t for t in texts)


def test_the_store_oracle_reports_a_second_version_and_a_missing_chunk(make_runtime) -> None:
    from rag.index.rows import chunk_id
    from rag.index.store import ChunkRow

    rt = make_runtime()
    rt.ingestor(progress=False).ingest_papers([Paper(id="h:1", title="T", abstract="We propose FooNet. It is fast.")])
    assert store_problems(rt.store) == []
    md = next(rt.store.iter_metadata())
    cid = chunk_id("h:1", md["content_hash"], md["chunk"])
    stray = {**md, "content_hash": "0" * 16, "n_chunks": 2, "chunk": 0}
    rt.store.upsert([ChunkRow(chunk_id("h:1", "0" * 16, 0), "h:1", "FooNet.", rt.store.vectors([cid])[cid], stray)])
    assert store_problems(rt.store) == ["h:1: 2 versions stored", f"h:1#{'0' * 16}: 1 of 2 chunks"]

def test_the_same_paper_twice_is_stored_once(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime()
    abstract = "We study *graph transformers* for molecules and find they generalise. Results hold widely."
    papers = [
        Paper(id="arxiv:2401.00001", arxiv_id="2401.00001", doi="10.5/x", abstract=abstract, title="GT"),
        Paper(id="bib:smith24", doi="10.5/x", abstract=abstract + " ", title="GT (journal)"),
        Paper(id="h:1", abstract=abstract.replace("*", "").upper()),  # same text modulo case/markup
    ]
    report = rt.ingestor(progress=False).ingest_papers(papers)
    assert (report.added, report.duplicates) == (1, 2)
    later = rt.ingestor(progress=False).ingest_papers([Paper(id="bib:other", doi="10.5/x", abstract="Other words.")])
    assert (later.added, later.duplicates) == (0, 1)
    assert rt.store.paper_ids() == ["arxiv:2401.00001"]


def test_store_built_with_another_model_is_refused_with_advice(make_runtime, embedder) -> None:
    from rag.index.store import ChromaStore

    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE[:1])
    rt.close()
    with pytest.raises(ConfigError, match="rebuild"):
        ChromaStore(rt.settings, "openai/text-embedding-3-small", 1536)


def test_unparseable_file_fails_alone_and_loses_nothing(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,colour\nfoo,red\n")
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    report = rt.ingestor(progress=False).ingest([bad, binary, SAMPLE[0]])
    assert report.failed == 2 and report.unchanged == 20
    assert any("bad.csv" in e for e in report.file_errors) and any("blob.json" in e for e in report.file_errors)
    assert len(rt.store.paper_ids()) == 40


def test_strict_mode_stores_nothing_from_a_file_with_a_bad_record(make_runtime, tmp_path: Path) -> None:
    rows = [{"id": f"p{i}", "title": f"Paper {i}", "abstract": f"We present result number {i} on benchmark {i}."}
            for i in range(5)]
    path = tmp_path / "papers.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n")
    rt = make_runtime()
    strict = rt.ingestor(progress=False).ingest([path], strict=True)
    assert strict.failed == 1 and "papers.jsonl:4" in strict.file_errors[0]
    assert rt.store.paper_ids() == []
    lenient = rt.ingestor(progress=False).ingest([path])
    assert (lenient.added, lenient.skipped) == (5, 1)
    assert "papers.jsonl:4" in lenient.problems[0]


@pytest.mark.parametrize("warm", [True, False])
def test_sentence_vectors_at_ingest_spare_answers_the_embedding(embedder, tmp_path: Path, warm: bool) -> None:
    """With ingest.sentence_vectors, every abstract sentence is in the embedding cache before any answer
    needs it: an answer then embeds only its question. Without it, the answer embeds its papers' sentences."""
    from rag.config import get_settings
    from rag.index.embed_cache import CachedEmbedder
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    cached = CachedEmbedder(embedder, tmp_path / "vectors.sqlite")
    rt = Runtime(get_settings(home=str(tmp_path / "home"), ingest={"sentence_vectors": warm}), _embedder=cached)
    try:
        report = rt.ingestor(progress=False).ingest(SAMPLE[:1])
        assert report.added == 20
        assert (report.embedded_sentences > 4 * report.added) is warm
        before = cached.misses
        answer = AnswerChain(rt).ask("Which methods reduce the training cost of reinforcement learning?")
        assert answer.citations
        fresh = cached.misses - before
        assert fresh <= 2 if warm else fresh > 10  # the question (and its condensed form) at most
    finally:
        rt.close()
        cached.close()


def test_reingest_of_the_same_files_stores_the_labels_of_improved_labelling(make_runtime, tmp_path: Path,
                                                                            monkeypatch) -> None:
    """Labels are derived by code at ingest: when that code changes, re-ingesting unchanged files relabels the
    papers whose label changed (and only those), not "unchanged"."""
    rows = [{"id": "p1", "title": None, "authors": ["Ada Lovelace", "Alan Turing", "Grace Hopper"],
             "abstract": "Graphs are everywhere. We propose FooNet, a graph model for bar prediction."},
            {"id": "p2", "title": "Baz Regularisation Helps Graph Learning", "authors": ["Ada Lovelace"],
             "abstract": "We study baz and show that it helps."}]
    path = tmp_path / "untitled.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rt = make_runtime()
    assert rt.ingestor(progress=False).ingest([path]).added == 2
    import rag.records

    monkeypatch.setattr(rag.records, "paper_phrase", lambda abstract: "A better phrase")  # labelling improved
    again = rt.ingestor(progress=False).ingest([path])
    assert (again.updated, again.unchanged) == (1, 1)  # the titled paper's label is its title: unchanged
    labels = {p.id: p.label for p in rt.store.papers()}
    assert labels["id:p1"] == "Lovelace et al.: A better phrase"
    assert labels["id:p2"] == "Baz Regularisation Helps Graph Learning"
    assert store_problems(rt.store) == []
    assert rt.ingestor(progress=False).ingest([path]).unchanged == 2


@pytest.mark.parametrize("placeholder", ["No abstract available", "[No abstract available]", "Abstract not available",
                                         "N/A", "n/a", "-", "(no abstract)"])
def test_a_placeholder_abstract_stores_no_paper_and_merges_nothing(make_runtime, tmp_path: Path,
                                                                   placeholder: str) -> None:
    rows = [{"title": f"Book {i}", "doi": f"10.9/book.{i}", "abstract": placeholder} for i in range(3)]
    rows.append({"title": "A real one", "doi": "10.9/real", "abstract": "We measure how graphene conducts heat."})
    path = tmp_path / "scopus.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rt = make_runtime()
    report = rt.ingestor(progress=False).ingest([path])
    assert (report.added, report.duplicates, report.skipped) == (1, 0, 3)
    assert all("no abstract" in p for p in report.problems)
    assert [p.title for p in rt.store.papers()] == ["A real one"]


def test_same_abstract_under_different_dois_or_arxiv_ids_is_two_papers(make_runtime) -> None:
    rt = make_runtime()
    blurb = "This volume collects the proceedings of the workshop on spectral graph theory."
    other = "Lecture notes on random matrices, their spectra and their uses in statistics."
    papers = [
        Paper(id="d1", doi="10.7/ch.1", abstract=blurb, title="Chapter 1"),
        Paper(id="d2", doi="10.7/ch.2", abstract=blurb, title="Chapter 2"),
        Paper(id="a1", arxiv_id="2401.00011", abstract=other, title="Preprint 1"),
        Paper(id="a2", arxiv_id="2401.00012", abstract=other, title="Preprint 2"),
        Paper(id="h", abstract=blurb, title="No id: the first one's copy"),
        Paper(id="j", doi="10.7/journal", abstract=other, title="A DOI and an arXiv id may be one paper"),
    ]
    first = rt.ingestor(progress=False).ingest_papers(papers)
    assert (first.added, first.duplicates) == (4, 2)
    later = rt.ingestor(progress=False).ingest_papers([
        Paper(id="d3", doi="10.7/ch.3", abstract=blurb, title="Chapter 3"),  # against the store this time
        Paper(id="h2", abstract=blurb, title="Another copy without ids"),
    ])
    assert (later.added, later.duplicates) == (1, 1)
    assert len(rt.store.paper_ids()) == 5
