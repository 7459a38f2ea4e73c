"""Every configured limit checked in one place (``limits`` in rag/config.py): question length, tokens per LLM
request, questions per session per minute, upload size, abstract length.

Each check is a small function the call site runs before doing the work; a hit raises ``BudgetExceeded``
(or ``InputError`` for an empty question) with the setting to change named in the message.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence

from rag.config import LimitSettings
from rag.errors import BudgetExceeded, InputError, RateLimited

log = logging.getLogger(__name__)

DEFAULTS = LimitSettings()
RATE_WINDOW_S = 60.0
# Per-message overhead of the chat format (role, separators), as OpenAI documents for cl100k models.
_MESSAGE_OVERHEAD = 4
_REPLY_PRIMER = 3


def check_question(question: str | None, limits: LimitSettings = DEFAULTS) -> str:
    """The question stripped; ``InputError`` when empty, ``BudgetExceeded`` past ``limits.question_chars``."""
    text = (question or "").strip()
    if not text:
        raise InputError("the question is empty")
    if len(text) > limits.question_chars:
        raise BudgetExceeded(f"the question has {len(text)} characters; the limit is {limits.question_chars} "
                             "(PAPERCHAT_LIMITS__QUESTION_CHARS)")
    return text


def request_tokens(messages: Sequence[str], max_completion: int = 0) -> int:
    """cl100k tokens one chat request uses: every message's text plus the chat format's overhead, plus the
    tokens reserved for the answer (``max_completion``)."""
    from rag import tokens  # tiktoken loads on the first sized request, not with the loaders that import limits

    return (sum(tokens.count_tokens(m) + _MESSAGE_OVERHEAD for m in messages) + _REPLY_PRIMER
            + max(0, int(max_completion)))


def check_request_tokens(messages: Sequence[str], max_completion: int = 0,
                         limits: LimitSettings = DEFAULTS) -> int:
    """The request's token count (``request_tokens``); ``BudgetExceeded`` past ``limits.request_tokens``,
    before anything is sent."""
    used = request_tokens(messages, max_completion)
    if used > limits.request_tokens:
        raise BudgetExceeded(f"the request to the model would use {used} tokens (prompt and answer); the limit is "
                             f"{limits.request_tokens} (PAPERCHAT_LIMITS__REQUEST_TOKENS; lower "
                             "PAPERCHAT_LLM__CONTEXT_TOKENS or PAPERCHAT_LLM__MAX_TOKENS to fit)")
    return used


def check_rate(stamps: Sequence[float], limit: int, now: float | None = None, window: float = RATE_WINDOW_S,
               setting: str = "PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE") -> list[float]:
    """The session's question times within the window plus this one; ``BudgetExceeded`` past ``limit``
    questions in ``window`` seconds (``limits.requests_per_minute``; the message names ``setting``):
    ``RateLimited``, with the seconds to wait."""
    now = time.monotonic() if now is None else now
    recent = [t for t in stamps if now - t < window]
    if len(recent) >= limit:
        wait = int(window - (now - recent[0])) + 1
        raise RateLimited(f"too many questions: the limit is {limit} a minute ({setting}); try again in {wait} s",
                          wait)
    return recent + [now]


def check_upload(size_bytes: int, limits: LimitSettings = DEFAULTS, name: str | None = None) -> None:
    """``BudgetExceeded`` when an upload is larger than ``limits.upload_mb`` (MiB, as Gradio counts)."""
    if size_bytes > limits.upload_mb * 1024 * 1024:
        where = f"{name}: " if name else ""
        raise BudgetExceeded(f"{where}the file has {size_bytes / 1e6:.1f} MB; the upload limit is "
                             f"{limits.upload_mb:g} MB (PAPERCHAT_LIMITS__UPLOAD_MB)")


def cap_abstract(text: str, limit: int = DEFAULTS.abstract_chars) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters at a sentence end (else a word end) with a closing
    ellipsis, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = text[:max(1, limit - 2)]  # room for " …"
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", head)]
    cut = ends[-1] if ends and ends[-1] >= limit // 2 else None
    if cut is None:
        space = head.rfind(" ")
        cut = space if space >= limit // 2 else len(head)
    return head[:cut].rstrip() + " \u2026", True
