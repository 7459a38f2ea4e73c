"""Shared fixtures: an environment free of the developer's PAPERCHAT_* settings, an isolated PAPERCHAT_HOME
per test, one loaded embedding model per session, the fake OpenAI-compatible server, and a real `chroma run`
on 127.0.0.1 for the server-mode tests."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ChromaServer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = sorted((ROOT / "data" / "sample").glob("*.txt"))


def running_in_ci() -> bool:
    """True on a CI runner (GitHub, GitLab and most others set CI=true)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require_data(*paths: Path) -> None:
    """Stop a test whose input under ../shared/datasets is missing: skip it on a developer's machine, but fail
    it in CI, where a silent skip would report the suite green without these tests having run."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if not missing:
        return
    msg = f"test data missing: {', '.join(missing)} (the shared datasets go beside the checkout, in ../shared)"
    if running_in_ci():
        pytest.fail(f"{msg}; CI=true, so this is a failure, not a skip: provide the datasets to the CI job",
                    pytrace=False)
    pytest.skip(msg)


def require_tool(name: str, install: str) -> str:
    """The path of the command ``name``; missing, the test is skipped on a developer's machine with how to
    ``install`` it (``make test`` installs it), and fails in CI, where a skip would hide a test that never ran."""
    found = shutil.which(name)
    if found:
        return found
    msg = f"the command {name!r} is not installed ({install}; `make test` installs it)"
    if running_in_ci():
        pytest.fail(f"{msg}; CI=true, so this is a failure, not a skip", pytrace=False)
    pytest.skip(msg)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires_data(*paths): the test reads these files under ../shared; "
                                       "missing, it is skipped locally and fails in CI (conftest.require_data)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires_data"):
        require_data(*mark.args)


@pytest.fixture(scope="session", autouse=True)
def clean_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No PAPERCHAT_* variable, ~/.paperchat/config.toml or ./.env of the developer's reaches any test.

    Session-scoped so that it holds before module- and session-scoped fixtures (the shared model, the
    stores some modules ingest once) read their settings, not only inside each test."""
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("PAPERCHAT_")]:
            mp.delenv(key)
        mp.setenv("PAPERCHAT_HOME", str(tmp_path_factory.mktemp("session-home")))
        # The offline rules judge cited statements unless a test asks for the LLM judge (verify.judge): a stub's
        # scripted replies go to the answers they script (tests/test_llm_judge.py drives the judge).
        mp.setenv("PAPERCHAT_VERIFY__JUDGE", "rules")
        # One ONNX export of the encoder for the whole session instead of one per test home (each costs ~10 s of
        # export and int8 checks, and a process that only asks on a home without one loads torch). Tests of the
        # export itself take `export_per_home`.
        mp.setenv("PAPERCHAT_EMBEDDINGS__EXPORT_CACHE", str(tmp_path_factory.mktemp("encoder-exports")))
        mp.chdir(tmp_path_factory.mktemp("session-cwd"))
        yield


@pytest.fixture(autouse=True)
def paperchat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own home and an empty working directory; whatever it sets is undone after it."""
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERCHAT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def export_per_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder's ONNX export kept in each home's own cache, as without ``embeddings.export_cache``."""
    monkeypatch.delenv("PAPERCHAT_EMBEDDINGS__EXPORT_CACHE", raising=False)


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


def half_sample_home(home: Path, embedder) -> Path:
    """``home`` holding the second sample file's 20 papers, ingested in-process with the session's model and
    closed again, for a server process the test starts over it."""
    from rag.config import get_settings
    from rag.runtime import Runtime

    rt = Runtime(get_settings(home=home), _embedder=embedder)
    try:
        assert rt.ingestor(progress=False).ingest([SAMPLE[1]]).added == 20
    finally:
        rt.close()
    return home


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


def paperchat_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "rag.cli", *args]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a real `chroma run` on 127.0.0.1, started for the session and stopped afterwards."""
    with ChromaServer(tmp_path_factory.mktemp("chroma-server") / "db", ready_timeout_s=60) as server:
        yield server.port
