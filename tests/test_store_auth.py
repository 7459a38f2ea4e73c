"""Authenticated and hosted Chroma: server mode with a token, and cloud mode on CloudClient, with real Chroma.

`chroma run` (Chroma 1.x, the Rust server) has no token authentication of its own, so the server here is a real
`chroma run` behind tests.support.servers.TokenGate on 127.0.0.1, which admits a request only with the token and refuses
it the way Chroma's token authentication did (403 AuthError). Cloud mode is pointed at the same gate
(`store.cloud_url`, CloudClient's own host override) or at closed and silent loopback ports: no test here resolves a
name other than loopback, which the `loopback_only` fixture enforces.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE, paperchat_cmd
from pydantic import ValidationError

from rag.config import get_settings
from rag.errors import ConfigError, UpstreamError
from rag.index.store import ChromaStore
from tests.support.servers import ChromaServer, free_port

ROOT = Path(__file__).resolve().parents[1]

TOKEN = "pc-test-token-7f3a9c"  # noqa: S105 - a test secret, searched for in every output below
KEY = "ck-test-key-4be21d"
EPPO_FILE = next(p for p in SAMPLE if p.name.startswith("003_"))
QUESTION = "What does the EPPO algorithm penalize when training reward models for RLHF?"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Name resolution here answers loopback names only: a test that would reach Chroma Cloud (or anything on
    the internet) fails at once instead."""
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"test_store_auth resolves loopback only, not {name!r}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real `chroma run` that admits only `Authorization: Bearer TOKEN`."""
    with ChromaServer(tmp_path_factory.mktemp("chroma-auth") / "db", ready_timeout_s=60, token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def gated_x(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real `chroma run` that admits only `X-Chroma-Token: KEY` (what CloudClient sends)."""
    with ChromaServer(tmp_path_factory.mktemp("chroma-auth-x") / "db", ready_timeout_s=60, token=KEY,
                      token_header="X-Chroma-Token") as server:
        yield server


def server_store(port: int, **store: Any) -> dict[str, Any]:
    return {"mode": "server", "port": port, "timeout_s": 10, **store}


def open_store(model: str | None = "test-model", **store: Any) -> ChromaStore:
    return ChromaStore(get_settings(store=store), model, 4 if model else None)


def test_the_right_token_ingests_and_answers_through_the_gate(gated: ChromaServer, make_runtime) -> None:
    from rag.qa.chain import AnswerChain

    assert gated.gate is not None
    before_admitted, before_refused = gated.gate.admitted, gated.gate.refused
    rt = make_runtime(store=server_store(gated.port, token=TOKEN, collection="auth-e2e"))
    assert rt.ingestor(progress=False).ingest([EPPO_FILE]).added > 0
    answer = AnswerChain(rt).ask(QUESTION)
    assert answer.answerable and "EPPO" in answer.citations[0].abstract
    assert rt.store.count_chunks() > 0
    # Every request carried the token: the gate let many through and refused none.
    assert gated.gate.admitted - before_admitted > 5
    assert gated.gate.refused == before_refused


def test_a_missing_or_wrong_token_is_a_clear_error_naming_the_server_and_the_setting(gated: ChromaServer) -> None:
    where = f"the Chroma server at 127.0.0.1:{gated.port}"
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as missing:
        open_store(**server_store(gated.port, collection="auth-errors"))
    message = str(missing.value)
    assert f"{where} requires authentication (HTTP 403 Forbidden) and no token is set" in message
    assert "set PAPERCHAT_STORE__TOKEN" in message and "PAPERCHAT_STORE__TOKEN_HEADER=X-Chroma-Token" in message

    with pytest.raises(ConfigError) as wrong:
        open_store(**server_store(gated.port, token="not-" + TOKEN, collection="auth-errors"))
    message = str(wrong.value)
    assert f"{where} refused the token in PAPERCHAT_STORE__TOKEN (HTTP 403 Forbidden), sent as Authorization" \
        in message
    assert "not-" + TOKEN not in message and TOKEN not in message

    # The right token in the wrong header is refused too, and the message names the header it used.
    with pytest.raises(ConfigError, match="sent as X-Chroma-Token"):
        open_store(**server_store(gated.port, token=TOKEN, token_header="X-Chroma-Token", collection="auth-errors"))
    assert time.monotonic() - t0 < 10  # told at once, no retries or hangs

    # Nothing was created by the refused attempts.
    ok = open_store(None, **server_store(gated.port, token=TOKEN, collection="auth-errors"))
    assert ok.count_chunks() == 0 and ok.model_name is None


def test_a_token_rotated_on_the_server_is_a_clear_error_and_the_store_recovers_without_a_restart(
        gated: ChromaServer) -> None:
    assert gated.gate is not None
    store = open_store(**server_store(gated.port, token=TOKEN, collection="auth-rotate"))
    assert store.count_chunks() == 0
    gated.gate.token = "rotated-" + TOKEN
    try:
        with pytest.raises(ConfigError) as err:
            store.count_chunks()
        assert f"the Chroma server at 127.0.0.1:{gated.port} refused the token in PAPERCHAT_STORE__TOKEN" \
            in str(err.value)
        with pytest.raises(ConfigError, match="refused the token"):
            list(store.iter_metadata())  # generators too
    finally:
        gated.gate.token = TOKEN
    assert store.count_chunks() == 0 and store.generation == 0  # the same store object works again


def test_extra_headers_carry_credentials_for_a_gateway(gated_x: ChromaServer) -> None:
    store = open_store(**server_store(gated_x.port, headers={"X-Chroma-Token": KEY}, collection="auth-headers"))
    assert store.count_chunks() == 0
    with pytest.raises(ConfigError, match="requires authentication"):
        open_store(**server_store(gated_x.port, headers={"X-Chroma-Token": "nope"}, collection="auth-headers"))


def test_an_unknown_tenant_or_database_names_the_settings(gated: ChromaServer) -> None:
    with pytest.raises(ConfigError) as err:
        open_store(**server_store(gated.port, token=TOKEN, database="no_such_db"))
    message = str(err.value)
    assert f"the Chroma server at 127.0.0.1:{gated.port} has no tenant 'default_tenant' with a database " \
           "'no_such_db'" in message
    assert "PAPERCHAT_STORE__TENANT / PAPERCHAT_STORE__DATABASE" in message


def test_the_secrets_never_reach_logs_dumps_or_errors(gated: ChromaServer, caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    settings = get_settings(store=server_store(gated.port, token=TOKEN, headers={"X-Lab-Key": KEY},
                                               collection="auth-secrets"))
    assert settings.store.token is not None and settings.store.token.get_secret_value() == TOKEN
    shown = [repr(settings), str(settings), settings.model_dump_json(), str(settings.model_dump(mode="json")),
             repr(settings.store), str(settings.with_overrides(store={"timeout_s": 5}))]
    for text in shown:
        assert TOKEN not in text and KEY not in text
    # with_overrides keeps the secrets themselves (not their masks)
    copy = settings.with_overrides(store={"timeout_s": 5})
    assert copy.store.token is not None and copy.store.token.get_secret_value() == TOKEN
    assert copy.store.headers["X-Lab-Key"].get_secret_value() == KEY

    with caplog.at_level(logging.DEBUG):  # every logger, httpx and httpcore included
        store = ChromaStore(settings, "test-model", 4)
        store.count_chunks()
        with pytest.raises(ConfigError) as err:
            ChromaStore(settings.with_overrides(store={"token": "wrong-" + KEY}), "test-model", 4)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request" in logged or "send_request_headers" in logged  # the HTTP traffic was logged...
    assert TOKEN not in logged and KEY not in logged  # ...without the credentials
    assert KEY not in str(err.value) and TOKEN not in store.location


def test_settings_reject_bad_credentials_without_quoting_them() -> None:
    for bad in ["two words" + KEY, "tab\there" + KEY, "café" + KEY, " \n"]:
        with pytest.raises(ValidationError) as err:
            get_settings(store={"token": bad})
        assert KEY not in str(err.value)
        assert "printable ASCII" in err.value.errors()[0]["msg"]
    assert get_settings(store={"token": f" {TOKEN}\n"}).store.token.get_secret_value() == TOKEN  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="is not an HTTP header name"):
        get_settings(store={"headers": {"X Lab": KEY}})
    with pytest.raises(ValidationError, match="holds a line break"):
        get_settings(store={"headers": {"X-Lab": KEY + "\r\nInjected: 1"}})
    with pytest.raises(ValidationError, match="keep one"):
        get_settings(store={"token": TOKEN, "headers": {"authorization": "Basic eDp5"}})
    for url in ["ftp://api.example", "https://user:pw@api.example", "https://api.example/v2", "api.example",
                "https://api.example:99999"]:
        with pytest.raises(ValidationError, match="cloud_url"):
            get_settings(store={"cloud_url": url})
    assert get_settings(store={"cloud_url": "https://api.example:8443/"}).store.cloud_url == "https://api.example:8443"
    with pytest.raises(ValidationError):
        get_settings(store={"mode": "hosted"})


def test_the_cli_reads_the_token_from_the_environment_and_never_prints_it(gated: ChromaServer) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PAPERCHAT_STORE__MODE": "server",
           "PAPERCHAT_STORE__PORT": str(gated.port), "PAPERCHAT_STORE__CHROMA_COLLECTION": "auth-cli",
           "PAPERCHAT_STORE__TOKEN": TOKEN, "PAPERCHAT_STORE__TIMEOUT_S": "10"}
    ok = subprocess.run(paperchat_cmd("-vv", "stats", "--json"), cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert f'"store_location": "http://127.0.0.1:{gated.port}"' in ok.stdout
    assert TOKEN not in ok.stdout + ok.stderr
    assert "HTTP Request" in ok.stderr  # -vv logged the requests, not their credentials

    env["PAPERCHAT_STORE__TOKEN"] = "wrong-" + TOKEN
    bad = subprocess.run(paperchat_cmd("-vv", "stats", "--json"), cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2
    assert f"paperchat: error: the Chroma server at 127.0.0.1:{gated.port} refused the token in " \
           "PAPERCHAT_STORE__TOKEN" in bad.stderr
    assert TOKEN not in bad.stdout + bad.stderr and "Traceback" not in bad.stderr


# ---- cloud mode --------------------------------------------------------------------------------------------
def cloud_store(url: str, **store: Any) -> dict[str, Any]:
    return {"mode": "cloud", "cloud_url": url, "timeout_s": 10, **store}


def test_cloud_mode_without_an_api_key_names_the_setting() -> None:
    # The real default endpoint: a connection attempt would fail in loopback_only's resolver (an UpstreamError);
    # the ConfigError says it was refused before any.
    with pytest.raises(ConfigError, match=r"store.mode=cloud needs a Chroma Cloud API key: set "
                                          r"PAPERCHAT_STORE__API_KEY"):
        open_store(mode="cloud")


def test_cloud_mode_speaks_cloudclient_with_the_key_and_refuses_a_wrong_one(gated_x: ChromaServer) -> None:
    """CloudClient against a loopback stand-in for the Cloud API: a real Chroma that admits `X-Chroma-Token: KEY`
    only, whose identity (default tenant, one database) is what CloudClient resolves the tenant from."""
    url = f"http://127.0.0.1:{gated_x.port}"
    store = open_store(**cloud_store(url, api_key=KEY, collection="cloud-ok"))
    assert type(store.client).__name__ == "Client" and store.client.tenant == "default_tenant"
    assert store.location == f"{url}/default_tenant/default_database"
    assert store.count_chunks() == 0

    with pytest.raises(ConfigError) as err:
        open_store(**cloud_store(url, api_key="wrong-" + KEY, collection="cloud-ok"))
    message = str(err.value)
    assert f"Chroma Cloud at 127.0.0.1:{gated_x.port} refused the API key in PAPERCHAT_STORE__API_KEY (HTTP 403" \
        in message
    assert "PAPERCHAT_STORE__TENANT and PAPERCHAT_STORE__DATABASE" in message and KEY not in message


def test_cloud_mode_unreachable_or_silent_is_a_clear_error_within_the_timeout() -> None:
    closed = free_port()
    t0 = time.monotonic()
    with pytest.raises(UpstreamError) as err:
        open_store(**cloud_store(f"https://127.0.0.1:{closed}", api_key=KEY))
    assert time.monotonic() - t0 < 5
    message = str(err.value)
    assert f"Chroma Cloud at 127.0.0.1:{closed} is not reachable" in message
    assert "PAPERCHAT_STORE__CLOUD_URL" in message and "chroma run" not in message and KEY not in message

    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(UpstreamError, match=f"Chroma Cloud at 127.0.0.1:{port} is not reachable"):
            open_store(**cloud_store(f"https://127.0.0.1:{port}", api_key=KEY, timeout_s=1))
        assert time.monotonic() - t0 < 5  # store.timeout_s, not chromadb's unbounded first requests


def test_cloud_mode_defaults_to_chroma_clouds_endpoint_and_reports_it_unreachable() -> None:
    """The default endpoint, with resolution blocked by loopback_only: what an offline machine sees."""
    t0 = time.monotonic()
    with pytest.raises(UpstreamError) as err:
        open_store(mode="cloud", api_key=KEY, timeout_s=2)
    assert time.monotonic() - t0 < 5
    message = str(err.value)
    assert "Chroma Cloud at api.trychroma.com:443 is not reachable" in message and KEY not in message
    assert "resolves loopback only" in message  # stopped by the guard, not by a network that happened to be down
