"""`paperchat mcp` over stdio under malformed tool calls (issue 33 item 2): Hypothesis draws calls from each
tool's own input schema (shaped, past its bounds, or any JSON; tests/support/mcp_fuzz.py) plus unknown tool
names, and sends them through the official SDK client to one server process over half the sample corpus.

For every call: a tool result (an error result is fine) or a JSON-RPC error, never a broken session; no traceback
in what the client reads; the process alive and answering ``library_stats`` after each. 120 calls by default
(derandomized), 600 with random seeds under ``pytest --long``. The same over streamable HTTP, with raw
malformed HTTP requests besides: tests/test_fuzz_mcp_http.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT, half_sample_home, paperchat_cmd
from hypothesis import given, settings
from mcp import StdioServerParameters

from tests.support.fuzz import RANDOM, REPRODUCIBLE
from tests.support.mcp_fuzz import Session, tool_calls
from tests.support.servers import server_env

DEFAULT_EXAMPLES, LONG_EXAMPLES = 120, 600


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


def test_malformed_tool_calls_over_stdio_never_break_the_session(session: tuple[Session, list[Any]],
                                                                  request: pytest.FixtureRequest) -> None:
    s, tools = session
    assert len(tools) == 8  # the read-only tools, saved conversations included
    long = bool(request.config.getoption("--long", default=False))

    @settings(settings.get_profile(RANDOM if long else REPRODUCIBLE),
              max_examples=LONG_EXAMPLES if long else DEFAULT_EXAMPLES)
    @given(tool_calls(tools))
    def fuzz(call: tuple[str, dict[str, Any]]) -> None:
        text = s.call(*call)
        assert "Traceback" not in text and 'File "/' not in text, text[:500]

    fuzz()
    print(f"\n[fuzz-mcp] {s.calls} generated tool calls over stdio: session and server alive after each")
    assert s.calls >= DEFAULT_EXAMPLES
    assert "EPPO" in s.call("ask_papers", {"question": "What is EPPO?"})  # still answering after all that
