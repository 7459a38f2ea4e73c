"""`paperchat api`: the cited answer pipeline as an OpenAI-compatible HTTP API (FastAPI on uvicorn).

Routes: ``POST /v1/chat/completions`` (OpenAI wire format, streamed as SSE or not), ``GET /v1/models``,
``POST /v1/search``, ``GET /v1/papers``, ``GET /v1/papers/{id}``, ``GET /v1/collections``, ``POST /v1/ask`` (the
``ask --json`` turn; with ``conversation_id``, a saved conversation's next turn), ``GET /v1/conversations[/{id}]``
(the caller's saved conversations, ``ui.saved_conversations``), ``GET /v1/stats``, ``GET /healthz``; OpenAPI docs
at ``/docs``. Everything goes through ``ui.library``. Questions and searches can be scoped to a named collection
(``collection``, top level or in ``filters``); an unknown one is a 400 naming the known ones.

A chat answer's text keeps its ``[n]`` markers and ends with a references list; the structured turn
(``Answer.to_dict()``: citations with ``supported``, statements with their ``verdict`` (supported | contradicted |
not_in_source), ``rule``, ``said`` and ``source_says``, warnings, filters, closest papers) travels in the extra
field ``paperchat`` of the message (and of the last stream chunk). A stream carries the *verified* text: the
verifier renumbers and removes citations, so text streamed before it ran could cite numbers the references
do not have; the answer is computed first and then sent in sentence-sized pieces.

Security: bearer keys checked against ``api.key_hashes`` (sha256; ``paperchat api-key``), required whenever
the server binds beyond loopback (``check_bind`` refuses to start otherwise); a per-key rate limit
(``rag.limits.check_rate``; 429 with ``Retry-After``); the body, history and question limits; errors as OpenAI
error objects ``{"error": {"message", "type", "param", "code"}}``, never a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from typing import Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from rag import limits
from rag.answer import Answer, AnswerLength, AnswerMode
from rag.config import Settings
from rag.conversations import owner_for_key
from rag.errors import (
    BudgetExceeded,
    ConfigError,
    EmptyLibrary,
    InputError,
    PaperchatError,
    RateLimited,
    UpstreamError,
)
from rag.index.paper_query import parse_year_range
from ui import library
from ui.library import Library
from ui.saved_conversations import add_routes, ask_saved, turn_with_id
from ui.services import is_loopback

log = logging.getLogger(__name__)

MODELS: dict[str, AnswerMode | None] = {"paperchat": None, "paperchat-extractive": "extractive", "paperchat-llm": "llm"}


# ---- keys and binding ----------------------------------------------------------------------------------
def key_hash(key: str) -> str:
    """The sha256 hex digest stored in ``api.key_hashes`` for a key."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh API key and its hash (``paperchat api-key``)."""
    key = "pc-" + secrets.token_urlsafe(32)
    return key, key_hash(key)


def check_bind(host: str, settings: Settings) -> None:
    """``ConfigError`` when ``host`` is beyond loopback and no key is configured: the API would answer anyone."""
    if not is_loopback(host) and not settings.api.key_hashes:
        raise ConfigError(f"refusing to serve the API on {host} without an API key: run `paperchat api-key` and "
                          "set PAPERCHAT_API__KEY_HASHES='[\"<hash>\"]' (or api.key_hashes in config.toml), or bind "
                          "to 127.0.0.1")


