"""Wiring: settings → embedder, store and ingestor, built once per process."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rag.config import Settings, prepare_runtime
from rag.embed_cache import CachedEmbedder
from rag.embeddings import Embedder, make_embedder
from rag.ingest import Ingestor
from rag.store import ChromaStore

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """Lazily built components that share one settings object."""

    settings: Settings
    _embedder: Embedder | None = field(default=None, repr=False)  # pass one to share a loaded model
    _store: ChromaStore | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        prepare_runtime(self.settings)
        self.settings.home.mkdir(parents=True, exist_ok=True)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            inner = make_embedder(self.settings)
            if self.settings.embeddings.cache:
                inner = CachedEmbedder(inner, self.settings.cache_dir / "embeddings.sqlite")
            self._embedder = inner
        return self._embedder

    @property
    def store(self) -> ChromaStore:
        """The store opened for the configured embedder (loads the model on first use)."""
        if self._store is None or self._store.model_name is None:
            if self._store is not None:
                self._store.close()
            self._store = ChromaStore(self.settings, self.embedder.name, self.embedder.dim)
        return self._store

    def read_store(self) -> ChromaStore:
        """The store opened read-only for whatever model built it, without loading any model."""
        if self._store is None:
            self._store = ChromaStore(self.settings, None, None)
        return self._store

    def ingestor(self, progress: bool = True) -> Ingestor:
        return Ingestor(self.store, self.embedder, self.settings.chunking.max_tokens,
                        self.settings.chunking.overlap_sentences, on_change=self.index_hooks(), progress=progress)

    def index_hooks(self) -> list:
        """Derived indexes kept in sync by ingest (the lexical index joins here)."""
        return []

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
