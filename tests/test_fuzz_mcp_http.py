"""`paperchat mcp --transport http` (streamable HTTP) under malformed tool calls and malformed HTTP (issue 33
item 2), against one real server process on 127.0.0.1 over half the sample corpus:

* tool calls drawn from each tool's input schema, and unknown tools, through the official SDK client over HTTP
  (tests/support/mcp_fuzz.py, as the stdio fuzzer sends them);
* raw HTTP requests to ``/mcp`` no SDK client would send: JSON-RPC messages with drawn methods, ids, versions
  and params (tool calls with drawn arguments, resource reads of drawn URIs), batches, any JSON, raw bytes;
  with a live session id, a made-up one or none; odd ``Accept``/``Content-Type``/protocol-version headers;
  POST, GET, DELETE and PUT.

After every one: no 5xx; no traceback or source path in the body; a JSON body parses (an SSE body: every
``data:`` line); the process alive and ``library_stats`` answering over the SDK's own HTTP session; and when
the server stops, no traceback in its log. 20 tool calls + 100 raw requests by default (derandomized, ~10 s
once the server is up), 300 + 1,000 with random seeds under ``pytest --long``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, half_sample_home, paperchat_cmd
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzz import RANDOM, REPRODUCIBLE
from tests.support.mcp_fuzz import Session, arguments, tool_calls
from tests.support.openapi_fuzz import ANY_JSON, JSON_LEAF, TEXT
from tests.support.processes import wait_for_port
from tests.support.servers import free_port, server_env

CALLS, RAW = (20, 300), (100, 1000)  # examples of each kind: (default, --long)
VERSION = "2025-06-18"
ACCEPT_BOTH = "application/json, text/event-stream"
METHODS = ["tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list",
           "prompts/list", "prompts/get", "ping", "initialize", "notifications/initialized",
           "notifications/cancelled", "completion/complete", "logging/setLevel", "no/such/method"]


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    session: Session
    tools: list[Any]


class RawSession:
    """A session opened by hand (``initialize`` + ``notifications/initialized``) whose id raw requests carry."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=120, trust_env=False)
        self.sid = ""
        self.sent = 0

    def open(self) -> None:
        hello = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        r = self.http.post(self.url, json=init, headers={"accept": ACCEPT_BOTH})
        assert r.status_code == 200, r.text[:500]
        self.sid = r.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = self.http.post(self.url, json=done, headers=self._headers(ACCEPT_BOTH, VERSION))
        assert r.status_code == 202, r.text[:500]

    def _headers(self, accept: str | None, version: str | None, sid: str | None = None) -> dict[str, str]:
        h = {"content-type": "application/json", "mcp-session-id": self.sid if sid is None else sid}
        h |= {"accept": accept} if accept is not None else {}
        return h | ({"mcp-protocol-version": version} if version is not None else {})