# ---- errors --------------------------------------------------------------------------------------------
class APIError(Exception):
    """An error answered as an OpenAI error object with ``status``."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param
        self.headers = headers


def error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(BaseModel):
    """Every error's body, as OpenAI's API sends it: ``{"error": {message, type, param, code}}``."""
    error: ErrorDetail


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with each operation's 422 answered by ``ErrorBody`` (what ``_invalid`` sends) in
    place of FastAPI's own validation-error shape, which this API never returns."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        body = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(body.pop("$defs", {}), ErrorBody=body)
        for operations in doc.get("paths", {}).values():
            for op in operations.values():
                if "422" in op.get("responses", {}):
                    op["responses"]["422"] = {"description": "Invalid request: the error names the field",
                                              "content": {"application/json": {
                                                  "schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
        app.openapi_schema = doc
    return app.openapi_schema


def _error(status: int, message: str, type_: str, code: str | None = None, param: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, type_, code, param), status_code=status, headers=headers)


def from_paperchat(e: PaperchatError) -> APIError:
    """The project's errors as statuses: bad input 400, a limit 400 (the rate limit 429 with Retry-After), a
    setting 400, an empty library 409, an unreachable service 502."""
    if isinstance(e, InputError):
        return APIError(400, str(e), param=e.where)
    if isinstance(e, RateLimited):  # Retry-After: the seconds until the key's window lets one more through
        return APIError(429, str(e), "rate_limit_error", "rate_limit_exceeded",
                        headers={"Retry-After": str(e.retry_after_s)})
    if isinstance(e, BudgetExceeded):
        return APIError(400, str(e), code="limit_exceeded")
    if isinstance(e, ConfigError):
        return APIError(400, str(e), code="not_configured")
    if isinstance(e, EmptyLibrary):  # nothing to answer from until papers are ingested
        return APIError(409, str(e), code="library_empty")
    if isinstance(e, UpstreamError):
        return APIError(502, str(e), "upstream_error", "upstream_unavailable")
    return APIError(500, str(e), "server_error")


class BodyLimit:
    """ASGI middleware: a request body past ``max_bytes`` gets 413 before any route reads it (also a chunked
    body without Content-Length: it is buffered up to the limit, then replayed)."""

    def __init__(self, app: ASGIApp, max_bytes: int, prefix: str = "") -> None:
        self.app, self.max_bytes, self.prefix = app, max_bytes, prefix  # only paths under prefix are limited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS")
                or not str(scope.get("path", "")).startswith(self.prefix)):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = declared is not None and declared.isdigit() and int(declared) > self.max_bytes
        chunks: list[bytes] = []
        size = 0
        while not too_big:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            too_big = size > self.max_bytes
            if not message.get("more_body"):
                break
        if too_big:
            response = _error(413, f"the request body is larger than {self.max_bytes // 1024} KB "
                              "(PAPERCHAT_API__MAX_BODY_KB)", "invalid_request_error", "request_too_large")
            await response(scope, receive, send)
            return
        body, sent = b"".join(chunks), False

        async def replay() -> ASGIMessage:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


# ---- request bodies ------------------------------------------------------------------------------------
class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    paperchat: dict[str, Any] | None = Field(None, description="the structured turn this API returned (optional)")


class Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")
    author: str | None = Field(None, max_length=200)
    category: str | None = Field(None, max_length=200)
    year: int | None = Field(None, ge=1800, le=2100)
    year_from: int | None = Field(None, ge=1800, le=2100)
    year_to: int | None = Field(None, ge=1800, le=2100)
    paper_ids: list[str] = Field(default_factory=list, max_length=500)
    collection: str | None = Field(None, max_length=200, description="only papers in this named collection")

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude_defaults=True)


def _collection() -> Any:
    return Field(None, max_length=200, description="only papers in this named collection (GET /v1/collections "
                 "lists them); the same as filters.collection")


def _length() -> Any:
    return Field(None, description="answer length: brief (2-3 sentences, at most 3 papers), normal (the default) "
                 "or thorough (every retrieved paper that bears on the question, grouped by what each says)")


def filters_of(filters: Filters | None, collection: str | None) -> dict[str, Any] | None:
    """A request's filters with its top-level ``collection`` folded in (400 when the two name different ones)."""
    out = filters.as_dict() if filters else {}
    if collection:
        if out.get("collection") not in (None, collection):
            raise APIError(400, f"two collections named: collection={collection!r} and "
                           f"filters.collection={out['collection']!r}; give one", param="collection")
        out["collection"] = collection
    return out or None


