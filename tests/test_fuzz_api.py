"""`paperchat api` under generated requests (issue 33 item 2): Hypothesis draws requests over every operation
of the server's own OpenAPI document (tests/support/openapi_fuzz.py), from valid to malformed, and sends them
over HTTP to a real ``paperchat api`` process on 127.0.0.1 over half the sample corpus.

For every request: no 5xx; no traceback or source path in the body; an error is an OpenAI error object; a
success is JSON valid against the response schema the OpenAPI document publishes for it (or an SSE stream ending
in ``[DONE]``); ``/v1/chat/completions`` answers (and each stream chunk) parse as the openai client's own
``ChatCompletion`` / ``ChatCompletionChunk``; every answer turn (``/v1/ask``, and the ``paperchat`` turn of a
completion) reads back through ``rag.answer.Answer.from_dict`` unchanged; and the process is still alive and
answers its health check. 300 requests in the default run (derandomized), 2,500 with random seeds under
``pytest --long``.
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
from tests.support.openapi_fuzz import Request, check_response, requests
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
        self.doc: dict[str, Any] = {}
        self.validated: dict[str, int] = {}  # 2xx bodies checked against a schema, by operation


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


def _answer_turn(turn: dict[str, Any]) -> None:
    """An answer as ``paperchat ask --json`` prints it: ``Answer.from_dict`` reads it back to the same JSON."""
    from rag.answer import Answer

    assert Answer.from_dict(turn).to_dict() == json.loads(json.dumps(turn)), turn


def _count(server: Server, req: Request, how: str = "") -> None:
    key = f"{req.method} {req.template}{how}"
    server.validated[key] = server.validated.get(key, 0) + 1


def _stream(server: Server, req: Request, body: str) -> None:
    from openai.types.chat import ChatCompletionChunk

    assert body.rstrip().endswith("data: [DONE]"), body[-300:]
    chunks = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    assert chunks, body[:300]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    _answer_turn(chunks[-1]["paperchat"])
    _count(server, req, " (stream)")


def _success(server: Server, req: Request, status: int, data: Any) -> None:
    check_response(server.doc, req, status, data)
    if req.template == "/v1/chat/completions":
        from openai.types.chat import ChatCompletion

        ChatCompletion.model_validate(data)
        _answer_turn(data["choices"][0]["message"]["paperchat"])
    elif req.template == "/v1/ask":
        _answer_turn(data)
    _count(server, req)


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
        if r.status_code == 422:  # the one error status every operation with input publishes
            check_response(server.doc, req, 422, r.json())
    elif r.headers["content-type"].startswith("text/event-stream"):
        _stream(server, req, body)
    else:
        _success(server, req, r.status_code, r.json())
    assert server.proc.poll() is None, "the server process exited"
    assert server.http.get("/healthz").status_code == 200


def _settings(request: pytest.FixtureRequest) -> settings:
    long = bool(request.config.getoption("--long", default=False))
    return settings(settings.get_profile(RANDOM if long else REPRODUCIBLE),
                    max_examples=LONG_EXAMPLES if long else DEFAULT_EXAMPLES)


def test_generated_requests_get_no_server_error_and_the_server_stays_up(server: Server,
                                                                        request: pytest.FixtureRequest) -> None:
    started = time.monotonic()
    server.doc = _document(server)
    # One valid request per operation first, so every success schema is checked whatever the fuzzer reaches.
    some_id = server.http.get("/v1/papers", params={"limit": 1}).json()["papers"][0]["id"]
    chat_op = "/v1/chat/completions"
    chat = {"model": "paperchat", "messages": [{"role": "user", "content": "What is EPPO?"}]}
    for known in [Request("POST", chat_op, body=json.dumps(chat).encode(), template=chat_op),
                  Request("POST", chat_op, body=json.dumps(chat | {"stream": True}).encode(), template=chat_op),
                  Request("GET", f"/v1/papers/{some_id}", template="/v1/papers/{paper_id}")]:
        check(server, known)

    @_settings(request)
    @given(requests(server.doc))
    def fuzz(req: Request) -> None:
        check(server, req)

    fuzz()
    elapsed = time.monotonic() - started
    print(f"\n[fuzz-api] {server.sent} generated requests in {elapsed:.0f} s: no 5xx, server alive; 2xx bodies "
          f"valid against their schemas: {sum(server.validated.values())} ({server.validated})")
    assert server.sent >= DEFAULT_EXAMPLES  # the requests really went out
    # successes of every kind were checked, not only errors (the operations a derandomized run reaches)
    every = {"POST /v1/ask", "POST /v1/search", "GET /v1/papers", "GET /v1/stats", "POST /v1/chat/completions",
             "POST /v1/chat/completions (stream)", "GET /v1/papers/{paper_id}"}
    assert every <= set(server.validated), server.validated
