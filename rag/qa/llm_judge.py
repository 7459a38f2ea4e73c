"""The LLM judge of cited statements: one batched, structured call per answer (``verify.judge``).

Every cited statement of an answer goes to the model in one request, with the abstracts it cites in the
delimited untrusted block (``rag.qa.prompts``: ``VERDICT_SYSTEM``, ``VERDICT_TEMPLATE``); the reply is a JSON
object giving each statement a verdict (supported | contradicted | not_in_source) and a verbatim quote of the
cited source sentence that says it or says otherwise. The quote is the evidence: one that is not in a cited
source (compared after folding whitespace, hyphenation, ligatures and curly quotes: ``quote_key``) is ignored,
and so is a reply entry that is missing or malformed; those statements keep the rules' verdict (``None`` in the
``Judge`` protocol). A timeout, an HTTP error, a refusal, a reply cut off or one that is not the JSON asked for
make the whole judge unavailable (``JudgeUnavailable``): the rules judge and ``rag.qa.verify`` says so in the
answer's warnings. The call goes through the LLM endpoint (``rag.openai_client``), with its own timeout
(``verify.judge_timeout_s``) and a single attempt: the answer is waiting, and the rules stand in.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from rag.config import LimitSettings, Settings
from rag.errors import ConfigError, PaperchatError
from rag.limits import check_request_tokens
from rag.openai_client import Endpoint, llm_endpoint
from rag.qa.findings import VERDICTS, Claim, Finding, JudgeUnavailable, Verdict
from rag.qa.generate import AnswerMode
from rag.qa.prompts import VERDICT_SYSTEM, VERDICT_TEMPLATE, neutralise, sources_block, untrusted_abstract

log = logging.getLogger(__name__)

MIN_QUOTE_WORDS = 3  # a shorter "quote" ("the model") is found anywhere and shows nothing
REPLY_TOKENS_PER_STATEMENT = 200  # a verdict, a quoted sentence and the words of the statement
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                         "\u00ab": '"', "\u00bb": '"', "\u00ad": None})
_HYPHEN_BREAK = re.compile(r"(?<=\w)[-\u2010\u2011]\s*(?=\w)")  # "exam-\nple", "exam- ple", "exam-ple"


def quote_key(text: str) -> str:
    """``text`` folded for comparing a quote with its source: ligatures and other compatibility forms (NFKC:
    "ﬁ" → "fi"), curly quotes straightened, soft hyphens dropped, words hyphenated across a line end (or
    not) joined, whitespace collapsed, and surrounding quotes and end punctuation stripped."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _HYPHEN_BREAK.sub("", text)
    return " ".join(text.split()).strip(" \"'.,;:")


def quote_in(quote: str, sources: Sequence[str]) -> bool:
    """Whether ``quote`` (of at least ``MIN_QUOTE_WORDS`` words) occurs in one of ``sources`` (see ``quote_key``)."""
    key = quote_key(quote)
    return len(key.split()) >= MIN_QUOTE_WORDS and any(key in quote_key(s) for s in sources if s)


def judge_endpoint(settings: Settings) -> Endpoint:
    """The LLM endpoint as the judge uses it: ``verify.judge_timeout_s`` and a single attempt."""
    return dataclasses.replace(llm_endpoint(settings.llm), timeout_s=settings.verify.judge_timeout_s,
                               max_retries=0, timeout_setting="PAPERCHAT_VERIFY__JUDGE_TIMEOUT_S")


def uses_llm_judge(settings: Settings, mode: AnswerMode) -> bool:
    """Whether ``verify.judge`` asks the LLM judge for an answer written in ``mode`` (see ``VerifySettings``);
    ``ConfigError`` for ``llm`` without an endpoint."""
    choice = settings.verify.judge
    if choice == "llm" and settings.offline:
        raise ConfigError("verify.judge = llm needs an OpenAI-compatible endpoint: set PAPERCHAT_LLM__BASE_URL, "
                          "or PAPERCHAT_VERIFY__JUDGE=rules for the offline rules")
    return choice == "llm" or (choice == "auto" and not settings.offline and mode == "llm")


