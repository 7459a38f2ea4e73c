"""Commands end to end, as a user runs them: each a real ``paperchat`` process in its own home, checked through
what it prints, writes and serves. ``eval-retrieval`` on a tiny BEIR set, ``ingest --rebuild``,
``export-feedback``, and one ``paperchat api`` process with two keys on an empty library over real HTTP (401
without a key, 200 with one, 409 for a question, an empty search, 429 with Retry-After past one key's rate
while the other key still gets through)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, SAMPLE, paperchat_cmd

from rag.ingest.loaders import load
from tests.support.processes import wait_for_port
from tests.support.servers import free_port, server_env

RATE = 3
KEYS: list[str] = []  # made by `paperchat api-key` for the API process below


def _run(home: Path, *args: str, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = server_env(home, None) | {"OMP_NUM_THREADS": "1", **extra_env}
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run(paperchat_cmd(*args), cwd=home, env=env, capture_output=True, text=True, timeout=timeout)


def _clean(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


# ---- eval-retrieval -----------------------------------------------------------------------------------------
def _tiny_beir(folder: Path) -> list[str]:
    """Twelve sample papers as a BEIR folder; each of three queries is one paper's first sentence, judged relevant
    to it alone. Returns the three judged corpus ids."""
    papers = load(SAMPLE[0]).papers[:12]
    folder.mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, p in enumerate(papers):
            f.write(json.dumps({"_id": f"d{i}", "title": "", "text": p.abstract}) + "\n")
    judged = [0, 5, 11]
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q, i in enumerate(judged):
            f.write(json.dumps({"_id": f"q{q}", "text": papers[i].abstract.split(". ")[0]}) + "\n")
        f.write(json.dumps({"_id": "unjudged", "text": "not in the qrels"}) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{i}\t1\n" for q, i in enumerate(judged)))
    return [f"d{i}" for i in judged]


def test_eval_retrieval_scores_a_tiny_beir_set(tmp_path: Path) -> None:
    _tiny_beir(tmp_path / "tiny")
    done = _clean(_run(tmp_path / "home", "eval-retrieval", str(tmp_path / "tiny"), "--systems", "paperchat", "bm25",
                       "--json"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["dataset"] == "tiny" and out["queries"] == 3  # the unjudged query is not scored
    assert set(out["results"]) == {"paperchat", "bm25"}
    for name, r in out["results"].items():
        # a paper's own first sentence finds it first among twelve: perfect scores, from a real store
        assert r == {"ndcg@10": pytest.approx(1.0), "recall@100": pytest.approx(1.0),
                     "mrr@10": pytest.approx(1.0)}, (name, r)
    # a dataset without judgments is a one-line error naming the missing file, not a traceback
    (tmp_path / "tiny" / "qrels" / "test.tsv").unlink()
    bad = _clean(_run(tmp_path / "home", "eval-retrieval", str(tmp_path / "tiny")))
    assert bad.returncode != 0 and "qrels/test.tsv" in bad.stderr and "missing" in bad.stderr


# ---- ingest --rebuild -----------------------------------------------------------------------------------------
def test_ingest_rebuild_replaces_the_library(tmp_path: Path, make_runtime: Any) -> None:
    home = tmp_path / "home"
    rt = make_runtime(home=home)
    assert rt.ingestor(progress=False).ingest([SAMPLE[0]]).added == 20
    first = set(rt.store.paper_ids())
    rt.close()
    rebuilt = _clean(_run(home, "ingest", "--rebuild", str(SAMPLE[1]), "--json"))
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert json.loads(rebuilt.stdout)["added"] == 20
    rt = make_runtime(home=home)
    second = set(rt.store.paper_ids())
    assert len(second) == 20 and not first & second  # only the second file's papers: 40 without --rebuild


# ---- export-feedback ------------------------------------------------------------------------------------------
def test_export_feedback_turns_votes_into_an_eval_set(tmp_path: Path, make_runtime: Any) -> None:
    from evals.sets import load_set
    from rag.qa.chain import AnswerChain
    from ui.services import FeedbackLog

    home = tmp_path / "home"
    rt = make_runtime(home=home)
    assert rt.ingestor(progress=False).ingest([SAMPLE[1]]).added == 20
    chain = AnswerChain(rt)
    liked, disliked = (chain.ask(q, mode="extractive") for q in ("What is EPPO?", "What does EPPO penalize?"))
    assert liked.citations
    log = FeedbackLog(home / "feedback.jsonl")  # what the chat tab's thumbs write
    log.record(liked, liked=True)
    log.record(disliked, liked=False)
    with (home / "feedback.jsonl").open("a") as f:
        f.write("{not json\n")
    rt.close()

    out = tmp_path / "feedback-set.jsonl"
    done = _clean(_run(home, "export-feedback", "--out", str(out), "--votes", "all"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2 case(s) from 2 vote(s)" in done.stdout and "1 unreadable line(s) skipped" in done.stdout
    rows = {r["question"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"What is EPPO?", "What does EPPO penalize?"}
    assert {g["paper_id"] for g in rows["What is EPPO?"]["gold"]} == {c.paper_id for c in liked.citations}
    down = rows["What does EPPO penalize?"]
    assert down["gold"] == [] and down["needs_review"] is True
    assert len(load_set(out)) == 2  # a set `paperchat eval` reads
    downs = _clean(_run(home, "export-feedback", "--out", str(out)))  # exists: refused without --force
    assert downs.returncode != 0 and str(out) in downs.stderr and "--force" in downs.stderr
    forced = _clean(_run(home, "export-feedback", "--out", str(out), "--force"))  # default: thumbs-down only
    assert forced.returncode == 0 and [json.loads(x)["question"] for x in out.read_text().splitlines()] == [
        "What does EPPO penalize?"]


# ---- paperchat api, one process on an empty library -------------------------------------------------------------
@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``paperchat api`` on 127.0.0.1 over an empty home, with two keys made by ``paperchat api-key`` (the server
    gets their hashes only), RATE counted requests a minute per key."""
    home = tmp_path_factory.mktemp("api-e2e") / "home"
    hashes = []
    for _ in range(2):
        made = _clean(_run(home, "api-key"))
        fields = {k: v.strip() for k, _, v in (line.partition(":") for line in made.stdout.splitlines()[:2])}
        assert made.returncode == 0 and fields["key"].startswith("pc-") and len(fields["hash"]) == 64, made.stdout
        KEYS.append(fields["key"])
        hashes.append(fields["hash"])
    port = free_port()
    env = server_env(home, None) | {"OMP_NUM_THREADS": "1", "PAPERCHAT_API__KEY_HASHES": json.dumps(hashes),
                                    "PAPERCHAT_API__REQUESTS_PER_MINUTE": str(RATE)}
    log = (home / "api.log").open("w")
    proc = subprocess.Popen(paperchat_cmd("api", "--port", str(port)), cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(port, proc, timeout_s=300)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=20)
        log.close()
    assert "Traceback" not in (home / "api.log").read_text()


