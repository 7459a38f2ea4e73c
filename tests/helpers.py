"""Store oracles the tests share, read through the same store calls the product makes, a spy on scoring, and the
detector of markup left in stored text.

The product never lists every chunk, so these rebuild chunk ids from the metadata that ingest writes
(``paper_id``, ``content_hash``, ``chunk``) and that the lexical index and the catalog read back.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from rag.index.rows import chunk_id
from rag.index.store import ChromaStore
from rag.qa.evidence import PaperEvidence, QuestionScorer, SentenceScore
from ui.safe import MATH as RENDERED_MATH


def chunk_ids(store: ChromaStore) -> list[str]:
    """The id of every stored chunk."""
    return [chunk_id(md["paper_id"], md["content_hash"], int(md["chunk"])) for md in store.iter_metadata()]


def rename_metadata_key(col, old: str, new: str) -> int:
    """Rewrite every row of a Chroma collection with its metadata key ``old`` named ``new`` (as rows written by an
    earlier version hold it): the rows are deleted and added again, so no merge of metadata keeps the other key."""
    got = col.get(include=["metadatas", "documents", "embeddings"])
    mds = [{(new if k == old else k): v for k, v in md.items()} for md in got["metadatas"]]
    col.delete(ids=got["ids"])
    col.add(ids=got["ids"], documents=got["documents"], embeddings=got["embeddings"], metadatas=mds)
    return sum(new in md for md in mds)


def store_problems(store: ChromaStore) -> list[str]:
    """What a consistent store never holds: a paper stored in several versions, or a version missing chunks."""
    versions: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for md in store.iter_metadata():
        have_want = versions[md["paper_id"]].setdefault(md["content_hash"], [0, int(md["n_chunks"])])
        have_want[0] += 1
    problems = []
    for pid, hashes in versions.items():
        if len(hashes) > 1:
            problems.append(f"{pid}: {len(hashes)} versions stored")
        for h, (have, want) in hashes.items():
            if have != want:
                problems.append(f"{pid}#{h}: {have} of {want} chunks")
    return problems


def scored_pairs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """From now on (for the test), every (question, paper id) whose sentences a ``QuestionScorer`` scores."""
    scored: list[tuple[str, str]] = []
    score = QuestionScorer._score

    def counted(self: QuestionScorer, pi: int, ev: PaperEvidence) -> list[SentenceScore]:
        scored.append((self.question, ev.paper_id))
        return score(self, pi, ev)

    monkeypatch.setattr(QuestionScorer, "_score", counted)
    return scored


_LEFTOVERS = {
    "a LaTeX command": re.compile(r"\\[A-Za-z]+"),
    "a LaTeX escape": re.compile(r"\\(?![A-Za-z])"),  # an accent (\' \" \H), an escaped space or sign
    "an HTML entity": re.compile(r"&(?:[a-z][a-z0-9]*|#\d+|#x[0-9a-f]+);|&#", re.I),
    "a brace group": re.compile(r"\{\\|[{}]"),
    "an HTML tag": re.compile(r"</?(?:p|i|b|u|em|sup|sub|span|br|div|jats:[a-z\-]+|mml:[a-z]+)\b[^<>]*>", re.I),
    "a LaTeX tie": re.compile(r"(?<=[\w.,;:)\]])~"),  # "Fig.~2"; "~5 Hz" (about five) is text
    "a script outside math": re.compile(r"[\u02c6^_]\{"),  # "Nˆ{2/3}", "N^{2/3}"
}


def leftovers(text: str) -> list[str]:
    """What is left of LaTeX, HTML or entity markup in stored display text, outside the formulas the UI renders
    (``ui.safe.MATH``: those are the renderer's, kept as written)."""
    outside = RENDERED_MATH.sub("x", text)  # a letter: "$N$~samples" still shows its tie
    return [f"{what}: {m.group(0)!r}" for what, pat in _LEFTOVERS.items() for m in pat.finditer(outside)]
