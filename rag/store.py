"""The Chroma adapter: the only module that imports chromadb.

One collection holds chunks. Chunk ids are ``<paper_id>#<content_hash>#<i>`` and every chunk carries
its paper's metadata (for filtering); chunk 0 also carries the abstract. A paper is *present* when
all ``n_chunks`` chunks of one content hash exist: writes add the new version first and delete the
old one after, so a crash at any point leaves either version complete or a state the next ingest
repairs. The collection's metadata records the embedding model and dimension that built it.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import Settings
from rag.errors import ConfigError, UpstreamError

log = logging.getLogger(__name__)

SCHEMA = 1
_GET_PAGE = 5000


@dataclass(frozen=True)
class ChunkRow:
    id: str
    paper_id: str
    text: str
    embedding: np.ndarray
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    paper_id: str
    score: float  # cosine similarity
    text: str
    metadata: dict[str, Any]


class _EmptyCollection:
    """Stands in for a collection that does not exist yet, for read-only opens."""

    metadata: dict[str, Any] = {}

    def count(self) -> int:
        return 0

    def get(self, **_: Any) -> dict[str, list[Any]]:
        return {"ids": [], "metadatas": [], "documents": [], "embeddings": []}

    def query(self, **_: Any) -> dict[str, list[Any]]:
        return {"ids": [[]], "metadatas": [[]], "documents": [[]], "distances": [[]]}


def chunk_id(paper_id: str, content_hash: str, index: int) -> str:
    return f"{paper_id}#{content_hash}#{index}"


class StoreLock:
    """The embedded store belongs to one process; a second one is told so at once, not left hanging."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self._path = path / "paperchat.lock"
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(self._fd)
            raise ConfigError(f"the store at {path} is in use by {holder}; stop it, or run a Chroma server "
                              "(`chroma run`) and set PAPERCHAT_STORE__MODE=server so several processes can "
                              "share it") from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()}".encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


