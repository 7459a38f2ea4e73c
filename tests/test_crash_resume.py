"""A process killed mid-ingest, then re-run, ends with exact counts, no duplicates and the lexical
index in sync; and the same ingest through a real `chroma run` server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, paperchat_cmd

from tests.helpers import store_problems
from tests.support.data import NIPS

NIPS13 = NIPS / "NIPS13_paper.csv"


def _ingest_until_batches(path: Path, batches: int, env: dict[str, str]) -> int:
    """Start an ingest, SIGKILL it after ``batches`` batches were written; return how many it saw."""
    proc = subprocess.Popen(paperchat_cmd("-v", "ingest", str(path)), cwd=ROOT, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = 0
    deadline = time.time() + 240
    assert proc.stderr is not None
    for line in proc.stderr:
        if "batch written" in line:
            seen += 1
            if seen >= batches:
                break
        if time.time() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return seen


@pytest.mark.requires_data(NIPS13)
def test_killed_ingest_resumes_to_exact_counts(paperchat_home: Path) -> None:
    env = {**os.environ, "PAPERCHAT_INGEST__BATCH_PAPERS": "40"}
    assert _ingest_until_batches(NIPS13, 2, env) == 2
    done = subprocess.run(paperchat_cmd("ingest", "--json", str(NIPS13)), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    from rag.ingest.loaders import load

    expected = len({p.id for p in load(NIPS13).papers})  # 360 rows, one paper listed twice
    assert expected == 359
    assert report["added"] + report["unchanged"] + report["updated"] == expected
    assert report["duplicates"] == 1
    assert report["unchanged"] >= 80  # what the killed run had committed was kept
    check = subprocess.run(paperchat_cmd("stats", "--json"), cwd=ROOT, env=env, capture_output=True, text=True)
    assert json.loads(check.stdout)["papers"] == expected

    from rag.config import get_settings
    from rag.index.lexical import LexicalIndex
    from rag.index.store import ChromaStore

    store = ChromaStore(get_settings(), None, None)
    try:
        assert store_problems(store) == []
        assert len(store.paper_ids()) == expected
        lex = LexicalIndex.for_store(get_settings().home, store)
        assert lex._load((store.generation, store.count_chunks())) and len(lex) == expected
    finally:
        store.close()


def test_second_process_on_the_embedded_store_is_told_at_once(make_runtime) -> None:
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE[:1])
    t0 = time.time()
    out = subprocess.run(paperchat_cmd("ingest", str(SAMPLE[1])), cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0 and "in use by pid" in out.stderr and "Traceback" not in out.stderr
    assert time.time() - t0 < 60


def test_server_mode_against_a_real_chroma_server(chroma_server: int, make_runtime) -> None:
    rt = make_runtime(store={"mode": "server", "port": chroma_server, "chroma_collection": "server-test"})
    first = rt.ingestor(progress=False).ingest(SAMPLE)
    assert first.added == 40
    again = rt.ingestor(progress=False).ingest(SAMPLE)
    assert (again.added, again.unchanged, again.embedded_chunks) == (0, 40, 0)
    assert rt.store.location == f"http://127.0.0.1:{chroma_server}"
    hits = rt.retriever().search("energy loss in RLHF reward hacking", k=3).hits
    assert hits and "EPPO" in hits[0].paper.abstract
    env = {**os.environ, "PAPERCHAT_STORE__MODE": "server", "PAPERCHAT_STORE__PORT": str(chroma_server),
           "PAPERCHAT_STORE__CHROMA_COLLECTION": "server-test"}
    stats = subprocess.run(paperchat_cmd("stats", "--json"), cwd=ROOT, env=env, capture_output=True, text=True)
    assert json.loads(stats.stdout)["papers"] == 40  # a second process shares the server store
