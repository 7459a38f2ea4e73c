"""Sentence-window chunks that fit the embedding model's input window.

all-MiniLM-L6-v2 silently truncates at 256 word pieces, so a long abstract is split into windows of
whole sentences (with a sentence of overlap) measured in the *embedder's* tokens. Each chunk is
prefixed with the paper's title so every window knows what paper it belongs to. Chunk sizes for
the LLM's context budget are counted with tiktoken (cl100k).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rag import tokens
from rag.records import Paper
from rag.text import plain_text, split_sentences

Counter = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str  # what is embedded and indexed: "title. sentences…" in plain text
    start_sentence: int
    end_sentence: int  # exclusive
    llm_tokens: int  # cl100k count, for the LLM context budget


def _split_long(sentence: str, budget: int, count: Counter) -> list[str]:
    """A sentence longer than the window is cut on word boundaries into pieces that fit.

    Word pieces are counted per word in one tokenizer call (WordPiece and BPE tokenisers split on
    whitespace first, so the per-word counts add up); the caller re-checks each final window."""
    words = sentence.split()
    costs = [max(1, n - 2) for n in count(words)]  # minus [CLS]/[SEP] counted for every word
    pieces: list[str] = []
    start, used = 0, 2
    for i, c in enumerate(costs):
        if used + c > budget and i > start:
            pieces.append(" ".join(words[start:i]))
            start, used = i, 2
        used += c
    pieces.append(" ".join(words[start:]))
    return pieces


def title_prefix(paper: Paper) -> str:
    """"Title. " to put before each window, unless the abstract already starts with the title
    (BEIR corpora often repeat it), which would only cost tokens."""
    title = plain_text(paper.title).strip(" .") if paper.title else ""
    if not title or plain_text(paper.abstract)[: len(title) + 5].casefold().startswith(title.casefold()):
        return ""
    return f"{title}. "


def embedding_text(paper: Paper) -> str:
    """The paper as one text (title prefix + plain abstract), before any windowing."""
    return title_prefix(paper) + plain_text(paper.abstract)


def chunk_papers(papers: list[Paper], count: Counter, max_tokens: int, overlap: int = 1) -> list[list[Chunk]]:
    """Windows of at most ``max_tokens`` embedder tokens (title included) for each paper; the whole
    texts are counted in one tokenizer call, and only papers that do not fit are split."""
    wholes = [embedding_text(p) for p in papers]
    out = []
    for p, whole, n in zip(papers, wholes, count(wholes) if wholes else []):
        if n <= max_tokens:  # most abstracts fit: one window
            out.append([Chunk(0, whole, 0, len(split_sentences(p.abstract)), tokens.count_tokens(whole))])
        else:
            out.append(_windows(p, count, max_tokens, overlap))
    return out


def chunk_paper(paper: Paper, count: Counter, max_tokens: int, overlap: int = 1) -> list[Chunk]:
    """Split one paper into windows of at most ``max_tokens`` embedder tokens (title included)."""
    return chunk_papers([paper], count, max_tokens, overlap)[0]


def _windows(paper: Paper, count: Counter, max_tokens: int, overlap: int) -> list[Chunk]:
    """Sentence windows with ``overlap`` sentences shared, for a paper too long for one window."""
    prefix = title_prefix(paper)
    sentences = [plain_text(s) for s in split_sentences(paper.abstract)] or [plain_text(paper.abstract)]
    prefix_cost = count([prefix])[0] - 2 if prefix else 0  # specials are counted once per chunk
    if prefix_cost > max_tokens // 3:  # an absurd title must not starve the abstract
        prefix, prefix_cost = "", 0
    budget = max_tokens - prefix_cost
    units: list[str] = []
    unit_sent: list[int] = []
    for i, (s, n) in enumerate(zip(sentences, count(sentences))):
        parts = [s] if n <= budget else _split_long(s, budget, count)
        units.extend(parts)
        unit_sent.extend([i] * len(parts))
    unit_cost = [max(0, n - 2) for n in count(units)]
    chunks: list[Chunk] = []
    start = 0
    while start < len(units):
        end, used = start, 2
        while end < len(units) and used + unit_cost[end] + 1 <= budget:
            used += unit_cost[end] + 1
            end += 1
        end = max(end, start + 1)
        text = prefix + " ".join(units[start:end])
        while end > start + 1 and count([text])[0] > max_tokens:  # joins can tokenise differently
            end -= 1
            text = prefix + " ".join(units[start:end])
        chunks.append(Chunk(len(chunks), text, unit_sent[start], unit_sent[end - 1] + 1, tokens.count_tokens(text)))
        if end >= len(units):
            break
        start = max(start + 1, end - overlap)
    return chunks
