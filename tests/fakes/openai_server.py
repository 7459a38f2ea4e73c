"""A scriptable fake of the OpenAI HTTP API, for tests of the LLM path.

A real HTTP/1.1 server on 127.0.0.1 (stdlib only) that speaks enough of the OpenAI wire protocol for
the ``openai`` client and LangChain's ``ChatOpenAI`` / ``OpenAIEmbeddings``:

- ``POST /v1/chat/completions``: a ``chat.completion`` object, or with ``"stream": true`` an SSE
  stream of ``chat.completion.chunk`` objects (role chunk, one chunk per word, finish chunk, a usage
  chunk when ``stream_options.include_usage``, then ``data: [DONE]``), sent with chunked encoding so
  that a cut-off stream is detectable by the client.
- ``POST /v1/embeddings``: deterministic hash-seeded unit vectors (``input`` as a string, a list of
  strings, a token-id list or a list of token-id lists; honours ``dimensions`` and
  ``encoding_format: "base64"``, which the ``openai`` client asks for by default).
- ``GET /v1/models`` and ``GET /v1/models/{id}``.

Scripting (everything is thread-safe)::

    with FakeOpenAIServer(model="stub-model", api_key="sk-test") as srv:
        srv.queue_reply("first answer")                      # consumed by the next chat completion
        srv.queue_reply(lambda body: body["messages"][-1]["content"].upper())
        srv.queue_fault("429", retry_after=0.01)             # consumed by the next request (any endpoint)
        srv.queue_fault("break_stream", after_chunks=3)
        client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test")
        ...
        path, headers, body = srv.requests[-1]               # every request is recorded

Replies are taken from the queue, else from ``responder(body)`` (if set and it returns a string),
else ``default_reply``. Faults live in their own queue and are checked first: a fault that produces
no completion (HTTP errors, ``timeout``, ``disconnect``) leaves the reply queue alone, so
``queue_fault("429"); queue_reply("ok")`` gives the retried request ``"ok"``. Faults that shape a
completion (``delay``, ``break_stream``, ``malformed_chunk``, ``stream_error``, ``stall``) consume a reply.

Fault kinds (``FAULT_KINDS`` holds the parameters and their defaults):

- any HTTP status ``"400"``..``"599"`` (or an int), plus the aliases ``"rate_limit"`` (429),
  ``"unauthorized"`` (401), ``"server_error"`` (500), ``"overloaded"`` (503); parameters ``message``,
  ``type``, ``code``, ``retry_after`` (seconds, sent as ``Retry-After``; 1 by default for 429 only),
  ``retry_after_ms`` (sent as ``retry-after-ms``), ``headers`` (extra response headers).
- ``"timeout"``: ``seconds=30`` of silence, then the connection is dropped (use a shorter client timeout).
- ``"delay"``: ``seconds=1``, then a normal response.
- ``"disconnect"``: the connection is closed without any response.
- ``"break_stream"``: ``after_chunks=2`` content chunks, then the connection is closed mid-body (no
  ``[DONE]``, no final chunk); on a non-streaming request, half of the JSON body is sent.
- ``"malformed_chunk"``: after ``after_chunks=1`` content chunks a ``data:`` line with invalid JSON
  (``data="{not json"``) is sent, then the stream continues; non-streaming: an invalid JSON body.
- ``"stream_error"``: after ``after_chunks=1`` content chunks, a ``data: {"error": {...}}`` event
  (``message``, ``type``, ``code``) and the stream ends; non-streaming: HTTP 500.
- ``"stall"``: after ``after_chunks=2`` content chunks, ``seconds=30`` of silence, then the connection is
  dropped (a model that hangs mid-answer: the client's read timeout fires first); non-streaming: the
  same silence before any byte of the response.

Every fault also takes ``path=`` (only requests to that endpoint, e.g. ``"/embeddings"``, consume it)
and ``times=`` (queue that many copies).

When ``api_key`` is set, any request without ``Authorization: Bearer <api_key>`` gets OpenAI's 401.

Run it as a process (prints the base URL as the first stdout line)::

    python -m tests.fakes.openai_server --port 0 --reply "Hello from the fake."
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import logging
import math
import random
import re
import signal
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)

__all__ = [
    "FAULT_KINDS",
    "FakeOpenAIServer",
    "RecordedRequest",
    "count_tokens",
    "fake_embedding",
    "split_into_pieces",
]

Responder = Callable[[dict[str, Any]], "str | None"]
EmbedFn = Callable[["str | Sequence[int]", int], Sequence[float]]

SYSTEM_FINGERPRINT = "fp_fake_openai"

_STATUS_PARAMS: dict[str, Any] = {
    "message": None,
    "type": None,
    "code": None,
    "retry_after": None,
    "retry_after_ms": None,
    "headers": None,
}
_STREAM_KINDS = ("break_stream", "malformed_chunk", "stream_error", "stall")

#: Fault kinds and their parameters with defaults. ``"http_error"`` stands for any numeric status kind.
FAULT_KINDS: dict[str, dict[str, Any]] = {
    "http_error": {"status": 500, **_STATUS_PARAMS},
    "timeout": {"seconds": 30.0},
    "delay": {"seconds": 1.0},
    "disconnect": {},
    "break_stream": {"after_chunks": 2},
    "malformed_chunk": {"after_chunks": 1, "data": "{not json"},
    "stream_error": {
        "after_chunks": 1,
        "message": "The server had an error while streaming.",
        "type": "server_error",
        "code": None,
    },
    "stall": {"after_chunks": 2, "seconds": 30.0},
}
_STATUS_ALIASES = {"rate_limit": 429, "unauthorized": 401, "server_error": 500, "overloaded": 503}

# status -> (error type, error code, message)
_STATUS_DEFAULTS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "You are not allowed to perform this request."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    408: ("timeout", None, "Request timed out."),
    409: ("invalid_request_error", "conflict", "Conflict."),
    422: ("invalid_request_error", None, "Unprocessable entity."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    504: ("server_error", None, "Gateway timeout."),
}


class RecordedRequest(NamedTuple):
    """One received request: the URL path (no query), lower-cased headers and the parsed JSON body.

    ``body`` is ``None`` for bodiless requests and the raw text when the body is not valid JSON.
    """

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Reply:
    content: str | Responder
    finish_reason: str = "stop"
    chunk_delay: float | None = None


@dataclass
class _Fault:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    path: str | None = None


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per whitespace-separated word."""
    return len(re.findall(r"\S+", text))


