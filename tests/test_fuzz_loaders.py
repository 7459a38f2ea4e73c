"""Property-based and named nasty inputs for every loader: whatever the bytes, a load ends in papers and
``RecordProblem``s naming ``file:line``, or one ``InputError`` naming the file — never another exception.

Complements tests/test_loaders_hostile.py (one case per failure message) with generated inputs per format
(raw bytes, text, JSON shapes, BibTeX fragments, CSV, listing and Atom pieces) and the named cases of
issue 7: huge files, binary, Latin-1/UTF-16, a 1 MB abstract, empty/whitespace, 10k-deep JSON, broken braces.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import InputError
from rag.ingest.loaders import FORMATS, detect_format, load
from rag.ingest.loaders.common import MAX_LINE_BYTES, MAX_WHOLE_FILE_BYTES, MIN_ABSTRACT_CHARS
from rag.limits import DEFAULTS
from rag.records import Paper
from tests.support.fuzz import fuzz_settings

ABSTRACT = "We propose okapi kernels, periodic covariance functions that forecast tidal heights well."
EXAMPLES = 120
FUZZ = fuzz_settings(EXAMPLES)  # the same examples every run; random ones, 5× as many, under --long
_names = itertools.count()


def fresh(tmp: Path, suffix: str) -> Path:
    return tmp / f"f{next(_names)}{suffix}"


def check_load(path: Path, **kwargs: object) -> tuple[list[Paper], list[object]] | InputError:
    """Load ``path``; assert the contract (only InputError, every message and record names the file)."""
    try:
        r = load(path, **kwargs)  # type: ignore[arg-type]
    except InputError as e:
        msg = str(e)
        assert "\n" not in msg and "Traceback" not in msg, msg
        assert str(path) in msg, msg  # the file (and where known the line) is named
        return e
    limit = kwargs.get("abstract_chars") or DEFAULTS.abstract_chars
    for p in r.papers:
        assert isinstance(p, Paper) and p.id and isinstance(p.abstract, str)
        assert MIN_ABSTRACT_CHARS <= len(p.abstract) <= limit, len(p.abstract)
        assert p.origin_file == str(path) and p.origin_line >= 1
        assert p.title is None or (isinstance(p.title, str) and p.title.strip())
        assert all(isinstance(a, str) and a for a in p.authors)
        assert p.year is None or 1800 <= p.year <= 2100
    for x in r.problems:
        assert x.file == str(path) and x.line >= 1 and x.reason and "\n" not in x.reason, x
    return r.papers, r.problems


# ---------------------------------------------------------------------------------------------- strategies
SUFFIXES = [".txt", ".csv", ".tsv", ".json", ".jsonl", ".bib", ".xml", ".atom", ""]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)
NASTY_CHARS = st.sampled_from(["\x00", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\ufeff", "\r", "\r\n",
                               "\t", "\u202e", "\u200b", "\\", "{", "}", "$", "%", "@", '"', "'", ",", ";", "·",
                               "<", ">", "&", "[", "]", "\U0001f600", "é", "论文检索"])
NOISY = st.lists(st.one_of(TEXT, NASTY_CHARS, st.just(ABSTRACT)), max_size=8).map("".join)
ANY_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), NOISY, st.just(ABSTRACT)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(
        st.sampled_from(["abstract", "title", "authors", "year", "id", "doi", "url", "categories", "_id", "text",
                         "metadata", "update_date", "versions", "authors_parsed", "journal-ref", "papers", "data"])
        | st.text(max_size=6), inner, max_size=5)),
    max_leaves=12)


@FUZZ
@given(data=st.one_of(st.binary(max_size=600), NOISY.map(lambda s: s.encode("utf-8", "surrogatepass"))),
       suffix=st.sampled_from(SUFFIXES), fmt=st.sampled_from([None, *FORMATS]))
def test_any_bytes_in_any_format(tmp_path: Path, data: bytes, suffix: str, fmt: str | None) -> None:
    f = fresh(tmp_path, suffix)
    f.write_bytes(data)
    check_load(f, fmt=fmt)


@FUZZ
@given(doc=ANY_JSON, fmt=st.sampled_from([None, "json", "jsonl"]))
def test_any_json_document(tmp_path: Path, doc: object, fmt: str | None) -> None:
    f = fresh(tmp_path, ".json")
    f.write_text(json.dumps(doc, ensure_ascii=False))
    check_load(f, fmt=fmt)


@FUZZ
@given(rows=st.lists(st.one_of(ANY_JSON, NOISY), min_size=1, max_size=6),
       fmt=st.sampled_from([None, "jsonl", "arxiv-jsonl", "beir"]))
def test_any_json_lines(tmp_path: Path, rows: list[object], fmt: str | None) -> None:
    f = fresh(tmp_path, ".jsonl")
    f.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows))
    out = check_load(f, fmt=fmt)
    if isinstance(out, tuple):
        assert len(out[0]) + len(out[1]) <= len(rows)


BIB_VALUE = st.one_of(
    st.just("{" + ABSTRACT + "}"), st.just('"' + ABSTRACT + '"'), st.integers(0, 3000).map(str),
    NOISY.map(lambda s: "{" + s + "}"), NOISY.map(lambda s: '"' + s + '"'), st.sampled_from(
        ["{{BERT} and {\\'e}t{\\'\\i}}", "jan # { more}", "mymacro", "{", "}", "{{{", "}}}", '"', "{\\", "{$x^2$}",
         "{\\emph{x}}", "{" + "{" * 50 + "deep" + "}" * 50 + "}"]))
BIB_FIELD = st.tuples(st.sampled_from(["abstract", "title", "author", "year", "doi", "eprint", "archivePrefix",
                                       "keywords", "journal", "url", "note", "ABSTRACT", "x"]), BIB_VALUE)
BIB_ENTRY = st.builds(
    lambda kind, open_, key, fields, close: (f"@{kind}{open_}{key},\n"
                                             + ",\n".join(f"  {k} = {v}" for k, v in fields) + f"\n{close}\n"),
    st.sampled_from(["article", "inproceedings", "misc", "string", "comment", "preamble", "ARTICLE", "", "@"]),
    st.sampled_from(["{", "(", "", "{{"]), st.one_of(st.from_regex(r"[a-z0-9_:-]{0,12}", fullmatch=True), NOISY),
    st.lists(BIB_FIELD, max_size=5), st.sampled_from(["}", ")", "", "}}", "}}}"]))


@FUZZ
@given(entries=st.lists(st.one_of(BIB_ENTRY, NOISY), min_size=1, max_size=5), cut=st.integers(0, 100))
def test_bibtex_fragments_and_broken_braces(tmp_path: Path, entries: list[str], cut: int) -> None:
    text = "".join(entries)
    f = fresh(tmp_path, ".bib")
    f.write_text(text[:max(1, len(text) * cut // 100)] if cut < 100 else text)
    check_load(f)


CELL = st.one_of(NOISY, st.just(ABSTRACT), st.sampled_from(['"', '""', '"a""b', "a,b", "a\nb", "a;b", "\t", " "]))


@FUZZ
@given(header=st.lists(st.sampled_from(["Title", "Abstract", "Authors", "Year", "DOI", "id", "Keywords", "x", "",
                                        "abstract", "Summary"]), min_size=1, max_size=6),
       rows=st.lists(st.lists(CELL, max_size=7), max_size=6), quoted=st.booleans(),
       delim=st.sampled_from([",", ";", "\t"]))
def test_csv_rows(tmp_path: Path, header: list[str], rows: list[list[str]], quoted: bool, delim: str) -> None:
    if quoted:  # well-formed CSV with hostile cells
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=delim)
        w.writerow(header)
        w.writerows(rows)
        text = buf.getvalue()
    else:  # naive joins: stray quotes, ragged rows, embedded delimiters
        text = "\n".join(delim.join(r) for r in [header, *rows])
    f = fresh(tmp_path, ".csv")
    f.write_text(text)
    check_load(f)


LISTING_LINE = st.one_of(st.just(ABSTRACT), st.just("Deep Learning · Graph Neural Networks"), st.just("Theory"),
                         st.just("Ann Lee, Bo Wu, Cy Twombly"), st.just("论文检索"), st.just(""), NOISY)


@FUZZ
@given(lines=st.lists(LISTING_LINE, min_size=1, max_size=12), sep=st.sampled_from(["\n", "\n\n", "\r\n", "\n \n"]))
def test_listing_pieces(tmp_path: Path, lines: list[str], sep: str) -> None:
    f = fresh(tmp_path, ".txt")
    f.write_text(sep.join(lines), newline="")
    check_load(f, fmt=None)
    check_load(f, fmt="listing")


ATOM_PIECE = st.one_of(st.sampled_from([
    "<entry>", "</entry>", f"<summary>{ABSTRACT}</summary>", "<title>T &amp; U</title>", "<id>http://arxiv.org/abs/"
    "2101.00001v2</id>", '<author><name>Ann Lee</name></author>', '<category term="cs.LG"/>',
    "<published>2021-01-01T00:00:00Z</published>", "<![CDATA[<script>x</script>]]>", "&lt;b&gt;", "&bogus;",
    "<summary>", "</summary>", "<feed>", "</feed>", '<link href="javascript:alert(1)"/>']), NOISY)


@FUZZ
@given(pieces=st.lists(ATOM_PIECE, max_size=12), close=st.booleans())
def test_atom_pieces(tmp_path: Path, pieces: list[str], close: bool) -> None:
    f = fresh(tmp_path, ".xml")
    f.write_text('<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
                 'xmlns:arxiv="http://arxiv.org/schemas/atom">\n' + "\n".join(pieces) + ("\n</feed>" if close else ""))
    check_load(f)


# ---------------------------------------------------------------------------------------------- named cases
ALL_SUFFIXES = {"listing": ".txt", "arxiv-jsonl": ".jsonl", "arxiv-atom": ".xml", "bibtex": ".bib", "csv": ".csv",
                "json": ".json", "jsonl": ".jsonl", "beir": ".jsonl", "csl-json": ".json", "ris": ".ris",
                "medline": ".nbib", "arxiv-oai": ".xml"}


def one_record(fmt: str, abstract: str) -> str:
    """A file of format ``fmt`` holding one paper with ``abstract``."""
    if fmt == "listing":
        return f"论文检索\n\nTheory\n\nAnn Lee, Bo Wu\n\n{abstract}\n"
    if fmt == "arxiv-jsonl":
        row = {"id": "2101.00001", "abstract": abstract, "update_date": "2021-01-01"}
        return json.dumps(row, ensure_ascii=False) + "\n"
    if fmt == "arxiv-atom":
        return ('<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/'
                f"2101.00001v1</id><title>T</title><summary>{abstract}</summary></entry></feed>\n")
    if fmt == "bibtex":
        return "@article{k1,\n  title = {T},\n  abstract = {" + abstract + "},\n}\n"
    if fmt == "csv":
        return f'Title,Abstract\nT,"{abstract}"\n'
    if fmt == "json":
        return json.dumps([{"title": "T", "abstract": abstract}], ensure_ascii=False)
    if fmt == "beir":
        return json.dumps({"_id": "1", "title": "T", "text": abstract}, ensure_ascii=False) + "\n"
    if fmt == "arxiv-oai":
        return ('<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords><record><metadata><arXiv '
                f'xmlns="http://arxiv.org/OAI/arXiv/"><id>2101.00001</id><abstract>{abstract}</abstract></arXiv>'
                "</metadata></record></ListRecords></OAI-PMH>\n")
    if fmt == "medline":
        return f"PMID- 1\nTI  - T\nAB  - {abstract}\n"
    if fmt == "ris":
        return f"TY  - JOUR\nTI  - T\nAB  - {abstract}\nER  - \n"
    return json.dumps({"title": "T", "abstract": abstract}, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_megabyte_abstract_is_cut_with_a_warning(tmp_path: Path, fmt: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    sentence = "Tidal okapi kernels forecast sea level from sparse gauges with periodic covariance. "
    big = sentence * (1_000_000 // len(sentence) + 1)
    f = tmp_path / f"big{ALL_SUFFIXES[fmt]}"
    f.write_text(one_record(fmt, big))
    with caplog.at_level(logging.WARNING, logger="rag.ingest.loaders"):
        papers, problems = check_load(f, fmt=fmt)  # type: ignore[misc]
    assert len(papers) == 1 and not problems
    text = papers[0].abstract
    assert len(text) <= DEFAULTS.abstract_chars and len(text) > DEFAULTS.abstract_chars - len(sentence) - 2
    assert text.endswith("periodic covariance. \u2026")  # cut at a sentence end
    line = papers[0].origin_line
    assert any(f"{f}:{line}: abstract cut to the" in r.getMessage() and "ABSTRACT_CHARS" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    small = check_load(f, fmt=fmt, abstract_chars=5000)  # the configured limit applies
    assert isinstance(small, tuple) and len(small[0][0].abstract) <= 5000


@pytest.mark.parametrize("suffix", [".json", ".bib", ".txt", ".xml"])
def test_huge_whole_file_formats_are_refused_before_reading(tmp_path: Path, suffix: str) -> None:
    f = tmp_path / f"huge{suffix}"
    fmt = {".json": "json", ".bib": "bibtex", ".txt": "listing", ".xml": "arxiv-atom"}[suffix]
    f.write_text(one_record(fmt, ABSTRACT) + "\n" * 70_000)  # a text head longer than the sniffed 64 KB
    with f.open("r+b") as h:  # then sparse: 600 MiB on paper, nothing on disk
        h.truncate(MAX_WHOLE_FILE_BYTES + 88 * 2**20)
    # JSON, BibTeX and listings check the size before reading; Atom is parsed incrementally and stops when
    # the feed outgrows the parser's limit
    want = "the feed is too large to parse" if fmt == "arxiv-atom" else (
        f"the file is 600 MiB; this format is parsed in one piece and the limit is {MAX_WHOLE_FILE_BYTES // 2**20} MiB")
    for forced in (None, fmt):
        e = check_load(f, fmt=forced)
        assert isinstance(e, InputError) and want in str(e), e


@pytest.mark.parametrize("suffix, fmt", [(".jsonl", "jsonl"), (".csv", "csv"), (".jsonl", "beir")])
def test_huge_line_formats_stream_and_stop_at_a_giant_line(tmp_path: Path, suffix: str, fmt: str) -> None:
    f = tmp_path / f"huge{suffix}"
    head = one_record(fmt, ABSTRACT)
    row = head.splitlines()[-1] + "\n"
    f.write_text(head + row * 2000)  # ~200 KB of good rows: past the sniffed head
    with f.open("r+b") as h:  # then a 600 MiB "line" of NULs (sparse)
        h.truncate(600 * 2**20)
    with pytest.raises(InputError) as e:
        load(f, fmt=fmt)
    msg = str(e.value)
    assert f"{f}:" in msg and f"longer than {MAX_LINE_BYTES // 2**20} MiB" in msg


def test_many_records_stream(tmp_path: Path) -> None:
    f = tmp_path / "many.jsonl"
    with f.open("w") as h:
        for i in range(3000):
            h.write(json.dumps({"id": f"p{i}", "abstract": f"{ABSTRACT} Variant {i}."}) + "\n")
    papers, problems = check_load(f)  # type: ignore[misc]
    assert len(papers) == 3000 and not problems


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("encoding", ["latin-1", "utf-16", "utf-16-le", "utf-32"])
def test_wrong_encodings(tmp_path: Path, fmt: str, encoding: str) -> None:
    text = one_record(fmt, ABSTRACT + " Café naïve résumé, Zoë.")
    f = tmp_path / f"enc{ALL_SUFFIXES[fmt]}"
    f.write_bytes(text.encode(encoding, errors="replace"))  # the listing's 论文检索 header becomes ????
    out = check_load(f, fmt=fmt)
    if encoding == "latin-1" and fmt == "csv":  # CSV alone falls back to cp1252 (with a warning)
        assert isinstance(out, tuple) and "Café naïve résumé" in out[0][0].abstract
    elif encoding == "latin-1" and fmt == "arxiv-atom":  # XML without a declared encoding must be UTF-8
        assert isinstance(out, InputError) and f"{f}:1" in str(out) and "malformed XML" in str(out)
    elif encoding == "latin-1":
        assert isinstance(out, InputError) and "not UTF-8" in str(out) and "line " in str(out), out
    else:  # a BOM names the encoding; UTF-16 without one has NUL bytes in every ASCII character
        want = {"utf-16": "the file is UTF-16 encoded", "utf-32": "the file is UTF-32 encoded",
                "utf-16-le": "the file is binary, not text"}[encoding]
        assert isinstance(out, InputError) and want in str(out), out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("content", [b"", b" ", b"\n\n\n", b"\t \r\n \x0b\x0c", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_empty_and_whitespace_files(tmp_path: Path, fmt: str, content: bytes) -> None:
    f = tmp_path / f"blank{ALL_SUFFIXES[fmt]}"
    f.write_bytes(content)
    out = check_load(f, fmt=fmt)
    assert isinstance(out, InputError), out
    auto = check_load(f)
    assert isinstance(auto, InputError)


DEEP = "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize("name, content, fmt", [
    ("deep.json", DEEP, None),
    ("deep_value.json", json.dumps([{"abstract": ABSTRACT, "x": 0}]).replace("0", DEEP), None),
    ("deep_obj.json", '{"a":' * 10_000 + "1" + "}" * 10_000, "json"),
    ("deep.jsonl", DEEP + "\n", "jsonl"),
    ("deep_snapshot.jsonl", json.dumps({"id": "1", "abstract": ABSTRACT, "versions": 0}).replace("0}", DEEP + "}"),
     "arxiv-jsonl"),
    ("corpus.jsonl", json.dumps({"_id": "1", "title": "", "text": ABSTRACT, "metadata": 0}).replace("0}", DEEP + "}"),
     "beir"),
])
def test_ten_thousand_deep_json(tmp_path: Path, name: str, content: str, fmt: str | None) -> None:
    f = tmp_path / name
    f.write_text(content + "\n" + json.dumps({"_id": "2", "title": "", "text": ABSTRACT, "abstract": ABSTRACT,
                                              "id": "2"}) + "\n" if fmt in ("jsonl", "arxiv-jsonl", "beir") else
                 content)
    out = check_load(f, fmt=fmt)
    if isinstance(out, InputError):
        assert "nested too deeply" in str(out)
    else:  # line formats: the deep line is one problem at its line, the next record loads
        papers, problems = out
        assert len(papers) == 1 and [(p.line, p.reason) for p in problems] == [(1, "JSON nested too deeply")]


def test_deep_xml_and_bibtex_braces(tmp_path: Path) -> None:
    xml = tmp_path / "deep.xml"
    xml.write_text('<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">' + "<x>" * 10_000
                   + "</x>" * 10_000 + f"<entry><summary>{ABSTRACT}</summary></entry></feed>")
    papers, _ = check_load(xml)  # type: ignore[misc]
    assert len(papers) == 1
    bib = tmp_path / "deep.bib"
    bib.write_text("@article{a, abstract={" + "{" * 10_000 + ABSTRACT + "}" * 10_000 + "}}\n")
    papers, _ = check_load(bib)  # type: ignore[misc]
    assert len(papers) == 1 and ABSTRACT in papers[0].abstract


# (what, the broken entry, the reason of the one problem it makes — None when it still loads as a paper)
BROKEN_BIB = [
    ("open field brace", "@article{a,\n title={X},\n abstract={foo {bar " + ABSTRACT + "},\n}\n\n",
     "could not parse entry 'a'"),
    ("unclosed title", "@article{a,\n title={X,\n abstract={" + ABSTRACT + "}\n\n", "could not parse entry 'a'"),
    ("unclosed quote", '@article{a,\n abstract="' + ABSTRACT + "\n\n", "could not parse entry 'a'"),
    ("too many closers", "@article{c, abstract = }}}}}\n", "no abstract in entry 'c'"),
    ("no key", "@article{, abstract={" + ABSTRACT + "}}\n", None),  # a keyless entry is still a paper
    ("garbage", "@@@@{{{{,,,, ==== }}}}\n", "could not parse entry (unbalanced"),
]


@pytest.mark.parametrize("what, broken, reason", BROKEN_BIB, ids=[b[0] for b in BROKEN_BIB])
def test_bibtex_broken_braces_lose_only_their_entry(tmp_path: Path, what: str, broken: str,
                                                    reason: str | None) -> None:
    good = "@article{good,\n  title = {Good},\n  abstract = {" + ABSTRACT + "},\n}\n"
    f = tmp_path / "broken.bib"
    f.write_text(good + "\n" + broken + good.replace("good", "good2"))
    out = check_load(f)
    assert isinstance(out, tuple), out
    papers, problems = out
    at = 6  # the broken entry's first line: 4 lines of `good` and a blank line before it
    after = at + broken.count("\n")  # good2's first line
    got = [(x.line, x.reason) for x in problems]  # type: ignore[attr-defined]
    if reason is None:
        assert not got and [p.origin_line for p in papers] == [1, at, after], (what, got)
    else:
        assert [line for line, _ in got] == [at] and reason in got[0][1], (what, got)
        assert [(p.id, p.origin_line) for p in papers] == [("bib:good", 1), ("bib:good2", after)], what


def test_binary_files_in_every_format(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 64
    for fmt, suffix in ALL_SUFFIXES.items():
        f = tmp_path / f"blob-{fmt}{suffix}"
        f.write_bytes(blob)
        for forced in (None, fmt):
            e = check_load(f, fmt=forced)
            assert isinstance(e, InputError) and "binary" in str(e), (fmt, forced, e)
    f = tmp_path / "noisy.jsonl"  # no NUL in the head, invalid UTF-8 later: a problem at its line
    f.write_bytes(one_record("jsonl", ABSTRACT).encode() * 700 + b'{"abstract": "\xff\xfe' + ABSTRACT.encode()
                  + b'"}\n')
    papers, problems = check_load(f)  # type: ignore[misc]
    assert len(papers) == 700 and [(p.line, "UTF-8" in p.reason) for p in problems] == [(701, True)]


def test_line_numbers_count_only_newlines(tmp_path: Path) -> None:
    """\\x0b, \\x1c, \\x85 and U+2028 inside a line do not shift the line numbers problems and papers report."""
    f = tmp_path / "page.txt"
    f.write_text(f"论文检索\n\nTheory\n\nAnn Lee\n\n{ABSTRACT}\x0b\x1c\x85\u2028 more words.\n\nOnly a line\n\n"
                 f"Optimization\n\nBo Wu\n\n{ABSTRACT} Second.\n")
    assert detect_format(f) == "listing"
    papers, problems = check_load(f)  # type: ignore[misc]
    assert [p.origin_line for p in papers] == [3, 11] and [x.line for x in problems] == [9]
