"""`paperchat ingest --ray` on a real Ray cluster on 127.0.0.1: a head node and a second worker node, one CPU
each, started by this module (ray.cluster_utils, every process tracked by pid) and stopped afterwards, even on
failure. A Ray ingest must leave exactly what a plain ingest of the same files leaves (papers, chunk ids,
documents, metadata, vectors within 1e-5, collection members, answers to seed questions), and a job whose
driver is SIGKILLed midway must, run again, end at the same exact counts and rows."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import SAMPLE, paperchat_cmd

QUESTIONS = [  # from evals/sets/seed.jsonl
    "How does GCA generalize to longer contexts than it was trained on?",
    "Can pretraining on synthetic formal-language data help LLMs learn faster?",
    "Which papers study reinforcement learning from human feedback?",
]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A head and a worker node on 127.0.0.1 with 1 CPU each; yields the head's address."""
    from ray.cluster_utils import Cluster

    # Ray's own temp dir (sessions, logs, the address file `--ray auto` reads), short: its unix sockets live there
    ray_tmp = tempfile.mkdtemp(prefix="pcray", dir="/tmp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_TMPDIR", ray_tmp)
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        cluster = None
        try:
            node = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 100 * 2**20}
            cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
            cluster.add_node(**node)
            cluster.wait_for_nodes()
            yield cluster.address
        finally:
            if cluster is not None:
                cluster.shutdown()
            shutil.rmtree(ray_tmp, ignore_errors=True)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERCHAT_", "RAY_ADDRESS"))}
    return env | {"PAPERCHAT_HOME": str(home)} | extra