def split_into_pieces(text: str, words_per_chunk: int = 1) -> list[str]:
    """Split ``text`` into streaming pieces of ``words_per_chunk`` words; ``"".join`` gives ``text`` back.

    Each piece carries its leading whitespace, like BPE tokens: ``"Hello big world"`` ->
    ``["Hello", " big", " world"]``.
    """
    words = re.findall(r"\s*\S+", text)
    if not words:
        return [text] if text else []
    words[-1] += text[len("".join(words)) :]
    n = max(1, int(words_per_chunk))
    return ["".join(words[i : i + n]) for i in range(0, len(words), n)]


def fake_embedding(item: str | Sequence[int], dim: int = 8) -> list[float]:
    """A deterministic unit vector for a text (or a token-id list), seeded by its SHA-256."""
    key = item if isinstance(item, str) else "tokens:" + ",".join(str(int(t)) for t in item)
    seed = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _canonical_kind(kind: str | int) -> tuple[str, int | None]:
    """Return ``(kind, status)``; status kinds become ``("http_error", status)``."""
    if isinstance(kind, int) or (isinstance(kind, str) and kind.isdigit()):
        status = int(kind)
        if not 400 <= status <= 599:
            raise ValueError(f"HTTP fault status must be 4xx or 5xx, got {status}")
        return "http_error", status
    if kind in _STATUS_ALIASES:
        return "http_error", _STATUS_ALIASES[kind]
    if kind in FAULT_KINDS and kind != "http_error":
        return kind, None
    known = sorted([k for k in FAULT_KINDS if k != "http_error"] + list(_STATUS_ALIASES))
    raise ValueError(f"unknown fault kind {kind!r}; use an HTTP status like '429' or one of {known}")


