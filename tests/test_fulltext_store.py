"""Full-text passages stored beside the abstract chunk (issue 31 item 3): the real embedder and Chroma, a small
GFS-like PDF the test writes (tests/gfs_fixture.py)."""

from __future__ import annotations

from pathlib import Path

from rag.analysis import analyze
from rag.index import rows
from rag.index.passage_lexical import PassageIndex
from tests.gfs_fixture import BODY_PAGE2, write_gfs


def _rows(rt) -> dict[str, dict]:
    res = rt.store.chroma_collection.get(include=["metadatas"])
    return dict(zip(res["ids"], res["metadatas"], strict=True))


def test_passages_are_added_beside_the_abstract_and_replaced_alone(make_runtime, tmp_path: Path) -> None:
    pdf = write_gfs(tmp_path / "gfs.pdf")
    plain = make_runtime()
    first = plain.ingestor(progress=False).ingest([pdf])
    assert first.added == 1 and first.full_text == 0
    abstract_ids = set(_rows(plain))
    assert len(abstract_ids) == 1 and all(i.endswith("#0") for i in abstract_ids)
    plain.close()

    rt = make_runtime(ingest={"full_text": True})
    again = rt.ingestor(progress=False).ingest([pdf])
    # the abstract is not embedded again: only the passages are
    assert (again.unchanged, again.embedded_chunks, again.full_text) == (1, 0, 1), again
    stored = _rows(rt)
    passages = {i: md for i, md in stored.items() if rows.is_passage(md)}
    assert abstract_ids < set(stored) and len(passages) == again.embedded_passages >= 3
    pid = next(iter(abstract_ids)).rsplit("#", 2)[0]
    assert {md[rows.PAPER_ID] for md in passages.values()} == {pid}
    chunk = next(md for md in passages.values() if md.get(rows.SECTION) == "2.5 Chunk Size")
    assert (chunk[rows.PAGE_START], chunk[rows.PAGE_END]) == (3, 3)
    assert "Abstract" not in {md.get(rows.SECTION) for md in passages.values()}  # the abstract is its own chunk
    docs = rt.store.documents(list(passages))
    assert any("We have chosen 64 MB" in t for t in docs.values())
    assert [p.id for p in rt.store.papers()] == [pid]  # still one paper

    index = PassageIndex.of(rt.lexical)  # BM25 over the passages follows the store
    rt.lexical.sync(rt.store)
    index.sync(rt.store, rt.lexical.state)
    best, _ = index.search({t: 1.0 for t in analyze("what chunk size")}, 3)[0]
    assert index.refs[best] == (3, 3, "2.5 Chunk Size") and index.papers == {pid}
    assert index.search({t: 1.0 for t in analyze("chunk size")}, 3, allowed={"other"}) == []

    unchanged = rt.ingestor(progress=False).ingest([pdf])
    assert (unchanged.embedded_chunks, unchanged.embedded_passages) == (0, 0)
    rt.close()

    off = make_runtime()  # full text off again: nothing is removed
    off.ingestor(progress=False).ingest([pdf])
    assert set(_rows(off)) == set(stored)
    off.close()

    changed = write_gfs(tmp_path / "gfs-v2.pdf",
                        body=[("2.5 Chunk Size", 12), ("We chose 32 MB chunks after measuring the workload.", 10)])
    rt = make_runtime(ingest={"full_text": True})
    report = rt.ingestor(progress=False).ingest([changed])
    # the same paper (same abstract): its passages replaced, its abstract chunk untouched
    assert report.duplicates == 1 and report.embedded_chunks == 0 and report.full_text == 1, report
    now = _rows(rt)
    assert abstract_ids < set(now) and not (set(passages) & set(now))
    texts = rt.store.documents([i for i, md in now.items() if rows.is_passage(md)])
    assert any("32 MB" in t for t in texts.values()) and not any("64 MB" in t for t in texts.values())
    assert any(BODY_PAGE2[1][0].split()[0] in t for t in texts.values())


def test_a_folder_of_pdfs_with_full_text(make_runtime, tmp_path: Path) -> None:
    from rag.config import get_settings
    from rag.ingest.pipeline import Ingestor

    folder = tmp_path / "pdfs"
    folder.mkdir()
    write_gfs(folder / "gfs.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    rt = make_runtime(ingest={"full_text": True, "passage_tokens": 60})
    ing = rt.ingestor(progress=False)
    assert isinstance(ing, Ingestor) and ing.passage_tokens == 60 == get_settings(
        ingest={"passage_tokens": 60}).ingest.passage_tokens
    report = ing.ingest([folder])
    assert report.added == 1 and report.skipped == 1 and report.full_text == 1
    assert any("broken.pdf:1: the file is damaged or not a PDF" in p for p in report.problems), report.problems
    assert "full text stored for 1 papers" in report.summary()


def test_paperchat_ingest_full_text_flag(tmp_path: Path, srv) -> None:
    """`paperchat ingest --full-text` in a subprocess, embedded by the OpenAI-compatible stub (tests/fakes)."""
    import json
    import os
    import subprocess

    from conftest import ROOT, STUB_KEY, paperchat_cmd

    pdf = write_gfs(tmp_path / "gfs.pdf")
    env = {**os.environ, "PAPERCHAT_EMBEDDINGS__PROVIDER": "openai", "PAPERCHAT_EMBEDDINGS__MODEL": "stub-model",
           "PAPERCHAT_EMBEDDINGS__BASE_URL": f"{srv.url}/v1", "PAPERCHAT_EMBEDDINGS__API_KEY": STUB_KEY}

    def ingest(*flags: str) -> dict:
        out = subprocess.run(paperchat_cmd("ingest", "--json", *flags, str(pdf)), capture_output=True, text=True,
                             cwd=ROOT, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    assert ingest()["full_text"] == 0
    with_text = ingest("--full-text")
    assert with_text["full_text"] == 1 and with_text["embedded_passages"] >= 3 and with_text["embedded_chunks"] == 0
    env["PAPERCHAT_INGEST__FULL_TEXT"] = "true"  # the setting, as the flag
    assert ingest()["unchanged"] == 1 and ingest()["embedded_passages"] == 0