class ChatRequest(BaseModel):
    """OpenAI's chat completion request; sampling options are accepted and ignored (the papers decide)."""

    model_config = ConfigDict(extra="allow")
    model: str = Field("paperchat", description="paperchat (configured mode), paperchat-extractive, paperchat-llm")
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    k: int | None = Field(None, ge=1, le=50, description="papers retrieved (paperchat extension)")
    filters: Filters | None = Field(None, description="paper filters (paperchat extension)")
    collection: str | None = _collection()
    length: AnswerLength | None = _length()


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    history: list[Message] = Field(default_factory=list, description="earlier turns as chat messages")
    mode: AnswerMode | None = None
    k: int | None = Field(None, ge=1, le=50)
    filters: Filters | None = None
    collection: str | None = _collection()
    length: AnswerLength | None = _length()
    pin: list[str] = Field(default_factory=list, max_length=50, description="paper ids that must be considered")
    exclude: list[str] = Field(default_factory=list, max_length=500, description="paper ids never cited")
    conversation_id: str | None = Field(None, max_length=64, description="a saved conversation to go on with "
                                        "(\"new\" starts one): its turns are the history, this turn is saved")


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    k: int | None = Field(None, ge=1, le=50)
    filters: Filters | None = None
    collection: str | None = _collection()


