"""Follow-up questions rewritten into standalone ones, using the conversation and the papers it cited.

Offline, a follow-up ("What does it penalize?") is detected from pronouns, deictics, openers such as
"and" / "what about", or sheer brevity, and expanded with the previous question and the key phrases of
the papers the previous answer cited (the first one weighted most). The cited paper ids travel along
so the chain can keep the paper under discussion first unless a new one is clearly better. With an
LLM endpoint the standard condense prompt goes to the generator's chat model (built by
``rag.openai_client``, so the same base URL, key and timeout); it makes a single attempt, and any error
falls back to the offline rewrite at once, since retrying would only delay an answer that does not
need it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.answer import Answer, Citation
from rag.openai_client import describe
from rag.qa.evidence import content_terms
from rag.qa.prompts import CONDENSE_SYSTEM, CONDENSE_TEMPLATE

log = logging.getLogger(__name__)

Turn = Answer  # an earlier turn of the conversation: its Answer carries the question, citations and papers

_PRONOUN = re.compile(r"\b(it|its|itself|they|them|their|theirs|themselves|he|she|his|her|hers|this|these|those|"
                      r"former|latter)\b", re.I)
_DEICTIC = re.compile(r"\b(?:that|the|this|these|those|such|said|same)\s+(?:paper|papers|method|methods|approach|"
                      r"approaches|model|models|work|study|studies|algorithm|algorithms|framework|technique|"
                      r"results?|authors?|one|ones|idea|system|benchmark|dataset|attack|defen[cs]e|architecture|"
                      r"proposal|finding|findings)\b|\b(?:which|what)\s+one\b|\bthe\s+(?:first|second|third|last|"
                      r"other)\s+(?:one|paper)\b|\bof\s+them\b|\bthat\s*\?", re.I)
_OPENER = re.compile(r"^\s*(?:and|also|so|then|but|what about|how about|and what about|what else|why|how so|"
                     r"tell me more|more on|same for|compared to)\b", re.I)
SHORT_TERMS = 3  # a question with this few topic terms leans on the conversation


@dataclass
class Condensed:
    """The question retrieval should use, and what the conversation says about it."""

    question: str
    standalone: str
    follow_up: bool = False
    prefer_ids: list[str] = field(default_factory=list)  # previously cited papers, first = most relevant
    warnings: list[str] = field(default_factory=list)


def as_turns(history: Sequence[Turn] | None) -> list[Answer]:
    """Normalise history items ((question, Answer) pairs or Answers) to Answers."""
    out: list[Answer] = []
    for item in history or []:
        out.append(item[1] if isinstance(item, tuple) else item)
    return out


def is_follow_up(question: str, history: Sequence[Turn] | None, allow_short: bool = True) -> bool:
    """True when the question leans on earlier turns: pronouns, "the method", "what about", or brevity
    (``allow_short=False`` when the question names its own filters, e.g. an author)."""
    if not history:
        return False
    if _PRONOUN.search(question) or _DEICTIC.search(question) or _OPENER.match(question):
        return True
    return allow_short and len(content_terms(question)) <= SHORT_TERMS


def cited_name(c: Citation) -> str:
    """A cited paper's name for retrieval: its title, or its label without the leading authors."""
    text = c.title or ""
    if c.authors:
        last = c.authors[0].split()[-1] if c.authors[0].split() else ""
        if last and text.startswith(last):
            text = re.sub(r"^[^:]{1,80}:\s+", "", text)
    return text.rstrip("…").strip()


