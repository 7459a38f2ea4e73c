"""Loaders on broken and hostile input: each must give one clear ``InputError`` or a ``RecordProblem``."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import InputError
from rag.ingest.loaders import detect_format, iter_records, load
from tests.support.fuzz import fuzz_settings

FIX = Path(__file__).resolve().parent / "fixtures" / "loaders"
ABSTRACT = "An abstract that is certainly long enough to be kept as a paper."


def one_line_error(excinfo: pytest.ExceptionInfo[InputError], *needles: str) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg and "Traceback" not in msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


@pytest.mark.parametrize("name, content, needle", [
    ("empty.txt", b"", "empty"),
    ("blank.jsonl", b"  \n\n\t \r\n", "only whitespace"),
    ("blob.csv", b"Title,Abstract\n\x00\x01\x02\x03", "binary"),
    ("model.bin", bytes(range(256)) * 4, "binary"),
    ("utf16.csv", "Title,Abstract\nA,B\n".encode("utf-16"), "UTF-16"),
    ("snapshot.json.gz", gzip.compress(b'{"id": "1"}\n', mtime=0), "gzip"),
    ("paper.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF"),
])
def test_unusable_files(tmp_path: Path, name: str, content: bytes, needle: str) -> None:
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(InputError) as e:
        load(f)
    one_line_error(e, str(f), needle)


def test_missing_path_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        load(tmp_path / "nope.csv")
    one_line_error(e, "nope.csv", "not found")
    with pytest.raises(InputError) as e:
        load(tmp_path)
    one_line_error(e, "directory")
    with pytest.raises(InputError) as e:
        iter_records(tmp_path, fmt="csv")
    one_line_error(e, "directory")


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "locked.csv"
    f.write_text(f"Title,Abstract\nT,{ABSTRACT}\n")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("rag.ingest.loaders.common.open", denied, raising=False)
    with pytest.raises(InputError) as e:
        load(f)
    one_line_error(e, "locked.csv", "permission denied")


def _load_unprivileged(path: Path) -> str:
    """``load(path)`` as an unprivileged user; what it raised (``"InputError: …"``) or ``"loaded"``.

    As root (every machine here), in a forked child that drops to ``nobody`` first: root reads any file, so the
    read itself would never be refused. The modules are imported before the fork (the child cannot read the
    interpreter's install under /root)."""
    def attempt() -> str:
        try:
            load(path)
        except InputError as e:
            return f"InputError: {e}"
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails on it
            return f"{type(e).__name__}: {e}"
        return "loaded"

    if os.geteuid() != 0:
        return attempt()
    import pwd

    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, try the read, report, and leave without pytest's teardown
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            out = attempt() if os.geteuid() == nobody.pw_uid else f"still uid {os.geteuid()}"
            os.write(write_end, out.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as r:
        out = r.read().decode()
    os.waitpid(pid, 0)
    return out


@pytest.mark.skipif(os.name != "posix", reason="file modes and users are POSIX")
def test_unreadable_file_for_real() -> None:
    """A file its reader may not open (mode 000, read by a user other than root) is one clear InputError."""
    folder = Path(tempfile.mkdtemp(prefix="paperchat-unreadable-"))  # under /tmp: any user may look inside
    try:
        folder.chmod(0o755)
        readable, locked = folder / "open.csv", folder / "locked.csv"
        for f in (readable, locked):
            f.write_text(f"Title,Abstract\nT,{ABSTRACT}\n")
            f.chmod(0o644)
        assert len(load(readable).papers) == 1  # here, before any fork: the loaders' lazy imports are done
        assert _load_unprivileged(readable) == "loaded"  # the same user reads a readable file: only the mode differs
        locked.chmod(0)
        out = _load_unprivileged(locked)
        assert out.startswith("InputError: ") and "locked.csv" in out and "permission denied" in out, out
    finally:
        shutil.rmtree(folder)


def test_latin1_listing_and_jsonl_are_refused(tmp_path: Path) -> None:
    listing = tmp_path / "page.txt"
    listing.write_bytes(f"Theory · Learning\n\nJosé García\n\n{ABSTRACT} Café.\n".encode("latin-1"))
    with pytest.raises(InputError) as e:
        load(listing, fmt="listing")
    one_line_error(e, "not UTF-8", "re-save it as UTF-8")
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(json.dumps({"abstract": ABSTRACT + " Café"}, ensure_ascii=False).encode("latin-1") + b"\n")
    with pytest.raises(InputError, match=r"line 1 is not valid UTF-8 \(byte 0xe9"):
        load(rows)


def test_latin1_csv_falls_back_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "export.csv"
    f.write_bytes("Title,Abstract\nCafé society,\"Naïve Bayes résumé classifiers are competitive.\"\n"
                  .encode("cp1252"))
    with caplog.at_level(logging.WARNING, logger="rag.ingest.loaders"):
        r = load(f)
    assert r.papers[0].title == "Café society" and "Naïve Bayes résumé" in r.papers[0].abstract
    assert any("not UTF-8" in rec.getMessage() and "cp1252" in rec.getMessage() for rec in caplog.records)


def test_stray_invalid_bytes_in_utf8_csv_become_a_problem(tmp_path: Path) -> None:
    f = tmp_path / "mixed.csv"
    f.write_bytes(f"Title,Abstract\nPad,{ABSTRACT}\n".encode()
                  + b"P," + b"y" * 70_000 + b"\n"  # pushes the bad byte past the sniffed head
                  + b"Bad,caf\xe9 " + ABSTRACT.encode() + b"\n" + f"Last,{ABSTRACT}\n".encode())
    r = load(f)
    assert [p.title for p in r.papers] == ["Pad", "P", "Last"]
    assert [(x.line, "not valid utf-8" in x.reason) for x in r.problems] == [(4, True)]


def test_entity_bomb_and_external_entities_are_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
                    ' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n'
                    ' <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\n]>\n'
                    '<feed xmlns="http://www.w3.org/2005/Atom"><entry><summary>&lol3;</summary></entry></feed>\n')
    with pytest.raises(InputError) as e:
        load(bomb)
    one_line_error(e, "bomb.xml:2", "DOCTYPE")
    xxe = tmp_path / "xxe.atom"
    xxe.write_text('<?xml version="1.0"?>\n<!DOCTYPE feed SYSTEM "file:///etc/passwd">\n'
                   '<feed xmlns="http://www.w3.org/2005/Atom"></feed>\n')
    with pytest.raises(InputError, match="DOCTYPE"):
        load(xxe, fmt="arxiv-atom")


def test_malformed_and_error_feeds(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    text = (FIX / "arxiv_feed.xml").read_text()
    text = text.replace("</title>\n    <summary>  We train", "\n    <summary>  We train")
    bad.write_text(text)
    with pytest.raises(InputError) as e:
        load(bad)
    one_line_error(e, "malformed XML")
    err = tmp_path / "error.xml"
    err.write_text('<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
                   "<id>http://arxiv.org/api/errors#incorrect_id_format_for_1234</id><title>Error</title>"
                   "<summary>incorrect id format for 1234</summary></entry></feed>\n")
    with pytest.raises(InputError, match="arXiv API answered with an error: incorrect id format for 1234"):
        load(err)
    other = tmp_path / "other.xml"
    other.write_text('<?xml version="1.0"?><rss version="2.0"><channel/></rss>')
    with pytest.raises(InputError, match="XML but not an Atom feed"):
        load(other)


def test_deeply_nested_json_is_an_input_error(tmp_path: Path) -> None:
    f = tmp_path / "deep.json"
    f.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(InputError) as e:
        load(f)
    one_line_error(e, "nested too deeply")
    rows = tmp_path / "deep.jsonl"
    rows.write_text('{"x": ' + "[" * 10_000 + "]" * 10_000 + "}\n" + json.dumps({"abstract": ABSTRACT}) + "\n")
    r = load(rows)
    assert len(r.papers) == 1 and [(x.line, x.reason) for x in r.problems] == [(1, "JSON nested too deeply")]


def test_unparseable_json_documents(tmp_path: Path) -> None:
    cases = {"trailing.json": ('[{"abstract": "x"},\n {"abstract": "y",}]', "invalid JSON"),
             "scalar.json": ('"just text"', "list of records"),
             "object.json": ('{"meta": 1, "count": 2}', "'meta'"),
             "numbers.json": ("[1, 2, 3]", "no records")}
    for name, (content, needle) in cases.items():
        f = tmp_path / name
        f.write_text(content)
        with pytest.raises(InputError) as e:
            load(f)
        one_line_error(e, needle)
    assert "trailing.json:2" in str(pytest.raises(InputError, load, tmp_path / "trailing.json").value)


def test_not_json_lines(tmp_path: Path) -> None:
    f = tmp_path / "notes.jsonl"
    f.write_text("this is\nnot json\nat all\n")
    with pytest.raises(InputError, match="not JSON Lines"):
        load(f)


def test_csv_without_abstract_column(tmp_path: Path) -> None:
    f = tmp_path / "titles.csv"
    f.write_text("Title,Year\nA paper,2020\n")
    with pytest.raises(InputError) as e:
        iter_records(f)  # raised at call time, before any row is read
    one_line_error(e, "no abstract column", "'Title', 'Year'")


def test_csv_row_with_too_many_fields(tmp_path: Path) -> None:
    f = tmp_path / "ragged.csv"
    f.write_text(f"Title,Abstract\nA,oops,{ABSTRACT},x\nB,\"{ABSTRACT}\",,\n")
    r = load(f)
    assert [p.title for p in r.papers] == ["B"] and r.problems[0].line == 2 and "4 fields" in r.problems[0].reason


def test_tsv_and_semicolon_csv(tmp_path: Path) -> None:
    tsv = tmp_path / "p.tsv"
    tsv.write_text(f"Title\tAbstract\nTab\t{ABSTRACT}\n")
    semi = tmp_path / "p.csv"
    semi.write_text(f"Title;Abstract;Authors\nSemi;{ABSTRACT};Ann Lee, Bo Wu\n")
    assert load(tsv).papers[0].title == "Tab"
    assert load(semi).papers[0].authors == ["Ann Lee", "Bo Wu"]


def test_unknown_format_and_bad_arguments(tmp_path: Path) -> None:
    f = tmp_path / "notes.xyz"
    f.write_text("Some notes that are not in any supported format.\n")
    with pytest.raises(InputError) as e:
        detect_format(f)
    one_line_error(e, "notes.xyz", "cannot tell the format", "bibtex", "beir")
    with pytest.raises(InputError, match="unknown format 'docx'"):
        load(FIX / "papers.csv", fmt="docx")
    with pytest.raises(InputError, match="papers.csv: the file is damaged or not a PDF"):  # pdf is a format now
        load(FIX / "papers.csv", fmt="pdf")
    with pytest.raises(InputError, match="mapping must be a dict"):
        load(FIX / "papers.csv", mapping=["abstract"])  # type: ignore[arg-type]


SUFFIXES = [".txt", ".csv", ".json", ".jsonl", ".bib", ".xml", ""]


@fuzz_settings(40)
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)),
       suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes_never_crash(tmp_path: Path, data: bytes, suffix: str) -> None:
    f = tmp_path / f"fuzz{suffix}"
    f.write_bytes(data)
    try:
        load(f)
    except InputError as e:
        assert "\n" not in str(e)