@pytest.fixture(scope="module")
def server(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = half_sample_home(tmp_path_factory.mktemp("fuzz-mcp-http") / "home", embedder)
    port = free_port()
    env = server_env(home, 10_000) | {"OMP_NUM_THREADS": "1"}  # the question rate limit is not under test here
    log = home / "mcp.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(paperchat_cmd("mcp", "--transport", "http", "--port", str(port)), cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    session = Session(url)
    try:
        wait_for_port(port, proc, timeout_s=300)
        tools = session.start()
        yield Server(proc, url, log, session, tools)
    finally:
        session.stop()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


def _settings(request: pytest.FixtureRequest, counts: tuple[int, int]) -> settings:
    long = bool(request.config.getoption("--long", default=False))
    return settings(settings.get_profile(RANDOM if long else REPRODUCIBLE), max_examples=counts[long])


def _no_leak(text: str) -> None:
    assert "Traceback" not in text and 'File "/' not in text, text[:500]


def test_malformed_tool_calls_over_http_never_break_the_session(server: Server,
                                                                 request: pytest.FixtureRequest) -> None:
    assert len(server.tools) == 8  # the read-only tools, saved conversations included

    @_settings(request, CALLS)
    @given(tool_calls(server.tools))
    def fuzz(call: tuple[str, dict[str, Any]]) -> None:
        _no_leak(server.session.call(*call))
        assert server.proc.poll() is None, "the server process exited"

    fuzz()
    print(f"\n[fuzz-mcp-http] {server.session.calls} generated tool calls over streamable HTTP: session alive")
    assert server.session.calls >= CALLS[0]
    assert "[1]" in server.session.call("ask_papers", {"question": "What do these papers say about reinforcement "
                                                                  "learning from human feedback?"})


@dataclass
class Raw:
    method: str
    session: str  # "live", "made-up" or "none"
    accept: str | None
    version: str | None
    body: bytes | None

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        return (f"{self.method} session={self.session} accept={self.accept!r} version={self.version!r} "
                f"body={self.body[:300] if self.body else None!r}")


def _params(tools: list[Any]) -> st.SearchStrategy[Any]:
    calls = [st.fixed_dictionaries({"name": st.just(t.name), "arguments": arguments(t)}) for t in tools]
    read = st.fixed_dictionaries({"uri": st.sampled_from(["paper://", "paper://x/../../etc/passwd", "file:///etc/passwd"])
                                  | TEXT.map(lambda s: "paper://" + s)})
    return st.one_of(*calls, read, ANY_JSON)


def _message(tools: list[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0") | st.just("2.0") | JSON_LEAF, "method": st.sampled_from(METHODS) | TEXT},
        optional={"id": st.integers(-(2**63), 2**63) | st.text(max_size=8) | ANY_JSON, "params": _params(tools)})


def raw_requests(tools: list[Any]) -> st.SearchStrategy[Raw]:
    msg = _message(tools)
    as_json = st.one_of(msg, msg, msg, st.lists(msg, max_size=3), ANY_JSON).map(lambda v: json.dumps(v).encode())
    body = as_json | as_json | as_json | st.binary(max_size=200) | st.none()
    post = st.builds(Raw, st.just("POST"), st.sampled_from(["live", "live", "live", "made-up", "none"]),
                     st.sampled_from([ACCEPT_BOTH, ACCEPT_BOTH, "application/json", "text/event-stream", "*/*", None]),
                     st.sampled_from([VERSION, VERSION, "1999-01-01", "", None]), body)
    # A GET with the live session opens the server's long-lived event stream: only made-up or no session here.
    other = st.builds(Raw, st.sampled_from(["GET", "DELETE", "PUT"]), st.sampled_from(["made-up", "none"]),
                      st.sampled_from([ACCEPT_BOTH, "text/event-stream", None]), st.sampled_from([VERSION, None]),
                      st.none() | as_json)
    ends = st.builds(Raw, st.just("DELETE"), st.just("live"), st.just(ACCEPT_BOTH), st.just(VERSION), st.none())
    return st.one_of(post, post, post, post, other, ends)


def _check_body(r: httpx.Response) -> None:
    _no_leak(r.text)
    kind = r.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        for line in r.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                json.loads(line[5:])
    elif kind.startswith("application/json") and r.text:
        json.loads(r.text)


def test_malformed_http_requests_get_no_server_error_and_the_server_stays_up(server: Server,
                                                                            request: pytest.FixtureRequest) -> None:
    raw = RawSession(server.url)
    raw.open()

    @_settings(request, RAW)
    @given(raw_requests(server.tools))
    def fuzz(req: Raw) -> None:
        sid = {"live": raw.sid, "made-up": "0" * 32, "none": ""}[req.session]
        headers = raw._headers(req.accept, req.version, sid)
        if not sid:
            del headers["mcp-session-id"]
        r = raw.http.request(req.method, server.url, content=req.body, headers=headers)
        raw.sent += 1
        assert r.status_code < 500, (r.status_code, r.text[:500])
        _check_body(r)
        assert server.proc.poll() is None, "the server process exited"
        server.session.alive()
        if req.method == "DELETE" and req.session == "live":
            assert r.status_code == 200, r.text[:300]  # the session ends as asked; the next examples get a new one
            raw.open()

    try:
        fuzz()
    finally:
        raw.http.close()
    print(f"\n[fuzz-mcp-http] {raw.sent} raw HTTP requests to /mcp: no 5xx, server alive after each")
    assert raw.sent >= RAW[0]
