"""Shared fixtures: isolated PAPERCHAT_HOME per test, one loaded embedding model per session,
and a real `chroma run` server on 127.0.0.1 for the server-mode tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = sorted((ROOT / "data" / "sample").glob("*.txt"))
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def paperchat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own home; a developer's ~/.paperchat is never touched."""
    for key in list(os.environ):
        if key.startswith("PAPERCHAT_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERCHAT_HOME", str(home))
    monkeypatch.chdir(tmp_path)  # no stray .env from the repo
    return home


@pytest.fixture(scope="session")
def embedder():
    """The real bundled all-MiniLM-L6-v2, loaded once."""
    from rag.config import Settings, prepare_runtime
    from rag.index.embeddings import SentenceTransformerEmbedder

    settings = Settings()
    prepare_runtime(settings)
    return SentenceTransformerEmbedder(settings.embeddings)


@pytest.fixture
def make_runtime(embedder):
    """Build a Runtime over the test's home (plus overrides) that shares the session's model."""
    from rag.config import get_settings
    from rag.runtime import Runtime

    made = []

    def make(**overrides):
        rt = Runtime(get_settings(**overrides), _embedder=embedder)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()


STUB_KEY = "sk-test"


@pytest.fixture(scope="module")
def server():
    """The OpenAI-compatible stub on 127.0.0.1 (tests/fakes), one per test module, key STUB_KEY."""
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(model="stub-model", api_key=STUB_KEY) as srv:
        yield srv


@pytest.fixture
def srv(server):
    """The module's stub server with its queues and recorded requests cleared."""
    server.reset()
    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def paperchat_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "rag.cli", *args]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real `chroma run` on 127.0.0.1, started for the session and stopped afterwards."""
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if not exe:
        pytest.fail("the chroma CLI is not installed (it comes with chromadb)")
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "w")
    proc = subprocess.Popen([exe, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
                            start_new_session=True)  # its own process group, so every child stops with it
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"chroma run exited: {(data / 'server.log').read_text()[-2000:]}")
            time.sleep(0.2)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("chroma run did not start within 60 s")
    yield port
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    log.close()
