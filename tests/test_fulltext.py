"""Full text out of PDFs (rag.ingest.fulltext) and PDFs read as papers (rag.ingest.loaders.pdf): the real PDFs of
../shared/pdfs (two-column, one-column, equations, LZW, scanned, encrypted, broken xref; MANIFEST.tsv says which)
and small PDFs the tests write (tests/pdf_fixture.py)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, STUB_KEY, paperchat_cmd

from rag import tokens
from rag.errors import InputError
from rag.ingest import loaders
from rag.ingest.fulltext import Document, PdfText, RawText, Refused, ZoteroText, clean, describe, passages
from rag.ingest.fulltext.clean import dehyphenate, unfold
from rag.ingest.loaders.zotero import read_library
from rag.ingest.report import collecting
from tests.fakes.openai_server import FakeOpenAIServer
from tests.pdf_fixture import encrypt, write_pdf
from tests.support.data import PDFS
from tests.zotero_fixture import VERSIONS, build

pytestmark = pytest.mark.requires_data(PDFS / "MANIFEST.tsv")
LIGATURES = "\ufb00\ufb01\ufb02\ufb03\ufb04"


def manifest() -> dict[str, dict[str, str]]:
    with open(PDFS / "MANIFEST.tsv", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}


def shared(prefix: str) -> Path:
    return next(PDFS.glob(prefix + "*.pdf"))


@pytest.fixture(scope="module")
def parsed() -> dict[str, tuple[RawText, Document]]:
    """Every shared PDF that has a text layer, read and cleaned once."""
    out = {}
    for name, row in manifest().items():
        if row["text_layer"] != "no":
            raw = PdfText(PDFS / name, 500).read()
            out[name] = (raw, clean(raw))
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- the shared PDFs

def test_every_page_is_kept_with_its_number(parsed: dict[str, tuple[RawText, Document]]) -> None:
    rows = manifest()
    for name, (raw, doc) in parsed.items():
        assert len(raw.pages) == int(rows[name]["pages"]), name
        numbers = [p.number for p in doc.pages]
        assert numbers == list(range(1, len(raw.pages) + 1)), name
    attention = parsed[shared("arxiv-1706.03762").name][1]
    assert [p.number for p in attention.pages if "3.2.1 Scaled Dot-Product Attention" in p.text.split("\n")] == [4]
    resnet = parsed[shared("arxiv-1512.03385").name][1]
    assert [p.number for p in resnet.pages if "2. Related Work" in p.text.split("\n")] == [2]


def test_hyphenation_across_line_ends_is_mended_and_real_hyphens_kept(
        parsed: dict[str, tuple[RawText, Document]]) -> None:
    for name, (raw, doc) in parsed.items():
        assert "\ufffe" in "".join(raw.pages) or name.startswith("bad-"), name  # PDFium marked line-end hyphens
        assert "\ufffe" not in doc.text and "\ufffe" not in doc.references, name
    resnet = flat(parsed[shared("arxiv-1512.03385").name][1].text)
    assert "reformulate the layers as learning residual functions" in resnet and "learn-ing" not in resnet
    fasttext = flat(parsed[shared("arxiv-1607.01759").name][1].text)
    assert "Our experiments show that our fast text classifier fastText" in fasttext
    assert "state-of-the-art performances" in fasttext  # hyphenated at "state-" and kept
    assert "Tracy-Widom" in flat(parsed[shared("journal-pre-2019").name][1].text)  # a name pair, kept
    assert dehyphenate("re-\ntrieval and state-of-\nthe-art, Tracy-\nWidom, low/mid/high-\nlevel n-\ngrams") == \
        "retrieval and state-of-the-art, Tracy-Widom, low/mid/high-level n-grams"


def test_ligatures_and_spacing_accents_are_unfolded(parsed: dict[str, tuple[RawText, Document]]) -> None:
    for name, (_, doc) in parsed.items():
        assert not any(c in doc.text for c in LIGATURES), name
    # fastText's PDF draws "fi" as one glyph of its own font (MANIFEST): it must read as two letters
    fasttext = parsed[shared("arxiv-1607.01759").name][1].text
    assert "classification" in fasttext and "efficient" in fasttext
    assert "naïve" in parsed[shared("acm-pldi").name][1].text  # TeX's "na¨ıve"
    assert "Universität Oldenburg" in flat(parsed[shared("journal-plosone").name][1].text)  # "Universita¨t"
    assert unfold("e\ufb03cient \ufb01nal \ufb02ow, it\u00b4s") == "efficient final flow, it\u00b4s"


def test_running_headers_footers_and_page_numbers_are_dropped(parsed: dict[str, tuple[RawText, Document]]) -> None:
    checks = {  # file prefix → a running header or footer line of that PDF (as PDFium reads it)
        "journal-plosone": "PLOS ONE | https://doi.org/10.1371/journal.pone.0215309",
        "journal-jmlr": "BENGIO,DUCHARME,VINCENT AND JAUVIN",
        "journal-scirep": "Scientific REPOrTS | 7: 8040 | DOI:10.1038/s41598-017-08531-8",
        "journal-pre-2019": "BÖRJES, SCHAWE, AND HARTMANN PHYSICAL REVIEW E 99, 042104 (2019)",
        "bad-encrypted": "COPPE/UFRJ/PESC Biolchini, Mian, Natali, Travassos",
    }
    for prefix, line in checks.items():
        raw, doc = parsed[shared(prefix).name]
        assert sum(line in p for p in raw.pages) >= 3, prefix  # it is there, on many pages
        assert not any(line in p.text for p in doc.pages), prefix
    for _, doc in parsed.values():  # no page is left starting or ending with its bare number
        for p in doc.pages:
            lines = p.text.split("\n")
            assert not (lines[0].strip() == str(p.number) or lines[-1].strip() == str(p.number)), (doc.where, p.number)
    resnet = parsed[shared("arxiv-1512.03385").name][1]
    assert "arXiv:1512.03385v1" not in resnet.text  # arXiv's side stamp


def test_two_columns_read_in_order(parsed: dict[str, tuple[RawText, Document]]) -> None:
    # sentences that run over several lines of one column read whole: the columns are not interleaved
    assert ("Deep networks naturally integrate low/mid/high-level features [50] and classifiers in an end-to-end "
            "multilayer fashion") in flat(parsed[shared("arxiv-1512.03385").name][1].text)
    assert ("If one of the guards fails (if control flow is different, or a value of a different type is "
            "generated), the trace exits.") in flat(parsed[shared("acm-pldi").name][1].text)


def test_references_are_kept_apart(parsed: dict[str, tuple[RawText, Document]]) -> None:
    for name, (_, doc) in parsed.items():
        assert doc.references, name  # every paper here has references
    resnet = parsed[shared("arxiv-1512.03385").name][1]
    cited = "Learning long-term dependencies with gradient descent is difficult"
    assert cited in flat(resnet.references) and cited not in flat(resnet.text)
    assert all(cited not in p.text for p in passages(resnet))
    pre = parsed[shared("journal-pre-2019").name][1]  # APS: a numbered list without a "References" heading
    assert flat(pre.references).startswith("[1] D. Romik") and "[1] D. Romik" not in pre.text


def test_passages_keep_sections_pages_and_the_token_bound(parsed: dict[str, tuple[RawText, Document]]) -> None:
    doc = parsed[shared("arxiv-1706.03762").name][1]
    out = passages(doc, max_tokens=150)
    assert [p.ordinal for p in out] == list(range(len(out)))
    assert all(tokens.count_tokens(p.text) <= 150 for p in out)
    assert all(1 <= p.page_start <= p.page_end <= len(doc.pages) for p in out)
    scaled = [p for p in out if p.section == "3.2.1 Scaled Dot-Product Attention"]
    assert scaled and scaled[0].page_start == 4 and "Scaled Dot-Product Attention" in scaled[0].text
    assert any(p.section == "3.5 Positional Encoding" for p in out) and out[0].section in ("", "Abstract")
    assert len(passages(doc, max_tokens=300)) < len(out)


def test_each_shared_pdf_is_described_as_its_manifest_says(parsed: dict[str, tuple[RawText, Document]]) -> None:
    rows = manifest()
    for name, (raw, doc) in parsed.items():
        desc = describe(raw, doc)
        want = flat(rows[name]["title"]).casefold()
        assert desc.title and want.startswith(flat(desc.title).casefold()), (name, desc.title)
        assert len(desc.abstract) > 200, name
        surnames = [a.split()[-1] for a in desc.authors]  # the MANIFEST lists family names (some from memory)
        listed_names = re.sub(r"\(.*", "", rows[name]["authors"]).split(",")
        assert len(surnames) == len(listed_names), (name, surnames, listed_names)
        assert all(s.casefold() in rows[name]["authors"].casefold() for s in surnames), (name, surnames)
        ids = rows[name]["arxiv_or_doi"].casefold()
        for found in (desc.arxiv_id, desc.doi):
            assert found is None or found.casefold() in ids, (name, found)
        if "arxiv" in name.split("-")[0]:  # the arXiv preprints carry the stamp
            assert desc.arxiv_id and desc.arxiv_id in ids
        if name.startswith("journal-") and "doi" in ids and "jmlr" not in name:
            assert desc.doi, name


# ---------------------------------------------------------------- bad input

def test_bad_pdfs_are_refused_with_their_reason(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="no text layer: OCR is not available") as e:
        PdfText(shared("bad-scanned"), 500).read()
    assert str(shared("bad-scanned")) in str(e.value)
    readable = PdfText(shared("bad-encrypted"), 500).read()  # RC4 with an empty user password: it opens
    assert "Systematic Review" in readable.pages[1]
    assert len(PdfText(shared("bad-broken-xref"), 500).read().pages) == 6  # the xref is rebuilt
    with pytest.raises(Refused, match="too many pages: 5, more than ingest.max_pdf_pages = 4"):
        PdfText(shared("arxiv-1607.01759"), 4).read()
    locked = encrypt(write_pdf(tmp_path / "locked.pdf", [[("A locked paper", 12)]]), "secret")
    with pytest.raises(Refused, match="encrypted: it needs a password"):
        PdfText(locked, 500).read()
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(shared("arxiv-1607.01759").read_bytes()[:3000])
    with pytest.raises(Refused, match="damaged or not a PDF"):
        PdfText(broken, 500).read()


def test_a_folder_of_pdfs_reports_each_bad_one_and_loads_the_rest() -> None:
    result = loaders.load(PDFS)
    assert result.format == "pdf"
    rows = manifest()
    assert len(result.papers) == sum(r["text_layer"] != "no" for r in rows.values())
    assert [(Path(p.file).name, p.reason.split(":")[0]) for p in result.problems] == \
        [(shared("bad-scanned").name, "no text layer")]
    assert all(p.id.startswith("pdf:") for p in result.papers)  # the file's own id: a stored record is never replaced
    assert {"1512.03385", "1706.03762"} <= {p.arxiv_id for p in result.papers}
    assert "10.1371/journal.pone.0215309" in {p.doi for p in result.papers}


def test_a_single_bad_pdf_is_one_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no text layer"):
        loaders.load(shared("bad-scanned"))
    # too long: the paper from its first pages (title, abstract), its full text not read
    with collecting() as noted:
        result = loaders.load(shared("arxiv-1607.01759"), max_pdf_pages=2, passage_tokens=200)
    assert [p.title for p in result.papers] == ["Bag of Tricks for Efficient Text Classification"]
    assert not result.papers[0].passages and result.papers[0].abstract
    assert any(n.reason.startswith("too many pages: 5") for n in noted)


# ---------------------------------------------------------------- Zotero's full text

def test_zotero_source_reads_the_pdf_else_the_ft_cache(tmp_path: Path) -> None:
    for version in VERSIONS:  # the attachment's parent is sourceItemID in 79, parentItemID after
        db = build(tmp_path / f"v{version}" / "zotero.sqlite", version)
        listed = [(i.key, a) for i in read_library(db) for a in i.attachments]
        assert [(key, a.key, a.path, a.content_type) for key, a in listed] == \
            [("TIDES001", "PDF00008", "storage:tides.pdf", "application/pdf")], version
    db = build(tmp_path / "Zotero" / "zotero.sqlite", 124)
    att = next(i for i in read_library(db) if i.attachments).attachments[0]
    folder = tmp_path / "Zotero" / "storage" / att.key
    folder.mkdir(parents=True)
    source = ZoteroText(tmp_path / "Zotero", att.key, att.path, 500)
    with pytest.raises(Refused, match="no full text"):
        source.read()
    write_pdf(folder / "tides.pdf", [[("Tides of the North Sea", 18), ("Page one of the PDF", 10)],
                                     [("Page two of the PDF", 10)]])
    assert [flat(p) for p in source.read().pages] == ["Tides of the North Sea Page one of the PDF",
                                                      "Page two of the PDF"]
    (folder / ".zotero-ft-cache").write_text("Tides, as Zotero read them\nthe ﬁrst page\fthe second page\f")
    assert flat(source.read().pages[1]) == "Page two of the PDF"  # the PDF first: it knows its pages and fonts
    (folder / "tides.pdf").write_bytes(b"%PDF-1.4 not really")  # unreadable: Zotero's cache instead
    raw = source.read()
    assert raw.pages == ["Tides, as Zotero read them\nthe ﬁrst page", "the second page"] and raw.paged
    assert [p.number for p in clean(raw).pages] == [1, 2] and "first page" in clean(raw).pages[0].text
    (folder / ".zotero-ft-cache").write_text("one block without page breaks")
    raw = source.read()
    assert raw.pages == ["one block without page breaks"] and not raw.paged  # its pages unknown
    (folder / ".zotero-ft-cache").write_text(" \n")
    with pytest.raises(Refused, match="damaged or not a PDF"):  # an empty cache: the PDF's own reason
        source.read()


# ---------------------------------------------------------------- `paperchat ingest x.pdf`

def test_paperchat_ingest_reads_pdfs_as_papers(paperchat_home: Path, tmp_path: Path, srv: FakeOpenAIServer) -> None:
    """`paperchat ingest` of a PDF and a folder of PDFs, in a subprocess; embedded by the OpenAI-compatible stub
    (tests/fakes): what is checked is the reading, and loading the local model costs ~15 s of CPU here."""
    paper = write_pdf(tmp_path / "sparse.pdf", [[
        ("Learned Sparse Retrieval for Tide Tables", 20), ("Ada Lovelace, Alan Turing", 11), ("Abstract", 12),
        ("We study sparse retrieval where term weights are learned from relevance labels of tide tables. Our re-", 10),
        ("trieval model matches dense retrievers on three benchmarks while using an inverted index.", 10),
        ("1 Introduction", 12), ("Tide tables are old.", 10), ("arXiv:2101.00001v2 [cs.IR] 3 Jan 2021", 8)]],
        info={"Title": "sparse.dvi"})
    folder = tmp_path / "more"
    folder.mkdir()
    write_pdf(folder / "doi.pdf", [[
        ("Harbour Sediment Transport Measured Twice", 20), ("Grace Hopper", 11),
        ("Abstract", 12),
        ("Sediment transport in harbours was measured twice a day for a year, and the two series", 10),
        ("disagree less than the models do. https://doi.org/10.1234/harbour.2020.7", 10)]])
    write_pdf(folder / "scan.pdf", [[], []])
    write_pdf(folder / "long.pdf", [[("A long one", 12)]] * 3)
    env = {**os.environ, "PAPERCHAT_INGEST__MAX_PDF_PAGES": "2", "PAPERCHAT_EMBEDDINGS__PROVIDER": "openai",
           "PAPERCHAT_EMBEDDINGS__MODEL": "stub-model", "PAPERCHAT_EMBEDDINGS__BASE_URL": f"{srv.url}/v1",
           "PAPERCHAT_EMBEDDINGS__API_KEY": STUB_KEY}
    stored = tmp_path / "stored.jsonl"  # the harbour paper is already stored from a richer source, with categories
    stored.write_text(json.dumps({"doi": "10.1234/harbour.2020.7", "title": "Harbour Sediment Transport",
                                  "authors": "Grace Hopper", "categories": "physics.geo-ph", "abstract":
                                  "Sediment transport in harbours was measured twice a day for a year."}) + "\n")
    first = subprocess.run(paperchat_cmd("ingest", "--json", "--format", "jsonl", str(stored)), capture_output=True,
                           text=True, cwd=ROOT, env=env, timeout=300)
    assert first.returncode == 0 and json.loads(first.stdout)["added"] == 1, first.stdout + first.stderr
    out = subprocess.run(paperchat_cmd("ingest", "--json", str(paper), str(folder)), capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["added"] == 1 and report["duplicates"] == 1 and report["skipped"] == 2, report
    listed = subprocess.run(paperchat_cmd("papers", "--json"), capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=300)
    papers = {p.get("arxiv_id") or p.get("doi"): p for p in json.loads(listed.stdout)}
    assert len(papers) == 2
    sparse = papers["2101.00001"]
    assert sparse["title"] == "Learned Sparse Retrieval for Tide Tables" and sparse["year"] == 2021
    assert sparse["authors"] == ["Ada Lovelace", "Alan Turing"]
    assert "Our retrieval model matches dense retrievers" in sparse["abstract"]
    harbour = papers["10.1234/harbour.2020.7"]  # kept as first stored: its categories are not lost to the PDF
    assert harbour["authors"] == ["Grace Hopper"] and harbour["categories"] == ["physics.geo-ph"], harbour
    problems = "\n".join(report.get("problems", [])) + out.stderr
    assert re.search(r"scan\.pdf:1: no text layer: OCR is not available", problems), problems
    assert re.search(r"long\.pdf:1: too many pages: 3", problems), problems
