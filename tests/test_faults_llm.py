"""LLM endpoint faults end to end: the answer chain and the Gradio chat handler over a real store, the real
embedder and the OpenAI-compatible stub on 127.0.0.1, which injects each fault. Every fault must give a clear
message, keep what was streamed (flagged incomplete), and leave the next question working."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import SAMPLE
from conftest import STUB_KEY as KEY

from rag.answer import Answer
from rag.config import get_settings
from rag.errors import UpstreamError
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.servers import free_port

EPPO_FILE = next(p for p in SAMPLE if p.name.startswith("003_"))  # the EPPO paper is in this file
# Not a follow-up (enough topic terms of its own), so no condense request takes a queued fault.
QUESTION = "What does the EPPO algorithm penalize when training reward models for RLHF?"
FIRST = "EPPO penalizes the increase in energy loss in the final layer [{n}]."
REST = " It also keeps the reward model's output stable during training, which curbs reward hacking [{n}]."
FIRST_WORDS = len(FIRST.split())


def cite_eppo(body: dict[str, Any]) -> str:
    """The model's reply: two sentences citing whichever source number the EPPO abstract got."""
    prompt = body["messages"][-1]["content"]
    n = next(int(m.group(1)) for m in re.finditer(r'<source n="(\d+)">(.*?)</source>', prompt, re.S)
             if "energy loss" in m.group(2))
    return FIRST.format(n=n) + REST.format(n=n)


