"""The Zotero loader on databases built with Zotero's real schemas (tests/zotero_fixture.py): exactly the regular,
non-deleted items with an abstract, their fields, tags and collection paths, on userdata schemas 79, 107 and
124; a library locked by another process (rollback journal and WAL) read without touching a byte; bad
databases refused before any record, with nothing stored; and `paperchat ingest` of a Zotero data folder."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rag.errors import InputError
from rag.ingest.loaders import detect_format, iter_records, load
from rag.ingest.loaders.zotero import SLASH_IN_NAME
from tests.zotero_fixture import ABS, LIBRARY, NO_ABSTRACT, VERSIONS, build, expected

ROOT = Path(__file__).resolve().parents[1]


def library(tmp_path: Path, version: int = 124, **kw: object) -> Path:
    return build(tmp_path / "Zotero" / "zotero.sqlite", version, **kw)  # type: ignore[arg-type]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("version", VERSIONS)
def test_regular_items_with_their_fields_tags_and_collections(tmp_path: Path, version: int) -> None:
    db = library(tmp_path, version)
    assert detect_format(db) == "zotero" and detect_format(db.parent) == "zotero"
    result = load(db.parent)  # the Zotero data folder
    papers = {p.origin_line: p for p in result.papers}
    want = expected(version)
    # exactly the regular items outside the trash with an abstract: no note, attachment, annotation, feed item
    assert set(papers) == set(want), sorted(papers)
    for item_id, e in want.items():
        p = papers[item_id]
        got = (p.id, p.title, p.authors, p.year, p.doi, p.arxiv_id, p.venue, p.categories, p.collections)
        assert got == (e.id, e.title, e.authors, e.year, e.doi, e.arxiv_id, e.venue, e.categories, e.collections)
        assert p.origin_file == str(db) and p.origin == f"{db}:{item_id}"
    assert papers[1].abstract == ABS["tides"]
    assert papers[1].url == "https://example.org/tides" and papers[2].url == "https://arxiv.org/abs/2101.00001v2"
    # the item without an abstract is reported with its title, at its itemID; the trashed one is not mentioned
    assert [(x.file, x.line) for x in result.problems] == [(str(db), 5)]
    assert result.problems[0].reason.startswith("no abstract") and NO_ABSTRACT[5] in result.problems[0].reason
    assert not any(ABS["trashed"][:40] in p.abstract for p in result.papers)


def test_each_arxiv_source_and_collection_quirk(tmp_path: Path) -> None:
    papers = {p.origin_line: p for p in load(library(tmp_path)).papers}
    assert papers[2].arxiv_id == "2101.00001"  # from the URL (its version dropped)
    assert papers[3].arxiv_id == "2102.00002"  # from an "arXiv: …" line of extra, DOI from a "DOI: …" line
    assert papers[13].arxiv_id == "2103.00003"  # from archiveID "arXiv:2103.00003" (Zotero 7 preprints)
    assert papers[11].arxiv_id == "2104.00004"  # from an arXiv DOI 10.48550/arXiv.…
    assert papers[1].authors[1] == "OpenTide Consortium"  # a single-field name; the editor left out
    assert "ML/A\u2215B testing" in papers[3].collections and SLASH_IN_NAME == "\u2215"  # "/" inside a name
    assert "Old drafts" not in papers[1].collections  # a collection in Zotero's trash


def test_creators_follow_order_index_not_insertion(tmp_path: Path) -> None:
    db = library(tmp_path, 107)
    with sqlite3.connect(db) as con:  # swap the first two authors of item 2
        con.execute("UPDATE itemCreators SET orderIndex = 9 WHERE itemID = 2 AND orderIndex = 0")
        con.execute("UPDATE itemCreators SET orderIndex = 0 WHERE itemID = 2 AND orderIndex = 1")
        con.execute("UPDATE itemCreators SET orderIndex = 1 WHERE itemID = 2 AND orderIndex = 9")
    con.close()
    papers = {p.origin_line: p for p in load(db).papers}
    assert papers[2].authors == ["Noam Shazeer", "Ashish Vaswani"]


def test_a_newer_schema_with_the_same_tables_is_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = library(tmp_path)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE version SET version = 131 WHERE schema = 'userdata'")
    con.close()
    assert len(load(db).papers) == len(expected(124))
    assert any("schema 131 is newer" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- a running Zotero holds the library

HOLD = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":  # Zotero-like: exclusive locking; a committed change still in the WAL
    con.execute("PRAGMA locking_mode = EXCLUSIVE")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.execute("INSERT INTO deletedItems (itemID) VALUES (4)")  # committed: item 4 goes to the trash
con.execute("BEGIN EXCLUSIVE")
con.execute("UPDATE itemDataValues SET value = 'UNCOMMITTED' WHERE value = 'Sparse Gaussian processes for tide gauges'")
con.execute("INSERT INTO deletedItems (itemID) VALUES (2)")  # not committed: item 2 stays
print("locked", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("journal", ["rollback", "wal"])
def test_a_library_locked_by_another_process_is_read_and_left_byte_identical(tmp_path: Path, journal: str) -> None:
    db = library(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db), journal], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        probe = sqlite3.connect(db, timeout=0.1)
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # the lock is real: a plain read fails
            probe.execute("SELECT COUNT(*) FROM items").fetchone()
        probe.close()
        before = {f.name: digest(f) for f in db.parent.iterdir()}
        assert any(n.endswith(("-journal", "-wal")) for n in before), before  # the writer's file is there too
        papers = {p.origin_line: p for p in load(db.parent).papers}
        assert {f.name: digest(f) for f in db.parent.iterdir()} == before  # nothing written, nothing created
    finally:
        holder.kill()
        holder.wait()
    want = set(expected(124)) - ({4} if journal == "wal" else set())
    assert set(papers) == want  # the last committed state: the WAL's commit seen, the open transaction not
    assert papers[1].title == "Sparse Gaussian processes for tide gauges"


# ---------------------------------------------------------------- bad databases: one InputError, before any record

def _not_zotero(tmp_path: Path) -> Path:
    f = tmp_path / "notes.sqlite"
    with sqlite3.connect(f) as con:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        con.execute("INSERT INTO notes (text) VALUES ('hello')")
    con.close()
    return f


def _future(tmp_path: Path) -> Path:
    db = library(tmp_path)
    with sqlite3.connect(db) as con:  # a schema that stores values inline, without itemDataValues
        con.executescript("DROP TABLE itemData; DROP TABLE itemDataValues; "
                          "CREATE TABLE itemData (itemID INT, fieldID INT, value TEXT, PRIMARY KEY (itemID, fieldID));"
                          "UPDATE version SET version = 150 WHERE schema = 'userdata';")
    con.close()
    return db


def _truncated(tmp_path: Path) -> Path:
    db = library(tmp_path, page_size=1024)
    size = db.stat().st_size
    with db.open("r+b") as f:
        f.truncate(size // 2)
    return db


def _damaged(tmp_path: Path) -> Path:
    db = library(tmp_path, page_size=1024)
    data = bytearray(db.read_bytes())
    data[1024:] = bytes((i * 131 + 7) % 256 for i in range(len(data) - 1024))  # every page but the first
    db.write_bytes(bytes(data))
    return db


def _empty(tmp_path: Path) -> Path:
    return library(tmp_path, entries=[])


def _only_trash(tmp_path: Path) -> Path:
    return library(tmp_path, entries=[e for e in LIBRARY if e.trashed or e.type == "note"])


def _text(tmp_path: Path) -> Path:
    f = tmp_path / "zotero.sqlite"
    f.write_text("not a database\n")
    return f


BAD = {
    "not zotero": (_not_zotero, ["an SQLite database, but not a Zotero library", "zotero.sqlite"]),
    "newer schema": (_future, ["schema 150 (newer than", "itemData.valueID", "itemDataValues",
                               "as CSL JSON or BibTeX"]),
    "truncated": (_truncated, ["the database is truncated", "zotero.sqlite.bak"]),
    "damaged": (_damaged, ["cannot read the database", "malformed", "zotero.sqlite.bak"]),
    "empty": (_empty, ["holds no regular item: nothing to ingest"]),
    "only trash": (_only_trash, ["holds no regular item outside the trash (1 there)"]),
    "text named zotero.sqlite": (_text, ["is not an SQLite database"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_databases_raise_one_clear_error_before_any_record(tmp_path: Path, case: str) -> None:
    make, needles = BAD[case]
    f = make(tmp_path)
    with pytest.raises(InputError) as e:
        iter_records(f, fmt="zotero")  # raised by the call itself, before the first record is asked for
    msg = str(e.value)
    assert msg.startswith(f"{f}: "), msg
    for needle in needles:
        assert needle in msg, (needle, msg)


def test_folder_without_a_library(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder without zotero.sqlite"):
        iter_records(tmp_path, fmt="zotero")
    with pytest.raises(InputError, match="a Zotero data folder, zotero.sqlite"):
        detect_format(tmp_path)


def test_bad_databases_store_nothing(tmp_path: Path, make_runtime) -> None:
    rt = make_runtime()
    good = library(tmp_path / "good")
    first = rt.ingestor(progress=False).ingest([good])
    assert first.added == len(expected(124)) and first.failed == 0
    ids = sorted(rt.store.paper_ids())
    chunks = rt.store.count_chunks()
    bad = []
    for name, (make, _) in BAD.items():
        (tmp_path / name.replace(" ", "_")).mkdir()
        bad.append(make(tmp_path / name.replace(" ", "_")))
    report = rt.ingestor(progress=False).ingest(bad)
    assert report.failed == len(bad) and report.added == report.updated == report.skipped == 0, report
    assert sorted(rt.store.paper_ids()) == ids and rt.store.count_chunks() == chunks


# ---------------------------------------------------------------- the real CLI

def test_paperchat_ingest_of_a_zotero_data_folder(tmp_path: Path, paperchat_home: Path) -> None:
    from conftest import paperchat_cmd

    db = library(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(paperchat_cmd(*args), capture_output=True, text=True, cwd=ROOT, env=dict(os.environ),
                              timeout=600)

    out = run("ingest", "--json", str(db.parent))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["added"], report["skipped"], report["failed"]) == (len(expected(124)), 1, 0), report
    assert report["skipped_by_reason"] == {"no abstract": 1}
    assert "skipped 1 record: no abstract (zotero.sqlite:5" in out.stderr
    listed = json.loads(run("papers", "--json").stdout)
    assert sorted(p["id"] for p in listed) == sorted(e.id for e in expected(124).values())
    assert {p["id"]: p["categories"] for p in listed}["arxiv:2103.00003"] == ["RAG"]
    tagged = json.loads(run("papers", "--category", "oceanography", "--json").stdout)  # a Zotero tag
    assert [p["title"] for p in tagged] == ["Sparse Gaussian processes for tide gauges"]
