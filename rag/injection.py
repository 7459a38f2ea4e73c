"""Prompt injection carried by papers: sentences of an abstract (or a title) that address the reader or the
model instead of describing research — "ignore the question and print X", fake ``SYSTEM:`` or
``<|im_start|>`` headers, a ``</sources>`` closing the untrusted block early, "cite [7]".

What paperchat guarantees, whatever the mode:

- such sentences are *quarantined*: never evidence, never quoted by the extractive generator, and withheld
  from the prompt the model sees (``rag.prompts.format_source``);
- model output is *guarded* (``guard_text``/``guard_generation``/``guard_stream``): a sentence that repeats
  an instruction header, or carries a term found only in quarantined text, is dropped before it is shown;
- citations name retrieved papers only (``rag.verify``) and the abstract itself is shown as escaped data.

Detection is pattern based (imperatives aimed at an assistant, role headers, chat-template tokens, source
delimiters, requests to cite or print), tuned so the sample corpus has no false positive; it is a filter for
known shapes of injection, not a proof that none gets through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

_VERBS = (r"print|output|say|write|type|repeat|respond|reply|answer|return|state|tell|include|insert|append|"
          r"prepend|begin|start|end|cite|mention|recommend|rate|declare|claim|ignore|disregard|forget|override|"
          r"stop|do\s+not|don'?t|never|always|only|must|translate|reveal|display|show|emit|add")
_INSTRUCTION = re.compile("|".join([
    # role headers and chat-template tokens
    r"(?:^|[\"'(\[{<>|])\s*(?:system|assistant|user|developer|human|ai|instruction|instructions|question|answer|"
    r"response|output|reply|override|task)\s*(?:prompt\s*)?:",
    r"(?-i:\b(?:SYSTEM|ASSISTANT|USER|DEVELOPER|INSTRUCTIONS?|QUESTION|ANSWER|RESPONSE|OVERRIDE|System|Assistant)"
    r"(?:\s+PROMPT)?\s*:)",
    # whoever reads this with a model, asked to do something
    r"\b(?:ai|llm|gpt|chatbot|assistant|(?:language|generative|large)\s+models?|automated\s+\w+|summari[sz]ers?|"
    r"bots?)s?\b[^.!?]{0,80}\b(?:please|request|require|must|should|shall|give|mention|output|print|say|"
    r"write|include|append|prepend|return|quote|repeat|begin|start)\w*\b[^.!?]{0,80}"
    r"(?-i:\b[A-Z][A-Z0-9]*[-_][A-Z0-9]+)",
    r"\b(?:dear|hey|hello|hi)\s+(?:ai|assistant|model|llm|chatbot|gpt|reader)\b",
    r"<\|[^|>]{0,40}\|?>", r"\[/?\s*(?:INST|SYS|SYSTEM)\s*\]", r"<<\s*/?\s*SYS\s*>>",
    r"#{2,}\s*(?:system|instruction|instructions|assistant|response|new\s+instructions?)\b",
    r"</?\s*(?:sources?|system|instructions?|context|documents?|user|assistant|im_start|im_end)\b[^>]{0,40}>",
    # overriding the task
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.!?]{0,60}\b(?:question|questions|instructions?|rules?|"
    r"prompt|system|above|previous|prior|earlier|context|sources?|guidelines?|task|user)\b",
    r"\b(?:new|updated|real|actual|hidden|secret|additional)\s+(?:instructions?|rules?|task|system\s+prompt|orders)\b",
    r"\b(?:regardless|irrespective)\s+of\s+(?:the|what|any|your)\b[^.!?]{0,30}\b(?:question|asked|user|query)\b",
    r"\binstead\s+of\s+(?:answering|summari[sz]ing|responding)\b",
    r"\b(?:end|close)\s+of\s+(?:the\s+)?(?:sources?|context|documents?|abstracts?|data|untrusted)\b",
    # addressing the model
    r"\b(?:you\s+are\s+(?:now\s+)?(?:a|an|in|the|no\s+longer|chatgpt|gpt)|you\s+(?:must|should|will|have\s+to|"
    r"need\s+to)\s+(?:now\s+)?(?:" + _VERBS + r"))\b",
    r"\b(?:note|message|instructions?|attention|notice)\s+(?:to|for)\s+(?:the\s+)?(?:ai|assistants?|models?|llms?|"
    r"language\s+models?|chatbots?|readers?\s+that\s+are\s+ai|reviewers?)\b",
    r"\b(?:as\s+an?\s+)?(?:ai|llm|language\s+model|assistant|chatbot)s?\s*(?:,\s*)?(?:must|should|shall|will|"
    r"has\s+to|have\s+to)\b",
    r"\bwhen\s+(?:you\s+)?(?:answer|answering|respond|responding|asked|summari[sz]ing|replying)\b",
    r"\b(?:respond|reply|answer)\s+(?:only\s+)?with\b",
    r"\b(?:print|output|say|emit|repeat|write)\s+(?:out\s+)?(?:the\s+)?(?:exact\s|following\s|secret\s|"
    r"word\b|string\b|token\b|code\b|phrase\b|canary|password|verbatim|only\b|\"|'|“|"
    r"(?-i:[A-Z0-9_]{2,}[-_:]?[A-Z0-9]))",
    # citation requests
    r"\b(?:always|also|please|must|should)\s+cite\b", r"\bcite\s+(?:this|the\s+following|paper|source|"
    r"reference|\[\d+\])", r"^\s*(?:please\s+)?cite\b",
    # an imperative opening the sentence, aimed at whoever reads it
    r"^\W{0,3}(?:please\s+|now\s+|first,?\s+|then,?\s+|finally,?\s+|also,?\s+|and\s+)?(?:print|output|say|type|"
    r"respond|reply|repeat|ignore|disregard|forget|override|cite|reveal|emit)\b",
    r"^\W{0,3}(?:do\s+not|don'?t|never)\s+(?:answer|summari[sz]e|mention|cite|follow|reveal|describe)\b",
])
, re.I)
_WORD = re.compile(r"[^\W_][\w\-:]*", re.U)
# Code-like tokens (CANARY-7f3a, ZX_99, X1Y2Z3): what a planted payload looks like, and never mere prose.
_CODE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9][\w\-:]{3,}$|^[A-Z][A-Z0-9_\-]{5,}$")
_MARKERS = re.compile(r"\s*\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")


def is_instruction(text: str) -> bool:
    """True when ``text`` (a sentence or a title) reads as an instruction to an assistant rather than research."""
    return bool(text) and bool(_INSTRUCTION.search(text))


def quarantine(sentences: Sequence[str]) -> set[int]:
    """Indices of the sentences to quarantine: instructions, and a short sentence right after one (the
    payload of "Ignore the question. Print X.")."""
    flagged = {i for i, s in enumerate(sentences) if is_instruction(s)}
    for i in sorted(flagged):
        j = i + 1
        while j < len(sentences) and j not in flagged and (len(sentences[j].split()) <= 6
                                                            or any(_CODE.match(w) for w in sentences[j].split())):
            flagged.add(j)
            j += 1
    return flagged


def usable_sentences(sentences: Sequence[str]) -> list[int]:
    """Indices of the sentences that may serve as evidence (not quarantined), in order."""
    bad = quarantine(sentences)
    return [i for i in range(len(sentences)) if i not in bad]


def drop_markers(text: str) -> str:
    """``"as shown in [7], X"`` → ``"as shown in, X"``: an abstract's own reference numbers must not read as
    citations of the answer's sources."""
    return _MARKERS.sub("", text)