def _run(home: Path, *args: str, timeout: float = 240, **extra: str) -> str:
    res = subprocess.run(paperchat_cmd(*args), env=_env(home, **extra), capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, f"paperchat {' '.join(args)} exited {res.returncode}:\n{res.stderr[-3000:]}"
    return res.stdout


def _json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _stats(home: Path, **extra: str) -> dict[str, Any]:
    stats = json.loads(_run(home, "stats", "--json", **extra))
    return {"papers": stats["papers"], "chunks": stats["chunks"]}


def _rows(home: Path, **store: Any) -> dict[str, tuple[np.ndarray, dict[str, Any], str]]:
    """Every chunk row of the store under ``home``: id → (vector, metadata, document)."""
    from rag.config import Settings
    from rag.index.store import ChromaStore

    st = ChromaStore(Settings(home=home, **({"store": store} if store else {})), None, None)
    try:
        res = st.chroma_collection.get(include=["embeddings", "metadatas", "documents"])
    finally:
        st.close()
    return {cid: (np.asarray(v, dtype=np.float32), md, doc)
            for cid, v, md, doc in zip(res["ids"], res["embeddings"], res["metadatas"], res["documents"])}


def _assert_same_rows(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert sorted(got) == sorted(want)  # the same chunk ids: paper ids, content hashes, windows
    worst = max(float(np.abs(got[c][0] - want[c][0]).max()) for c in want)
    assert worst <= 1e-5, f"vectors differ by up to {worst}"
    assert all(got[c][1] == want[c][1] and got[c][2] == want[c][2] for c in want)


def _split_floats(value: Any) -> tuple[Any, list[float]]:
    """``value`` with each float replaced by a placeholder, and those floats in order."""
    nums: list[float] = []

    def walk(v: Any) -> Any:
        if isinstance(v, float):
            nums.append(v)
            return "<float>"
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), nums


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus ingested by one process, into the collection 'Sample'."""
    home = tmp_path_factory.mktemp("plain-home")
    report = json.loads(_run(home, "ingest", "--json", "--collection", "Sample", *map(str, SAMPLE)))
    assert report["added"] == 40 and not report["failed"]
    return home


def test_a_ray_ingest_stores_what_a_plain_ingest_stores(ray_cluster: str, plain: Path, tmp_path: Path) -> None:
    home = tmp_path / "ray-home"
    # `--ray auto` finds the cluster through RAY_ADDRESS, as on a machine where `ray start` set it
    report = json.loads(_run(home, "-v", "ingest", "--json", "--collection", "Sample", "--ray", "auto",
                             *map(str, SAMPLE), RAY_ADDRESS=ray_cluster))
    assert report["added"] == 40 and report["embedded_chunks"] == _stats(plain)["chunks"] and not report["failed"]
    assert report["collected"] == 40
    assert _stats(home) == _stats(plain)
    _assert_same_rows(_rows(home), _rows(plain))
    assert json.loads(_run(home, "collection", "list", "--json")) == [{"name": "Sample", "papers": 40}]

    questions = tmp_path / "questions.txt"
    questions.write_text("\n".join(QUESTIONS) + "\n")
    got, want = (_json_lines(_run(h, "ask", "--json", "--batch", str(questions))) for h in (home, plain))
    assert len(got) == len(QUESTIONS) == len(want)
    for a, b in zip(got, want):
        # vectors agree within 1e-5 (the workers batch texts differently), so scores may differ in the last
        # printed digit: every number within 1e-4, every other field exact
        (shape_a, nums_a), (shape_b, nums_b) = (_split_floats({k: v for k, v in x.items() if k != "timings"})
                                                for x in (a, b))
        assert shape_a == shape_b
        assert np.allclose(nums_a, nums_b, atol=1e-4)
    assert all(a["citations"] for a in got[:2])  # real answers, not two identical refusals

    # Re-run: nothing to embed, so no pipeline starts; the counts stay exact.
    again = json.loads(_run(home, "ingest", "--json", "--ray", "auto", *map(str, SAMPLE), RAY_ADDRESS=ray_cluster))
    assert (again["added"], again["updated"], again["unchanged"], again["embedded_chunks"]) == (0, 0, 40, 0)
    assert _stats(home) == _stats(plain)


def test_a_ray_ingest_with_full_text_stores_the_passages_a_plain_ingest_stores(ray_cluster: str,
                                                                               tmp_path: Path) -> None:
    """A PDF ingested with --full-text on the cluster: its abstract chunk embedded by a worker, its passages on
    the driver, the same rows as a plain ingest; the body-only fact is found with its page."""
    from tests.gfs_fixture import write_gfs

    pdf = write_gfs(tmp_path / "gfs.pdf")
    small = {"PAPERCHAT_INGEST__PASSAGE_TOKENS": "60"}  # several passages from three short pages
    homes = {"plain": tmp_path / "plain", "ray": tmp_path / "ray"}
    reports = {name: json.loads(_run(home, "ingest", "--json", "--full-text", *(["--ray", ray_cluster] if name == "ray"
                                     else []), str(pdf), **small)) for name, home in homes.items()}
    assert reports["ray"]["full_text"] == reports["plain"]["full_text"] == 1, reports
    assert reports["ray"]["embedded_passages"] == reports["plain"]["embedded_passages"] >= 2, reports
    got, want = _rows(homes["ray"]), _rows(homes["plain"])
    assert len(got) == 1 + reports["plain"]["embedded_passages"]
    _assert_same_rows(got, want)
    answer = json.loads(_run(homes["ray"], "ask", "--json", "What chunk size does the Google File System use?"))
    assert "64 MB" in answer["answer"] and answer["citations"][0]["page"] == 3, answer["answer"]


def test_a_killed_ray_ingest_resumes_to_exact_counts(ray_cluster: str, plain: Path, tmp_path: Path,
                                                    chroma_server: int) -> None:
    """The driver is SIGKILLed after its second written batch (4 papers each), writing to a `chroma run` server;
    the same command run again ends with exactly the plain ingest's papers, chunk ids and vectors."""
    home = tmp_path / "ray-home"
    server = {"PAPERCHAT_STORE__MODE": "server", "PAPERCHAT_STORE__PORT": str(chroma_server),
              "PAPERCHAT_STORE__CHROMA_COLLECTION": "ray-killed"}
    small = {"PAPERCHAT_RAY__BATCH_PAPERS": "4", "PAPERCHAT_INGEST__BATCH_PAPERS": "4"}
    cmd = paperchat_cmd("-v", "ingest", "--json", "--ray", ray_cluster, *map(str, SAMPLE))
    proc = subprocess.Popen(cmd, env=_env(home, **server, **small), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    written, log = 0, []
    deadline = time.monotonic() + 180
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            written += "batch written" in line
            if written == 2 or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    assert written == 2, "".join(log[-40:])
    assert proc.returncode == -signal.SIGKILL
    mid = _stats(home, **server)
    assert 8 <= mid["papers"] < 40, mid  # killed midway, not after the end

    report = json.loads(_run(home, "ingest", "--json", "--ray", ray_cluster, *map(str, SAMPLE), **server, **small))
    assert report["added"] + report["updated"] + report["unchanged"] == 40 and not report["failed"]
    assert report["unchanged"] >= 8
    assert _stats(home, **server) == _stats(plain)
    _assert_same_rows(_rows(home, mode="server", port=chroma_server, collection="ray-killed"), _rows(plain))


def test_a_ray_address_nobody_answers_is_a_clear_error_and_stores_nothing(tmp_path: Path) -> None:
    from tests.support.servers import free_port

    home = tmp_path / "home"
    res = subprocess.run(paperchat_cmd("ingest", "--ray", f"127.0.0.1:{free_port()}", str(SAMPLE[0])),
                         env=_env(home, RAY_USAGE_STATS_ENABLED="0"), capture_output=True, text=True, timeout=180)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "cannot join the Ray cluster at 127.0.0.1:" in res.stderr and "--ray HOST:PORT" in res.stderr
    assert _stats(home) == {"papers": 0, "chunks": 0}
