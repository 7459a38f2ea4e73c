"""The lexical index shared through the Chroma server, so a host without the others' disk installs the index
another host built instead of rebuilding it from the store.

Publishing (by the process that committed a sync, when sharing is on): the index's files (every file of the
segments the manifest names, its vocabulary files) and a consistent copy of the catalog/manifest SQLite file
(sqlite3's backup API) go into a side collection on the same server, tenant and database
(``<collection>__lexical``), as zlib-compressed base64 pieces of at most ``PIECE_BYTES``, each a record with
a 1-dimensional dummy embedding given explicitly. The pieces are held in metadata, not documents: Chroma's
local server indexes every document in a trigram full-text index whatever the collection's schema asks
(measured: 7× the bytes on the server and 15× the time). A file is addressed by its sha256, so a segment
already published is never uploaded again. The published manifest (file names, sizes, sha256, the store
state and collection it matches) is written last; pieces neither it nor the previous manifest name are
deleted afterwards (the previous one's stay for hosts that are mid-download). The snapshot is taken under
the index's writer lock (a catalog backup and hard links: well under a second), the upload runs in a
background thread, and a failure is a warning: it never breaks a sync or an answer.

Fetching (a host with no usable saved index, or one the store has left far behind): read the manifest,
download every piece, check each piece's and each file's sha256 and size, write them into a temporary
folder and swap it in whole (rename), as a rebuild does. The usual incremental sync then catches up with
whatever the snapshot lacks. Anything missing, torn or different is logged and reported as False, and the
caller rebuilds from the store, as it would without sharing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.index.segments import file_sha256, fsync_dir

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.index.store import ChromaStore

log = logging.getLogger(__name__)

SUFFIX = "__lexical"
PIECE_BYTES = 4 << 20  # compressed bytes per record (5.6 MB of base64): one record per request
MANIFEST_ID = "manifest"
CATALOG = "catalog.sqlite"
_SAFE_NAME = re.compile(r"catalog\.sqlite|vocab-[0-9a-f]+\.json|seg-[0-9A-Za-z-]+/[0-9A-Za-z_]+\.(?:npy|json)")
_GET_IDS = 2000


class ShareError(Exception):
    """The published index is missing, incomplete or does not match its manifest."""


def enabled(settings: Settings) -> bool:
    """``store.share_lexical``: auto shares on a ``chroma run`` server only. Never on an embedded store (the
    background upload would outlive the store's lock) nor on Chroma Cloud, whose quotas (4 KB per metadata value,
    300 records per request) refuse the pieces."""
    share = settings.store.share_lexical
    return settings.store.mode == "server" and share in ("auto", "on")


def side_name(collection: str) -> str:
    """The side collection's name: ``<collection>__lexical`` (shortened with a hash past Chroma's 63 characters)."""
    name = collection + SUFFIX
    if len(name) > 63:
        name = f"{collection[:40]}-{hashlib.sha1(collection.encode()).hexdigest()[:12]}{SUFFIX}"
    return name


def _side(store: ChromaStore, create: bool) -> Any:
    name = side_name(store.settings.store.chroma_collection)
    if create:
        return store.client.get_or_create_collection(name, embedding_function=None,
                                                      metadata={"paperchat": "lexical index"})
    try:
        return store.client.get_collection(name, embedding_function=None)
    except Exception as e:
        if "does not exist" in str(e) or type(e).__name__ in ("NotFoundError", "InvalidCollectionException"):
            return None
        raise


def published(store: ChromaStore) -> dict[str, Any] | None:
    """The published manifest (None when nothing was published)."""
    col = _side(store, create=False)
    if col is None:
        return None
    res = col.get(ids=[MANIFEST_ID], include=["metadatas"])
    if not res["ids"]:
        return None
    manifest: dict[str, Any] = json.loads(res["metadatas"][0]["manifest"])
    return manifest


def _piece_id(sha: str, n: int, i: int) -> str:
    return f"{sha}:{n}:{i}"


# ---- publishing ------------------------------------------------------------------------------------
@dataclass
class Snapshot:
    """A consistent copy of the saved index to upload: hard links to its immutable files and a catalog backup."""

    folder: Path
    lex: dict[str, Any]  # the manifest the catalog copy holds (the index's own: segments, vocab, state, commit)
    names: list[str]  # files relative to ``folder``, the catalog last


def snapshot(root: Path, folder: Path) -> Snapshot:
    """Copy the index at ``root`` into ``folder`` (the caller holds the index's writer lock): the catalog through
    sqlite3's backup API, every file the manifest names as a hard link (a copy where links are refused)."""
    folder.mkdir(parents=True)
    src = sqlite3.connect(f"file:{root / CATALOG}?mode=ro", uri=True)
    dst = sqlite3.connect(folder / CATALOG)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        lex = {k: json.loads(v) for k, v in dst.execute("SELECT k, v FROM lex")}
    finally:
        src.close()
        dst.close()
    names: list[str] = []
    for seg in lex["segments"]:
        (folder / seg).mkdir()
        for f in sorted((root / seg).iterdir()):
            names.append(f"{seg}/{f.name}")
    names += list(lex["vocab"])
    for name in names:
        try:
            os.link(root / name, folder / name)
        except OSError:
            shutil.copyfile(root / name, folder / name)
    return Snapshot(folder, lex, [*names, CATALOG])


def _pieces(path: Path) -> Iterator[bytes]:
    """The file compressed (zlib level 1: a third of the bytes at 1.3 s per 32 MB) and cut into pieces."""
    z = zlib.compressobj(1)
    buf = bytearray()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            buf += z.compress(block)
            while len(buf) >= PIECE_BYTES:
                yield bytes(buf[:PIECE_BYTES])
                del buf[:PIECE_BYTES]
    buf += z.flush()
    while buf:
        yield bytes(buf[:PIECE_BYTES])
        del buf[:PIECE_BYTES]


def _complete_files(col: Any, shas: list[str]) -> dict[str, int]:
    """sha256 → piece count, for the files whose every piece is published."""
    seen: dict[tuple[str, int], set[int]] = {}
    for i in range(0, len(shas), 500):
        res = col.get(where={"sha256": {"$in": shas[i:i + 500]}}, include=[])
        for pid in res["ids"]:
            sha, n, k = pid.split(":")
            seen.setdefault((sha, int(n)), set()).add(int(k))
    return {sha: n for (sha, n), got in seen.items() if len(got) == n}


def publish(store: ChromaStore, snap: Snapshot) -> dict[str, Any]:
    """Upload the snapshot's files not yet published, then its manifest, then delete what no manifest needs.
    Returns {"uploaded_bytes", "files", "published_bytes", "seconds"}."""
    t0 = time.perf_counter()
    col = _side(store, create=True)
    previous = published(store)
    files: list[dict[str, Any]] = [{"name": n, "sha256": file_sha256(snap.folder / n),
                                    "size": (snap.folder / n).stat().st_size} for n in snap.names]
    have = _complete_files(col, sorted({f["sha256"] for f in files}))
    uploaded = 0
    for f in files:
        sha = f["sha256"]
        if sha in have:
            f["pieces"] = have[sha]  # published before: not uploaded again
            continue
        pieces = list(_pieces(snap.folder / f["name"]))  # compressed: ~1/3 of the file in memory at most
        n = max(len(pieces), 1)
        for k, data in enumerate(pieces or [b""]):
            col.upsert(ids=[_piece_id(sha, n, k)], embeddings=[[0.0]],
                       metadatas=[{"kind": "piece", "name": f["name"], "sha256": sha, "size": f["size"],
                                   "piece": k, "pieces": n, "piece_sha256": hashlib.sha256(data).hexdigest(),
                                   "data": base64.b64encode(data).decode("ascii")}])
            uploaded += len(data)
        have[sha] = n
        f["pieces"] = n
    manifest: dict[str, Any] = {
        "lex": {k: snap.lex[k] for k in ("format", "k1", "b", "analyzer", "state", "commit") if k in snap.lex},
        "collection_id": str(getattr(store.chroma_collection, "id", "")),
        "files": files,
        "previous": sorted({f["sha256"] for f in (previous or {}).get("files", [])}),
        "published_at": time.time(),
    }
    col.upsert(ids=[MANIFEST_ID], embeddings=[[0.0]],
               metadatas=[{"kind": "manifest", "manifest": json.dumps(manifest)}])  # last: names only what is there
    keep = {f["sha256"] for f in files} | set(manifest["previous"])
    now = published(store)  # another host may have published since: never delete what the live manifest names
    if now is not None:
        keep |= {f["sha256"] for f in now.get("files", [])} | set(now.get("previous", []))
    stale = [pid for pid in _all_piece_ids(col) if pid.split(":")[0] not in keep]
    for i in range(0, len(stale), 500):
        col.delete(ids=stale[i:i + 500])
    return {"uploaded_bytes": uploaded, "files": len(files), "published_bytes": sum(f["size"] for f in files),
            "deleted_pieces": len(stale), "seconds": time.perf_counter() - t0}


def _all_piece_ids(col: Any) -> list[str]:
    out: list[str] = []
    offset = 0
    while True:
        res = col.get(include=[], limit=_GET_IDS, offset=offset)
        out += [i for i in res["ids"] if i != MANIFEST_ID]
        if len(res["ids"]) < _GET_IDS:
            return out
        offset += _GET_IDS


class Publisher:
    """Publishes an index's commits from a background thread, one upload at a time (a request made while one
    runs is served by another round right after it). The thread is not a daemon: a CLI process finishes its
    upload before it exits."""

    def __init__(self, root: Path, writer: Callable[[], AbstractContextManager[None]]) -> None:
        self.root, self._writer = root, writer
        self._thread: threading.Thread | None = None
        self._pending = False
        self._mutex = threading.Lock()
        self.last: dict[str, Any] | None = None  # the last round's report (tests, benchmarks)

    def request(self, store: ChromaStore) -> None:
        with self._mutex:
            self._pending = True
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, args=(store,), name="lexical-publish")
            self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self, store: ChromaStore) -> None:
        while True:
            with self._mutex:
                if not self._pending:
                    self._thread = None if self._thread is threading.current_thread() else self._thread
                    return
                self._pending = False
            try:
                self.last = self.publish_once(store)
            except Exception as e:  # never breaks a sync or an answer
                log.warning("publishing the lexical index to %s failed (%s: %s); other hosts will rebuild theirs "
                            "or use an older copy", side_name(store.settings.store.chroma_collection),
                            type(e).__name__, e)

    def publish_once(self, store: ChromaStore) -> dict[str, Any]:
        """Publish the saved index unless the server already holds this commit or a later state's."""
        local = _local_lex(self.root / CATALOG)
        if local is None:
            return {"skipped": "no saved index"}
        current = published(store)
        if current is not None:
            theirs = current.get("lex", {})
            if theirs.get("commit") == local.get("commit"):
                return {"skipped": "already published"}
            same = current.get("collection_id") == str(getattr(store.chroma_collection, "id", ""))
            # Another host's index of the same store state is as good as ours: hosts' commits differ even when
            # their indexes match, and re-uploading the catalog for nothing is what makes publishers race.
            if same and tuple(theirs.get("state", [-1, -1])) >= tuple(local["state"]):
                return {"skipped": "the server holds this state or a later one"}
        sweep_staging(self.root)
        folder = self.root.parent / f".{self.root.name}.publish-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            with self._writer():
                snap = snapshot(self.root, folder)
            report = publish(store, snap)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        log.info("lexical index published to %s: %d files, %.1f MB, %.1f MB uploaded (compressed) in %.1f s",
                 side_name(store.settings.store.chroma_collection), report["files"], report["published_bytes"] / 1e6,
                 report["uploaded_bytes"] / 1e6, report["seconds"])
        return report


