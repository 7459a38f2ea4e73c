"""The lexical index shared through a real Chroma server (`chroma run` on 127.0.0.1, started for the session).

Host A (its own PAPERCHAT_HOME) builds the index and publishes it to the side collection; host B (another
home, same server) installs it without reading every paper row (a rebuild would fail the test), and scores,
filters and catalog answers equal a fresh build's. When A adds, updates and deletes papers, B follows by
increments and A uploads only what changed. A corrupted or missing published piece makes B rebuild from the
store, still equal to a fresh build. An embedded store never publishes, and a failed publish never breaks a
sync."""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from rag.config import get_settings
from rag.index import lexical as lexical_mod
from rag.index import shared_lexical
from rag.index.lexical import LexicalIndex
from rag.index.store import ChromaStore
from tests.test_lexical import Library, assert_same, make_paper, no_full_read


class ServerLibrary(Library):
    """tests.test_lexical's library, on the session's Chroma server."""

    def __init__(self, home: Path, port: int, collection: str) -> None:
        self.settings = get_settings(home=home, store={"mode": "server", "host": "127.0.0.1", "port": port,
                                                       "chroma_collection": collection})
        self.store = ChromaStore(self.settings, "random-unit-vectors", 8)
        self.rng = np.random.default_rng(0)


def other_host(lib: Library, home: Path) -> tuple[ChromaStore, LexicalIndex]:
    """A second host: its own home (its own lexical folder), the same server and collection."""
    settings = lib.settings.with_overrides(home=home)
    store = ChromaStore(settings, "random-unit-vectors", 8)
    return store, LexicalIndex.for_store(home, store)


def host_a(lib: Library, papers: range, rng: random.Random) -> tuple[LexicalIndex, dict | None]:
    """Write ``papers`` to the store, sync host A's index (its home is the library's) and wait for its publish
    round; A and that round's report."""
    lib.write([make_paper(rng, i) for i in papers])
    a = LexicalIndex.for_store(lib.settings.home, lib.store)
    a.sync(lib.store)
    return a, a.wait_shared()


