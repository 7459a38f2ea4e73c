"""BM25 over whole papers (bm25s, Snowball-stemmed), persisted beside the store and kept in sync.

The index is derived data: it is rebuilt from the store's papers whenever the store's generation
(bumped by every ingest that changed something) or paper count differs from the one it was built
at, so a crash, another process's ingest or a Chroma server shared by many clients can never leave
it silently stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from rag.store import ChromaStore
from rag.text import plain_text

log = logging.getLogger(__name__)

TITLE_WEIGHT = 2  # the title is repeated: a term in the title says more than one in the abstract
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.U)


@lru_cache(maxsize=1)
def _bm25s() -> Any:
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets DEBUG on import and logs every build
    return bm25s


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    _bm25s()
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def analyze(text: str) -> list[str]:
    """Lower-cased, stop-worded, stemmed terms; hyphenated words also give their parts."""
    words: list[str] = []
    for w in _WORD.findall(text.casefold()):
        if "-" in w or "'" in w:
            parts = [p for p in re.split(r"[-']", w) if p]
            words.extend(parts)
            if len(parts) > 1:
                words.append("".join(parts))
        else:
            words.append(w)
    words = [w for w in words if w not in _stopwords()]
    return list(_stemmer().stemWords(words))


def paper_text(md: dict[str, Any]) -> str:
    """What BM25 sees of a paper: title (weighted), authors, categories, abstract."""
    title = md.get("title") or ""
    parts = [title] * TITLE_WEIGHT + [" ".join(md.get("authors") or []), " ".join(md.get("categories") or []),
                                      plain_text(md.get("abstract", ""))]
    return " ".join(p for p in parts if p)


class LexicalIndex:
    """BM25 scores over the store's papers, loaded from disk or rebuilt when stale."""

    def __init__(self, root: Path, k1: float = 1.2, b: float = 0.75) -> None:
        self.root = root
        self.k1, self.b = k1, b
        self.paper_ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._bm25: Any = None
        self._built_at: tuple[int, int] = (-1, -1)
        self._lock = threading.Lock()

    @staticmethod
    def for_store(home: Path, store: ChromaStore) -> LexicalIndex:
        key = hashlib.sha1(f"{store.location}|{store.settings.store.collection}".encode()).hexdigest()[:12]
        return LexicalIndex(home / "lexical" / f"{store.settings.store.collection}-{key}")

    def __len__(self) -> int:
        return len(self.paper_ids)

    def sync(self, store: ChromaStore) -> None:
        """Make the index match the store: load the saved one if current, else rebuild and save."""
        with self._lock:
            state = (store.generation, store.count_chunks())  # both cheap; any ingest changes one
            if self._bm25 is not None and self._built_at == state:
                return
            if self._load(state):
                return
            self._build(store.papers(), state)

    def _manifest(self) -> Path:
        return self.root / "manifest.json"

    def _load(self, state: tuple[int, int]) -> bool:
        bm25s = _bm25s()
        try:
            manifest = json.loads(self._manifest().read_text())
        except (OSError, ValueError):
            return False
        if tuple(manifest.get("state", ())) != state or manifest.get("k1") != self.k1 or manifest.get("b") != self.b:
            return False
        try:
            bm25 = bm25s.BM25.load(str(self.root / "bm25"), mmap=False)
        except Exception as e:  # a torn or foreign index is rebuilt, not trusted
            log.warning("lexical index at %s unreadable (%s); rebuilding", self.root, e)
            return False
        self._set(bm25, manifest["paper_ids"], state)
        return True

    def _set(self, bm25: Any, paper_ids: list[str], state: tuple[int, int]) -> None:
        self._bm25, self.paper_ids, self._built_at = bm25, paper_ids, state
        self._pos = {p: i for i, p in enumerate(paper_ids)}

    def _build(self, papers: Iterable[dict[str, Any]], state: tuple[int, int]) -> None:
        bm25s = _bm25s()
        rows = sorted(papers, key=lambda md: md["paper_id"])
        ids = [md["paper_id"] for md in rows]
        if not rows:
            self._set(None, [], state)
            return
        corpus = [analyze(paper_text(md)) or ["\x00empty"] for md in rows]
        bm25 = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        bm25.index(corpus, show_progress=False)
        # Write to a fresh folder, then swap it in, so a crash never leaves a half-written index.
        tmp = self.root.with_name(self.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        bm25.save(str(tmp / "bm25"))
        (tmp / "manifest.json").write_text(json.dumps({"state": list(state), "paper_ids": ids,
                                                       "k1": self.k1, "b": self.b}))
        old = self.root.with_name(self.root.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if self.root.exists():
            self.root.rename(old)
        tmp.rename(self.root)
        shutil.rmtree(old, ignore_errors=True)
        self._set(bm25, ids, state)
        log.info("lexical index rebuilt: %d papers at %s", len(ids), self.root)

    def term_scores(self, terms: dict[str, float]) -> np.ndarray:
        """Σ weight × BM25(term) for every paper (0 for unknown terms)."""
        out = np.zeros(len(self.paper_ids), dtype=np.float32)
        if self._bm25 is None:
            return out
        vocab = self._bm25.vocab_dict
        for term, w in terms.items():
            if term in vocab and w:
                out += w * self._bm25.get_scores([term]).astype(np.float32)
        return out

    def scores(self, query: str) -> np.ndarray:
        terms: dict[str, float] = {}
        for t in analyze(query):
            terms[t] = terms.get(t, 0.0) + 1.0
        return self.term_scores(terms)

    def positions(self, paper_ids: Iterable[str]) -> np.ndarray:
        return np.array([self._pos[p] for p in paper_ids if p in self._pos], dtype=np.int64)

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene-style idf of analysed terms (0 for terms the corpus lacks)."""
        if self._bm25 is None:
            return {t: 0.0 for t in terms}
        vocab = self._bm25.vocab_dict
        indptr = self._bm25.scores["indptr"]
        n = len(self.paper_ids)
        out = {}
        for t in terms:
            tid = vocab.get(t)
            df = int(indptr[tid + 1] - indptr[tid]) if tid is not None and tid + 1 < len(indptr) else 0
            out[t] = float(np.log(1 + (n - df + 0.5) / (df + 0.5))) if df else 0.0
        return out