def _http(url: str, key: str | None) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60, trust_env=False,
                        headers={"Authorization": f"Bearer {key}"} if key else {})


def test_api_process_wants_a_key(api_url: str) -> None:
    with _http(api_url, None) as anon, _http(api_url, "pc-wrong") as wrong, _http(api_url, KEYS[0]) as ok:
        assert anon.get("/healthz").status_code == 200  # the health check stays open
        for r in (anon.get("/v1/models"), anon.get("/v1/stats"), wrong.get("/v1/models"),
                  anon.post("/v1/ask", json={"question": "What is EPPO?"})):
            assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error", r.text
        models = ok.get("/v1/models")
        assert models.status_code == 200 and {m["id"] for m in models.json()["data"]} >= {"paperchat"}
        stats = ok.get("/v1/stats")
        assert stats.status_code == 200 and stats.json()["papers"] == 0


def test_api_process_answers_409_on_an_empty_library_and_429_past_a_keys_rate(api_url: str) -> None:
    with _http(api_url, KEYS[0]) as a, _http(api_url, KEYS[1]) as b:
        found = a.post("/v1/search", json={"query": "EPPO"})  # a search of nothing finds nothing
        assert found.status_code == 200 and found.json()["results"] == []
        questions = [a.post("/v1/ask", json={"question": "What is EPPO?"}),
                     a.post("/v1/chat/completions", json={"model": "paperchat", "messages": [
                         {"role": "user", "content": "What is EPPO?"}]})]
        for r in questions:
            assert r.status_code == 409 and r.json()["error"]["code"] == "library_empty", r.text
            assert "paperchat ingest" in r.json()["error"]["message"] and "Traceback" not in r.text
        over = a.post("/v1/ask", json={"question": "What is EPPO?"})  # RATE + 1 in the minute
        assert over.status_code == 429 and over.json()["error"]["code"] == "rate_limit_exceeded", over.text
        assert 1 <= int(over.headers["Retry-After"]) <= 60
        assert "PAPERCHAT_API__REQUESTS_PER_MINUTE" in over.json()["error"]["message"]
        assert a.get("/v1/stats").status_code == 200  # reads are not counted
        other = b.post("/v1/ask", json={"question": "What is EPPO?"})  # the other key has its own budget
        assert other.status_code == 409, other.text
