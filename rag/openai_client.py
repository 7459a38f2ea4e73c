"""The one way paperchat talks to OpenAI-compatible endpoints: answers, condensing, embeddings, the judge.

An ``Endpoint`` is built from settings (``llm_endpoint``, ``embeddings_endpoint``, ``judge_endpoint``)
and owns, for every caller:

- construction: ``client()`` (the ``openai`` client) and ``chat_model()`` (LangChain's ``ChatOpenAI``)
  with the base URL, the key (a ``SecretStr``, unwrapped only here), the per-request timeout, and the
  libraries' own retries off, so that retries happen in one place;
- the retry policy, ``retry_wait``: timeouts, dropped connections, 408/409/429/5xx and error events are
  retried up to ``max_retries`` times, after what ``Retry-After``/``retry-after-ms`` asks or an
  exponential backoff with jitter (0.5 s doubling, at most 8 s), within a time budget of ``timeout_s ×
  (max_retries + 1) + 8 s × max_retries``. A refused connection (nothing listens), other 4xx, malformed
  replies and a ``Retry-After`` longer than ``timeout_s`` fail at once;
- the error mapping, ``error``: a refused key, an unknown model or a rejected request is a
  ``ConfigError``; everything else (connection, timeouts, 5xx, rate limits once retries are spent,
  malformed replies) is an ``UpstreamError``. Each message names the endpoint and the setting to change.

``call(request)`` runs one request under that policy (embeddings, the judge). The answer generator
drives ``retry_wait``/``error`` itself, because streamed text already shown must never be retried over;
condensing makes a single attempt (a failed rewrite falls back to the offline one, waiting would not help).
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import SecretStr

from rag.config import LLMSettings, Settings
from rag.errors import ConfigError, PaperchatError, UpstreamError

if TYPE_CHECKING:
    import openai
    from langchain_openai import ChatOpenAI

log = logging.getLogger(__name__)

T = TypeVar("T")

OPENAI_BASE_URL = "https://api.openai.com/v1"  # where the official client goes when no base URL is set
BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# Many local servers accept any key, but the openai client insists on one.
_NO_KEY = "not-needed"


class Overtime(Exception):
    """A request (or a stream still running) passed its endpoint's time budget (``Endpoint.budget_s``)."""

    def __init__(self, budget_s: float) -> None:
        super().__init__(f"it ran past the {budget_s:g} s time limit")
        self.budget_s = budget_s


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint as one caller uses it, and the settings that fix it when it fails.

    ``what`` names it in messages ("the LLM endpoint …"); the ``*_setting`` fields are the environment
    variables a user sets to change the base URL, model, key and timeout, quoted in error messages.
    """

    what: str
    base_url: str | None
    model: str
    api_key: SecretStr | None
    timeout_s: float
    max_retries: int
    url_setting: str
    model_setting: str
    key_setting: str
    timeout_setting: str
    request_hint: str = ""  # settings that shape the request body, named when the endpoint rejects it

    @property
    def where(self) -> str:
        return self.base_url or OPENAI_BASE_URL

    @property
    def budget_s(self) -> float:
        """The most one request may take, retries and waits included: a timeout per attempt, 8 s per pause."""
        return self.timeout_s * (self.max_retries + 1) + MAX_BACKOFF_S * self.max_retries

    # ---- construction --------------------------------------------------------------------------
    def client(self) -> openai.OpenAI:
        """An ``openai`` client for this endpoint that never retries by itself."""
        import openai

        key = self.api_key.get_secret_value() if self.api_key else _NO_KEY
        # max_retries=0: the client would otherwise retry on its own (refused connections too, and a
        # Retry-After of up to 2 minutes); paperchat retries in one place, `retry_wait`.
        return openai.OpenAI(base_url=self.where, api_key=key, timeout=self.timeout_s, max_retries=0)

    def chat_model(self, **params: Any) -> ChatOpenAI:
        """LangChain's chat model for this endpoint (``params``: max_completion_tokens, temperature, …);
        it never retries by itself either."""
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=self.model, base_url=self.where, api_key=self.api_key or SecretStr(_NO_KEY),
                          timeout=self.timeout_s, max_retries=0, **params)

    # ---- the retry policy ----------------------------------------------------------------------
    def call(self, request: Callable[[], T]) -> T:
        """``request()`` under the retry policy; a failure that is not retried becomes a paperchat error."""
        deadline = time.monotonic() + self.budget_s
        attempt = 0
        while True:
            attempt += 1
            try:
                return request()
            except Exception as e:
                wait = self.retry_wait(e, attempt, deadline)
                if wait is None:
                    mapped = self.error(e, attempt)
                    if mapped is e:
                        raise
                    raise mapped from e
                log.warning("%s request to %s failed (%s); retry %d of %d in %.2f s", self.what, self.where,
                            self.describe(e), attempt, self.max_retries, wait)
                time.sleep(wait)

    def retry_wait(self, e: BaseException, attempt: int, deadline: float) -> float | None:
        """Seconds to wait before retrying after ``attempt`` failed with ``e``, or None when not to retry.

        Retried: timeouts, dropped connections, 408/409/429/5xx and error events. Not retried: refused
        connections (nothing listens: say so at once), other 4xx, malformed replies, and any wait that
        would end past the time budget (a long Retry-After included)."""
        import openai

        if attempt > self.max_retries:
            return None
        if isinstance(e, openai.APIConnectionError):
            if refused(e):
                return None
        elif isinstance(e, openai.APIStatusError):
            if e.status_code not in (408, 409, 429) and e.status_code < 500:
                return None
        elif not isinstance(e, openai.APIError) or isinstance(e, openai.APIResponseValidationError):
            return None
        after = retry_after(e)
        if after is not None and after > self.timeout_s:
            log.info("not retrying %s: it asks to wait %.1f s, longer than the %g s timeout", self.where, after,
                     self.timeout_s)
            return None
        if after is not None:
            wait = after
        else:  # exponential backoff with jitter: 0.5 s, 1 s, 2 s … at most 8 s
            wait = min(BACKOFF_S * 2 ** (attempt - 1), MAX_BACKOFF_S) * (1 - 0.25 * random.random())
        if time.monotonic() + wait > deadline:
            log.info("not retrying %s: a %.1f s wait would pass the %.0f s budget", self.where, wait, self.budget_s)
            return None
        return wait

    # ---- errors --------------------------------------------------------------------------------
    def describe(self, e: BaseException) -> str:
        """What went wrong, in words, for warnings and logs."""
        return describe(e, self.timeout_s)

    def malformed(self, detail: str) -> UpstreamError:
        """A reply in the OpenAI format that still cannot be used (no choices, too few vectors …)."""
        return UpstreamError(f"the {self.what} endpoint {self.where} sent a malformed reply: {detail}")

    def error(self, e: BaseException, attempt: int = 1) -> BaseException:
        """``e`` as a paperchat error naming the endpoint and what to do; ``e`` itself when it is not a
        client error (a bug stays a bug)."""
        import httpx
        import openai

        if isinstance(e, PaperchatError):
            return e
        head = f"the {self.what} endpoint {self.where}"
        tries = f"{attempt} attempt{'s' if attempt != 1 else ''}"
        if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
            return ConfigError(f"{head} refused the API key ({e.__class__.__name__}): set {self.key_setting} to a "
                               "valid key for that endpoint")
        if isinstance(e, openai.NotFoundError):
            return ConfigError(f"{head} does not serve model {self.model!r}: set {self.model_setting} (or check "
                               f"{self.url_setting})")
        if isinstance(e, openai.BadRequestError | openai.UnprocessableEntityError):
            also = f" and {self.request_hint}" if self.request_hint else ""
            return ConfigError(f"{head} rejected the request (HTTP {e.status_code}: {server_message(e)}): check "
                               f"{self.model_setting}{also}")
        if isinstance(e, Overtime):
            return UpstreamError(f"{head} took longer than {e.budget_s:g} s to answer")
        if isinstance(e, openai.APITimeoutError):
            return UpstreamError(f"{head} timed out after {self.timeout_s:g} s ({tries}; {self.timeout_setting} "
                                 "sets the limit)")
        if isinstance(e, openai.APIConnectionError):
            if refused(e):
                return UpstreamError(f"cannot reach {head}: connection refused. Start the model server, or check "
                                     f"{self.url_setting}")
            return UpstreamError(f"{head} dropped the connection ({tries}): {root_cause(e)}")
        if isinstance(e, openai.RateLimitError):
            after = retry_after(e)
            hint = f"; it asks to wait {after:g} s" if after is not None else ""
            return UpstreamError(f"{head} is rate limiting requests (HTTP 429, {tries}{hint}): try again later")
        if isinstance(e, openai.APIStatusError):
            return UpstreamError(f"{head} failed with HTTP {e.status_code} ({tries}): {server_message(e)}")
        if isinstance(e, json.JSONDecodeError | openai.APIResponseValidationError):
            return UpstreamError(f"{head} sent a malformed reply (not the OpenAI format): {e}")
        if isinstance(e, openai.OpenAIError):
            return UpstreamError(f"{head} failed: {e}")
        if isinstance(e, httpx.HTTPError):
            return UpstreamError(f"{head} broke off the reply: {e}")
        return e


# ---- endpoints from settings ---------------------------------------------------------------------
def llm_endpoint(cfg: LLMSettings) -> Endpoint:
    """The chat model that writes answers and rewrites follow-ups (``llm.*``)."""
    return Endpoint("LLM", cfg.base_url, cfg.model, cfg.api_key, cfg.timeout_s, cfg.max_retries,
                    url_setting="PAPERCHAT_LLM__BASE_URL", model_setting="PAPERCHAT_LLM__MODEL",
                    key_setting="PAPERCHAT_LLM__API_KEY", timeout_setting="PAPERCHAT_LLM__TIMEOUT_S",
                    request_hint="PAPERCHAT_LLM__MAX_TOKENS / PAPERCHAT_LLM__CONTEXT_TOKENS / "
                                 "PAPERCHAT_LLM__TEMPERATURE")


def embeddings_endpoint(settings: Settings, model: str) -> Endpoint:
    """The embeddings endpoint of ``embeddings.provider = "openai"``; key and timeout fall back to ``llm.*``."""
    cfg = settings.embeddings
    return Endpoint("embeddings", cfg.base_url, model, cfg.api_key or settings.llm.api_key, settings.llm.timeout_s,
                    cfg.max_retries, url_setting="PAPERCHAT_EMBEDDINGS__BASE_URL",
                    model_setting="PAPERCHAT_EMBEDDINGS__MODEL",
                    key_setting="PAPERCHAT_EMBEDDINGS__API_KEY (or PAPERCHAT_LLM__API_KEY)",
                    timeout_setting="PAPERCHAT_LLM__TIMEOUT_S", request_hint="PAPERCHAT_EMBEDDINGS__DIMENSIONS")


def judge_endpoint(settings: Settings) -> Endpoint:
    """The LLM judge of ``paperchat eval --judge`` (``evals.judge_*``; the key falls back to ``llm.api_key``)."""
    cfg = settings.evals
    if not cfg.judge_base_url:
        raise ConfigError("no judge configured: set evals.judge_base_url (PAPERCHAT_EVALS__JUDGE_BASE_URL)")
    return Endpoint("judge", cfg.judge_base_url, cfg.judge_model, cfg.judge_api_key or settings.llm.api_key,
                    cfg.judge_timeout_s, cfg.judge_max_retries, url_setting="PAPERCHAT_EVALS__JUDGE_BASE_URL",
                    model_setting="PAPERCHAT_EVALS__JUDGE_MODEL",
                    key_setting="PAPERCHAT_EVALS__JUDGE_API_KEY (or PAPERCHAT_LLM__API_KEY)",
                    timeout_setting="PAPERCHAT_EVALS__JUDGE_TIMEOUT_S")


# ---- reading client errors -----------------------------------------------------------------------
def describe(e: BaseException, timeout_s: float | None = None) -> str:
    """What went wrong, in words (``timeout_s``: the request timeout, to say how long was waited)."""
    import openai

    if isinstance(e, Overtime | PaperchatError):
        return str(e)
    if isinstance(e, openai.APITimeoutError):
        return f"no data for {timeout_s:g} s" if timeout_s is not None else "the request timed out"
    if isinstance(e, openai.APIConnectionError):
        return "connection refused" if refused(e) else f"the connection was lost: {root_cause(e)}"
    if isinstance(e, openai.APIStatusError):
        return f"HTTP {e.status_code}: {server_message(e)}"
    if isinstance(e, json.JSONDecodeError | openai.APIResponseValidationError):
        return f"the endpoint sent a malformed chunk ({e})"
    if isinstance(e, openai.APIError):
        return f"the endpoint reported an error: {e.message}"
    return f"{e.__class__.__name__}: {e}"


def server_message(e: openai.APIStatusError) -> str:
    """The endpoint's own error message, without the client's "Error code: 500 - " prefix."""
    body = e.body
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) and message else e.message


def _chain_of(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def refused(e: BaseException) -> bool:
    """Nothing accepted the connection (refused, unknown host): retrying will not help."""
    return any(isinstance(c, ConnectionRefusedError) or type(c).__name__ == "ConnectError" for c in _chain_of(e))


def root_cause(e: BaseException) -> str:
    """The innermost cause's message ("peer closed connection without sending complete message body")."""
    *_, last = _chain_of(e)
    return str(last) or last.__class__.__name__


def retry_after(e: BaseException) -> float | None:
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
