"""Store faults with real Chroma: a `chroma run` server killed and restarted under a live Runtime (clear error
while it is down, working again once it is back, no restart), and the embedded store refusing a second
process at once."""

from __future__ import annotations

import html
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE

from rag.config import get_settings
from rag.errors import UpstreamError
from rag.index.store import ChromaStore
from rag.qa.chain import AnswerChain
from tests.support.servers import ChromaServer, free_port

ROOT = Path(__file__).resolve().parents[1]

EPPO_FILE = next(p for p in SAMPLE if p.name.startswith("003_"))
QUESTION = "What does the EPPO algorithm penalize when training reward models for RLHF?"


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    """A server of this test's own: the tests stop it and start it again on the same path and port."""
    with ChromaServer(tmp_path / "chroma-db", ready_timeout_s=60) as server:
        yield server


def plain(message: str) -> str:
    return html.unescape(message).replace("\\", "")


def test_a_chroma_server_that_dies_and_comes_back_needs_no_restart(chroma: ChromaServer, make_runtime) -> None:
    from ui.app import build_app
    from ui.tabs.session import Session

    rt = make_runtime(store={"mode": "server", "port": chroma.port, "timeout_s": 10})
    assert rt.ingestor(progress=False).ingest([EPPO_FILE]).added > 0
    chain = AnswerChain(rt)
    ask = next(f.fn for f in build_app(rt).fns.values() if f.name == "ask")
    state = Session()

    def ask_ui() -> str:
        outputs = list(ask(QUESTION, [], state, 5, "extractive", None, None, None, None))
        return outputs[-1][0][-1]["content"]

    first = chain.ask(QUESTION)
    assert first.answerable and "EPPO" in first.citations[0].abstract
    assert "pc-error" not in ask_ui()

    chroma.stop()
    where = f"127.0.0.1:{chroma.port}"
    for _ in range(2):  # the first call finds the server gone, the next one fails to reconnect
        t0 = time.monotonic()
        with pytest.raises(UpstreamError) as err:
            chain.ask(QUESTION)
        assert time.monotonic() - t0 < 5
        message = str(err.value)
        assert f"the Chroma server at {where} is not reachable" in message, message
        assert f"chroma run --path DIR --host 127.0.0.1 --port {chroma.port}" in message
        assert "reconnects on the next request" in message and "Traceback" not in message
    with pytest.raises(UpstreamError, match="not reachable"):
        rt.store.count_chunks()
    shown = ask_ui()
    assert "pc-error" in shown and f"the Chroma server at {where} is not reachable" in plain(shown)

    chroma.start()  # same path, same port
    again = chain.ask(QUESTION)  # the same Runtime, store and chain
    assert again.answerable and again.cited_ids == first.cited_ids
    assert rt.store.count_chunks() > 0 and rt.ingestor(progress=False).ingest([EPPO_FILE]).added == 0
    shown = ask_ui()
    assert "pc-error" not in shown and "pc-cite" in shown


def test_opening_a_server_store_that_is_down_is_a_clear_error(make_runtime) -> None:
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(UpstreamError, match=rf"the Chroma server at 127.0.0.1:{port} is not reachable.*chroma run"):
        ChromaStore(get_settings(store={"mode": "server", "port": port}), None, None)
    assert time.monotonic() - t0 < 5


OPEN_IN_CHILD = """
import json, sys, time
import chromadb  # imported before the clock starts: only opening the store is timed
from rag.config import get_settings
from rag.errors import PaperchatError
from rag.index.store import ChromaStore
t0 = time.monotonic()
try:
    ChromaStore(get_settings(), None, None).close()
    out = {"ok": True}
except PaperchatError as e:
    out = {"ok": False, "type": type(e).__name__, "message": str(e)}
out["seconds"] = time.monotonic() - t0
print(json.dumps(out))
"""


def test_a_second_process_on_the_embedded_store_is_refused_at_once(make_runtime, paperchat_home: Path) -> None:
    import json

    rt = make_runtime()
    assert rt.store.count_chunks() == 0  # this process now holds the embedded store

    def open_in_child() -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", OPEN_IN_CHILD], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    refused = open_in_child()
    assert refused["ok"] is False and refused["type"] == "ConfigError"
    assert refused["seconds"] < 5  # told at once, not left waiting on the lock
    assert f"is in use by pid {os.getpid()}" in refused["message"]
    assert "PAPERCHAT_STORE__MODE=server" in refused["message"] and "chroma run" in refused["message"]
    rt.close()  # released: the next process gets the store
    assert open_in_child()["ok"] is True
