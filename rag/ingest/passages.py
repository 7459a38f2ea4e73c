"""Full-text passages as store rows: each paper's passages (``Paper.passages``) become further rows of the
stored paper beside its abstract chunk, versioned by the hash of the passages' text and pages.

The same crash-safety as the abstract chunks (``rag.ingest.pipeline``): a version is present when all its
``n_passages`` rows exist; a new version is written whole before the other versions are deleted, so a run killed
at any point leaves the old passages or the new ones, and the next run with full text completes what is missing.
The abstract chunk is never touched here: adding full text later embeds only the passages, a changed PDF
replaces only its passages, and an ingest without full text leaves them alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag import tokens
from rag.index.embeddings import Embedder
from rag.index.rows import passage_id, passage_metadata
from rag.index.store import ChromaStore, ChunkRow
from rag.ingest.fulltext.base import Passage
from rag.records import StoredPaper


def text_hash(passages: Sequence[Passage]) -> str:
    """The version of a paper's full text: its passages' text, section and pages."""
    data = [(p.text, p.section, p.page_start, p.page_end) for p in passages]
    return hashlib.sha1(json.dumps(data, ensure_ascii=False).encode()).hexdigest()[:16]


def embedding_text(paper: StoredPaper, passage: Passage) -> str:
    """What is embedded for a passage: the paper's title in front, as for its abstract chunks."""
    title = (paper.title or "").strip(" .")
    return f"{title}. {passage.text}" if title else passage.text


@dataclass
class PassagePlan:
    to_write: list[tuple[StoredPaper, str, Sequence[Passage]]]  # (stored paper, text hash, its passages)
    stale: list[str]  # ids of the other versions' rows, deleted once the new ones are written
    unchanged: int = 0


def plan(store: ChromaStore, records: Mapping[str, Sequence[Passage]]) -> PassagePlan:
    """What the passages of ``records`` (stored paper id → passages read) ask of the store. A paper that is not
    stored (its abstract chunk was refused or is being written elsewhere) gets none."""
    states = store.passage_states(sorted(records))
    stored = {sp.id: sp for sp in store.papers(sorted(records))}
    out = PassagePlan([], [])
    for pid, passages in records.items():
        sp = stored.get(pid)
        if sp is None or not passages:
            continue
        h = text_hash(passages)
        versions = states.get(pid, {})
        for other, (_, _, ids) in versions.items():
            if other != h:
                out.stale.extend(ids)
        have = versions.get(h)
        if have is not None and have[0] == have[1]:
            out.unchanged += 1
            continue
        out.to_write.append((sp, h, passages))
    return out


def rows(todo: list[tuple[StoredPaper, str, Sequence[Passage]]], embedder: Embedder) -> list[ChunkRow]:
    """Embed the passages of each paper into the rows the store holds (document: the passage text)."""
    flat = [(sp, h, i, len(ps), p) for sp, h, ps in todo for i, p in enumerate(ps)]
    if not flat:
        return []
    vectors = embedder.embed([embedding_text(sp, p) for sp, _, _, _, p in flat])
    return [ChunkRow(passage_id(sp.id, h, i), sp.id, p.text, vectors[k],
                     passage_metadata(sp, h, i, n, p.page_start, p.page_end, p.section, tokens.count_tokens(p.text)))
            for k, (sp, h, i, n, p) in enumerate(flat)]
