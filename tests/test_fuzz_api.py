"""`paperchat api` under generated requests (issue 33 item 2): Hypothesis draws requests over every operation
of the server's own OpenAPI document (tests/support/openapi_fuzz.py), from valid to malformed, and sends them
over HTTP to a real ``paperchat api`` process on 127.0.0.1 over half the sample corpus.

For every request: no 5xx; no traceback or source path in the body; an error is an OpenAI error object; a
success is JSON (or an SSE stream ending in ``[DONE]``); and the process is still alive and answers its health
check. 300 requests in the default run (derandomized), 2,500 with random seeds under ``pytest --long``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, half_sample_home, paperchat_cmd
from hypothesis import given, settings

from tests.support.fuzz import RANDOM, REPRODUCIBLE
from tests.support.openapi_fuzz import Request, requests
from tests.support.processes import wait_for_port
from tests.support.servers import free_port, server_env

KEY = "pc-fuzz-key"
DEFAULT_EXAMPLES, LONG_EXAMPLES = 300, 2500


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log
        self.http = httpx.Client(base_url=url, timeout=120, trust_env=False,
                                 headers={"Authorization": f"Bearer {KEY}"})
        self.sent = 0


@pytest.fixture(scope="module")
def server(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from ui.api import key_hash

    home = half_sample_home(tmp_path_factory.mktemp("fuzz-api") / "home", embedder)
    port = free_port()
    env = server_env(home, None) | {"OMP_NUM_THREADS": "1", "PAPERCHAT_API__KEY_HASHES": json.dumps([key_hash(KEY)]),
                                    "PAPERCHAT_API__REQUESTS_PER_MINUTE": "100000"}
    log = home / "api.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(paperchat_cmd("api", "--port", str(port)), cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    srv = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_for_port(port, proc, timeout_s=300)
        yield srv
    finally:
        srv.http.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "API request failed" not in text, text[-3000:]


def _document(server: Server) -> dict[str, Any]:
    doc = server.http.get("/openapi.json")
    assert doc.status_code == 200
    return dict(doc.json())


def check(server: Server, req: Request) -> None:
    r = server.http.request(req.method, req.path, params=req.query, content=req.body,
                            headers={"content-type": "application/json"} if req.body is not None else {})
    server.sent += 1
    body = r.text
    assert r.status_code < 500, (r.status_code, body[:500])
    assert "Traceback" not in body and 'File "/' not in body, body[:500]
    if r.status_code >= 400:
        error = r.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["message"], body[:500]
    elif r.headers["content-type"].startswith("text/event-stream"):
        assert body.rstrip().endswith("data: [DONE]"), body[-300:]
    else:
        r.json()
    assert server.proc.poll() is None, "the server process exited"
    assert server.http.get("/healthz").status_code == 200


def _settings(request: pytest.FixtureRequest) -> settings:
    long = bool(request.config.getoption("--long", default=False))
    return settings(settings.get_profile(RANDOM if long else REPRODUCIBLE),
                    max_examples=LONG_EXAMPLES if long else DEFAULT_EXAMPLES)


def test_generated_requests_get_no_server_error_and_the_server_stays_up(server: Server,
                                                                        request: pytest.FixtureRequest) -> None:
    started = time.monotonic()

    @_settings(request)
    @given(requests(_document(server)))
    def fuzz(req: Request) -> None:
        check(server, req)

    fuzz()
    elapsed = time.monotonic() - started
    print(f"\n[fuzz-api] {server.sent} generated requests in {elapsed:.0f} s: no 5xx, server alive")
    assert server.sent >= DEFAULT_EXAMPLES  # the requests really went out