def messages(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


@pytest.fixture
def lib(tmp_path: Path, chroma_server: int) -> ServerLibrary:
    library = ServerLibrary(tmp_path / "home-a", chroma_server, f"shlex-{uuid.uuid4().hex[:10]}")
    yield library
    library.store.close()


def test_a_second_host_installs_the_published_index_and_follows_by_increments(
        lib: ServerLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rng = random.Random(10)
    a, first = host_a(lib, range(60), rng)
    assert first is not None and first["uploaded_bytes"] > 0 and first["files"] > 3
    assert shared_lexical.published(lib.store)["lex"]["state"] == list(lib.state())  # type: ignore[index]

    store_b, b = other_host(lib, tmp_path / "home-b")
    assert b.root != a.root and not b.root.exists()
    monkeypatch.setattr(store_b, "iter_metadata", no_full_read(store_b))  # a rebuild would read every row
    diffs: list[int] = []
    real_versions = lexical_mod.stored_versions
    monkeypatch.setattr(lexical_mod, "stored_versions", lambda s: diffs.append(1) or real_versions(s))
    caplog.clear()  # host A's own rebuild was logged
    b.sync(store_b)
    assert diffs == [] and b.state == lib.state()  # installed as published: no rebuild, nothing to diff
    assert any("installed from" in m for m in messages(caplog, "rag.index.shared_lexical"))
    assert not any("rebuilt" in m for m in messages(caplog, "rag.index.lexical"))
    assert_same(b, lib, tmp_path)
    assert b.wait_shared() == {"skipped": "already published"}

    lib.write([make_paper(rng, i) for i in range(60, 66)])
    lib.write([make_paper(rng, i, salt="onlyafterthesnapshot") for i in (2, 9)])
    lib.delete(["p0004", "p0061"])
    a.sync(lib.store)
    second = a.wait_shared()
    assert second is not None and 0 < second["uploaded_bytes"] < first["uploaded_bytes"]  # the old segment stays
    b.sync(store_b)  # increments from the installed index, still no full read
    assert diffs == [1, 1] and b.state == lib.state() and "p0004" not in b.paper_ids  # A's diff, then B's
    assert b.scores("onlyafterthesnapshot")[b.positions(["p0009"])[0]] > 0
    assert_same(b, lib, tmp_path)
    # B's index matches the state A published: B does not upload it again (hosts' commits always differ)
    assert b.wait_shared() == {"skipped": "the server holds this state or a later one"}
    store_b.close()


def test_a_publisher_never_deletes_what_the_live_manifest_names(
        lib: ServerLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """B publishes; another host's manifest lands between B's manifest and B's clean-up (two hosts writing at
    once). B's clean-up must keep that manifest's files, or every new host would find pieces missing."""
    caplog.set_level(logging.INFO)
    rng = random.Random(15)
    a, _ = host_a(lib, range(30), rng)
    lib.write([make_paper(rng, i) for i in range(30, 36)])
    a.sync(lib.store)  # A's new commit: a new segment and catalog, not published yet (A is the other writer)
    a.wait_shared()
    a_manifest = shared_lexical.published(lib.store)
    assert a_manifest is not None
    store_b, b = other_host(lib, tmp_path / "home-b")
    b.sync(store_b)
    b.wait_shared()
    lib.write([make_paper(rng, i) for i in range(36, 40)])
    b.sync(store_b)  # B's commit of a later state, published by hand below with A's manifest landing mid-way
    b.wait_shared()
    side = shared_lexical._side(lib.store, create=True)
    real = shared_lexical.published
    calls: list[int] = []

    def racing(store: ChromaStore) -> dict | None:
        calls.append(1)
        if len(calls) == 2:  # B's manifest is written: A's lands now
            side.upsert(ids=[shared_lexical.MANIFEST_ID], embeddings=[[0.0]],
                        metadatas=[{"kind": "manifest", "manifest": json.dumps(a_manifest)}])
        return real(store)

    folder = tmp_path / "snap-b"
    with b._writer():
        snap = shared_lexical.snapshot(b.root, folder)
    monkeypatch.setattr(shared_lexical, "published", racing)
    shared_lexical.publish(store_b, snap)
    monkeypatch.setattr(shared_lexical, "published", real)
    assert len(calls) == 2
    store_c, c = other_host(lib, tmp_path / "home-c")
    caplog.clear()
    assert shared_lexical.fetch(store_c, c.root, c.accepts) is not None
    assert not any("unusable" in m for m in messages(caplog, "rag.index.shared_lexical"))
    monkeypatch.setattr(lexical_mod, "ANALYZER", "an-upgraded-analyser")  # a host that analyses otherwise
    assert shared_lexical.fetch(store_c, tmp_path / "home-d-lexical", c.accepts) is None
    assert any("other settings" in m for m in messages(caplog, "rag.index.shared_lexical"))
    store_b.close()
    store_c.close()


def test_a_host_whose_index_is_far_behind_starts_from_the_published_one(
        lib: ServerLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    lib.write([make_paper(rng, i) for i in range(1200)])
    store_b, b = other_host(lib, tmp_path / "home-b")
    b.sync(store_b)  # B has its own index of 1,200 papers
    b.wait_shared()
    host_a(lib, range(1200, 2600), rng)  # more than half the library is new, and A publishes it
    monkeypatch.setattr(store_b, "iter_metadata", no_full_read(store_b))
    b.sync(store_b)
    assert b.state == lib.state() and len(b) == 2600
    assert_same(b, lib, tmp_path)
    b.wait_shared()
    store_b.close()


@pytest.mark.parametrize("damage", ["corrupted piece", "missing piece", "wrong file size"])
def test_a_damaged_published_index_falls_back_to_a_rebuild(lib: ServerLibrary, tmp_path: Path, damage: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rng = random.Random(12)
    a, _ = host_a(lib, range(40), rng)
    side = shared_lexical._side(lib.store, create=False)
    manifest = shared_lexical.published(lib.store)
    assert manifest is not None
    target = next(f for f in manifest["files"] if f["name"].endswith("/tf.npy"))
    pid = shared_lexical._piece_id(target["sha256"], target["pieces"], 0)
    if damage == "corrupted piece":
        md = side.get(ids=[pid], include=["metadatas"])["metadatas"][0]
        raw = bytearray(base64.b64decode(md["data"]))
        raw[len(raw) // 2] ^= 0xFF
        side.upsert(ids=[pid], embeddings=[[0.0]], metadatas=[{**md, "data": base64.b64encode(raw).decode()}])
    elif damage == "missing piece":
        side.delete(ids=[pid])
    else:
        target["size"] += 1  # every piece is there and intact: only the whole file's check can catch it
        manifest["files"] = [f for f in manifest["files"] if f["name"] != target["name"]] + [target]
        side.upsert(ids=[shared_lexical.MANIFEST_ID], embeddings=[[0.0]],
                    metadatas=[{"kind": "manifest", "manifest": json.dumps(manifest)}])
    store_b, b = other_host(lib, tmp_path / "home-b")
    caplog.clear()
    b.sync(store_b)
    said = [m for m in messages(caplog, "rag.index.shared_lexical") if "unusable" in m]
    assert said and ("the manifest says" in said[0]) == (damage == "wrong file size")
    assert any("rebuilt" in m for m in messages(caplog, "rag.index.lexical"))
    assert not b.root.with_name(b.root.name + ".fetch").exists()
    assert_same(b, lib, tmp_path)
    b.wait_shared()
    store_b.close()


def test_a_failed_publish_is_a_warning_and_the_sync_still_works(lib: ServerLibrary, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    def refuse(*_: object) -> None:
        raise ConnectionError("the side collection is not writable")

    monkeypatch.setattr(shared_lexical, "publish", refuse)
    rng = random.Random(13)
    a, _ = host_a(lib, range(20), rng)
    assert len(a) == 20 and shared_lexical.published(lib.store) is None
    assert any("publishing the lexical index" in m and "failed" in m
               for m in messages(caplog, "rag.index.shared_lexical"))
    assert_same(a, lib, tmp_path)


def test_a_publish_sweeps_the_snapshots_of_killed_publishers_and_keeps_live_ones(lib: ServerLibrary,
                                                                                  tmp_path: Path) -> None:
    rng = random.Random(17)
    a, _ = host_a(lib, range(10), rng)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    parent, name = a.root.parent, a.root.name
    killed = parent / f".{name}.publish-{int(dead.stdout)}-0badc0de"  # a publisher SIGKILLed mid-upload
    live = parent / f".{name}.publish-{os.getppid()}-0000cafe"  # another process publishing right now
    legacy = parent / f".{name}.publish-12345678"  # an older version's name: 8 hex digits, no pid
    for folder in (killed, live, legacy):
        folder.mkdir()
        (folder / "catalog.sqlite").write_bytes(b"snapshot")
    lib.write([make_paper(rng, i) for i in range(10, 14)])
    a.sync(lib.store)
    report = a.wait_shared()
    assert report is not None and report.get("files")  # the next publish ran
    assert not killed.exists() and live.exists() and legacy.exists()  # a fresh legacy one: maybe still in use
    assert not [p for p in parent.glob(f".{name}.publish-*") if p not in (live, legacy)]  # its own is gone too


def test_an_embedded_store_never_publishes(tmp_path: Path) -> None:
    lib = Library(tmp_path / "home")
    try:
        assert not shared_lexical.enabled(lib.settings)  # share_lexical=auto
        lib.write([make_paper(random.Random(14), i) for i in range(10)])
        lex = LexicalIndex.for_store(lib.settings.home, lib.store)
        lex.sync(lib.store)
        assert lex.wait_shared() is None
        names = {c.name for c in lib.store.client.list_collections()}
        assert shared_lexical.side_name(lib.settings.store.chroma_collection) not in names and names == {"papers"}
    finally:
        lib.store.close()


def test_the_setting_and_the_side_collection_name() -> None:
    on_server = get_settings(store={"mode": "server"})
    assert shared_lexical.enabled(on_server)
    assert not shared_lexical.enabled(on_server.with_overrides(store={"share_lexical": "off"}))
    assert shared_lexical.enabled(on_server.with_overrides(store={"share_lexical": "on"}))
    # never on an embedded store (the upload would outlive its lock) nor on Chroma Cloud (its quotas refuse pieces)
    assert not shared_lexical.enabled(get_settings(store={"share_lexical": "on"}))
    assert not shared_lexical.enabled(get_settings(store={"mode": "cloud", "share_lexical": "on"}))
    assert shared_lexical.side_name("papers") == "papers__lexical"
    long = shared_lexical.side_name("x" * 63)
    assert len(long) <= 63 and long.endswith("__lexical")