def _normalize_route(path: str) -> str:
    path = "/" + path.strip("/")
    if path == "/v1" or path.startswith("/v1/"):
        path = path[3:] or "/"
    return path


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: ARG002 - socketserver API
        log.debug("fake openai server: error while handling a connection", exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle + delayed ACK add ~40 ms per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._register(self)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._unregister(self)

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def do_DELETE(self) -> None:
        self.server.fake._handle(self)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server API
        log.debug("fake openai server: " + format, *args)


class _DropConnectionError(Exception):
    """The handler dropped the connection on purpose, or the server is closing."""


class FakeOpenAIServer:
    """A scriptable OpenAI-compatible server on ``127.0.0.1``; see the module docstring.

    Use it as a context manager (``with FakeOpenAIServer() as srv``) or call ``start()`` / ``close()``.
    """

    def __init__(
        self,
        model: str = "stub-model",
        *,
        api_key: str | None = None,
        default_reply: str = "This is a stub reply from the fake OpenAI server.",
        responder: Responder | None = None,
        embedding_model: str = "text-embedding-3-small",
        embedding_dim: int = 8,
        embed_fn: EmbedFn | None = None,
        extra_models: Sequence[str] = (),
        chunk_delay: float = 0.0,
        words_per_chunk: int = 1,
        truncate_to_max_tokens: bool = False,
        strict_model: bool = False,
        port: int = 0,
    ) -> None:
        """
        Args:
            model: the chat model listed by ``/v1/models`` (responses echo the requested model).
            api_key: when set, requests must send ``Authorization: Bearer <api_key>`` or get a 401.
            default_reply: the completion when neither the queue nor ``responder`` provides one.
            responder: ``responder(request_body) -> str | None`` for dynamic replies (None = default).
            embedding_model: the embedding model listed by ``/v1/models``.
            embedding_dim: vector size when the request has no ``dimensions``.
            embed_fn: ``embed_fn(text_or_token_ids, dim) -> vector`` replacing ``fake_embedding``.
            extra_models: more model ids for ``/v1/models``.
            chunk_delay: seconds to sleep before each streamed content chunk.
            words_per_chunk: words per streamed content chunk.
            truncate_to_max_tokens: cut replies to ``max_completion_tokens``/``max_tokens`` words
                (``finish_reason="length"``), as a real model would.
            strict_model: answer 404 ``model_not_found`` for models not listed by ``/v1/models``.
            port: the port to bind on 127.0.0.1; 0 picks a free one.
        """
        self.model = model
        self.api_key = api_key
        self.default_reply = default_reply
        self.responder = responder
        self.embedding_model = embedding_model
        self.embedding_dim = int(embedding_dim)
        self.embed_fn = embed_fn
        self.extra_models = list(extra_models)
        self.chunk_delay = float(chunk_delay)
        self.words_per_chunk = int(words_per_chunk)
        self.truncate_to_max_tokens = truncate_to_max_tokens
        self.strict_model = strict_model
        self.requests: list[RecordedRequest] = []
        #: exceptions raised by responders / embed_fn while serving (the client saw a 500).
        self.errors: list[BaseException] = []
        self._port = int(port)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._replies: list[_Reply] = []
        self._faults: list[_Fault] = []
        self._connections: dict[_Handler, threading.Thread] = {}
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------- lifecycle
    def start(self) -> FakeOpenAIServer:
        """Bind 127.0.0.1 and serve in a daemon thread. Idempotent; returns ``self``."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, name=f"fake-openai-{self._port}", daemon=True
        )
        self._thread.start()
        return self

    def close(self, timeout: float = 2.0) -> None:
        """Stop serving, drop open connections (also interrupting delays) and join the threads."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections.items())
        for handler, _ in connections:
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for _, thread in connections:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started; use start() or a with-block")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, what OpenAI clients take as ``base_url``."""
        return f"{self.url}/v1"

    def openai_client(self, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` for this server (``max_retries=0``, ``timeout=5`` unless given)."""
        import openai

        kwargs.setdefault("api_key", self.api_key or "sk-fake")
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 5.0)
        return openai.OpenAI(base_url=self.base_url, **kwargs)

    # ----------------------------------------------------------------------------------- scripting
    def queue_reply(
        self, reply: str | Responder, *, finish_reason: str = "stop", chunk_delay: float | None = None
    ) -> FakeOpenAIServer:
        """Queue the completion for the next chat request: a string or ``fn(request_body) -> str``.

        ``chunk_delay`` overrides the server's per-chunk delay for this reply when streamed.
        """
        if not (isinstance(reply, str) or callable(reply)):
            raise TypeError(f"reply must be a str or a callable, got {type(reply).__name__}")
        with self._lock:
            self._replies.append(_Reply(reply, finish_reason, chunk_delay))
        return self

    def queue_replies(self, *replies: str | Responder) -> FakeOpenAIServer:
        for reply in replies:
            self.queue_reply(reply)
        return self

    def queue_fault(
        self, kind: str | int, *, path: str | None = None, times: int = 1, **params: Any
    ) -> FakeOpenAIServer:
        """Queue a fault for the next request (to ``path``, if given, e.g. ``"/chat/completions"``).

        Examples: ``queue_fault("429", retry_after=0.1)``, ``queue_fault(503)``,
        ``queue_fault("timeout", seconds=2)``, ``queue_fault("break_stream", after_chunks=3)``,
        ``queue_fault("malformed_chunk", after_chunks=0)``, ``queue_fault("disconnect", times=2)``.
        Unknown kinds or parameters raise ``ValueError`` / ``TypeError`` here, not in the server.
        """
        name, status = _canonical_kind(kind)
        allowed = FAULT_KINDS[name]
        unknown = set(params) - set(allowed) - ({"status"} if name == "http_error" else set())
        if unknown:
            raise TypeError(f"fault {kind!r} takes {sorted(allowed)}, not {sorted(unknown)}")
        merged = {**allowed, **params}
        if status is not None:
            merged["status"] = status
            if status == 429 and "retry_after" not in params:
                merged["retry_after"] = 1
        if name in _STREAM_KINDS and int(merged["after_chunks"]) < 0:
            raise ValueError("after_chunks must be >= 0")
        fault_path = _normalize_route(path) if path is not None else None
        with self._lock:
            self._faults.extend(_Fault(name, dict(merged), fault_path) for _ in range(int(times)))
        return self

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def reset(self) -> None:
        """Forget queued replies and faults, recorded requests and errors."""
        with self._lock:
            self._replies.clear()
            self._faults.clear()
            self.requests.clear()
            self.errors.clear()

    # ----------------------------------------------------------------------------------- inspection
    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Recorded requests to one endpoint, e.g. ``"/chat/completions"`` (with or without ``/v1``)."""
        route = _normalize_route(path)
        with self._lock:
            return [r for r in self.requests if _normalize_route(r.path) == route]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests received so far."""
        return [r.body for r in self.requests_to("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """Bodies of the embedding requests received so far."""
        return [r.body for r in self.requests_to("/embeddings")]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self.requests:
                raise LookupError("no request received yet")
            return self.requests[-1]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests were recorded; ``TimeoutError`` otherwise."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests within {timeout}s, got {len(self.requests)}")
            return list(self.requests)

    @property
    def active_connections(self) -> int:
        """Client connections currently open (0 after ``close()``)."""
        with self._lock:
            return len(self._connections)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys([self.model, self.embedding_model, *self.extra_models]))

    # ----------------------------------------------------------------------------------- internals
    def _register(self, handler: _Handler) -> None:
        with self._lock:
            self._connections[handler] = threading.current_thread()
        if self._stopping.is_set():  # accepted just before close() took its snapshot
            self._abort(handler)

    def _unregister(self, handler: _Handler) -> None:
        with self._lock:
            self._connections.pop(handler, None)

    def _pop_fault(self, route: str) -> _Fault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if fault.path is None or fault.path == route:
                    return self._faults.pop(i)
        return None

    def _next_reply(self, body: dict[str, Any]) -> tuple[str, str, float]:
        with self._lock:
            scripted = self._replies.pop(0) if self._replies else None
        if scripted is not None:
            content = scripted.content
            text = content if isinstance(content, str) else content(body)
            delay = self.chunk_delay if scripted.chunk_delay is None else scripted.chunk_delay
            return str(text), scripted.finish_reason, delay
        if self.responder is not None:
            text = self.responder(body)
            if text is not None:
                return str(text), "stop", self.chunk_delay
        return self.default_reply, "stop", self.chunk_delay

    def _sleep(self, seconds: float) -> None:
        """Sleep, but give up (dropping the connection) when the server is closing."""
        if seconds > 0 and self._stopping.wait(seconds):
            raise _DropConnectionError

    def _handle(self, h: _Handler) -> None:
        try:
            self._dispatch(h)
        except _DropConnectionError:
            self._abort(h)
        except OSError:  # the client went away (broken pipe, reset, timeout) or close() shut the socket
            log.debug("fake openai server: connection error", exc_info=True)
            h.close_connection = True

    def _dispatch(self, h: _Handler) -> None:
        path = unquote(urlsplit(h.path).path)
        headers = {k.lower(): v for k, v in h.headers.items()}
        raw = self._read_body(h, headers)
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body, bad_json = raw.decode("utf-8", "replace"), True
        with self._cond:
            self.requests.append(RecordedRequest(path, headers, body))
            self._cond.notify_all()

        route = _normalize_route(path)
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            given = headers.get("authorization", "")
            message = (
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                if not given
                else "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
            )
            self._send_error(h, 401, message, "invalid_request_error", "invalid_api_key" if given else None)
            return

        fault = self._pop_fault(route)
        if fault is not None:
            log.debug("fake openai server: fault %s %s on %s", fault.kind, fault.params, route)
            if fault.kind == "http_error":
                self._send_status_fault(h, fault.params)
                return
            if fault.kind == "disconnect":
                raise _DropConnectionError
            if fault.kind == "timeout":
                self._sleep(float(fault.params["seconds"]))
                raise _DropConnectionError
            if fault.kind == "delay":
                self._sleep(float(fault.params["seconds"]))
                fault = None

        if bad_json:
            self._send_error(h, 400, "We could not parse the JSON body of your request.", "invalid_request_error")
            return
        method = h.command
        if method == "POST" and route == "/chat/completions":
            self._chat_completions(h, body, fault)
        elif method == "POST" and route == "/embeddings":
            self._embeddings(h, body, fault)
        elif method == "GET" and route == "/models":
            self._send_json(h, 200, {"object": "list", "data": [self._model_obj(m) for m in self.models]}, fault)
        elif method == "GET" and route.startswith("/models/"):
            model_id = route[len("/models/") :]
            if model_id in self.models:
                self._send_json(h, 200, self._model_obj(model_id), fault)
            else:
                self._send_error(
                    h,
                    404,
                    f"The model '{model_id}' does not exist",
                    "invalid_request_error",
                    "model_not_found",
                    param="model",
                )
        else:
            self._send_error(h, 404, f"Invalid URL ({method} {path})", "invalid_request_error")

    @staticmethod
    def _read_body(h: _Handler, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(h.rfile.read(size))
                h.rfile.readline()
        length = int(headers.get("content-length") or 0)
        return h.rfile.read(length) if length > 0 else b""

    @staticmethod
    def _model_obj(model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 1700000000, "owned_by": "fake-openai"}

    # ----------------------------------------------------------------------------------- endpoints
    def _chat_completions(self, h: _Handler, body: Any, fault: _Fault | None) -> None:
        if not isinstance(body, dict):
            self._send_error(h, 400, "The request body must be a JSON object.", "invalid_request_error")
            return
        if not self._model_ok(h, body):
            return
        model = body["model"]
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            self._send_error(h, 400, "'messages' must be a non-empty array.", "invalid_request_error", param="messages")
            return
        try:
            text, finish_reason, chunk_delay = self._next_reply(body)
        except Exception as exc:  # a broken responder is a test bug: report it to the client and keep it
            log.exception("fake openai server: responder failed")
            with self._lock:
                self.errors.append(exc)
            self._send_error(h, 500, f"fake responder failed: {exc!r}", "server_error")
            return

        pieces = split_into_pieces(text, self.words_per_chunk)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if self.truncate_to_max_tokens and isinstance(limit, int) and count_tokens(text) > limit:
            pieces = split_into_pieces(text, 1)[:limit]
            text = "".join(pieces).rstrip()
            pieces = split_into_pieces(text, self.words_per_chunk)
            finish_reason = "length"
        prompt_tokens = sum(count_tokens(_message_text(m)) for m in messages)
        completion_tokens = count_tokens(text)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())

        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream_chat(
                h, completion_id, created, model, pieces, finish_reason, usage, include_usage, chunk_delay, fault
            )
            return

        if fault is not None and fault.kind == "stall":
            self._sleep(float(fault.params["seconds"]))
            raise _DropConnectionError
        if fault is not None and fault.kind == "stream_error":
            self._send_error(h, 500, fault.params["message"], fault.params["type"], fault.params["code"])
            return
        completion = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": usage,
        }
        self._send_json(h, 200, completion, fault)

    def _stream_chat(
        self,
        h: _Handler,
        completion_id: str,
        created: int,
        model: str,
        pieces: list[str],
        finish_reason: str,
        usage: dict[str, int],
        include_usage: bool,
        chunk_delay: float,
        fault: _Fault | None,
    ) -> None:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            obj: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if include_usage:
                obj["usage"] = None
            return obj

        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        h.end_headers()

        self._send_event(h, chunk({"role": "assistant", "content": "", "refusal": None}))
        trigger = min(int(fault.params["after_chunks"]), len(pieces)) if fault is not None else -1
        for i in range(len(pieces) + 1):
            if i == trigger and fault is not None:
                if fault.kind == "break_stream":
                    raise _DropConnectionError
                if fault.kind == "malformed_chunk":
                    self._write_chunk(h, f"data: {fault.params['data']}\n\n".encode())
                elif fault.kind == "stream_error":
                    error = {
                        "message": fault.params["message"],
                        "type": fault.params["type"],
                        "param": None,
                        "code": fault.params["code"],
                    }
                    self._send_event(h, {"error": error})
                    self._write_chunk(h, b"")
                    return
                elif fault.kind == "stall":
                    self._sleep(float(fault.params["seconds"]))
                    raise _DropConnectionError
            if i < len(pieces):
                self._sleep(chunk_delay)
                self._send_event(h, chunk({"content": pieces[i]}))
        self._send_event(h, chunk({}, finish_reason))
        if include_usage:
            final = chunk({})
            final["choices"] = []
            final["usage"] = usage
            self._send_event(h, final)
        self._write_chunk(h, b"data: [DONE]\n\n")
        self._write_chunk(h, b"")

    def _embeddings(self, h: _Handler, body: Any, fault: _Fault | None) -> None:
        if not isinstance(body, dict):
            self._send_error(h, 400, "The request body must be a JSON object.", "invalid_request_error")
            return
        if not self._model_ok(h, body):
            return
        model = body["model"]
        items = self._embedding_inputs(body.get("input"))
        if items is None:
            self._send_error(
                h,
                400,
                "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
                "invalid_request_error",
                param="input",
            )
            return
        dims = body.get("dimensions", self.embedding_dim)
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            self._send_error(
                h, 400, f"Invalid value for 'dimensions': {dims!r}.", "invalid_request_error", param="dimensions"
            )
            return
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            self._send_error(
                h,
                400,
                f"Invalid value for 'encoding_format': {encoding!r}; expected 'float' or 'base64'.",
                "invalid_request_error",
                param="encoding_format",
            )
            return
        data = []
        try:
            for index, item in enumerate(items):
                vector = [float(x) for x in (self.embed_fn or fake_embedding)(item, dims)]
                embedding: Any = vector
                if encoding == "base64":
                    embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
                data.append({"object": "embedding", "index": index, "embedding": embedding})
        except Exception as exc:
            log.exception("fake openai server: embed_fn failed")
            with self._lock:
                self.errors.append(exc)
            self._send_error(h, 500, f"fake embed_fn failed: {exc!r}", "server_error")
            return
        tokens = sum(count_tokens(i) if isinstance(i, str) else len(i) for i in items)
        if fault is not None and fault.kind == "stall":
            self._sleep(float(fault.params["seconds"]))
            raise _DropConnectionError
        if fault is not None and fault.kind == "stream_error":
            self._send_error(h, 500, fault.params["message"], fault.params["type"], fault.params["code"])
            return
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._send_json(h, 200, {"object": "list", "data": data, "model": model, "usage": usage}, fault)

    @staticmethod
    def _embedding_inputs(value: Any) -> list[str | list[int]] | None:
        def is_tokens(v: Any) -> bool:
            return isinstance(v, list) and bool(v) and all(isinstance(t, int) and not isinstance(t, bool) for t in v)

        if isinstance(value, str):
            return [value] if value else None
        if is_tokens(value):
            return [value]
        if isinstance(value, list) and value:
            if all(isinstance(v, str) and v for v in value):
                return list(value)
            if all(is_tokens(v) for v in value):
                return list(value)
        return None

    # ----------------------------------------------------------------------------------- wire helpers
    @staticmethod
    def _abort(h: _Handler) -> None:
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.connection.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _write_chunk(h: _Handler, data: bytes) -> None:
        """Write one HTTP/1.1 chunk (an empty one ends the body)."""
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def _send_event(self, h: _Handler, obj: dict[str, Any]) -> None:
        self._write_chunk(h, b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")

    def _send_json(
        self, h: _Handler, status: int, obj: Any, fault: _Fault | None = None, headers: dict[str, str] | None = None
    ) -> None:
        payload = json.dumps(obj).encode()
        partial_after: int | None = None
        if fault is not None and fault.kind == "malformed_chunk":
            payload = str(fault.params["data"]).encode()
        elif fault is not None and fault.kind == "break_stream":
            partial_after = len(payload) // 2
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        h.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        h.send_header("openai-processing-ms", "1")
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        if partial_after is not None:
            h.wfile.write(payload[:partial_after])
            h.wfile.flush()
            raise _DropConnectionError
        h.wfile.write(payload)
        h.wfile.flush()

    def _model_ok(self, h: Any, body: dict[str, Any]) -> bool:
        """Validate ``model`` as OpenAI does; on failure the error response is already sent."""
        model = body.get("model")
        if not isinstance(model, str) or not model:
            self._send_error(h, 400, "you must provide a model parameter", "invalid_request_error", param="model")
            return False
        if self.strict_model and model not in self.models:
            self._send_error(h, 404, f"The model `{model}` does not exist or you do not have access to it.",
                             "invalid_request_error", "model_not_found", param="model")
            return False
        return True

    def _send_error(
        self,
        h: _Handler,
        status: int,
        message: str,
        type_: str,
        code: str | None = None,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        error = {"error": {"message": message, "type": type_, "param": param, "code": code}}
        self._send_json(h, status, error, headers=headers)

    def _send_status_fault(self, h: _Handler, params: dict[str, Any]) -> None:
        status = int(params["status"])
        default_type, default_code, default_message = _STATUS_DEFAULTS.get(
            status,
            ("server_error" if status >= 500 else "invalid_request_error", None, HTTPStatus(status).phrase + "."),
        )
        headers = {str(k): str(v) for k, v in (params.get("headers") or {}).items()}
        if params.get("retry_after") is not None:
            headers["Retry-After"] = _format_seconds(params["retry_after"])
        if params.get("retry_after_ms") is not None:
            headers["retry-after-ms"] = _format_seconds(params["retry_after_ms"])
        self._send_error(
            h,
            status,
            params.get("message") or default_message,
            params.get("type") or default_type,
            params.get("code") if params.get("code") is not None else default_code,
            headers=headers,
        )


def _format_seconds(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.openai_server",
        description="Serve a fake OpenAI-compatible API on 127.0.0.1. Prints the base URL first.",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one)")
    parser.add_argument("--model", default="stub-model", help="chat model id listed by /v1/models")
    parser.add_argument(
        "--reply",
        default="This is a stub reply from the fake OpenAI server.",
        help="the completion for every chat request",
    )
    parser.add_argument("--api-key", default=None, help="require this bearer token (default: accept any)")
    parser.add_argument("--embedding-model", default="text-embedding-3-small")
    parser.add_argument("--embedding-dim", type=int, default=8)
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds before each streamed chunk")
    parser.add_argument("--words-per-chunk", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(message)s")

    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal API
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    server = FakeOpenAIServer(
        model=args.model,
        api_key=args.api_key,
        default_reply=args.reply,
        embedding_model=args.embedding_model,
        embedding_dim=args.embedding_dim,
        chunk_delay=args.chunk_delay,
        words_per_chunk=args.words_per_chunk,
        port=args.port,
    ).start()
    try:
        print(server.base_url, flush=True)
        while not stop.is_set():
            time.sleep(0.1)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