# ---- the app -------------------------------------------------------------------------------------------
class _Guard:
    """Who is calling (the key's hash, or the client address without keys), their rate, and how many answers
    are computed at once."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.hashes = list(settings.api.key_hashes)
        self._stamps: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self.slots = asyncio.Semaphore(settings.api.concurrency)

    def caller(self, request: Request) -> str:
        if not self.hashes:
            return "client:" + (request.client.host if request.client else "?")
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise APIError(401, "missing API key: send 'Authorization: Bearer <key>'", "authentication_error",
                           "invalid_api_key")
        digest = key_hash(token.strip())
        if not any(hmac.compare_digest(digest, h) for h in self.hashes):
            raise APIError(401, "invalid API key", "authentication_error", "invalid_api_key")
        return "key:" + digest

    def count(self, who: str) -> None:
        with self._lock:
            self._stamps[who] = limits.check_rate(self._stamps.get(who, []), self.settings.api.requests_per_minute,
                                                  setting="PAPERCHAT_API__REQUESTS_PER_MINUTE")


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None,
           extra: dict[str, Any] | None = None) -> str:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                            "choices": [choice]}
    if extra is not None:
        body["paperchat"] = extra
    return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"


def _pieces(text: str) -> Iterator[str]:
    """The text in sentence-sized pieces (each keeps its trailing whitespace), so clients render as it arrives."""
    start = 0
    for m in re.finditer(r"(?<=[.!?])\s+|\n+", text):
        yield text[start:m.end()]
        start = m.end()
    if start < len(text):
        yield text[start:]


def _usage(prompt: str, completion: str) -> dict[str, int]:
    from rag import tokens

    p, c = tokens.count_tokens(prompt), tokens.count_tokens(completion)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def create_app(lib: Library, settings: Settings | None = None) -> FastAPI:
    """The API over one library; wrap with ``BodyLimit`` (``asgi_app``) to serve it."""
    settings = settings or lib.settings
    guard = _Guard(settings)
    app = FastAPI(title="paperchat API", version="1",
                  description="Cited, verified answers over your paper abstracts, OpenAI-compatible. Send "
                              "'Authorization: Bearer <key>' when keys are configured.")

    @app.exception_handler(APIError)
    async def _api_error(_: Request, e: APIError) -> JSONResponse:
        log.info("API %d: %s", e.status, e.message)
        return _error(e.status, e.message, e.type, e.code, e.param, e.headers)

    @app.exception_handler(PaperchatError)
    async def _paperchat_error(_: Request, e: PaperchatError) -> JSONResponse:
        a = from_paperchat(e)
        log.info("API %d: %s", a.status, a.message)
        return _error(a.status, a.message, a.type, a.code, a.param, a.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        errs = e.errors()
        first = errs[0] if errs else {}
        loc = [str(x) for x in first.get("loc", ()) if x != "body"]
        msg = str(first.get("msg", "invalid request"))
        return _error(422, f"{'.'.join(loc) + ': ' if loc else ''}{msg}", "invalid_request_error", "invalid_body",
                      ".".join(loc) or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException) -> JSONResponse:
        return _error(e.status_code, str(e.detail), "invalid_request_error",
                      "not_found" if e.status_code == 404 else None)

    @app.exception_handler(Exception)
    async def _bug(_: Request, e: Exception) -> JSONResponse:
        log.exception("API request failed")  # the details stay in the server log
        return _error(500, "internal error; the server log has the details", "server_error")

    def caller(request: Request) -> str:
        return guard.caller(request)

    def counted(who: str = Depends(caller)) -> str:
        guard.count(who)
        return who

    async def compute(fn: Callable[..., Any], *args: Any) -> Any:
        async with guard.slots:
            return await run_in_threadpool(fn, *args)

    def mode_of(model: str) -> AnswerMode | None:
        if model not in MODELS:
            raise APIError(404, f"the model {model!r} does not exist: use {', '.join(MODELS)}", code="model_not_found",
                           param="model")
        return MODELS[model]

    def check_messages(messages: list[Message]) -> list[dict[str, Any]]:
        if len(messages) > settings.api.max_messages:
            raise APIError(400, f"{len(messages)} messages; the limit is {settings.api.max_messages} "
                           "(PAPERCHAT_API__MAX_MESSAGES)", code="limit_exceeded", param="messages")
        return [m.model_dump(exclude_none=True) for m in messages]

    def owner(who: str = Depends(caller)) -> str:  # whose saved conversations: the key's (ui.saved_conversations)
        return owner_for_key(who.removeprefix("key:") if who.startswith("key:") else None)

    add_routes(app, lib, owner, compute)

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models", tags=["openai"])
    def models(_: str = Depends(caller)) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "paperchat"}
                                           for m in MODELS]}

    @app.post("/v1/chat/completions", tags=["openai"], response_model=None)
    async def chat_completions(req: ChatRequest, _: str = Depends(counted)) -> Any:
        mode = mode_of(req.model)
        messages = check_messages(req.messages)
        filters = filters_of(req.filters, req.collection)
        answer: Answer = await compute(library.ask_messages, lib, messages, mode, req.k, filters, req.length)
        text = library.answer_text(answer)
        turn = answer.to_dict()
        cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        if not req.stream:
            return {"id": cid, "object": "chat.completion", "created": created, "model": req.model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text, "paperchat": turn}}],
                    "usage": _usage(answer.question, text)}

        async def events() -> AsyncIterator[str]:
            yield _chunk(cid, created, req.model, {"role": "assistant", "content": ""})
            for piece in _pieces(text):
                yield _chunk(cid, created, req.model, {"content": piece})
            yield _chunk(cid, created, req.model, {}, finish="stop", extra=turn)
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/v1/ask", tags=["paperchat"])
    async def ask(req: AskRequest, who: str = Depends(counted)) -> dict[str, Any]:
        """One turn, exactly as ``paperchat ask --json`` prints it (with ``conversation_id``: saved in it)."""
        history_msgs = check_messages(req.history)
        messages = history_msgs + [{"role": "user", "content": req.question}]
        filters = filters_of(req.filters, req.collection)
        if req.conversation_id is not None:
            if history_msgs:
                raise APIError(400, "give history or conversation_id, not both", param="history")
            saved, cid = await compute(partial(ask_saved, mode=req.mode, k=req.k, filters=filters, length=req.length,
                                               pin=req.pin, exclude=req.exclude), lib, owner(who),
                                       req.conversation_id, req.question)
            return turn_with_id(saved, cid)
        answer: Answer = await compute(library.ask_messages, lib, messages, req.mode, req.k, filters, req.length,
                                       req.pin, req.exclude)
        return answer.to_dict()

    @app.post("/v1/search", tags=["paperchat"])
    async def search(req: SearchRequest, _: str = Depends(counted)) -> dict[str, Any]:
        """Papers ranked for a query, with their scores and why they matched."""
        filters = filters_of(req.filters, req.collection)
        result: dict[str, Any] = await compute(library.search, lib, req.query, filters, req.k)
        return result

    @app.get("/v1/papers", tags=["paperchat"])
    async def papers(author: str | None = Query(None, max_length=200),
                     category: str | None = Query(None, max_length=200),
                     year: str | None = Query(None, pattern=r"^(\d{4})?(-(\d{4})?)?$",
                                            description="YEAR, FROM-TO, FROM- or -TO"),
                     text: str | None = Query(None, max_length=500),
                     collection: str | None = Query(None, max_length=200, description="only this collection's"),
                     offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=library.MAX_LIST),
                     _: str = Depends(caller)) -> dict[str, Any]:
        """Stored papers matching the filters, sorted by label, one page at a time."""
        year_from, year_to = parse_year_range(year, "year")
        result: dict[str, Any] = await compute(library.list_papers, lib, author, category, year_from, year_to,
                                               text, offset, limit, collection)
        return result

    @app.get("/v1/collections", tags=["paperchat"])
    async def collections(_: str = Depends(caller)) -> list[dict[str, Any]]:
        """The named collections with their number of papers, as ``paperchat collection list --json``."""
        result: list[dict[str, Any]] = await compute(library.list_collections, lib)
        return result

    @app.get("/v1/papers/{paper_id:path}", tags=["paperchat"])
    async def paper(paper_id: str, _: str = Depends(caller)) -> dict[str, Any]:
        found: dict[str, Any] | None = await compute(library.get_paper, lib, paper_id)
        if found is None:
            raise APIError(404, f"no stored paper has the id {paper_id!r}", code="not_found", param="paper_id")
        return found

    @app.get("/v1/stats", tags=["paperchat"])
    async def stats(_: str = Depends(caller)) -> dict[str, Any]:
        """What ``paperchat stats --json`` prints."""
        result: dict[str, Any] = await compute(library.stats, lib)
        return result

    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]
    return app


def asgi_app(lib: Library, settings: Settings | None = None, app: FastAPI | None = None) -> BodyLimit:
    """The app behind the body limit, ready for uvicorn."""
    settings = settings or lib.settings
    return BodyLimit(app or create_app(lib, settings), settings.api.max_body_kb * 1024)


def serve(settings: Settings, host: str | None = None, port: int | None = None, *,
          ready: Callable[[Any], None] | None = None) -> int:
    """``paperchat api``: refuse a non-loopback bind without keys (before loading anything), then serve until
    interrupted. ``ready`` receives the uvicorn server before it runs (tests stop it through it)."""
    import uvicorn

    from rag.runtime import Runtime

    host = host or settings.api.host
    port = port or settings.api.port
    check_bind(host, settings)
    runtime = Runtime(settings)
    try:
        lib = Library.open(runtime)
        config = uvicorn.Config(asgi_app(lib), host=host, port=port, log_level="warning", access_log=False,
                                timeout_graceful_shutdown=5)
        server = uvicorn.Server(config)
        if ready is not None:
            ready(server)
        log.warning("paperchat API on http://%s:%d/v1 (docs: /docs; Ctrl-C stops it)", host, port)
        server.run()
    finally:
        runtime.close()
    return 0
