"""Kill -9 during ingest, at random moments, then re-run: the store ends exactly as the input says.

The small loop always runs; ``pytest --long`` runs the full size (2,000 papers, 20 kills), which
is also ``python -m tests.support.crash_loop``. The verifier itself is checked to catch a broken store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import crash_loop
from tests.support.data import CRANFIELD_CORPUS, NIPS

needs_data = pytest.mark.requires_data(CRANFIELD_CORPUS, NIPS)


def _failures(res: dict) -> list:
    return [(r["round"], r["scenario"], r["verify"].get("problems"))
            for r in res["rounds"] if not r["verify"].get("ok")]


@needs_data
@pytest.mark.timeout(1200)  # < 90 s on an idle 2-core machine; a shared one is several times slower
def test_small_crash_loop_keeps_every_invariant(tmp_path: Path) -> None:
    res = crash_loop.run_loop(papers=150, kills=3, kills_per_round=2, seed=3, batch_papers=40, workdir=tmp_path)
    assert _failures(res) == []
    assert res["kills"] == 3
    assert {r["scenario"] for r in res["rounds"]} >= {"reference", "fresh", "update-a"}
    assert res["expected_papers"] == 150 and res["rounds"][-1]["verify"]["papers"] == 150
    update = next(r for r in res["rounds"] if r["scenario"] == "update-a")
    assert update["verify"]["generation"] >= 2  # the edits were written as updates, not as new papers


@needs_data
@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_long_crash_loop(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--long", default=False):
        pytest.skip("long variant: pytest --long (plugin tests.plugins.long), or python -m tests.support.crash_loop")
    res = crash_loop.run_loop(papers=2000, kills=20, kills_per_round=2, seed=0, workdir=tmp_path)
    assert _failures(res) == []
    assert res["kills"] == 20


@needs_data
@pytest.mark.timeout(900)
def test_verifier_catches_a_second_version_and_a_stale_lexical_index(tmp_path: Path, make_runtime) -> None:
    """A check that cannot fail proves nothing: break a good store two ways and see both reported."""
    inputs = crash_loop.build_inputs(tmp_path / "in", 12)
    paths = [*inputs["nips"], inputs["base_cran"]]
    rt = make_runtime()
    expected = crash_loop.expected_state(paths, rt.embedder, rt.settings.chunking.max_tokens,
                                         rt.settings.chunking.overlap_sentences)
    rt.ingestor(progress=False).ingest(paths)
    rt.close()  # the verifier runs `paperchat stats`, which needs the store to itself
    home = rt.settings.home
    good = crash_loop.verify(home, expected, {}, "base")
    assert good["ok"], good["problems"]
    # a second version of one paper (what a crash between "write new" and "delete old" leaves if never repaired)
    rt = make_runtime()
    from rag.index.rows import chunk_id
    from rag.index.store import ChunkRow

    md = next(rt.store.iter_metadata())
    pid = md["paper_id"]
    cid = chunk_id(pid, md["content_hash"], md["chunk"])
    rt.store.upsert([ChunkRow(chunk_id(pid, "0" * 16, 0), pid, rt.store.documents([cid])[cid],
                              rt.store.vectors([cid])[cid],
                              {**md, "content_hash": "0" * 16, "n_chunks": 1, "chunk": 0})])
    rt.close()
    bad = crash_loop.verify(home, expected, {}, "base")
    joined = " ".join(bad["problems"])
    assert not bad["ok"] and "several versions" in joined and "lexical index built at" in joined


def test_phase_names_follow_the_log(tmp_path: Path) -> None:
    lines = [(1.0, "INFO sentence_transformers.base.model: Loading SentenceTransformer model from x"),
             (2.0, "INFO rag.ingest.pipeline: batch written: 40 papers, 48 chunks embedded, 0 stale chunks deleted")]
    assert crash_loop._phase([], 4, False)[0].startswith("startup")
    assert crash_loop._phase(lines[:1], 4, False)[0].startswith("model load")
    assert crash_loop._phase(lines, 4, False) == ("batch 2 of 4 (dedupe, embed, write)", 1)
    assert crash_loop._phase(lines * 4, 4, False)[0].startswith("final sync")
    assert crash_loop._phase(lines, 4, True)[0] == "finished before the kill"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class _Killed(BaseException):
    """Stands in for SIGKILL at one exact point: nothing after it runs, nothing is cleaned up."""


def test_kill_between_last_write_and_final_generation_bump_does_not_leave_bm25_stale(
        tmp_path: Path, make_runtime) -> None:
    rows = [{"id": f"p{i}", "title": f"Paper {i}", "abstract": f"We study topic number {i} with a method. "
             f"Results improve over baselines by {i} points."} for i in range(3)]
    v1 = _jsonl(tmp_path / "v1.jsonl", rows)
    rows[1] = {**rows[1], "abstract": rows[1]["abstract"] + " A zebracorn ablation confirms it."}
    v2 = _jsonl(tmp_path / "v2.jsonl", rows)
    rt = make_runtime()
    rt.ingestor(progress=False).ingest([v1])
    rt.close()

    crashed = make_runtime()
    store = crashed.store

    real_bump, calls = store.bump_generation, []

    def killed_at_the_final_bump() -> int:  # the bump before the first write goes through, the last one "dies"
        calls.append(1)
        if len(calls) > 1:
            raise _Killed
        return real_bump()

    store.bump_generation = killed_at_the_final_bump  # type: ignore[method-assign]
    with pytest.raises(_Killed):
        crashed.ingestor(progress=False).ingest([v2])
    crashed.close()

    rerun = make_runtime()
    report = rerun.ingestor(progress=False).ingest([v2])
    assert (report.updated, report.unchanged) == (0, 3)  # the update did land before the "kill"
    assert "zebracorn" in rerun.store.papers(["id:p1"])[0].abstract
    lex = rerun.lexical
    lex.sync(rerun.store)
    scores = lex.scores("zebracorn")
    assert scores[lex.positions(["id:p1"])[0]] > 0, "BM25 still indexes the pre-update abstract"