@fuzz_settings(30)
@given(rows=st.lists(st.dictionaries(st.sampled_from(["abstract", "title", "authors", "year", "id", "doi", "tags"]),
                                     st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=40),
                                               st.lists(st.text(max_size=10), max_size=3),
                                               st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))),
                     min_size=1, max_size=5))
def test_arbitrary_json_values_never_crash(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    f = tmp_path / "fuzz.json"
    f.write_text(json.dumps([{"abstract": ABSTRACT}, *rows]))
    r = load(f)
    assert len(r.papers) + len(r.problems) == len(rows) + 1


ANY_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30)),
                        lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                        max_leaves=8)
SNAPSHOT_KEYS = ["id", "authors", "title", "journal-ref", "doi", "categories", "versions", "update_date",
                 "authors_parsed", "abstract"]
BEIR_KEYS = ["_id", "title", "text", "metadata"]


@fuzz_settings(30)
@given(rows=st.lists(st.dictionaries(st.sampled_from(SNAPSHOT_KEYS + BEIR_KEYS), ANY_JSON), min_size=1, max_size=4))
def test_arbitrary_snapshot_and_beir_rows_never_crash(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    f = tmp_path / "corpus.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [{"_id": "0", "title": "", "text": ABSTRACT}, *rows]) + "\n")
    for fmt in ("arxiv-jsonl", "beir", "jsonl"):
        r = load(f, fmt=fmt)
        assert len(r.papers) + len(r.problems) == len(rows) + 1