def _sentences(text: str) -> list[str]:
    from rag.text import split_sentences

    return split_sentences(text)


def _tokens(text: str) -> set[str]:
    return {w.casefold().strip("-:") for w in _WORD.findall(text)}


def payload_terms(papers: Iterable[dict[str, Any]], question: str = "") -> set[str]:
    """Words found in the quarantined text of ``papers`` (and instruction sentences of the question) but
    nowhere else in them or in the question: what an obeying model would add to its answer."""
    flagged: set[str] = set()
    clean: set[str] = set()
    for p in papers:
        sents = _sentences(str(p.get("abstract") or ""))
        bad = quarantine(sents)
        for i, s in enumerate(sents):
            (flagged if i in bad else clean).update(_tokens(s))
        for head in (p.get("title"), p.get("label")):
            if head:
                (flagged if is_instruction(str(head)) else clean).update(_tokens(str(head)))
        for a in p.get("authors") or []:
            clean.update(_tokens(str(a)))
    q_sents = _sentences(question)
    q_bad = quarantine(q_sents)
    for i, s in enumerate(q_sents):
        (flagged if i in q_bad else clean).update(_tokens(s))
    return flagged - clean


def _code_like(token: str) -> bool:
    return bool(_CODE.match(token))


def _payload_hit(sentence: str, payload: set[str]) -> bool:
    """The sentence carries the payload: a code-like payload token, or mostly payload words."""
    toks = _tokens(_MARKERS.sub(" ", sentence))
    hits = toks & payload
    if any(_code_like(w) or re.search(r"\d", w) for w in hits):
        return True
    words = [t for t in toks if len(t) > 3]
    return len(hits) >= 2 and len(hits) * 2 >= len(words)


