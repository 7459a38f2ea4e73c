"""The scale benchmark harness end to end on a tiny corpus: it runs, writes its JSON and its docs section.

Figures are not asserted (the machine may be busy); only that every measurement is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale, synth


def test_synth_is_deterministic_prefix_stable_and_loadable(tmp_path: Path) -> None:
    from rag.ingest import loaders

    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    synth.write(30, a, seed=3, progress=False)
    synth.write(30, b, seed=3, progress=False)
    synth.write(50, c, seed=3, progress=False)
    assert a.read_bytes() == b.read_bytes()
    assert c.read_text().splitlines()[:30] == a.read_text().splitlines()
    assert loaders.detect_format(a) == "arxiv-jsonl"
    res = loaders.load(a)
    assert len(res.papers) == 30 and not res.problems
    assert len({p.id for p in res.papers}) == 30
    assert all(p.title and p.authors and p.categories and p.year for p in res.papers)


@pytest.mark.timeout(1200)  # a dozen child processes that each load the model; slow on a busy machine
def test_scale_harness_tiny(tmp_path: Path) -> None:
    work, doc = tmp_path / "work", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n<!-- other:start -->\nkept\n<!-- other:end -->\n")
    argv = ["--sizes", "60", "--workdir", str(work), "--questions", "3", "--warmup", "1", "--profile", "1",
            "--cold-runs", "1", "--ratio-sample", "10", "--results", str(tmp_path / "scale.json"),
            "--img-dir", str(tmp_path / "img"), "--doc", str(doc)]
    assert scale.main(argv) == 0
    run = json.loads((tmp_path / "scale.json").read_text())["runs"]["60"]
    assert run["ingest"]["added"] == 60 and run["ingest"]["peak_rss_mb"] > 0
    assert {"bare_pps", "pipeline_pps", "ratio"} <= run["ratio"].keys()
    assert run["disk"]["total_bytes"] > 0 and run["disk"]["per_paper_kb"] > 0
    assert run["cold_start"]["median_s"] > 0
    assert run["lexical"]["lexical_rebuild_s"] >= 0
    serve = run["serve"]
    assert serve["retrieve_ms"]["n"] == 3 and serve["answer_ms"]["n"] == 3
    assert "total_ms" in serve["answer_stages"] and serve["peak_rss_mb"] > 0 and "cumulative" in serve["profile"]
    text = doc.read_text()
    assert "<!-- scale:start -->" in text and "kept" in text and "| 60 |" in text
    assert (tmp_path / "img" / "scale-latency.png").stat().st_size > 0
    assert (tmp_path / "img" / "scale-resources.png").stat().st_size > 0
    assert run["ingest"]["rss_curve_mb"] and run["ingest"]["chunks_per_s"] > 0
    # --reuse keeps the ingested home and its figures instead of ingesting again
    corpus, home = work / "corpus-60.jsonl", work / "home-60"
    again = scale.ingest(60, corpus, home, reuse=True)
    assert again["reused"] is True and again["seconds"] == run["ingest"]["seconds"]
    # A reused home forgets the question and sentence vectors its earlier measurements cached, and only those.
    boundary = scale.ingest_boundary(home, again)
    assert boundary == run["ingest"]["cache_rowid"] > 0
    assert scale._max_rowid(home) > boundary  # the run's questions and abstract sentences were cached
    assert scale.forget_questions(home, boundary) > 0 and scale._max_rowid(home) == boundary
    assert scale.ingest_boundary(home, {}) == boundary  # derived from the chunk count when not recorded