def offline_condense(question: str, history: Sequence[Turn] | None, follow_up: bool | None = None) -> Condensed:
    """Expand a follow-up with the previous question and the key phrases of the papers it cited."""
    turns = as_turns(history)
    if follow_up is None:
        follow_up = is_follow_up(question, turns)
    if not turns or not follow_up:
        return Condensed(question, question)
    last = turns[-1]
    cited = [c for c in last.citations]
    prefer = [c.paper_id for c in cited]
    parts = [question.strip(), last.question.strip()]
    if cited:
        first = cited_name(cited[0])
        # The first cited paper is what "it" most likely means: name it twice, the others once.
        parts += [first, first] + [cited_name(c) for c in cited[1:3]]
    elif len(turns) > 1:
        parts.append(turns[-2].question.strip())
    standalone = " ; ".join(p for p in parts if p)
    return Condensed(question, standalone, True, prefer)


def _history_text(turns: list[Answer], max_turns: int = 3) -> str:
    lines = []
    for t in turns[-max_turns:]:
        answer = re.sub(r"\s+", " ", t.answer)[:400]
        lines.append(f"User: {t.question}\nAssistant: {answer}")
    return "\n".join(lines)


def _papers_text(turn: Answer) -> str:
    return "\n".join(f"[{c.n}] {c.title}" for c in turn.citations[:5]) or "(none)"


def llm_condense(question: str, history: Sequence[Turn] | None, chat: Any) -> Condensed:
    """Rewrite with the LLM (``chat``: a LangChain chat model from ``Endpoint.chat_model``); the offline
    rewrite on any failure, with the reason in words."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    turns = as_turns(history)
    if not turns:
        return Condensed(question, question)
    prefer = [c.paper_id for c in turns[-1].citations]
    prompt = ChatPromptTemplate.from_messages([("system", CONDENSE_SYSTEM), ("human", CONDENSE_TEMPLATE)])
    try:
        text = (prompt | chat | StrOutputParser()).invoke(
            {"history": _history_text(turns), "papers": _papers_text(turns[-1]), "question": question})
        text = re.sub(r"^\s*(standalone question:)\s*", "", text.strip(), flags=re.I).strip().strip('"')
        if not text:
            raise ValueError("empty rewrite")
    except Exception as e:  # any endpoint or parsing failure: the offline rewrite still works
        timeout = getattr(chat, "request_timeout", None)
        reason = describe(e, float(timeout) if isinstance(timeout, int | float) else None)
        log.warning("condense via LLM failed (%s); using the offline rewrite", reason)
        c = offline_condense(question, turns)
        c.warnings.append(f"the LLM could not rewrite the follow-up ({reason}); used the offline rewrite")
        c.prefer_ids = prefer
        c.follow_up = True
        return c
    return Condensed(question, text[:2000], True, prefer)


_SELECTION = re.compile(r"\b(?:which|what)\s+(?:of\s+(?:them|these|those|the\s+\w+)|one|ones|paper|papers)\b|"
                        r"\b(?:either|neither|both|the\s+other|the\s+(?:first|second|third|last)\s+one)\b", re.I)


def is_selection(question: str) -> bool:
    """"Which of them…" / "which one…": the follow-up picks among the papers just cited."""
    return bool(_SELECTION.search(question))


def prefer_previous(order: list[str], prefer_ids: Sequence[str], focus: dict[str, float],
                    selecting: bool = False, margin: float = 0.12, hold: float = 0.25) -> list[str]:
    """Keep the paper under discussion first, unless another candidate is clearly better for the follow-up.

    ``order`` is the retrieved ranking; ``focus`` scores each candidate against the follow-up's own
    words. A follow-up that refers back ("what does it penalize?") keeps the first previously cited
    paper found among the candidates unless another beats its focus by ``hold``. One that selects
    ("which of them…") takes the best-focused previously cited paper, and a new paper only when it
    beats that one by ``margin``."""
    previous = [p for p in prefer_ids if p in order]
    if not previous:
        return order
    if selecting:
        anchor = max(previous, key=lambda p: focus.get(p, 0.0))
        need = margin
    else:
        anchor, need = previous[0], hold
    best = max(order, key=lambda p: focus.get(p, 0.0))
    lead = best if focus.get(best, 0.0) >= focus.get(anchor, 0.0) + need else anchor
    return [lead] + [p for p in order if p != lead]
