"""The LLM generator: ChatOpenAI (langchain-openai) against any OpenAI-compatible endpoint, streaming.

The numbered abstracts go into a delimited untrusted block (rag.qa.prompts); the block is counted with
tiktoken and trimmed to ``llm.context_tokens`` before the call (lowest-ranked papers dropped first,
then the last one truncated).

Faults: the endpoint, its timeout, retry policy and error mapping come from ``rag.openai_client``
(``llm_endpoint``); this module drives them around a stream. A request that fails before any text —
timeout, dropped connection, 408/409/429/5xx, an error event — is retried up to ``llm.max_retries``
times within the endpoint's time budget, which also ends a stream still running. Every failure becomes
a ``ConfigError``/``UpstreamError`` naming the endpoint and what to do. A stream that breaks after some
text (connection lost or stalled, malformed chunk, error event, time budget) is not retried: the text
received is returned as a ``Generation`` with ``incomplete`` set and an "answer incomplete" warning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from rag import tokens
from rag.config import LimitSettings, LLMSettings
from rag.errors import ConfigError
from rag.limits import check_request_tokens
from rag.openai_client import Overtime, llm_endpoint
from rag.qa.generate import AnswerMode, Generation, GenerationInput
from rag.qa.prompts import CANNOT_ANSWER, USER_TEMPLATE, format_source, neutralise, sources_block, system_prompt
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
        abstract = kept[-1].paper.abstract
        room = max(0, budget - overhead - 2)
        text = block(kept, tokens.truncate_tokens(abstract, room).rstrip() + " \u2026")
        notes.append(f"the abstract of [{len(kept)}] was cut to fit llm.context_tokens={budget}")
    return text, kept, notes


class LLMGenerator:
    """Answers written by a chat model from the retrieved abstracts; see the module docstring."""

    mode: AnswerMode = "llm"
    BRIEF_PAPERS = 3  # papers in context for a brief answer (rag.answer.AnswerLength)
    BRIEF_TOKENS = 250  # most tokens a brief answer (2-3 sentences) may take, within llm.max_tokens

    def __init__(self, cfg: LLMSettings, limits: LimitSettings | None = None) -> None:
        if not cfg.base_url:
            raise ConfigError("the llm mode needs an OpenAI-compatible endpoint: set PAPERCHAT_LLM__BASE_URL "
                              "(and PAPERCHAT_LLM__MODEL / PAPERCHAT_LLM__API_KEY), or use --mode extractive")
        self.cfg = cfg
        self.limits = limits or LimitSettings()
        self.endpoint = llm_endpoint(cfg)
        self._chat: Any = None
        self._lock = threading.Lock()

    @property
    def chat(self) -> Any:
        """The ChatOpenAI client, built once (it holds the connection pool); it never retries by itself."""
        with self._lock:
            if self._chat is None:
                self._chat = self.endpoint.chat_model(max_completion_tokens=self.cfg.max_tokens,
                                                      temperature=self.cfg.temperature)
            return self._chat

    def max_tokens(self, length: str) -> int:
        """The answer's token cap at a length: a brief one's is ``BRIEF_TOKENS`` (a model that ignores rule 5
        cannot ramble), the others' ``llm.max_tokens``."""
        return min(self.cfg.max_tokens, self.BRIEF_TOKENS) if length == "brief" else self.cfg.max_tokens

    def model(self, length: str) -> Any:
        """The chat model as called for an answer of ``length`` (its token cap bound)."""
        cap = self.max_tokens(length)
        return self.chat if cap == self.cfg.max_tokens else self.chat.bind(max_completion_tokens=cap)

    def links(self, length: str = "normal") -> tuple[Any, Any, Any]:
        """The three links of ``chain``: the prompt, the chat model as called at ``length``, and the text parser
        (``stream`` drives the model on its own, so it needs them apart)."""
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate

        prompt = ChatPromptTemplate.from_messages([("system", system_prompt(length)), ("human", USER_TEMPLATE)])
        return prompt, self.model(length), StrOutputParser()

    def chain(self, length: str = "normal") -> Any:
        """prompt | chat model | text — the LCEL piece that writes the answer (rule 5 of the system prompt says
        how long: ``rag.qa.prompts.system_prompt``; a brief answer's tokens are capped: ``max_tokens``)."""
        prompt, model, parser = self.links(length)
        return prompt | model | parser

    def prepare(self, inp: GenerationInput) -> tuple[dict[str, str], list[PaperHit], list[str]]:
        """Prompt variables, the sources actually sent (numbered 1..n; a brief answer's first ``BRIEF_PAPERS``),
        and trimming notes."""
        hits = list(inp.hits)[:self.BRIEF_PAPERS] if inp.length == "brief" else list(inp.hits)
        block, kept, notes = fit_sources(hits, self.cfg.context_tokens)
        question = neutralise(inp.question)
        check_request_tokens([system_prompt(inp.length), USER_TEMPLATE.format(sources=block, question=question)],
                             self.max_tokens(inp.length), self.limits)
        return {"sources": block, "question": question}, kept, notes

    @property
    def budget_s(self) -> float:
        """The most one answer may take, retries and waits included (``Endpoint.budget_s``)."""
        return self.endpoint.budget_s

    def generate(self, inp: GenerationInput) -> Generation:
        result = [item for item in self.stream(inp, _stream=False) if isinstance(item, Generation)]
        return result[-1]

    def stream(self, inp: GenerationInput, _stream: bool = True) -> Iterator[str | Generation]:
        """Text pieces, then the ``Generation``. A request that fails before any text is retried (see
        ``Endpoint.retry_wait``); a stream that breaks after some text ends with that text, flagged ``incomplete``."""
        if not inp.hits:
            yield CANNOT_ANSWER
            yield Generation(CANNOT_ANSWER, [], answerable=False)
            return
        variables, kept, notes = self.prepare(inp)
        prompt, model, parser = self.links(inp.length)
        chain = prompt | model | parser
        parts: list[str] = []
        deadline = time.monotonic() + self.budget_s
        attempt = 0
        while True:
            attempt += 1
            try:
                if _stream:
                    # The prompt is formatted here and the model streamed on its own: closing a whole LCEL
                    # sequence's stream early reads the rest of the response first (~1 s per 7 tokens here).
                    chunks = model.stream(prompt.invoke(variables))
                    try:
                        for chunk in chunks:
                            piece = parser.invoke(chunk)
                            if piece:
                                parts.append(piece)
                                yield piece
                            if time.monotonic() > deadline:
                                raise Overtime(self.budget_s)
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
                    reason = self.endpoint.describe(e)
                    log.warning("LLM stream from %s broke after %d characters: %s", self.cfg.base_url,
                                len(received), reason)
                    note = f"answer incomplete: the model stream broke after {len(received)} characters ({reason})"
                    yield Generation(received, kept, {}, answerable=True, warnings=[*notes, note], incomplete=note)
                    return
                wait = self.endpoint.retry_wait(e, attempt, deadline) if not parts else None
                if wait is None:
                    mapped = self.endpoint.error(e, attempt)
                    if mapped is e:
                        raise
                    raise mapped from e
                log.warning("LLM request to %s failed (%s); retry %d of %d in %.2f s", self.cfg.base_url,
                            self.endpoint.describe(e), attempt, self.cfg.max_retries, wait)
                time.sleep(wait)
        yield Generation("".join(parts), kept, {}, answerable=True, warnings=notes)
