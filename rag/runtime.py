"""Wiring: settings → embedder, store and ingestor, built once per process."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.config import Settings, prepare_runtime
from rag.index.collections import Collections
from rag.index.embed_cache import CachedEmbedder
from rag.index.embeddings import Embedder, export_fast_encoder, make_embedder, scoring_embedder
from rag.index.lexical import LexicalIndex
from rag.index.passage_lexical import PassageIndex
from rag.index.store import ChromaStore
from rag.ingest.pipeline import Ingestor
from rag.qa.retrieval import RetrievalMode, Retriever

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """Lazily built components that share one settings object."""

    settings: Settings
    _embedder: Embedder | None = field(default=None, repr=False)  # pass one to share a loaded model
    _store: ChromaStore | None = field(default=None, repr=False)
    _lexical: LexicalIndex | None = field(default=None, repr=False)
    _collections: Collections | None = field(default=None, repr=False)
    _scoring: Embedder | None = field(default=None, repr=False)

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
    def scoring_embedder(self) -> Embedder:
        """What answers score abstract sentences with (``embeddings.sentence_scoring``): the encoder's int8
        copy when there is one, else the embedder itself. Its vectors are cached under their own name."""
        if self._scoring is None:
            quick = scoring_embedder(self.embedder) if self.settings.embeddings.sentence_scoring == "int8" else None
            if quick is not None:
                log.info("answers score sentences with %s", quick.name)
            if quick is not None and self.settings.embeddings.cache:
                quick = CachedEmbedder(quick, self.settings.cache_dir / "embeddings.sqlite")
            self._scoring = quick or self.embedder
        return self._scoring

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

    @property
    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = LexicalIndex.for_store(self.settings.home, self.store)
        return self._lexical

    def collections(self) -> Collections:
        """The store's named collections (on the store already open, else opened read-only: no model loaded)."""
        store = self._store if self._store is not None else self.read_store()
        if self._collections is None or self._collections.store is not store:
            self._collections = Collections(store)
        return self._collections

    def retriever(self, mode: RetrievalMode = "hybrid") -> Retriever:
        """Hybrid (or single-method) retrieval over the store; the lexical index syncs on use."""
        return Retriever(self.store, self.embedder, self.lexical, self.settings.retrieval, mode=mode)

    def ingestor(self, progress: bool = True) -> Ingestor:
        sentence_vectors = self.settings.ingest.sentence_vectors and self.settings.embeddings.cache
        if sentence_vectors:  # warm the cache for the scorer answers will use, which the export brings
            self.export_encoder()
        return Ingestor(self.store, self.embedder, self.settings.chunking.max_tokens,
                        self.settings.chunking.overlap_sentences,
                        on_change=[*self.index_hooks(), lambda store: self.export_encoder()], progress=progress,
                        batch_papers=self.settings.ingest.batch_papers,
                        abstract_chars=self.settings.limits.abstract_chars,
                        max_pdf_pages=self.settings.ingest.max_pdf_pages,
                        passage_tokens=self.settings.ingest.passage_tokens if self.settings.ingest.full_text else 0,
                        sentence_vectors=sentence_vectors,
                        sentence_embedder=self.scoring_embedder if sentence_vectors else None)

    def index_hooks(self) -> list[Callable[[ChromaStore], None]]:
        """Derived indexes kept in sync by ingest, through the same path as the vectors."""
        return [lambda store: self.lexical.sync(store),
                lambda store: PassageIndex.of(self.lexical).sync(store, self.lexical.state)]

    def export_encoder(self) -> None:
        """After an ingest: write the encoder's ONNX export if it has none (``rag.index.onnx_bert``), so processes
        that only ask questions start without torch."""
        if export_fast_encoder(self.embedder) and self._scoring is self._embedder:
            self._scoring = None  # sentences were scored exactly for want of an int8 copy: look again

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
