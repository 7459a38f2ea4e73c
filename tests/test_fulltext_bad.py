"""Bad PDFs with full text on (issue 31 item 5): each gives one clear line in the ingest summary and the report,
the readable papers (and a too-long PDF's title and abstract) are stored, nothing else is lost."""

from __future__ import annotations

from pathlib import Path

from rag.index import rows
from rag.ingest import loaders
from rag.ingest.report import collecting, summary_lines, write
from tests.gfs_fixture import write_gfs
from tests.pdf_fixture import encrypt, write_pdf


def test_each_bad_pdf_is_one_line_and_the_rest_is_stored(make_runtime, tmp_path: Path) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    write_gfs(folder / "a-gfs.pdf")
    write_pdf(folder / "b-long.pdf", [
        [("Tide Tables of the North Sea", 20), ("Ada Lovelace", 11), ("Abstract", 12),
         ("We measured the tides of the North Sea for a year and compare them with the tables in use.", 10)],
        [("1 Introduction", 12), ("Tides are old.", 10)], [("2 Measurements", 12), ("A body on page three.", 10)],
        [("3 Tables", 12), ("A fourth page: one more than the limit.", 10)]])
    write_pdf(folder / "c-scan.pdf", [[], []])
    encrypt(write_pdf(folder / "d-locked.pdf", [[("A locked paper", 12)]]), "secret")
    (folder / "e-broken.pdf").write_bytes(write_gfs(tmp_path / "whole.pdf").read_bytes()[:700])
    rt = make_runtime(ingest={"full_text": True, "max_pdf_pages": 3})
    with collecting() as noted:
        report = rt.ingestor(progress=False).ingest([folder])
    reasons = {Path(p.file).name: p.reason for p in report.skipped_records}
    assert reasons.keys() == {"c-scan.pdf", "d-locked.pdf", "e-broken.pdf"}, reasons
    assert reasons["c-scan.pdf"].startswith("no text layer: OCR is not available")
    assert reasons["d-locked.pdf"].startswith("encrypted: it needs a password")
    assert reasons["e-broken.pdf"].startswith("the file is damaged or not a PDF")
    # the too-long one: stored from its first pages, its full text not, and said so once
    long_notes = [n for n in noted if Path(n.file).name == "b-long.pdf" and "too many pages" in n.reason]
    assert len(long_notes) == 1 and "without its full text" in long_notes[0].reason
    path = write(report.skipped_records, tmp_path / "report.txt", noted)
    lines = summary_lines(report.skipped_records, path, noted)
    for name, why in (("c-scan.pdf", "no text layer"), ("d-locked.pdf", "encrypted"), ("e-broken.pdf", "damaged"),
                      ("b-long.pdf", "too many pages")):
        said = [line for line in lines if why in line]
        assert len(said) == 1 and name in said[0], (name, lines)
        assert f"{name}:1: {reasons.get(name, long_notes[0].reason)}" in path.read_text()
    # nothing lost: both readable papers stored; only the one within the limit has passages
    assert report.added == 2 and report.full_text == 1, report
    res = rt.store.chroma_collection.get(include=["metadatas"])
    with_passages = {md[rows.PAPER_ID] for md in res["metadatas"] if rows.is_passage(md)}
    stored = {p.origin.split(":")[0].rsplit("/", 1)[-1]: p.id for p in rt.store.papers()}
    assert set(stored) == {"a-gfs.pdf", "b-long.pdf"} and with_passages == {stored["a-gfs.pdf"]}


def test_a_too_long_pdf_without_an_abstract_on_its_first_pages_is_refused_for_its_length(tmp_path: Path) -> None:
    long = write_pdf(tmp_path / "long.pdf", [[("A long one", 12)]] * 3)
    result = loaders.load(tmp_path, max_pdf_pages=2)
    assert not result.papers and [p.reason.split(":")[0] for p in result.problems] == ["too many pages"]
    assert long.exists()