class ChromaStore:
    """Chunks of papers in Chroma, embedded (PersistentClient) or remote (HttpClient)."""

    def __init__(self, settings: Settings, model_name: str | None, dim: int | None) -> None:
        """Open the store for ``model_name``/``dim`` (created if missing, refused if built by another model).

        With ``model_name=None`` the store is opened read-only for whatever model built it (stats, lists)."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        self.settings = settings
        cfg = settings.store
        self._lock: StoreLock | None = None
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        try:
            if cfg.mode == "server":
                self.location = f"http://{cfg.host}:{cfg.port}"
                self.client = chromadb.HttpClient(host=cfg.host, port=cfg.port, ssl=cfg.ssl, settings=chroma_settings)
                self.client.heartbeat()
            else:
                self.location = str(settings.store_path)
                self._lock = StoreLock(settings.store_path)
                self.client = chromadb.PersistentClient(path=str(settings.store_path), settings=chroma_settings)
        except ConfigError:
            raise
        except Exception as e:
            if self._lock:
                self._lock.release()
            raise UpstreamError(f"cannot open the Chroma store at {getattr(self, 'location', cfg.host)}: {e}") from e
        self.model_name, self.dim = model_name, dim
        self.collection = self._open_collection()

    def _open_collection(self) -> Any:
        name = self.settings.store.collection
        if self.model_name is None:
            try:
                col = self.client.get_collection(name, embedding_function=None)
            except Exception:  # no collection yet: an empty store
                return _EmptyCollection()
            self.model_name = (col.metadata or {}).get("embedding_model")
            self.dim = int((col.metadata or {}).get("dim", 0))
            return col
        meta = {"embedding_model": self.model_name, "dim": self.dim, "schema": SCHEMA, "generation": 0}
        col = self.client.get_or_create_collection(name, metadata=meta, embedding_function=None,
                                                   configuration={"hnsw": {"space": "cosine"}})
        have = col.metadata or {}
        if have.get("embedding_model") != self.model_name or int(have.get("dim", -1)) != self.dim:
            raise ConfigError(
                f"the store {self.location} (collection {name!r}) was built with {have.get('embedding_model')} "
                f"({have.get('dim')} dims), not {self.model_name} ({self.dim} dims). Use that model "
                f"(PAPERCHAT_EMBEDDINGS__MODEL), another collection (PAPERCHAT_STORE__COLLECTION) or PAPERCHAT_HOME, "
                "or rebuild with `paperchat ingest --rebuild PATH...`")
        return col

    def close(self) -> None:
        if self._lock:
            self._lock.release()
            self._lock = None

    # ---- writes -----------------------------------------------------------------------------
    @property
    def max_batch(self) -> int:
        return int(self.client.get_max_batch_size())

    def upsert(self, rows: Sequence[ChunkRow]) -> None:
        """Write chunk rows in batches of at most Chroma's max batch size."""
        step = self.max_batch
        for i in range(0, len(rows), step):
            part = rows[i:i + step]
            self.collection.upsert(ids=[r.id for r in part], documents=[r.text for r in part],
                                   embeddings=np.stack([r.embedding for r in part]),
                                   metadatas=[r.metadata for r in part])

    def delete(self, ids: Sequence[str]) -> None:
        step = self.max_batch
        for i in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[i:i + step]))

    def bump_generation(self) -> int:
        meta = dict(self.collection.metadata or {})
        meta["generation"] = int(meta.get("generation", 0)) + 1
        self.collection.modify(metadata=meta)
        return int(meta["generation"])

    @property
    def generation(self) -> int:
        """Bumped by every ingest that changed something; derived indexes compare against it."""
        try:
            col = self.client.get_collection(self.settings.store.collection, embedding_function=None)
        except Exception:
            return 0
        return int((col.metadata or {}).get("generation", 0))

    def reset(self) -> None:
        """Drop the collection (``ingest --rebuild``) and create it anew for the current model."""
        try:
            self.client.delete_collection(self.settings.store.collection)
        except Exception:  # not there: nothing to drop
            pass
        self.collection = self._open_collection()

    # ---- reads ------------------------------------------------------------------------------
    def chunk_states(self, paper_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int, list[str]]]]:
        """paper_id → content_hash → (chunks present, chunks expected, chunk ids)."""
        found: dict[str, dict[str, list[Any]]] = defaultdict(dict)
        ids = list(paper_ids)
        for i in range(0, len(ids), 500):
            res = self.collection.get(where={"paper_id": {"$in": ids[i:i + 500]}}, include=["metadatas"])
            for cid, md in zip(res["ids"], res["metadatas"]):
                slot = found[md["paper_id"]].setdefault(md["content_hash"], [0, int(md["n_chunks"]), []])
                slot[0] += 1
                slot[2].append(cid)
        return {p: {h: (v[0], v[1], v[2]) for h, v in hs.items()} for p, hs in found.items()}

    def find_by_keys(self, field: str, values: Sequence[str]) -> dict[str, str]:
        """value of ``field`` (doi, arxiv_id, abstract_hash) → paper_id, for papers already stored."""
        out: dict[str, str] = {}
        vals = sorted(set(v for v in values if v))
        for i in range(0, len(vals), 500):
            res = self.collection.get(where={"$and": [{field: {"$in": vals[i:i + 500]}}, {"chunk": 0}]},
                                      include=["metadatas"])
            for md in res["metadatas"]:
                out.setdefault(md[field], md["paper_id"])
        return out

    def count_chunks(self) -> int:
        return int(self.collection.count())

    def paper_ids(self) -> list[str]:
        return sorted({md["paper_id"] for md in self.iter_metadata(where={"chunk": 0})})

    def iter_metadata(self, where: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            res = self.collection.get(where=where, include=["metadatas"], limit=_GET_PAGE, offset=offset)
            yield from res["metadatas"]
            if len(res["ids"]) < _GET_PAGE:
                return
            offset += _GET_PAGE

    def iter_chunks(self, include_embeddings: bool = False) -> Iterator[tuple[str, str, dict[str, Any], Any]]:
        """(chunk id, text, metadata, embedding or None) for every chunk, paged."""
        include = ["documents", "metadatas"] + (["embeddings"] if include_embeddings else [])
        offset = 0
        while True:
            res = self.collection.get(include=include, limit=_GET_PAGE, offset=offset)
            embs = res.get("embeddings") if include_embeddings else None
            for j, cid in enumerate(res["ids"]):
                yield cid, res["documents"][j], res["metadatas"][j], (embs[j] if embs is not None else None)
            if len(res["ids"]) < _GET_PAGE:
                return
            offset += _GET_PAGE

    def papers(self, paper_ids: Sequence[str] | None = None,
               where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Paper metadata (chunk 0 rows) by ids and/or a metadata filter."""
        clauses: list[dict[str, Any]] = [{"chunk": 0}]
        if paper_ids is not None:
            if not paper_ids:
                return []
            clauses.append({"paper_id": {"$in": list(paper_ids)}})
        if where:
            clauses.append(where)
        flt = clauses[0] if len(clauses) == 1 else {"$and": clauses}
        return list(self.iter_metadata(where=flt))

    def query(self, embedding: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        total = self.count_chunks()
        if total == 0:
            return []
        res = self.collection.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                                    n_results=min(n, total), where=where,
                                    include=["documents", "metadatas", "distances"])
        return [Hit(cid, md["paper_id"], 1.0 - float(d), doc, md)
                for cid, doc, md, d in zip(res["ids"][0], res["documents"][0], res["metadatas"][0],
                                           res["distances"][0])]

    def check(self) -> list[str]:
        """Consistency problems: papers with several versions, incomplete versions, stray chunks."""
        versions: dict[str, dict[str, list[int]]] = defaultdict(dict)
        for md in self.iter_metadata():
            slot = versions[md["paper_id"]].setdefault(md["content_hash"], [0, int(md["n_chunks"])])
            slot[0] += 1
        problems = []
        for pid, hs in versions.items():
            if len(hs) > 1:
                problems.append(f"{pid}: {len(hs)} versions stored")
            for h, (have, want) in hs.items():
                if have != want:
                    problems.append(f"{pid}#{h}: {have} of {want} chunks")
        return problems
