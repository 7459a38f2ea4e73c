"""The LLM generator: ChatOpenAI (langchain-openai) against any OpenAI-compatible endpoint, streaming.

The numbered abstracts go into a delimited untrusted block (rag.qa.prompts); the block is counted with
tiktoken and trimmed to ``llm.context_tokens`` before the call (lowest-ranked papers dropped first,
then the last one truncated).

Faults: retries happen in one place, ``LLMGenerator.stream`` (the openai client and LangChain are told
not to retry). A request that fails before any text — timeout, dropped connection, 408/409/429/5xx, an
error event — is retried up to ``llm.max_retries`` times, after what ``Retry-After`` asks or an
exponential backoff (0.5 s doubling, at most 8 s), within one answer budget of ``timeout_s ×
(max_retries + 1) + 8 s × max_retries`` that also ends a stream still running. A refused connection, a
refused key, other 4xx, malformed replies and a ``Retry-After`` longer than ``timeout_s`` fail at once.
Every failure becomes a ``ConfigError``/``UpstreamError`` naming the endpoint and what to do. A stream
that breaks after some text (connection lost or stalled, malformed chunk, error event, time budget) is
not retried: the text received is returned as a ``Generation`` with ``incomplete`` set and an "answer
incomplete" warning.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from rag import tokens
from rag.config import LimitSettings, LLMSettings
from rag.errors import ConfigError, UpstreamError
from rag.limits import check_request_tokens
from rag.qa.generate import Generation, GenerationInput, Mode
from rag.qa.prompts import CANNOT_ANSWER, SYSTEM_PROMPT, USER_TEMPLATE, format_source, neutralise, sources_block
from rag.qa.retrieval import PaperHit

log = logging.getLogger(__name__)


def fit_sources(hits: list[PaperHit], budget: int) -> tuple[str, list[PaperHit], list[str]]:
    """The sources block within ``budget`` cl100k tokens: drop the lowest-ranked papers, then truncate."""
    kept = list(hits)
    notes: list[str] = []

    def block(papers: list[PaperHit], last_abstract: str | None = None) -> str:
        parts = [format_source(i + 1, h.paper, last_abstract if i == len(papers) - 1 else None)
                 for i, h in enumerate(papers)]
        return sources_block(parts)

    text = block(kept)
    while len(kept) > 1 and tokens.count_tokens(text) > budget:
        kept.pop()
        text = block(kept)
    if len(kept) < len(hits):
        notes.append(f"{len(hits) - len(kept)} lower-ranked paper(s) left out to fit llm.context_tokens={budget}")
    if kept and tokens.count_tokens(text) > budget:
        overhead = tokens.count_tokens(block(kept, ""))
        abstract = str(kept[-1].paper.get("abstract") or "")
        room = max(0, budget - overhead - 2)
        text = block(kept, tokens.truncate_tokens(abstract, room).rstrip() + " \u2026")
        notes.append(f"the abstract of [{len(kept)}] was cut to fit llm.context_tokens={budget}")
    return text, kept, notes


class LLMGenerator:
    """Answers written by a chat model from the retrieved abstracts; see the module docstring."""

    mode: Mode = "llm"

    def __init__(self, cfg: LLMSettings, limits: LimitSettings | None = None) -> None:
        if not cfg.base_url:
            raise ConfigError("the llm mode needs an OpenAI-compatible endpoint: set PAPERCHAT_LLM__BASE_URL "
                              "(and PAPERCHAT_LLM__MODEL / PAPERCHAT_LLM__API_KEY), or use --mode extractive")
        self.cfg = cfg
        self.limits = limits or LimitSettings()
        self._chat: Any = None
        self._lock = threading.Lock()

    @property
    def chat(self) -> Any:
        """The ChatOpenAI client, built once (it holds the connection pool); it never retries by itself."""
        with self._lock:
            if self._chat is None:
                from langchain_openai import ChatOpenAI
                from pydantic import SecretStr

                # Many local servers accept any key, but the client insists on one.
                key = self.cfg.api_key or SecretStr("not-needed")
                # max_retries=0: the openai client would otherwise retry on its own (refused connections
                # too, and Retry-After up to 2 minutes); paperchat retries in one place, `_attempts`.
                self._chat = ChatOpenAI(model=self.cfg.model, base_url=self.cfg.base_url, api_key=key,
                                        timeout=self.cfg.timeout_s, max_completion_tokens=self.cfg.max_tokens,
                                        temperature=self.cfg.temperature, max_retries=0)
            return self._chat

    def chain(self) -> Any:
        """prompt | chat model | text — the LCEL piece that writes the answer."""
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate

        prompt = ChatPromptTemplate.from_messages([("system", SYSTEM_PROMPT), ("human", USER_TEMPLATE)])
        return prompt | self.chat | StrOutputParser()

    def prepare(self, inp: GenerationInput) -> tuple[dict[str, str], list[PaperHit], list[str]]:
        """Prompt variables, the sources actually sent (numbered 1..n), and trimming notes."""
        block, kept, notes = fit_sources(list(inp.hits), self.cfg.context_tokens)
        question = neutralise(inp.question)
        check_request_tokens([SYSTEM_PROMPT, USER_TEMPLATE.format(sources=block, question=question)],
                             self.cfg.max_tokens, self.limits)
        return {"sources": block, "question": question}, kept, notes

    @property
    def budget_s(self) -> float:
        """The most one answer may take, retries and waits included: a timeout per attempt, 8 s per pause."""
        return self.cfg.timeout_s * (self.cfg.max_retries + 1) + _MAX_BACKOFF_S * self.cfg.max_retries

    def generate(self, inp: GenerationInput) -> Generation:
        result = [item for item in self.stream(inp, _stream=False) if isinstance(item, Generation)]
        return result[-1]

    def stream(self, inp: GenerationInput, _stream: bool = True) -> Iterator[str | Generation]:
        """Text pieces, then the ``Generation``. A request that fails before any text is retried (see
        ``_attempts``); a stream that breaks after some text ends with that text, flagged ``incomplete``."""
        if not inp.hits:
            yield CANNOT_ANSWER
            yield Generation(CANNOT_ANSWER, [], answerable=False)
            return
        variables, kept, notes = self.prepare(inp)
        chain = self.chain()
        prompt, parser = chain.first, chain.last
        parts: list[str] = []
        deadline = time.monotonic() + self.budget_s
        attempt = 0
        while True:
            attempt += 1
            try:
                if _stream:
                    # The prompt is formatted here and the model streamed on its own: closing a whole LCEL
                    # sequence's stream early reads the rest of the response first (~1 s per 7 tokens here).
                    chunks = self.chat.stream(prompt.invoke(variables))
                    try:
                        for chunk in chunks:
                            piece = parser.invoke(chunk)
                            if piece:
                                parts.append(piece)
                                yield piece
                            if time.monotonic() > deadline:
                                raise _Overtime(self.budget_s)
                    finally:
                        chunks.close()  # releases the HTTP response at once, also when we stop early
                else:
                    text = chain.invoke(variables)
                    parts.append(text)
                    yield text
                break
            except Exception as e:
                received = "".join(parts)
                if received.strip():  # the reader has seen this text: keep it, never retry over it
                    reason = self._describe(e, attempt)
                    log.warning("LLM stream from %s broke after %d characters: %s", self.cfg.base_url,
                                len(received), reason)
                    note = f"answer incomplete: the model stream broke after {len(received)} characters ({reason})"
                    yield Generation(received, kept, {}, answerable=True, warnings=[*notes, note], incomplete=note)
                    return
                wait = self._retry_wait(e, attempt, deadline) if not parts else None
                if wait is None:
                    mapped = self._error(e, attempt)
                    if mapped is e:
                        raise
                    raise mapped from e
                log.warning("LLM request to %s failed (%s); retry %d of %d in %.2f s", self.cfg.base_url,
                            self._describe(e, attempt), attempt, self.cfg.max_retries, wait)
                time.sleep(wait)
        yield Generation("".join(parts), kept, {}, answerable=True, warnings=notes)

    # ---- faults ---------------------------------------------------------------------------------
    def _retry_wait(self, e: Exception, attempt: int, deadline: float) -> float | None:
        """Seconds to wait before retrying after ``attempt`` failed, or None when not to retry.

        Retried: timeouts, dropped connections, 408/409/429/5xx and error events before any text. Not
        retried: refused connections (nothing listens: say so at once), other 4xx, malformed replies, and
        any wait that would end past the answer's time budget (a long Retry-After included)."""
        import openai

        if attempt > self.cfg.max_retries:
            return None
        if isinstance(e, openai.APIConnectionError):
            if _refused(e):
                return None
        elif isinstance(e, openai.APIStatusError):
            if e.status_code not in (408, 409, 429) and e.status_code < 500:
                return None
        elif not isinstance(e, openai.APIError) or isinstance(e, openai.APIResponseValidationError):
            return None
        after = _retry_after(e)
        if after is not None and after > self.cfg.timeout_s:
            log.info("not retrying %s: it asks to wait %.1f s, longer than llm.timeout_s", self.cfg.base_url, after)
            return None
        if after is not None:
            wait = after
        else:  # exponential backoff with jitter: 0.5 s, 1 s, 2 s … at most 8 s
            wait = min(_BACKOFF_S * 2 ** (attempt - 1), _MAX_BACKOFF_S) * (1 - 0.25 * random.random())
        if time.monotonic() + wait > deadline:
            log.info("not retrying %s: a %.1f s wait would pass the %.0f s budget", self.cfg.base_url, wait,
                     self.budget_s)
            return None
        return wait

    def _describe(self, e: Exception, attempt: int) -> str:
        """What went wrong, in words, for warnings and logs."""
        import openai

        if isinstance(e, _Overtime):
            return str(e)
        if isinstance(e, openai.APITimeoutError):
            return f"no data for {self.cfg.timeout_s:g} s"
        if isinstance(e, openai.APIConnectionError):
            return "connection refused" if _refused(e) else f"the connection was lost: {_root(e)}"
        if isinstance(e, openai.APIStatusError):
            return f"HTTP {e.status_code}: {e.message}"
        if isinstance(e, json.JSONDecodeError | openai.APIResponseValidationError):
            return f"the endpoint sent a malformed chunk ({e})"
        if isinstance(e, openai.APIError):
            return f"the endpoint reported an error: {e.message}"
        return f"{e.__class__.__name__}: {e}"

    def _error(self, e: Exception, attempt: int = 1) -> Exception:
        """Map client errors to paperchat's: a refused key says how to fix it, the rest is upstream."""
        import openai

        where = self.cfg.base_url
        tries = f"{attempt} attempt{'s' if attempt != 1 else ''}"
        if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
            return ConfigError(f"the LLM endpoint {where} refused the API key ({e.__class__.__name__}): set "
                               "PAPERCHAT_LLM__API_KEY to a valid key for that endpoint")
        if isinstance(e, openai.NotFoundError):
            return ConfigError(f"the LLM endpoint {where} does not serve model {self.cfg.model!r}: set "
                               "PAPERCHAT_LLM__MODEL (or check PAPERCHAT_LLM__BASE_URL)")
        if isinstance(e, _Overtime):
            return UpstreamError(f"the LLM endpoint {where} took longer than {self.budget_s:g} s to answer")
        if isinstance(e, openai.APITimeoutError):
            return UpstreamError(f"the LLM endpoint {where} timed out after {self.cfg.timeout_s:g} s ({tries}; "
                                 "PAPERCHAT_LLM__TIMEOUT_S sets the limit)")
        if isinstance(e, openai.APIConnectionError):
            if _refused(e):
                return UpstreamError(f"cannot reach the LLM endpoint {where}: connection refused. Start the "
                                     "model server, or check PAPERCHAT_LLM__BASE_URL")
            return UpstreamError(f"the LLM endpoint {where} dropped the connection ({tries}): {_root(e)}")
        if isinstance(e, openai.RateLimitError):
            after = _retry_after(e)
            hint = f"; it asks to wait {after:g} s" if after is not None else ""
            return UpstreamError(f"the LLM endpoint {where} is rate limiting requests (HTTP 429, {tries}{hint}): "
                                 "try again later")
        if isinstance(e, openai.APIStatusError):
            return UpstreamError(f"the LLM endpoint {where} failed with HTTP {e.status_code} ({tries}): {e.message}")
        if isinstance(e, json.JSONDecodeError | openai.APIResponseValidationError):
            return UpstreamError(f"the LLM endpoint {where} sent a malformed reply (not the OpenAI format): {e}")
        if isinstance(e, openai.OpenAIError):
            return UpstreamError(f"the LLM endpoint {where} failed: {e}")
        import httpx

        if isinstance(e, httpx.HTTPError):
            return UpstreamError(f"the LLM endpoint {where} broke off the answer: {e}")
        return e


_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0


class _Overtime(Exception):
    """The answer ran past its time budget (``LLMGenerator.budget_s``)."""

    def __init__(self, budget_s: float) -> None:
        super().__init__(f"it ran past the {budget_s:g} s time limit")


def _chain_of(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _refused(e: BaseException) -> bool:
    """Nothing accepted the connection (refused, unknown host): retrying will not help."""
    return any(isinstance(c, ConnectionRefusedError) or type(c).__name__ == "ConnectError" for c in _chain_of(e))


def _root(e: BaseException) -> str:
    """The innermost cause's message ("peer closed connection without sending complete message body")."""
    *_, last = _chain_of(e)
    return str(last) or last.__class__.__name__


def _retry_after(e: BaseException) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms`` or ``Retry-After`` in seconds), if any."""
    response = getattr(e, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name))
        except (TypeError, ValueError):
            continue
        if value >= 0 and math.isfinite(value):
            return value / scale
    return None
