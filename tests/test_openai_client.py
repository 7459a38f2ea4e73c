"""The OpenAI-compatible client seam (rag.openai_client) against the local stub: construction, the retry
policy, the mapping of client errors to paperchat's, and the judge going through it."""

from __future__ import annotations

import socket
import time

import openai
import pytest
from conftest import STUB_KEY as KEY

from evals.judge import Judge
from rag.answer import Answer, Citation
from rag.config import LLMSettings, Settings
from rag.errors import ConfigError, UpstreamError
from rag.openai_client import Endpoint, judge_endpoint, llm_endpoint
from tests.fakes.openai_server import FakeOpenAIServer

MESSAGES = [{"role": "user", "content": "hello"}]


def endpoint(base_url: str, **kw) -> Endpoint:
    cfg = {"base_url": base_url, "api_key": KEY, "model": "stub-model", "timeout_s": 2.0, "max_retries": 2, **kw}
    return llm_endpoint(LLMSettings(**cfg))


def chat(ep: Endpoint) -> str:
    client = ep.client()
    reply = ep.call(lambda: client.chat.completions.create(model=ep.model, messages=MESSAGES))
    return reply.choices[0].message.content or ""


def test_clients_are_built_from_settings_and_never_retry_by_themselves(srv: FakeOpenAIServer) -> None:
    ep = endpoint(srv.base_url, timeout_s=7.5)
    client = ep.client()
    assert (str(client.base_url).rstrip("/"), client.api_key, client.max_retries) == (srv.base_url, KEY, 0)
    assert client.timeout == 7.5
    model = ep.chat_model(temperature=0.0)
    assert model.root_client.max_retries == 0 and model.request_timeout == 7.5
    assert KEY not in repr(ep)  # the key stays a SecretStr until a client needs it
    srv.queue_reply("hi there")
    assert chat(ep) == "hi there" and srv.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_retryable_failures_are_retried_up_to_max_retries_then_named(srv: FakeOpenAIServer) -> None:
    srv.queue_fault(503, retry_after=0.01)
    srv.queue_fault("disconnect")
    srv.queue_reply("third time lucky")
    assert chat(endpoint(srv.base_url)) == "third time lucky" and len(srv.chat_requests) == 3
    srv.reset()
    srv.queue_fault(500, retry_after=0.01, times=5)
    with pytest.raises(UpstreamError, match=r"the LLM endpoint .* failed with HTTP 500 \(2 attempts\)"):
        chat(endpoint(srv.base_url, max_retries=1))
    assert len(srv.chat_requests) == 2  # one try and max_retries=1 retry


