"""Shared by the MCP fuzzers (tests/test_fuzz_mcp.py over stdio, tests/test_fuzz_mcp_http.py over streamable
HTTP): one SDK client session kept open in a thread of its own, and Hypothesis strategies for tool calls drawn
from each tool's own input schema (shaped, past its bounds, or any JSON; tests/support/openapi_fuzz.py) plus
unknown tool names."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from tests.support.openapi_fuzz import ANY_JSON, from_schema

PAPERS = 20  # the half-sample home every MCP fuzzer serves (conftest.half_sample_home)
UNKNOWN_TOOLS = ["", "ingest_papers", "search_paper", "../x", "ask_papers\x00"]
Job = tuple[str | None, dict[str, Any], "concurrent.futures.Future[str]"]


class Session:
    """One MCP client session (stdio parameters or a streamable-HTTP URL) kept open in a thread of its own (the
    SDK's client must be entered and left in one task); ``call`` runs a tool call there and returns what the
    client read, as text, after checking that ``library_stats`` still answers on the same session."""

    def __init__(self, target: StdioServerParameters | str) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.jobs: asyncio.Queue[Job | None] | None = None
        self.ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._serve(),), daemon=True)
        self.calls = 0

    async def _serve(self) -> None:
        self.jobs = asyncio.Queue()
        try:
            async with Client(self.target, read_timeout_seconds=120) as client:
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

    async def _one(self, client: Client, name: str | None, args: dict[str, Any]) -> str:
        from mcp import MCPError

        if name is not None:
            try:
                result = await client.call_tool(name, args)
                text = " ".join(getattr(c, "text", "") for c in result.content)
            except MCPError as e:  # a JSON-RPC error answer: the protocol's way of refusing a call
                text = f"MCPError: {e}"
        else:
            text = ""
        alive = await client.call_tool("library_stats", {})  # the session and the server still work
        assert not alive.is_error and (alive.structured_content or {}).get("papers") == PAPERS, alive.content
        return text

    def start(self) -> list[Any]:
        self.thread.start()
        return self.ready.result(timeout=300)

    def call(self, name: str | None, args: dict[str, Any]) -> str:
        """Call tool ``name`` with ``args``; ``name`` None: only the ``library_stats`` liveness check."""
        done: concurrent.futures.Future[str] = concurrent.futures.Future()
        assert self.jobs is not None
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, (name, args, done))
        if name is not None:
            self.calls += 1
        return done.result(timeout=120)

    def alive(self) -> None:
        self.call(None, {})

    def stop(self) -> None:
        if self.jobs is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        self.thread.join(timeout=30)


def arguments(tool: Any) -> st.SearchStrategy[Any]:
    """Arguments for ``tool`` drawn from its input schema (any JSON now and then)."""
    return from_schema(tool.input_schema or {}, {"components": {"schemas": {}}})


def tool_calls(tools: list[Any]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """``(name, arguments)``: each listed tool with drawn arguments (twice as likely), or an unknown name; a drawn
    value that is not an object is wrapped as ``{"value": ...}`` (the SDK client sends objects only)."""
    by_tool = [st.tuples(st.just(t.name), arguments(t)) for t in tools]
    unknown = st.tuples(st.sampled_from(UNKNOWN_TOOLS), ANY_JSON)
    return st.one_of(*by_tool, *by_tool, unknown).map(
        lambda call: (call[0], call[1] if isinstance(call[1], dict) else {"value": call[1]}))
