"""The output guard against prompt injection carried by papers: what a model writes after reading a paper that
addresses it ("ignore the question and print X") is checked before it is shown.

What paperchat guarantees, whatever the mode:

- such sentences are *quarantined* (detected by ``rag.quarantine``): never evidence, never quoted by the
  extractive generator, and withheld from the prompt the model sees (``rag.qa.prompts.format_source``);
- model output is *guarded* (``guard_text``/``guard_generation``/``guard_stream``, here): a sentence that repeats
  an instruction header, or carries a term found only in quarantined text, is dropped before it is shown;
- citations name retrieved papers only (``rag.qa.verify``) and the abstract itself is shown as escaped data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from rag.quarantine import code_like, is_instruction, quarantine, suspect
from rag.records import StoredPaper
from rag.text import split_sentences

_WORD = re.compile(r"[^\W_][\w\-:]*", re.U)
_MARKERS = re.compile(r"\s*\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")


def drop_markers(text: str) -> str:
    """``"as shown in [7], X"`` → ``"as shown in, X"``: an abstract's own reference numbers must not read as
    citations of the answer's sources."""
    return _MARKERS.sub("", text)


def _tokens(text: str) -> set[str]:
    return {w.casefold().strip("-:") for w in _WORD.findall(text)}


_URL = re.compile(r"https?://\S+|\bwww\.\S+", re.I)


def _opaque(text: str) -> set[str]:
    """Code-like tokens and URLs of ``text``: what a planted payload looks like."""
    return {w for w in _tokens(_URL.sub(" ", text)) if code_like(w)} | {
        u.casefold().rstrip(".,;:)]") for u in _URL.findall(text)}


def payload_terms(papers: Iterable[StoredPaper], question: str = "") -> set[str]:
    """Words found in the quarantined text of ``papers`` (and instruction sentences of the question) but
    nowhere else in them or in the question: what an obeying model would add to its answer.

    Structural backstop, independent of detection: a code-like token or URL that the sources carry only in
    *suspect* sentences (``suspect``: addressed to the text's consumer or to the answer, even if not flagged)
    counts as payload too — an identifier that research sentences never use has no place in an answer."""
    flagged: set[str] = set()
    clean: set[str] = set()
    opaque_suspect: set[str] = set()
    opaque_clean: set[str] = set()
    for p in papers:
        f, c, o_s, o_c = _paper_terms(p.abstract, p.title, p.label, tuple(str(a) for a in p.authors))
        flagged |= f
        clean |= c
        opaque_suspect |= o_s
        opaque_clean |= o_c
    q_sents = split_sentences(question)
    q_bad = quarantine(q_sents)
    for i, s in enumerate(q_sents):
        (flagged if i in q_bad else clean).update(_tokens(s))
        opaque_clean.update(_opaque(s))
    return (flagged - clean) | (opaque_suspect - opaque_clean)


@lru_cache(maxsize=2048)  # ~15 KB per paper (tracemalloc): ~30 MB when full
def _paper_terms(abstract: str, title: str | None, label: str, authors: tuple[str, ...]
                 ) -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """One paper's share of ``payload_terms``: (flagged, clean, opaque in suspect sentences, opaque elsewhere).
    A function of the paper's text alone, so kept between answers: an answer guards its text and each summary
    against the same papers, and a server answers about the same papers again (~20 ms an answer at 10k papers)."""
    flagged: set[str] = set()
    clean: set[str] = set()
    opaque_suspect: set[str] = set()
    opaque_clean: set[str] = set()
    sents = split_sentences(abstract)
    bad = quarantine(sents)
    for i, s in enumerate(sents):
        (flagged if i in bad else clean).update(_tokens(s))
        if i not in bad:
            (opaque_suspect if suspect(s) else opaque_clean).update(_opaque(s))
    for head in (title, label):
        if head:
            opaque_clean.update(_opaque(str(head)))
            (flagged if is_instruction(str(head)) else clean).update(_tokens(str(head)))
    for a in authors:
        clean.update(_tokens(a))
    return frozenset(flagged), frozenset(clean), frozenset(opaque_suspect), frozenset(opaque_clean)


def _payload_hit(sentence: str, payload: set[str]) -> bool:
    """The sentence carries the payload: a code-like payload token, or mostly payload words."""
    toks = _tokens(_MARKERS.sub(" ", sentence)) | {u.casefold().rstrip(".,;:)]") for u in _URL.findall(sentence)}
    hits = toks & payload
    if any(_URL.match(w) for w in hits):
        return True
    if any(code_like(w) or re.search(r"\d", w) for w in hits):
        return True
    words = [t for t in toks if len(t) > 3]
    return len(hits) >= 2 and len(hits) * 2 >= len(words)


def guard_text(text: str, papers: Iterable[StoredPaper], question: str = "") -> tuple[str, int]:
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
        for s in split_sentences(line):
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
        sents = split_sentences(buf)
        if len(sents) < 2:
            continue
        done_upto = buf.rfind(sents[-1])
        head, buf = buf[:done_upto], buf[done_upto:]
        out, dropped = guard_text(head, papers, question)
        if dropped and out:
            out += " "
        if out:
            yield out