def _publisher_alive(folder: Path) -> bool:
    """Whether the process that owns this snapshot folder (``….publish-<pid>-<hex>``) may still be publishing.
    A name from before the pid was recorded (``….publish-<hex>``) counts as alive for an hour."""
    pid, named, _ = folder.name.rsplit(".publish-", 1)[1].partition("-")
    if not named or not pid.isdigit():
        return time.time() - folder.stat().st_mtime < 3600
    try:
        os.kill(int(pid), 0)  # this process's own too: its finally removes it
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep_staging(root: Path) -> list[Path]:
    """Delete the snapshot folders of publishes whose process is gone (killed mid-upload: its ``finally`` never
    ran); another live process's (a second worker on this home) is kept."""
    gone = [f for f in root.parent.glob(f".{root.name}.publish-*") if not _publisher_alive(f)]
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    if gone:
        log.info("removed %d snapshot folder(s) of publishes that were killed: %s", len(gone),
                 ", ".join(p.name for p in gone))
    return gone


def _local_lex(catalog: Path) -> dict[str, Any] | None:
    if not catalog.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
        try:
            return {k: json.loads(v) for k, v in con.execute("SELECT k, v FROM lex")}
        finally:
            con.close()
    except (sqlite3.Error, ValueError):
        return None


# ---- fetching --------------------------------------------------------------------------------------
@dataclass
class Fetched:
    state: tuple[int, int]  # the store state the installed index matches
    same_collection: bool  # published from this very collection (not one since reset under the same name)
    seconds: float
    bytes: int