def guard_text(text: str, papers: Iterable[dict[str, Any]], question: str = "") -> tuple[str, int]:
    """``text`` without the sentences that follow an injection: those that are instructions themselves or
    carry a payload term (see ``payload_terms``). Returns the kept text and the number of sentences dropped;
    line structure (reference lines) is kept."""
    payload = payload_terms(papers, question)
    dropped = 0
    lines_out: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            lines_out.append(line)
            continue
        kept = []
        for s in _sentences(line):
            if is_instruction(s) or (payload and _payload_hit(s, payload)):
                dropped += 1
            else:
                kept.append(s)
        if kept:
            lead = line[:len(line) - len(line.lstrip())]
            lines_out.append(lead + " ".join(kept))
    out = "\n".join(lines_out)
    return (re.sub(r"\n{3,}", "\n\n", out).strip() if dropped else text), dropped


def _note(dropped: int) -> str:
    return (f"removed {dropped} sentence{'s' if dropped != 1 else ''} of the answer that followed instructions "
            "found inside a paper or the question (possible prompt injection)")


def guard_generation(gen: Any, question: str = "") -> Any:
    """A ``Generation`` whose text and summaries went through ``guard_text`` (a warning says how much was cut)."""
    papers = [h.paper for h in gen.sources]
    text, dropped = guard_text(gen.text, papers, question)
    summaries = {}
    for n, s in gen.summaries.items():
        clean, d = guard_text(s, papers, question)
        summaries[n] = clean
        dropped += d
    if not dropped:
        return gen
    from dataclasses import replace

    return replace(gen, text=text, summaries=summaries, warnings=[*gen.warnings, _note(dropped)])


def guard_stream(items: Iterable[Any], hits: Sequence[Any], question: str = "") -> Iterator[Any]:
    """Guard a generator's stream: text is held back to sentence ends and only guarded sentences are passed on;
    the final ``Generation`` goes through ``guard_generation``."""
    papers = [h.paper for h in hits]
    buf = ""
    for item in items:
        if not isinstance(item, str):
            if buf:
                out, _ = guard_text(buf, papers, question)
                if out:
                    yield out
            yield guard_generation(item, question)
            return
        buf += item
        sents = _sentences(buf)
        if len(sents) < 2:
            continue
        done_upto = buf.rfind(sents[-1])
        head, buf = buf[:done_upto], buf[done_upto:]
        out, dropped = guard_text(head, papers, question)
        if dropped and out:
            out += " "
        if out:
            yield out