def test_retry_after_is_honoured_unless_longer_than_the_timeout(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("429", retry_after=0.4)
    srv.queue_reply("ok")
    t0 = time.monotonic()
    assert chat(endpoint(srv.base_url)) == "ok" and time.monotonic() - t0 >= 0.4
    srv.reset()
    srv.queue_fault("429", retry_after=60)
    t0 = time.monotonic()
    with pytest.raises(UpstreamError, match=r"rate limiting requests \(HTTP 429, 1 attempt; it asks to wait 60 s\)"):
        chat(endpoint(srv.base_url))
    assert time.monotonic() - t0 < 1 and len(srv.chat_requests) == 1


def test_without_retry_after_the_backoff_grows(srv: FakeOpenAIServer) -> None:
    srv.queue_fault(502, times=2)
    srv.queue_reply("ok")
    t0 = time.monotonic()
    assert chat(endpoint(srv.base_url)) == "ok"
    # 0.5 s then 1 s, each shortened by at most a quarter of jitter
    assert 0.375 + 0.75 <= time.monotonic() - t0 < 3 and len(srv.chat_requests) == 3


@pytest.mark.parametrize("fault, error, says", [
    ("401", ConfigError, "refused the API key (AuthenticationError): set PAPERCHAT_LLM__API_KEY"),
    ("403", ConfigError, "refused the API key (PermissionDeniedError)"),
    ("404", ConfigError, "does not serve model 'stub-model': set PAPERCHAT_LLM__MODEL"),
    ("400", ConfigError, "rejected the request (HTTP 400: Invalid request.): check PAPERCHAT_LLM__MODEL and "
                         "PAPERCHAT_LLM__MAX_TOKENS"),
    ("malformed_chunk", UpstreamError, "sent a malformed reply (not the OpenAI format)"),
])
def test_failures_that_retrying_cannot_fix_fail_at_once(srv: FakeOpenAIServer, fault: str, error: type,
                                                         says: str) -> None:
    srv.queue_fault(fault)
    with pytest.raises(error) as caught:
        chat(endpoint(srv.base_url, max_retries=3))
    assert says in str(caught.value) and srv.base_url in str(caught.value)
    assert len(srv.chat_requests) == 1


def test_timeouts_and_refused_connections_say_which_setting_to_change(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("timeout", seconds=3, times=2)
    with pytest.raises(UpstreamError, match=r"timed out after 0.3 s \(2 attempts; PAPERCHAT_LLM__TIMEOUT_S sets"):
        chat(endpoint(srv.base_url, timeout_s=0.3, max_retries=1))
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    t0 = time.monotonic()
    with pytest.raises(UpstreamError, match=rf"cannot reach the LLM endpoint {url}: connection refused.*"
                                            "PAPERCHAT_LLM__BASE_URL"):
        chat(endpoint(url, max_retries=5))
    assert time.monotonic() - t0 < 1  # nothing listens: no retries, no backoff


def test_a_bug_in_the_caller_is_not_disguised_as_an_endpoint_error() -> None:
    ep = endpoint("http://127.0.0.1:9/v1")
    with pytest.raises(KeyError):
        ep.call(lambda: {}["missing"])


# ---- the judge ---------------------------------------------------------------------------------------
def cited_answer() -> Answer:
    c = Citation(n=1, paper_id="a", title="Paper a", authors=[], year=None, categories=[],
                 abstract="Abstract of a.", summary="", evidence="", supported=True)
    return Answer(question="which?", standalone_question="which?", answer="alpha [1]", citations=[c],
                  answerable=True, mode="llm")


def judge_settings(base_url: str | None, **evals) -> Settings:
    return Settings(evals={"judge_base_url": base_url, "judge_model": "stub-model", "judge_api_key": KEY,
                           "judge_timeout_s": 2.0, **evals})


def test_the_judge_maps_a_bad_reply_to_paperchat_errors_not_value_error(srv: FakeOpenAIServer) -> None:
    judge = Judge(judge_settings(srv.base_url))
    srv.queue_fault("malformed_chunk")  # an HTTP 200 whose body is not JSON: the openai client raises ValueError
    with pytest.raises(UpstreamError, match=r"the judge endpoint .* sent a malformed reply") as caught:
        judge.complete("which?", cited_answer())
    assert not isinstance(caught.value, ValueError)
    srv.queue_fault("malformed_chunk")
    verdict = judge.score("which?", cited_answer())  # one bad case is a note, not the end of an eval run
    assert verdict.faithfulness is None and "judge request failed: the judge endpoint" in (verdict.error or "")
    srv.queue_fault("401")
    verdict = judge.score("which?", cited_answer())
    assert "PAPERCHAT_EVALS__JUDGE_API_KEY" in (verdict.error or "")


def test_the_judge_retries_with_the_shared_policy(srv: FakeOpenAIServer) -> None:
    judge = Judge(judge_settings(srv.base_url, judge_max_retries=1))
    assert judge.client.max_retries == 0
    srv.queue_fault(503, retry_after=0.01)
    srv.queue_reply('{"faithfulness": 1, "relevance": 0.5, "citations": [{"n": 1, "supported": true}]}')
    v = judge.score("which?", cited_answer())
    assert (v.faithfulness, v.relevance, v.citation_support, v.error) == (1.0, 0.5, 1.0, None)
    assert len(srv.chat_requests) == 2


def test_no_judge_endpoint_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="PAPERCHAT_EVALS__JUDGE_BASE_URL"):
        judge_endpoint(judge_settings(None))
    with pytest.raises(ConfigError):
        Judge(judge_settings(None))


def test_judge_failures_are_not_openai_exceptions(srv: FakeOpenAIServer) -> None:
    judge = Judge(judge_settings(srv.base_url, judge_max_retries=0))
    srv.queue_fault(500)
    with pytest.raises(UpstreamError, match=r"HTTP 500 \(1 attempt\)") as caught:
        judge.complete("which?", cited_answer())
    assert isinstance(caught.value.__cause__, openai.InternalServerError)
