"""The Chroma adapter: the only module that imports chromadb.

One Chroma collection holds chunks. Chunk ids are ``<paper_id>#<content_hash>#<i>`` and every chunk carries
its paper's metadata (for filtering); chunk 0 also carries the abstract (the row schema is
``rag.index.rows``). A paper is *present* when all ``n_chunks`` chunks of one content hash exist:
writes add the new version first and delete the old one after, so a crash at any point leaves either
version complete or a state the next ingest repairs. The Chroma collection's metadata records the embedding
model and dimension that built it.

Server mode survives the server going away: a call that cannot reach it raises ``UpstreamError`` naming
host:port and what to do, and the next call reconnects (new client, collection handle reopened), so a
long-running process (the UI) works again once the server is back, without a restart. Server and cloud
modes send the credentials from settings (``store.token``, ``store.api_key``, ``store.headers``) on every
request; a server that refuses them raises ``ConfigError`` naming the server and the setting to fix,
never the secret.
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

import numpy as np

from rag.config import Settings
from rag.errors import ConfigError, PaperchatError, UpstreamError
from rag.index import rows
from rag.records import StoredPaper

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


def _versions(items: Iterable[tuple[str, tuple[str, str, int]]]) -> dict[str, dict[str, tuple[int, int, list[str]]]]:
    """(row id, (paper id, version hash, rows expected)) → paper id → version → (present, expected, row ids)."""
    found: dict[str, dict[str, list[Any]]] = defaultdict(dict)
    for cid, (pid, version, expected) in items:
        slot = found[pid].setdefault(version, [0, expected, []])
        slot[0] += 1
        slot[2].append(cid)
    return {p: {h: (v[0], v[1], v[2]) for h, v in hs.items()} for p, hs in found.items()}


class _EmptyCollection:
    """Stands in for a Chroma collection that does not exist yet, for read-only opens."""

    metadata: dict[str, Any] = {}

    def count(self) -> int:
        return 0

    def get(self, **_: Any) -> dict[str, list[Any]]:
        return {"ids": [], "metadatas": [], "documents": [], "embeddings": []}

    def query(self, **_: Any) -> dict[str, list[Any]]:
        return {"ids": [[]], "metadatas": [[]], "documents": [[]], "distances": [[]]}


F = TypeVar("F", bound=Callable[..., Any])


def _unreachable(e: BaseException) -> bool:
    """The Chroma server could not be reached or dropped the request (not an error it answered with)."""
    import httpx

    for c in (e, e.__cause__, e.__context__):
        if isinstance(c, httpx.TransportError | ConnectionError):
            return True
        if isinstance(c, ValueError) and "Could not connect to a Chroma server" in str(c):
            return True
    return False


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded(fn: F) -> F:
    """A store method that first reconnects if the server was lost, and turns an unreachable server into
    ``UpstreamError`` (generators too, whose calls happen while iterating)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(self: ChromaStore, *args: Any, **kwargs: Any) -> Iterator[Any]:
            self._reconnect_if_lost()
            try:
                yield from fn(self, *args, **kwargs)
            except Exception as e:
                self._raise_lost(e)
        return gen  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(self: ChromaStore, *args: Any, **kwargs: Any) -> Any:
        self._reconnect_if_lost()
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:
            self._raise_lost(e)
    return call  # type: ignore[return-value]


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

        self.settings = settings
        cfg = settings.store
        self._lock: StoreLock | None = None
        self._server = cfg.mode != "embedded"  # a server or Chroma Cloud, over HTTP: reconnects when lost
        self._lost_at: float | None = None  # set when the server was found unreachable; the next call reconnects
        self.model_name, self.dim = model_name, dim
        try:
            if self._server:
                host, port, ssl = self._endpoint()
                self.location = f"{'https' if ssl else 'http'}://{host}:{port}"
                if (cfg.tenant, cfg.database) != ("default_tenant", "default_database"):
                    self.location += f"/{cfg.tenant}/{cfg.database}"  # another library on the same server
                if cfg.mode == "cloud" and cfg.api_key is None:
                    raise ConfigError("store.mode=cloud needs a Chroma Cloud API key: set PAPERCHAT_STORE__API_KEY "
                                      "(or api_key in the [store] table of $PAPERCHAT_HOME/config.toml)")
                if cfg.mode == "server" and cfg.token is not None and not ssl and not _is_loopback(host):
                    log.warning("the Chroma token goes to %s:%d over plain http; set PAPERCHAT_STORE__SSL=true "
                                "(TLS in front of the server) unless this network is private", host, port)
                self.client = self._connect()
                if cfg.mode == "cloud":  # the tenant and database the key resolved to, for the lexical index's key
                    self.location = f"{cfg.cloud_url}/{self.client.tenant}/{self.client.database}"
            else:
                self.location = str(settings.store_path)
                self._lock = StoreLock(settings.store_path)
                self.client = chromadb.PersistentClient(path=str(settings.store_path), settings=self._chroma_settings())
        except PaperchatError:
            raise
        except Exception as e:
            if self._lock:
                self._lock.release()
            raise UpstreamError(f"cannot open the Chroma store at {getattr(self, 'location', cfg.host)}: {e}") from e
        try:
            self.chroma_collection = self._open_collection()
        except Exception as e:
            self._raise_lost(e)

    @staticmethod
    def _chroma_settings() -> Any:
        from chromadb.config import Settings as ChromaSettings

        return ChromaSettings(anonymized_telemetry=False, allow_reset=False)

    # ---- server connection ----------------------------------------------------------------------
    def _endpoint(self) -> tuple[str, int, bool]:
        """Host, port and TLS of the server (server mode) or of Chroma Cloud's API (cloud mode)."""
        cfg = self.settings.store
        if cfg.mode == "cloud":
            u = urlsplit(cfg.cloud_url)
            ssl = u.scheme == "https"
            return str(u.hostname), u.port or (443 if ssl else 80), ssl
        return cfg.host, cfg.port, cfg.ssl

    def _auth_headers(self) -> dict[str, str]:
        """The headers that carry the credentials (and ``store.headers``); secrets, never logged."""
        cfg = self.settings.store
        out = {name: value.get_secret_value() for name, value in cfg.headers.items()}
        if cfg.mode == "cloud" and cfg.api_key is not None:
            out["X-Chroma-Token"] = cfg.api_key.get_secret_value()  # what CloudClient sends
        elif cfg.mode == "server" and cfg.token is not None:
            token = cfg.token.get_secret_value()
            out[cfg.token_header] = f"Bearer {token}" if cfg.token_header == "Authorization" else token
        return out

    def _connect(self) -> Any:
        """A new HttpClient (server) or CloudClient (cloud) whose credentials the server accepted, with
        ``store.timeout_s`` on its requests. A refused token or key is a ``ConfigError`` naming the server and
        the setting, now and on any later request (a token rotated on the server while this process runs)."""
        import chromadb
        import httpx
        from chromadb.errors import NotFoundError

        cfg = self.settings.store
        host, port, ssl = self._endpoint()
        headers = self._auth_headers()
        try:
            self._preflight(host, port, ssl, headers)
            settings = self._chroma_settings()
            if cfg.mode == "cloud":
                settings.chroma_server_headers = {k: v for k, v in headers.items() if k != "X-Chroma-Token"} or None
                client = chromadb.CloudClient(tenant=cfg.tenant, database=cfg.database,
                                              api_key=headers["X-Chroma-Token"], settings=settings,
                                              cloud_host=host, cloud_port=port, enable_ssl=ssl)
            else:
                client = chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers or None,
                                             tenant=cfg.tenant, database=cfg.database, settings=settings)
            # chromadb's HTTP session has no timeout at all: a hung server would hang every caller.
            session = getattr(getattr(client, "_server", None), "_session", None)
            if isinstance(session, httpx.Client):
                session.timeout = httpx.Timeout(cfg.timeout_s)
                session.event_hooks["response"] = [*session.event_hooks["response"], self._refused]
        except NotFoundError as e:
            raise ConfigError(f"{self._where(host, port)} has no tenant {cfg.tenant!r} with a database "
                              f"{cfg.database!r} ({e}). Fix PAPERCHAT_STORE__TENANT / PAPERCHAT_STORE__DATABASE, "
                              "or create them on the server (chromadb.AdminClient)") from None
        except Exception as e:
            if _unreachable(e):
                raise self._down_error(e) from e
            raise
        return client

    def _preflight(self, host: str, port: int, ssl: bool, headers: dict[str, str]) -> None:
        """One request to the server's identity endpoint with the credentials and ``store.timeout_s``, before
        chromadb builds its client: chromadb's own first requests have no timeout (an unreachable Chroma Cloud
        would hang the caller) and report a refused token as a bare "Forbidden"."""
        import httpx

        with httpx.Client(timeout=httpx.Timeout(self.settings.store.timeout_s)) as http:
            r = http.get(f"{'https' if ssl else 'http'}://{host}:{port}/api/v2/auth/identity", headers=headers)
        if r.status_code in (401, 403):
            raise self._auth_error(r.status_code, r.reason_phrase)

    def _refused(self, response: Any) -> None:
        """httpx response hook on chromadb's session: a credential refused later on is as clear as at connect."""
        if response.status_code in (401, 403):
            raise self._auth_error(response.status_code, response.reason_phrase)

    def _where(self, host: str, port: int) -> str:
        return f"Chroma Cloud at {host}:{port}" if self.settings.store.mode == "cloud" \
            else f"the Chroma server at {host}:{port}"

    def _auth_error(self, status: int, reason: str) -> ConfigError:
        """What the server's 401/403 means and which setting to change; never the secret itself."""
        cfg = self.settings.store
        host, port, _ = self._endpoint()
        said = f"HTTP {status} {reason}".strip()
        if cfg.mode == "cloud":
            return ConfigError(
                f"Chroma Cloud at {host}:{port} refused the API key in PAPERCHAT_STORE__API_KEY ({said}). Check the "
                "key (Chroma Cloud dashboard, your database's settings) and that it grants PAPERCHAT_STORE__TENANT "
                "and PAPERCHAT_STORE__DATABASE")
        if cfg.token is None:
            return ConfigError(
                f"the Chroma server at {host}:{port} requires authentication ({said}) and no token is set: set "
                "PAPERCHAT_STORE__TOKEN to its token (sent as `Authorization: Bearer <token>`; set "
                "PAPERCHAT_STORE__TOKEN_HEADER=X-Chroma-Token if the server reads that header)")
        return ConfigError(
            f"the Chroma server at {host}:{port} refused the token in PAPERCHAT_STORE__TOKEN ({said}), sent as "
            f"{cfg.token_header}. Check the token, and PAPERCHAT_STORE__TOKEN_HEADER (Authorization or "
            "X-Chroma-Token) against the server's configuration")

    def _down_error(self, e: BaseException) -> UpstreamError:
        cfg = self.settings.store
        if cfg.mode == "cloud":
            host, port, _ = self._endpoint()
            return UpstreamError(
                f"Chroma Cloud at {host}:{port} is not reachable ({e.__class__.__name__}: {e}). Check this "
                "machine's network and proxy, or PAPERCHAT_STORE__CLOUD_URL; paperchat reconnects on the next "
                "request, no restart needed")
        return UpstreamError(
            f"the Chroma server at {cfg.host}:{cfg.port} is not reachable ({e.__class__.__name__}: {e}). "
            f"Start it (`chroma run --path DIR --host {cfg.host} --port {cfg.port}`) or fix PAPERCHAT_STORE__HOST / "
            "PAPERCHAT_STORE__PORT; paperchat reconnects on the next request, no restart needed")

    def _raise_lost(self, e: Exception) -> NoReturn:
        """Re-raise ``e``; an unreachable server becomes ``UpstreamError`` and marks the connection lost,
        so the next call reconnects."""
        if not self._server or not (isinstance(e, UpstreamError) or _unreachable(e)):
            raise e
        if self._lost_at is None:
            log.warning("lost the Chroma server at %s: %s", self.location, e)
            self._lost_at = time.monotonic()
        if isinstance(e, UpstreamError):
            raise e
        raise self._down_error(e) from e

    def _reconnect_if_lost(self) -> None:
        if self._lost_at is None:
            return
        try:
            self.client = self._connect()  # UpstreamError while the server is still down
            self.chroma_collection = self._open_collection()
        except Exception as e:
            self._raise_lost(e)
        log.warning("reconnected to the Chroma server at %s after %.1f s", self.location,
                    time.monotonic() - self._lost_at)
        self._lost_at = None

    def _open_collection(self) -> Any:
        name = self.settings.store.chroma_collection
        if self.model_name is None:
            try:
                col = self.client.get_collection(name, embedding_function=None)
            except Exception as e:  # no collection yet: an empty store
                if self._server and _unreachable(e):
                    raise
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
                f"the store {self.location} (Chroma collection {name!r}) was built with "
                f"{have.get('embedding_model')} ({have.get('dim')} dims), not {self.model_name} ({self.dim} dims). "
                "Use that model (PAPERCHAT_EMBEDDINGS__MODEL), another Chroma collection "
                "(PAPERCHAT_STORE__CHROMA_COLLECTION) or PAPERCHAT_HOME, or rebuild with "
                "`paperchat ingest --rebuild PATH...`")
        return col

    def close(self) -> None:
        if self._lock:
            self._lock.release()
            self._lock = None

    # ---- writes -----------------------------------------------------------------------------
    @property
    def max_batch(self) -> int:
        return self._max_batch()

    @_guarded
    def _max_batch(self) -> int:
        return int(self.client.get_max_batch_size())

    @_guarded
    def upsert(self, rows: Sequence[ChunkRow]) -> None:
        """Write chunk rows in batches of at most Chroma's max batch size."""
        step = self.max_batch
        for i in range(0, len(rows), step):
            part = rows[i:i + step]
            self.chroma_collection.upsert(ids=[r.id for r in part], documents=[r.text for r in part],
                                   embeddings=np.stack([r.embedding for r in part]),
                                   metadatas=[r.metadata for r in part])

    @_guarded
    def delete(self, ids: Sequence[str]) -> None:
        step = self.max_batch
        for i in range(0, len(ids), step):
            self.chroma_collection.delete(ids=list(ids[i:i + step]))

    @_guarded
    def bump_generation(self) -> int:
        """A new generation: larger than the one read, and the clock in microseconds when that is larger still,
        so two writers bumping at once (both read the same value; Chroma has no compare-and-set) write two
        different values, and a derived index saved at one never matches a store another writer changed since."""
        meta = dict(self.chroma_collection.metadata or {})
        meta["generation"] = max(int(meta.get("generation", 0)) + 1, time.time_ns() // 1000)
        self.chroma_collection.modify(metadata=meta)
        return int(meta["generation"])

    @property
    def generation(self) -> int:
        """Changed by every ingest that changed something (see ``bump_generation``); derived indexes compare
        against it."""
        return self._generation()

    @_guarded
    def _generation(self) -> int:
        try:
            col = self.client.get_collection(self.settings.store.chroma_collection, embedding_function=None)
        except Exception as e:
            if self._server and _unreachable(e):
                raise
            return 0
        return int((col.metadata or {}).get("generation", 0))

    @_guarded
    def reset(self) -> None:
        """Drop the Chroma collection (``ingest --rebuild``) and create it anew for the current model."""
        try:
            self.client.delete_collection(self.settings.store.chroma_collection)
        except Exception as e:  # not there: nothing to drop
            if self._server and _unreachable(e):
                raise
        self.chroma_collection = self._open_collection()

    # ---- reads ------------------------------------------------------------------------------
    @_guarded
    def chunk_states(self, paper_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int, list[str]]]]:
        """paper_id → content_hash → (chunks present, chunks expected, chunk ids)."""
        return _versions((cid, (st.paper_id, st.content_hash, st.n_chunks))
                         for cid, md in self._metadata_of(paper_ids)
                         if not rows.is_passage(md)  # full-text passages are versioned apart (``passage_states``)
                         for st in (rows.chunk_state(md),))

    @_guarded
    def passage_states(self, paper_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int, list[str]]]]:
        """paper_id → full-text hash → (passages present, passages expected, their ids), as ``chunk_states``."""
        return _versions((cid, (st.paper_id, st.text_hash, st.n_passages))
                         for cid, md in self._metadata_of(paper_ids, rows.PASSAGES)
                         for st in (rows.passage_state(md),))

    def _metadata_of(self, paper_ids: Sequence[str], where: dict[str, Any] | None = None
                     ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(row id, metadata) of every row of these papers (that ``where`` also selects)."""
        ids = list(paper_ids)
        for i in range(0, len(ids), 500):
            res = self.chroma_collection.get(where=rows.all_of(rows.ids_in(ids[i:i + 500]), where),
                                             include=["metadatas"])
            yield from zip(res["ids"], res["metadatas"], strict=True)

    @_guarded
    def passage_rows(self, where: dict[str, Any] | None = None) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(id, text, metadata) of every passage row (of the papers ``where`` selects), in pages."""
        offset = 0
        flt = rows.all_of(rows.PASSAGES, where)
        while True:
            res = self.chroma_collection.get(where=flt, include=["metadatas", "documents"], limit=_GET_PAGE,
                                             offset=offset)
            yield from zip(res["ids"], res["documents"], res["metadatas"], strict=True)
            if len(res["ids"]) < _GET_PAGE:
                return
            offset += _GET_PAGE

    @_guarded
    def rows_of(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Chunk id → (text, metadata), for the chunks given (missing ones are left out)."""
        if not chunk_ids:
            return {}
        res = self.chroma_collection.get(ids=list(dict.fromkeys(chunk_ids)), include=["documents", "metadatas"])
        return {cid: (doc, md) for cid, doc, md in zip(res["ids"], res["documents"], res["metadatas"], strict=True)}

    @_guarded
    def find_by_keys(self, field: str, values: Sequence[str]) -> dict[str, str]:
        """value of ``field`` (doi, arxiv_id, abstract_hash) → paper_id, for papers already stored."""
        out: dict[str, str] = {}
        vals = sorted(set(v for v in values if v))
        for i in range(0, len(vals), 500):
            res = self.chroma_collection.get(
                where=rows.all_of(rows.values_in(field, vals[i:i + 500]), rows.FIRST_CHUNK), include=["metadatas"])
            for md in res["metadatas"]:
                out.setdefault(md[field], rows.paper_id(md))
        return out

    @_guarded
    def count_chunks(self) -> int:
        return int(self.chroma_collection.count())

    @_guarded
    def paper_ids(self) -> list[str]:
        """Every stored paper's id, read from chunk ids alone (no metadata decoded)."""
        out: set[str] = set()
        offset = 0
        while True:
            res = self.chroma_collection.get(where=rows.FIRST_CHUNK, include=[], limit=_GET_PAGE, offset=offset)
            out.update(rows.paper_of_chunk(cid) for cid in res["ids"])
            if len(res["ids"]) < _GET_PAGE:
                return sorted(out)
            offset += _GET_PAGE

    @_guarded
    def iter_metadata(self, where: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            res = self.chroma_collection.get(where=where, include=["metadatas"], limit=_GET_PAGE, offset=offset)
            yield from res["metadatas"]
            if len(res["ids"]) < _GET_PAGE:
                return
            offset += _GET_PAGE

    @_guarded
    def papers_at(self, first_chunks: Sequence[str]) -> list[StoredPaper]:
        """The stored papers whose chunk-0 rows have these ids (ids no longer stored are left out)."""
        if not first_chunks:
            return []
        res = self.chroma_collection.get(ids=list(dict.fromkeys(first_chunks)), include=["metadatas"])
        return [rows.read_paper(md) for md in res["metadatas"] if rows.is_first_chunk(md)]

    @_guarded
    def papers(self, paper_ids: Sequence[str] | None = None,
               where: dict[str, Any] | None = None) -> list[StoredPaper]:
        """Stored papers (read from their chunk-0 rows) by ids and/or a metadata filter."""
        if paper_ids is not None and not where:
            # By id alone: select on paper_id and keep chunk 0 here. Adding {"chunk": 0} to the filter makes
            # Chroma intersect two metadata conditions, ~4× slower on a large store (47 vs 12 ms for 10 ids).
            out: list[StoredPaper] = []
            ids = list(dict.fromkeys(paper_ids))
            for i in range(0, len(ids), 500):
                res = self.chroma_collection.get(where=rows.ids_in(ids[i:i + 500]), include=["metadatas"])
                out.extend(rows.read_paper(md) for md in res["metadatas"] if rows.is_first_chunk(md))
            return out
        if paper_ids is not None and not paper_ids:
            return []
        flt = rows.all_of(rows.FIRST_CHUNK, rows.ids_in(paper_ids) if paper_ids is not None else None, where)
        return [rows.read_paper(md) for md in self.iter_metadata(where=flt)]

    @_guarded
    def nearest(self, embedding: np.ndarray, n: int, where: dict[str, Any] | None = None
                ) -> list[tuple[str, str, float]]:
        """(chunk id, paper id, cosine) of the ``n`` nearest chunks, best first. Only ids and distances are
        read (the paper id is part of the chunk id): fetching documents and metadata for every candidate
        costs ~10× the vector search itself. Chroma returns fewer than ``n`` when it holds fewer (an empty
        collection gives none), so no ``count()`` first: that alone took 20 ms per call at 100k papers."""
        if n <= 0:
            return []
        res = self.chroma_collection.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                                    n_results=n, where=where, include=["distances"])
        return [(cid, rows.paper_of_chunk(cid), 1.0 - float(d)) for cid, d in zip(res["ids"][0], res["distances"][0])]

    @_guarded
    def paper_vectors(self, paper_ids: Sequence[str]) -> list[tuple[str, str, np.ndarray]]:
        """(chunk id, paper id, stored embedding) of every chunk of the papers given. For a small scope (a
        collection, one author's papers) scoring these locally beats Chroma's filtered vector search, which
        walks the index and checks the filter on each candidate."""
        out: list[tuple[str, str, np.ndarray]] = []
        ids = list(dict.fromkeys(paper_ids))
        for i in range(0, len(ids), 500):
            res = self.chroma_collection.get(where=rows.ids_in(ids[i:i + 500]), include=["embeddings"])
            out.extend((cid, rows.paper_of_chunk(cid), np.asarray(v, dtype=np.float32))
                       for cid, v in zip(res["ids"], res["embeddings"], strict=True))
        return out

    @_guarded
    def documents(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """Chunk id → text, for the chunks given (missing ones are left out)."""
        if not chunk_ids:
            return {}
        res = self.chroma_collection.get(ids=list(dict.fromkeys(chunk_ids)), include=["documents"])
        return dict(zip(res["ids"], res["documents"], strict=True))

    @_guarded
    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Chunk id → stored embedding, for the chunks given (missing ones are left out)."""
        if not chunk_ids:
            return {}
        res = self.chroma_collection.get(ids=list(dict.fromkeys(chunk_ids)), include=["embeddings"])
        return {cid: np.asarray(v, dtype=np.float32) for cid, v in zip(res["ids"], res["embeddings"], strict=True)}