def fetch(store: ChromaStore, root: Path, accepts: Callable[[dict[str, Any]], bool]) -> Fetched | None:
    """Install the published index as ``root`` (replacing what is there). None, with a warning, when nothing is
    published, ``accepts`` refuses its manifest (written for other settings: the reader's own test of a saved
    index), or any piece is missing or torn."""
    t0 = time.perf_counter()
    for attempt in (1, 2):  # a publish may delete the pieces of a manifest read just before it: read again once
        manifest: dict[str, Any] | None = None
        try:
            manifest = published(store)
            if manifest is None:
                log.info("no published lexical index in %s", side_name(store.settings.store.chroma_collection))
                return None
            lex = manifest["lex"]
            if not accepts(lex):
                log.info("the published lexical index was built with other settings (%s); not used",
                         {k: lex.get(k) for k in ("format", "k1", "b", "analyzer")})
                return None
            state = (int(lex["state"][0]), int(lex["state"][1]))  # a malformed manifest fails before any install
            size = _download(store, manifest, root)
        except ShareError as e:
            if attempt == 1:
                try:
                    again = published(store)
                except Exception:  # the server: the warning below says what matters
                    again = None
                if again is not None and manifest is not None \
                        and again.get("lex", {}).get("commit") != manifest.get("lex", {}).get("commit"):
                    continue
            log.warning("the published lexical index is unusable (%s); rebuilding from the store", e)
            return None
        except Exception as e:  # the server, or the local disk
            log.warning("fetching the published lexical index failed (%s: %s); rebuilding from the store",
                        type(e).__name__, e)
            return None
        same = manifest.get("collection_id") == str(getattr(store.chroma_collection, "id", ""))
        fetched = Fetched(state, same, time.perf_counter() - t0, size)
        log.info("lexical index installed from %s: %.1f MB in %.1f s (state %s)",
                 side_name(store.settings.store.chroma_collection), size / 1e6, fetched.seconds, state)
        return fetched
    return None