class LLMJudge:
    """A ``Judge`` (rag.qa.findings) asking a chat model for every statement's verdict and quote at once."""

    name = "llm"

    def __init__(self, endpoint: Endpoint, max_statements: int = 12, limits: LimitSettings | None = None) -> None:
        self.endpoint = endpoint
        self.max_statements = max_statements
        self.limits = limits or LimitSettings()
        self.client = endpoint.client()

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMJudge:
        return cls(judge_endpoint(settings), settings.verify.judge_max_statements, settings.limits)

    def judge(self, claims: Sequence[Claim]) -> list[list[Finding] | None]:
        """Each claim's findings (see ``Judge``); ``JudgeUnavailable`` when the model gives no usable reply."""
        asked = [i for i, c in enumerate(claims) if any(s.strip() for s in c.sources)][:self.max_statements]
        if len(asked) < len(claims):
            log.info("LLM judge: %d of %d statements left to the rules (no source text, or past "
                     "verify.judge_max_statements=%d)", len(claims) - len(asked), len(claims), self.max_statements)
        out: list[list[Finding] | None] = [None] * len(claims)
        if not asked:
            return out
        entries = parse_reply(self.complete([claims[i] for i in asked]))
        for k, i in enumerate(asked, start=1):
            out[i] = finding(claims[i], entries.get(k))
        if all(out[i] is None for i in asked):
            raise JudgeUnavailable("it gave no verdict with a quote found in the cited abstracts")
        return out

    def complete(self, claims: Sequence[Claim]) -> str:
        """The model's reply to the verdict request for ``claims`` (numbered 1..n in the request)."""
        system, user = build_messages(claims)
        reply_tokens = REPLY_TOKENS_PER_STATEMENT * len(claims) + 100
        try:
            check_request_tokens([system, user], reply_tokens, self.limits)
            reply = self.endpoint.call(lambda: self.client.chat.completions.create(
                model=self.endpoint.model, temperature=0, max_completion_tokens=reply_tokens,
                response_format={"type": "json_object"},
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]))
        except PaperchatError as e:
            raise JudgeUnavailable(str(e)) from e
        if not reply.choices:
            raise JudgeUnavailable(str(self.endpoint.malformed("no choices in the reply")))
        choice = reply.choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal or choice.finish_reason == "content_filter":
            raise JudgeUnavailable(f"the model refused: {(refusal or 'content filter')[:200]}")
        if choice.finish_reason == "length":
            raise JudgeUnavailable(f"its reply was cut off at {reply_tokens} tokens")
        return choice.message.content or ""


def build_messages(claims: Sequence[Claim]) -> tuple[str, str]:
    """(system, user) of the verdict request: each cited source once, in the untrusted block, then the
    statements as JSON with ids 1..n."""
    texts: dict[int, str] = {}
    for c in claims:
        for n, text in zip(c.cited, c.sources):
            texts.setdefault(n, text)
    block = sources_block([f'<source n="{n}">\n{untrusted_abstract(texts[n])}\n</source>' for n in sorted(texts)])
    statements = json.dumps([{"id": k, "cites": list(c.cited), "statement": neutralise(c.text)}
                             for k, c in enumerate(claims, start=1)], ensure_ascii=False, indent=1)
    return VERDICT_SYSTEM, VERDICT_TEMPLATE.format(sources=block, statements=statements)


def parse_reply(text: str) -> dict[int, dict[str, Any]]:
    """The reply's verdict entries by statement id; ``JudgeUnavailable`` when it is not the JSON asked for (a
    refusal in words included)."""
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        obj = json.loads(match.group(0)) if match else None
    except ValueError:
        obj = None
    items = obj.get("verdicts") if isinstance(obj, dict) else None
    if not isinstance(items, list):
        raise JudgeUnavailable(f"its reply is not the JSON object of verdicts asked for: {(text or '')[:120]!r}")
    return {e["id"]: e for e in items if isinstance(e, dict) and isinstance(e.get("id"), int)
            and not isinstance(e.get("id"), bool)}


def _text(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    return value if isinstance(value, str) else ""


def finding(claim: Claim, entry: dict[str, Any] | None) -> list[Finding] | None:
    """One reply entry as the claim's findings; ``None`` (the rules' verdict stands) when it is missing, its
    verdict is not one of the three, or its quote is not in a cited source."""
    if entry is None or entry.get("verdict") not in VERDICTS:
        return None
    verdict: Verdict = entry["verdict"]
    quote = _text(entry, "quote")
    needs_quote = bool(quote.strip()) or verdict != "not_in_source"  # "not in the source" may quote nothing
    if needs_quote and not quote_in(quote, [*claim.sources, *(untrusted_abstract(s) for s in claim.sources)]):
        log.info("LLM judge: quote not in the cited abstracts, ignored: %r", quote[:200])
        return None
    said = _text(entry, "said")
    if not said.strip() or quote_key(said) not in quote_key(claim.text):
        said = claim.text
    return [Finding("llm", verdict, said.strip(), " ".join(quote.split()))]

