"""Embeddings cached by content hash, so re-ingest or a rebuilt index never recomputes them."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from pathlib import Path

import numpy as np

from rag.index.embeddings import Embedder, WrappedEmbedder

log = logging.getLogger(__name__)


class CachedEmbedder(WrappedEmbedder):
    """Wraps an ``Embedder``; vectors live in SQLite keyed by sha1(model name, text)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        super().__init__(inner)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _key(self, text: str) -> bytes:
        return hashlib.sha1(f"{self.inner.name}\0{text}".encode()).digest()

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                rows = self._db.execute(f"SELECT key, v FROM vec WHERE key IN ({','.join('?' * len(part))})",
                                        part).fetchall()
                found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        todo = sorted({i for i, k in enumerate(keys) if k not in found}, key=lambda i: i)
        todo_keys: dict[bytes, int] = {}
        for i in todo:
            todo_keys.setdefault(keys[i], i)
        self.hits += len(texts) - len(todo)
        self.misses += len(todo_keys)
        if todo_keys:
            fresh = self.inner.embed([texts[i] for i in todo_keys.values()])
            with self._lock, self._db:
                self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?)",
                                     [(k, fresh[j].astype(np.float32).tobytes()) for j, k in enumerate(todo_keys)])
            found.update((k, fresh[j]) for j, k in enumerate(todo_keys))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def close(self) -> None:
        self._db.close()