@pytest.fixture(scope="module")
def rt(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    runtime = Runtime(get_settings(home=tmp_path_factory.mktemp("faults-llm-home")), _embedder=embedder)
    assert runtime.ingestor(progress=False).ingest([EPPO_FILE]).added > 0
    yield runtime
    runtime.close()


@pytest.fixture(scope="module")
def stub() -> Iterator[FakeOpenAIServer]:
    """This module's own stub (the UI test stops and restarts it on the same port)."""
    with FakeOpenAIServer(model="stub-model", api_key=KEY, responder=cite_eppo) as srv:
        yield srv


@pytest.fixture
def fresh(stub: FakeOpenAIServer) -> FakeOpenAIServer:
    stub.reset()
    return stub


def llm_settings(rt: Runtime, base_url: str, **kw: Any):
    llm = {"base_url": base_url, "api_key": KEY, "model": "stub-model", "max_tokens": 256, "max_retries": 2,
           "timeout_s": 1.0, **kw}
    return rt.settings.with_overrides(llm=llm)


def streamed(chain: AnswerChain, question: str = QUESTION) -> tuple[str, Answer]:
    text, answer = "", None
    for item in chain.stream(question, mode="llm"):
        if isinstance(item, Answer):
            answer = item
        else:
            text += item
    assert answer is not None
    return text, answer


# ---- the chain -------------------------------------------------------------------------------------
def test_a_broken_stream_gives_the_verified_part_flagged_incomplete(rt: Runtime, fresh: FakeOpenAIServer) -> None:
    chain = AnswerChain(rt, llm_settings(rt, fresh.base_url))
    fresh.queue_fault("break_stream", after_chunks=FIRST_WORDS + 3)
    text, answer = streamed(chain)
    assert text.startswith("EPPO penalizes") and len(text.split()) == FIRST_WORDS + 3
    assert answer.complete is False and answer.to_dict()["complete"] is False and answer.answerable
    assert answer.answer.startswith("EPPO penalizes the increase in energy loss in the final layer [1].")
    assert len(answer.citations) == 1 and "EPPO" in answer.citations[0].abstract and answer.citations[0].supported
    note = next(w for w in answer.warnings if w.startswith("answer incomplete"))
    assert f"the model stream broke after {len(text)} characters" in note
    assert len(fresh.chat_requests) == 1
    # the same chain answers the next question whole
    text, answer = streamed(chain)
    assert answer.complete and answer.to_dict()["complete"] is True and text.endswith("hacking [1].")
    assert not any(w.startswith("answer incomplete") for w in answer.warnings)


def test_a_stream_broken_before_any_citation_is_a_clear_error(rt: Runtime, fresh: FakeOpenAIServer) -> None:
    chain = AnswerChain(rt, llm_settings(rt, fresh.base_url))
    fresh.queue_fault("malformed_chunk", after_chunks=3)
    got: list[str] = []
    with pytest.raises(UpstreamError, match=r"answer incomplete: the model stream broke after \d+ characters "
                                            r"\(the endpoint sent a malformed chunk.*before it cited any paper"):
        for item in chain.stream(QUESTION, mode="llm"):
            got.append(item)  # type: ignore[arg-type]
    assert "".join(got) == "EPPO penalizes the"


def test_ask_without_streaming_retries_then_answers(rt: Runtime, fresh: FakeOpenAIServer) -> None:
    chain = AnswerChain(rt, llm_settings(rt, fresh.base_url))
    fresh.queue_fault(503, retry_after=0.05)
    fresh.queue_fault("disconnect")
    answer = chain.ask(QUESTION, mode="llm")
    assert answer.complete and answer.citations and len(fresh.chat_requests) == 3


# ---- the Gradio chat handler ------------------------------------------------------------------------
def plain(message: str) -> str:
    """Chat Markdown as the reader sees it (entities decoded, Markdown escapes dropped)."""
    return html.unescape(message).replace("\\", "")


def chat_handler(app: Any) -> Any:
    """The function the Ask button runs (called directly: no browser, no HTTP)."""
    return next(f.fn for f in app.fns.values() if f.name == "ask")


def ask_ui(ask: Any, chat: list[dict[str, Any]], state: Any, question: str = QUESTION):
    t0 = time.monotonic()
    outputs = list(ask(question, chat, state, 5, "llm", None, None, None, None))
    chat, state = outputs[-1][0], outputs[-1][1]
    return chat, state, chat[-1]["content"], time.monotonic() - t0


FAULTS: list[tuple[str, dict[str, Any], str, bool]] = [
    # kind, parameters, what the message must say, whether streamed text stays visible
    ("500", {"retry_after": 0.05, "times": 3}, "failed with HTTP 500 (3 attempts)", False),
    ("429", {"retry_after": 120}, "rate limiting requests (HTTP 429", False),
    ("timeout", {"seconds": 5, "times": 3}, "timed out after 1 s (3 attempts", False),
    ("disconnect", {"times": 3}, "dropped the connection (3 attempts)", False),
    ("malformed_chunk", {"after_chunks": 0}, "sent a malformed reply", False),
    ("break_stream", {"after_chunks": FIRST_WORDS + 2}, "answer incomplete: the model stream broke after", True),
    ("stall", {"after_chunks": FIRST_WORDS + 2, "seconds": 5}, "no data for 1 s", True),
    ("stream_error", {"after_chunks": FIRST_WORDS + 2, "message": "GPU fell over"}, "GPU fell over", True),
    ("malformed_chunk", {"after_chunks": 4}, "answer incomplete and its citations unchecked", True),
    ("break_stream", {"after_chunks": 2}, "before it cited any paper", True),
]


def test_the_chat_survives_every_llm_fault(rt: Runtime) -> None:
    from ui.app import build_app
    from ui.tabs.session import Session

    port = free_port()
    stub = FakeOpenAIServer(model="stub-model", api_key=KEY, responder=cite_eppo, port=port).start()
    try:
        ask = chat_handler(build_app(rt, llm_settings(rt, stub.base_url)))
        chat: list[dict[str, Any]] = []
        state = Session()
        survived = 0

        def normal_answer_works() -> None:
            nonlocal chat, state
            before = len(state.answers)
            chat, state, message, _ = ask_ui(ask, chat, state)
            assert len(state.answers) == before + 1 and state.answers[-1].complete, message
            assert "pc-error" not in message and "pc-cite" in message and "hacking" in plain(message)

        normal_answer_works()
        for kind, params, says, keeps_text in FAULTS:
            stub.reset()
            stub.queue_fault(kind, **params)
            n_answers = len(state.answers)
            chat, state, message, seconds = ask_ui(ask, chat, state)
            assert says in plain(message), (kind, message)
            assert seconds < 8, (kind, seconds)  # bounded: 3 × 1 s timeouts and two pauses at most
            if keeps_text:
                assert "EPPO penalizes" in plain(message), (kind, message)  # what the reader saw stays
            if "before it cited" in says or "unchecked" in says:  # no verified part: a notice, no turn kept
                assert "pc-error" in message and len(state.answers) == n_answers
            elif keeps_text:  # the verified part is the turn's answer, flagged incomplete
                assert state.answers[-1].complete is False and "pc-cite" in message and "pc-note" in message
            else:
                assert "pc-error" in message and len(state.answers) == n_answers
            assert chat[-2]["role"] == "user" and chat[-1]["role"] == "assistant"
            survived += 1
            stub.reset()
            normal_answer_works()

        # the endpoint goes away, then comes back on the same port: the app needs no restart
        stub.close()
        chat, state, message, seconds = ask_ui(ask, chat, state)
        assert "connection refused" in plain(message) and "PAPERCHAT_LLM__BASE_URL" in plain(message)
        assert seconds < 3
        survived += 1
        stub = FakeOpenAIServer(model="stub-model", api_key=KEY, responder=cite_eppo, port=port).start()
        normal_answer_works()
    finally:
        stub.close()
    assert survived == len(FAULTS) + 1
    # the three faults with a verified part kept it as an incomplete turn
    assert sum(1 for a in state.answers if not a.complete) == 3


def test_connection_refused_in_the_chain_is_immediate(rt: Runtime) -> None:
    chain = AnswerChain(rt, llm_settings(rt, f"http://127.0.0.1:{free_port()}/v1", max_retries=5, timeout_s=30))
    t0 = time.monotonic()
    with pytest.raises(UpstreamError, match="connection refused"):
        chain.ask(QUESTION, mode="llm")
    assert time.monotonic() - t0 < 3