def _download(store: ChromaStore, manifest: dict[str, Any], root: Path) -> int:
    """Every file into ``root``.fetch, each piece and file checked, then swapped in for ``root``."""
    col = _side(store, create=False)
    if col is None:
        raise ShareError("the side collection is gone")
    files = manifest["files"]
    if not any(f["name"] == CATALOG for f in files):
        raise ShareError("the manifest names no catalog")
    tmp = root.with_name(root.name + ".fetch")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    total = 0
    try:
        for f in sorted(files, key=lambda f: f["name"] == CATALOG):  # the catalog (the manifest) last
            name = f["name"]
            if not _SAFE_NAME.fullmatch(name):
                raise ShareError(f"unexpected file name {name!r}")
            path = tmp / name
            path.parent.mkdir(exist_ok=True)
            _download_file(col, f, path)
            total += int(f["size"])
        for d in [p for p in tmp.iterdir() if p.is_dir()] + [tmp]:
            fsync_dir(d)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = root.with_name(root.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if root.exists():
        root.rename(old)
    tmp.rename(root)
    fsync_dir(root.parent)
    shutil.rmtree(old, ignore_errors=True)
    return total


def _download_file(col: Any, f: dict[str, Any], path: Path) -> None:
    sha, n = str(f["sha256"]), int(f["pieces"])
    h = hashlib.sha256()
    z = zlib.decompressobj()
    size = 0
    with open(path, "wb") as out:
        for start in range(0, n, 4):  # four pieces (~22 MB of base64) per request
            ids = [_piece_id(sha, n, k) for k in range(start, min(start + 4, n))]
            res = col.get(ids=ids, include=["metadatas"])
            got = dict(zip(res["ids"], res["metadatas"], strict=True))
            for pid in ids:
                md = got.get(pid)
                if md is None:
                    raise ShareError(f"{f['name']}: piece {pid} missing")
                data = base64.b64decode(md["data"], validate=True)
                if hashlib.sha256(data).hexdigest() != md.get("piece_sha256"):
                    raise ShareError(f"{f['name']}: piece {pid} does not match its checksum")
                try:
                    block = z.decompress(data, int(f["size"]) - size + 1)  # never more than the file's size
                except zlib.error as e:
                    raise ShareError(f"{f['name']}: piece {pid} does not decompress ({e})") from e
                if z.unconsumed_tail or size + len(block) > int(f["size"]):
                    raise ShareError(f"{f['name']}: piece {pid} expands past the file's {f['size']} bytes")
                h.update(block)
                size += len(block)
                out.write(block)
        tail = z.flush()
        h.update(tail)
        size += len(tail)
        out.write(tail)
        out.flush()
        os.fsync(out.fileno())
    if not z.eof or size != int(f["size"]) or h.hexdigest() != sha:
        raise ShareError(f"{f['name']}: {size} bytes with sha256 {h.hexdigest()[:12]}…, the manifest says "
                         f"{f['size']} bytes, {sha[:12]}…")
