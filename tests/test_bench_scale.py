"""The scale benchmark and its synthetic corpus, run as a developer runs them (``python -m bench.synth``,
``python -m bench.scale``) on a tiny corpus, and checked through what they write: the corpus file, the results
JSON and the docs section.

Figures are not asserted (the machine may be busy); only that every measurement is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.data import CRANFIELD_CORPUS, NIPS
from tests.support.scripts import run_module

needs_material = pytest.mark.requires_data(NIPS, CRANFIELD_CORPUS)


def _run(module: str, *args: str, timeout: float = 1100) -> str:
    proc = run_module(module, *args, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@needs_material
def test_synth_is_deterministic_prefix_stable_and_loadable(tmp_path: Path) -> None:
    from rag.ingest import loaders

    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for out, n in ((a, 30), (b, 30), (c, 50)):
        _run("bench.synth", "--papers", str(n), "--out", str(out), "--seed", "3", "--quiet")
    assert a.read_bytes() == b.read_bytes()
    assert c.read_text().splitlines()[:30] == a.read_text().splitlines()
    assert loaders.detect_format(a) == "arxiv-jsonl"
    res = loaders.load(a)
    assert len(res.papers) == 30 and not res.problems
    assert len({p.id for p in res.papers}) == 30
    assert all(p.title and p.authors and p.categories and p.year for p in res.papers)


@needs_material
@pytest.mark.timeout(2400)  # two runs of a dozen child processes that each load the model; slow on a busy machine
def test_scale_harness_tiny(tmp_path: Path) -> None:
    work, doc = tmp_path / "work", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n<!-- other:start -->\nkept\n<!-- other:end -->\n")
    small = ["--sizes", "60", "--workdir", str(work), "--questions", "3", "--warmup", "1", "--profile", "1",
             "--cold-runs", "1"]
    _run("bench.scale", *small, "--ratio-sample", "10", "--results", str(tmp_path / "scale.json"),
         "--img-dir", str(tmp_path / "img"), "--doc", str(doc))
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
    assert run["ingest"]["cache_rowid"] > 0
    # --reuse keeps the ingested home and its figures instead of ingesting again, and forgets the question and
    # sentence vectors the first run's measurements cached (only those: the ingest's rows stay)
    again = json.loads(_run("bench.scale", *small, "--ratio-sample", "0", "--reuse", "--no-write", "--json"))["60"]
    assert again["ingest"]["reused"] is True and again["ingest"]["seconds"] == run["ingest"]["seconds"]
    assert again["ingest"]["cache_rowid"] == run["ingest"]["cache_rowid"]
    assert again["forgotten_vectors"] > 0
