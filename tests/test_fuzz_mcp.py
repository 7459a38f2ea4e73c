"""`paperchat mcp` over stdio under malformed tool calls (issue 33 item 2): Hypothesis draws calls from each
tool's own input schema (shaped, past its bounds, or any JSON; tests/support/openapi_fuzz.py) plus unknown tool
names, and sends them through the official SDK client to one server process over half the sample corpus.

For every call: a tool result (an error result is fine) or a JSON-RPC error, never a broken session; no traceback
in what the client reads; the process alive and answering ``library_stats`` after each. 120 calls by default
(derandomized), 600 with random seeds under ``pytest --long``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT, half_sample_home, paperchat_cmd
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from tests.support.fuzz import RANDOM, REPRODUCIBLE
from tests.support.openapi_fuzz import ANY_JSON, from_schema
from tests.support.servers import server_env

DEFAULT_EXAMPLES, LONG_EXAMPLES = 120, 600
Job = tuple[str, dict[str, Any], "concurrent.futures.Future[str]"]


class Session:
    """One stdio MCP session kept open in a thread of its own (the SDK's client must be entered and left in one
    task); ``call`` runs a tool call there and returns what the client read, as text."""

    def __init__(self, params: StdioServerParameters) -> None:
        self.params = params
        self.loop = asyncio.new_event_loop()
        self.jobs: asyncio.Queue[Job | None] | None = None
        self.ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._serve(),), daemon=True)
        self.calls = 0

    async def _serve(self) -> None:
        self.jobs = asyncio.Queue()
        try:
            async with Client(self.params, read_timeout_seconds=120) as client:
                self.ready.set_result((await client.list_tools()).tools)
                while (job := await self.jobs.get()) is not None:
                    name, args, done = job
                    try:
                        done.set_result(await self._one(client, name, args))
                    except BaseException as e:  # noqa: BLE001 - handed to the test thread, which fails on it
                        done.set_exception(e)
        except BaseException as e:  # noqa: BLE001
            if not self.ready.done():
                self.ready.set_exception(e)

    async def _one(self, client: Client, name: str, args: dict[str, Any]) -> str:
        from mcp import MCPError

        try:
            result = await client.call_tool(name, args)
            text = " ".join(getattr(c, "text", "") for c in result.content)
        except MCPError as e:  # a JSON-RPC error answer: the protocol's way of refusing a call
            text = f"MCPError: {e}"
        alive = await client.call_tool("library_stats", {})  # the session and the server still work
        assert not alive.is_error and (alive.structured_content or {}).get("papers") == 20, alive.content
        return text

    def start(self) -> list[Any]:
        self.thread.start()
        return self.ready.result(timeout=300)

    def call(self, name: str, args: dict[str, Any]) -> str:
        done: concurrent.futures.Future[str] = concurrent.futures.Future()
        assert self.jobs is not None
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, (name, args, done))
        self.calls += 1
        return done.result(timeout=120)

    def stop(self) -> None:
        if self.jobs is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def session(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Session, list[Any]]]:
    home = half_sample_home(tmp_path_factory.mktemp("fuzz-mcp") / "home", embedder)
    cmd = paperchat_cmd("mcp")
    env = server_env(home, 10_000) | {"OMP_NUM_THREADS": "1"}  # the question rate limit is not under test here
    s = Session(StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(ROOT), env=env))
    try:
        tools = s.start()
        yield s, tools
    finally:
        s.stop()


def _calls(tools: list[Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    by_tool = [st.tuples(st.just(t.name), from_schema(t.input_schema or {}, {"components": {"schemas": {}}}))
               for t in tools]
    unknown = st.tuples(st.sampled_from(["", "ingest_papers", "search_paper", "../x", "ask_papers\x00"]), ANY_JSON)
    return st.one_of(*by_tool, *by_tool, unknown).map(
        lambda call: (call[0], call[1] if isinstance(call[1], dict) else {"value": call[1]}))


def test_malformed_tool_calls_over_stdio_never_break_the_session(session: tuple[Session, list[Any]],
                                                                  request: pytest.FixtureRequest) -> None:
    s, tools = session
    assert len(tools) == 8  # the read-only tools, saved conversations included
    long = bool(request.config.getoption("--long", default=False))

    @settings(settings.get_profile(RANDOM if long else REPRODUCIBLE),
              max_examples=LONG_EXAMPLES if long else DEFAULT_EXAMPLES)
    @given(_calls(tools))
    def fuzz(call: tuple[str, dict[str, Any]]) -> None:
        text = s.call(*call)
        assert "Traceback" not in text and 'File "/' not in text, text[:500]

    fuzz()
    print(f"\n[fuzz-mcp] {s.calls} generated tool calls over stdio: session and server alive after each")
    assert s.calls >= DEFAULT_EXAMPLES
    assert "EPPO" in s.call("ask_papers", {"question": "What is EPPO?"})  # still answering after all that
