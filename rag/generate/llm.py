"""The LLM generator: ChatOpenAI (langchain-openai) against any OpenAI-compatible endpoint, streaming.

The numbered abstracts go into a delimited untrusted block (rag.prompts); the block is counted with
tiktoken and trimmed to ``llm.context_tokens`` before the call (lowest-ranked papers dropped first,
then the last one truncated). Retries happen only inside the openai client (``llm.max_retries``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from rag import tokens
from rag.config import LLMSettings
from rag.errors import ConfigError, UpstreamError
from rag.generate import Generation, GenerationInput, Mode
from rag.prompts import CANNOT_ANSWER, SYSTEM_PROMPT, USER_TEMPLATE, format_source, sources_block
from rag.retrieval import PaperHit

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

    def __init__(self, cfg: LLMSettings) -> None:
        if not cfg.base_url:
            raise ConfigError("the llm mode needs an OpenAI-compatible endpoint: set PAPERCHAT_LLM__BASE_URL "
                              "(and PAPERCHAT_LLM__MODEL / PAPERCHAT_LLM__API_KEY), or use --mode extractive")
        self.cfg = cfg
        self._chat: Any = None
        self._lock = threading.Lock()

    @property
    def chat(self) -> Any:
        """The ChatOpenAI client, built once (it holds the connection pool)."""
        with self._lock:
            if self._chat is None:
                from langchain_openai import ChatOpenAI
                from pydantic import SecretStr

                # Many local servers accept any key, but the client insists on one.
                key = self.cfg.api_key or SecretStr("not-needed")
                self._chat = ChatOpenAI(model=self.cfg.model, base_url=self.cfg.base_url, api_key=key,
                                        timeout=self.cfg.timeout_s, max_completion_tokens=self.cfg.max_tokens,
                                        temperature=self.cfg.temperature, max_retries=self.cfg.max_retries)
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
        return {"sources": block, "question": inp.question}, kept, notes

    def generate(self, inp: GenerationInput) -> Generation:
        result = [item for item in self.stream(inp, _stream=False) if isinstance(item, Generation)]
        return result[-1]

    def stream(self, inp: GenerationInput, _stream: bool = True) -> Iterator[str | Generation]:
        if not inp.hits:
            yield CANNOT_ANSWER
            yield Generation(CANNOT_ANSWER, [], answerable=False)
            return
        variables, kept, notes = self.prepare(inp)
        chain = self.chain()
        parts: list[str] = []
        try:
            if _stream:
                for piece in chain.stream(variables):
                    if piece:
                        parts.append(piece)
                        yield piece
            else:
                text = chain.invoke(variables)
                parts.append(text)
                yield text
        except Exception as e:
            mapped = self._error(e)
            if mapped is e:
                raise
            raise mapped from e
        yield Generation("".join(parts), kept, {}, answerable=True, warnings=notes)

    def _error(self, e: Exception) -> Exception:
        """Map client errors to paperchat's: a refused key says how to fix it, the rest is upstream."""
        import openai

        where = self.cfg.base_url
        if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
            return ConfigError(f"the LLM endpoint {where} refused the API key ({e.__class__.__name__}): set "
                               "PAPERCHAT_LLM__API_KEY to a valid key for that endpoint")
        if isinstance(e, openai.NotFoundError):
            return ConfigError(f"the LLM endpoint {where} does not serve model {self.cfg.model!r}: set "
                               "PAPERCHAT_LLM__MODEL (or check PAPERCHAT_LLM__BASE_URL)")
        if isinstance(e, openai.APITimeoutError):
            return UpstreamError(f"the LLM endpoint {where} timed out after {self.cfg.timeout_s:g} s "
                                 f"({self.cfg.max_retries} retries)")
        if isinstance(e, openai.APIConnectionError):
            return UpstreamError(f"cannot reach the LLM endpoint {where}: {e}")
        if isinstance(e, openai.APIStatusError):
            return UpstreamError(f"the LLM endpoint {where} failed with HTTP {e.status_code}: {e.message}")
        if isinstance(e, openai.OpenAIError):
            return UpstreamError(f"the LLM endpoint {where} failed: {e}")
        import httpx

        if isinstance(e, httpx.HTTPError):
            return UpstreamError(f"the LLM endpoint {where} broke off the answer: {e}")
        return e
