"""Loaders on realistic files: the sample listings, the shared datasets and one fixture per format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag.errors import InputError
from rag.ingest.loaders import FORMATS, LoadResult, RecordProblem, detect_format, iter_records, load
from rag.records import Paper
from tests.support.data import CRANFIELD, CRANFIELD_CORPUS, NIPS

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "loaders"
SAMPLES = sorted((ROOT / "data" / "sample").glob("*.txt"))
needs_datasets = pytest.mark.requires_data(NIPS, CRANFIELD_CORPUS)


def by_line(result: LoadResult) -> dict[int, Paper]:
    return {p.origin_line: p for p in result.papers}


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("name, fmt", [
    ("listing.txt", "listing"), ("arxiv_snapshot.jsonl", "arxiv-jsonl"), ("arxiv_feed.xml", "arxiv-atom"),
    ("zotero.bib", "bibtex"), ("papers.csv", "csv"), ("mapped.csv", "csv"), ("papers.json", "json"),
    ("papers.jsonl", "jsonl"), ("beir/scifact-mini", "beir"), ("beir/scifact-mini/corpus.jsonl", "beir"),
])
def test_detect_format_of_fixtures(name: str, fmt: str) -> None:
    assert detect_format(FIX / name) == fmt
    assert fmt in FORMATS


def test_detect_format_by_content_not_only_extension(tmp_path: Path) -> None:
    snap = tmp_path / "arxiv-metadata-oai-snapshot.json"  # Kaggle names the JSON Lines snapshot .json
    snap.write_bytes((FIX / "arxiv_snapshot.jsonl").read_bytes())
    assert detect_format(snap) == "arxiv-jsonl"
    listing = tmp_path / "page"
    listing.write_bytes(SAMPLES[0].read_bytes())
    assert detect_format(listing) == "listing"
    bib = tmp_path / "refs.txt"
    bib.write_text("@article{k1,\n  title = {T},\n  abstract = {An abstract long enough to be kept here.}\n}\n")
    assert detect_format(bib) == "bibtex"
    feed = tmp_path / "query"
    feed.write_bytes((FIX / "arxiv_feed.xml").read_bytes())
    assert detect_format(feed) == "arxiv-atom"
    rows = tmp_path / "docs.jsonl"
    rows.write_text('{"_id": "d1", "title": "T", "text": "A body of text that is long enough."}\n')
    assert detect_format(rows) == "beir"


# ---------------------------------------------------------------- listing

@pytest.fixture(scope="module")
def samples() -> list[LoadResult]:
    return [load(p) for p in SAMPLES]


def test_sample_listings_load_20_papers_each(samples: list[LoadResult]) -> None:
    assert len(SAMPLES) == 2
    assert [len(r.papers) for r in samples] == [20, 20]
    assert all(r.format == "listing" and r.problems == [] for r in samples)
    papers = [p for r in samples for p in r.papers]
    assert sum(1 for p in papers if p.categories) == 39
    uncategorised = [p for p in papers if not p.categories]
    assert len(uncategorised) == 1
    assert uncategorised[0].authors == ["Bohdan Turbal", "Blossom Metevier", "Max Springer", "Aleksandra Korolova"]
    assert len({p.id for p in papers}) == 40 and all(p.id.startswith("h:") for p in papers)
    assert all(p.title is None and p.authors for p in papers)


def test_sample_listing_fields(samples: list[LoadResult]) -> None:
    first = samples[0].papers[0]
    assert first.origin_line == 3 and first.origin_file == str(SAMPLES[0])
    assert first.categories == ["Deep Learning", "Large Language Models"]
    assert first.authors[0] == "Liangze Jiang" and len(first.authors) == 5
    assert first.abstract.startswith("Pretraining directly on web-scale corpora")
    cats = [p.categories for r in samples for p in r.papers]
    assert ["Social Aspects", "Accountability, Transparency, and Interpretability"] in cats
    assert ["General Machine Learning"] in cats and ["Applications"] in cats and ["Reinforcement Learning"] in cats
    assert "Leif Döring" in samples[0].papers[1].authors
    assert [p.origin_line for p in samples[1].papers][:3] == [3, 9, 15]


def test_sample_listing_latex_is_readable(samples: list[LoadResult]) -> None:
    for p in (p for r in samples for p in r.papers):
        for residue in ("\\\\%", "\\%", "\\textsc", "\\emph", "\\textbf", "\\cite"):
            assert residue not in p.abstract, (p.origin, residue)
    text = " ".join(p.abstract for r in samples for p in r.papers)
    assert "*Energy Loss Phenomenon*" in text  # Markdown emphasis survives


def test_listing_fixture_blocks_and_problems() -> None:
    r = load(FIX / "listing.txt")
    assert r.format == "listing"
    assert [p.origin_line for p in r.papers] == [3, 9, 15, 23]
    assert [(x.line, "no abstract" in x.reason) for x in r.problems] == [(19, True)]
    p = by_line(r)
    assert p[3].categories == ["Deep Learning", "Large Language Models"]
    assert p[3].authors == ["Ada Lovelace", "Grace Hopper", "Alan Turing"]
    assert "95%" in p[3].abstract and "*linear*" in p[3].abstract and "Probe" in p[3].abstract
    assert "\\" not in p[3].abstract
    assert p[9].categories == ["Theory"] and p[9].authors == ["Bo An"]  # a single author, a one-word category
    assert p[15].categories == [] and p[15].authors == ["Kurt Gödel", "Emmy Noether"]
    assert p[23].categories == ["Social Aspects", "Fairness, Accountability, and Transparency"]


def test_listing_strict_names_file_and_line() -> None:
    with pytest.raises(InputError, match=r"listing\.txt:19: no abstract"):
        load(FIX / "listing.txt", strict=True)


# ---------------------------------------------------------------- arXiv

def test_arxiv_snapshot() -> None:
    r = load(FIX / "arxiv_snapshot.jsonl")
    assert r.format == "arxiv-jsonl" and len(r.papers) == 3
    assert [x.line for x in r.problems] == [3, 5]
    assert "invalid JSON" in r.problems[0].reason and "too short" in r.problems[1].reason
    p = by_line(r)
    assert p[1].id == "arxiv:0704.0001" and p[1].arxiv_id == "0704.0001"
    assert p[1].authors == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]  # from authors_parsed
    assert p[1].title == "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    assert p[1].year == 2007  # versions[0].created, not update_date (2008)
    assert p[1].venue == "Phys.Rev.D76:013009,2007" and p[1].doi == "10.1103/physrevd.76.013009"
    assert p[1].categories == ["hep-ph"] and p[1].url == "https://arxiv.org/abs/0704.0001"
    assert p[2].authors == ["Hans Müller", "François Dupont", "Jürgen Schmidhuber"]  # LaTeX authors string
    assert p[2].title == "Sparse Attention for Long Sequence Modelling" and p[2].categories == ["cs.LG", "stat.ML"]
    assert p[2].year == 2019 and "60%" in p[2].abstract and "*exact*" in p[2].abstract
    assert p[4].id == "arxiv:math/0406594" and p[4].year == 2004  # no versions: update_date


def test_arxiv_snapshot_strict() -> None:
    with pytest.raises(InputError, match=r"arxiv_snapshot\.jsonl:3: invalid JSON"):
        load(FIX / "arxiv_snapshot.jsonl", strict=True)


def test_arxiv_atom_feed() -> None:
    r = load(FIX / "arxiv_feed.xml")
    assert r.format == "arxiv-atom" and len(r.papers) == 2
    assert [(x.line, "too short" in x.reason) for x in r.problems] == [(56, True)]
    p = by_line(r)
    assert p[10].id == "arxiv:2401.01234" and p[10].arxiv_id == "2401.01234"
    assert p[10].title == "Electron Transport in Twisted Bilayer Graphene: A Machine-Learning Approach"
    assert p[10].authors == ["José Martínez", "Anna Kowalska"] and p[10].year == 2024
    assert p[10].categories == ["cond-mat.mes-hall", "cs.LG"]
    assert p[10].doi == "10.1103/physrevb.109.045101" and p[10].venue == "Phys. Rev. B 109, 045101 (2024)"
    assert "5%" in p[10].abstract and "*orders of magnitude*" in p[10].abstract
    assert p[37].id == "arxiv:hep-ex/0307015" and p[37].year == 2003 and p[37].authors == ["H1 Collaboration"]


# ---------------------------------------------------------------- BibTeX

def test_bibtex_zotero_export() -> None:
    r = load(FIX / "zotero.bib")
    assert r.format == "bibtex" and len(r.papers) == 2
    assert [x.line for x in r.problems] == [21, 39]
    assert "broken_entry_2020" in r.problems[0].reason
    assert "no abstract" in r.problems[1].reason and "rasmussen2006" in r.problems[1].reason
    p = by_line(r)
    assert p[4].id == "arxiv:1706.03762" and p[4].title == "Attention Is All You Need"
    assert p[4].authors == ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"]
    assert p[4].year == 2017 and p[4].categories[0] == "Computer Science - Computation and Language"
    assert "Transformer" in p[4].abstract and "{" not in p[4].abstract
    m = p[28]  # the entry after the broken one still loads
    assert m.id == "doi:10.5555/3327757.3327899" and m.doi == "10.5555/3327757.3327899"
    assert m.title == "Kernel Methods for Straße-Level Traffic Forecasting with Gaussian Processes"
    assert m.authors == ["Jörg Müller", "María González", "Søren Østergaard"]  # "others" dropped
    assert m.venue == "International Conference on Machine Learning"  # @string macro resolved
    assert m.categories == ["gaussian processes", "traffic"] and m.year == 2019
    assert "12%" in m.abstract and "\\textsc" not in m.abstract and "ARIMA" in m.abstract


def test_bibtex_citation_key_and_scholar_arxiv(tmp_path: Path) -> None:
    f = tmp_path / "scholar.bib"
    f.write_text("@article{li2021prefix,\n  title={Prefix-tuning},\n  author={Li, Xiang Lisa and Liang, Percy},\n"
                 "  journal={arXiv preprint arXiv:2101.00190},\n  year={2021},\n"
                 "  abstract={Fine-tuning is the de facto way to leverage large pretrained models.}\n}\n\n"
                 "@misc{note1,\n  title={{{BERT}} notes},\n  author={G{\\'e}ron, Aur{\\'e}lien},\n"
                 "  date={2020-05-01},\n"
                 "  abstract={Notes about BERT that are long enough to be kept as a paper.}\n}\n", encoding="utf-8")
    r = load(f)
    assert [p.id for p in r.papers] == ["arxiv:2101.00190", "bib:note1"]
    assert r.papers[1].authors == ["Aurélien Géron"] and r.papers[1].title == "BERT notes"
    assert r.papers[1].year == 2020 and r.papers[1].origin_line == 9


def test_bibtex_strict_and_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"zotero\.bib:21: could not parse entry 'broken_entry_2020'"):
        load(FIX / "zotero.bib", strict=True)
    f = tmp_path / "comments.bib"
    f.write_text("% nothing but a comment\n")
    with pytest.raises(InputError, match="no BibTeX entries"):
        load(f)


_BIB_ABS = "We propose okapi kernels, periodic covariance functions that forecast tidal heights well."
_BIB_ENTRY = "@article{%s,\n  title = {A title},\n  author = {Lee, Ann and Wu, Bo},\n  abstract = {%s},\n}\n"
# Shapes of real exports: Zotero starts with a blank line, JabRef with an encoding comment and ends with its
# meta comment, a hand-kept file has a preamble and macros, Windows tools write CRLF; each has one broken entry.
BIB_EXPORTS = {
    "zotero": "\n" + _BIB_ENTRY % ("z1", _BIB_ABS) + "\n" + "@article{broken,\n  title = {Unclosed,\n\n"
              + _BIB_ENTRY % ("z2", _BIB_ABS + "\n\n  Second paragraph."),
    "jabref": "% Encoding: UTF-8\n\n" + _BIB_ENTRY % ("j1", _BIB_ABS)
              + "\n@Comment{jabref-meta: databaseType:bibtex;}\n"
              + "@article{broken, abstract = }}}\n\n" + _BIB_ENTRY % ("j2", _BIB_ABS)
              + "\n@Comment{jabref-meta: grouping:\n0 AllEntriesGroup:;\n}\n",
    "preamble": "% my references\n% kept by hand\n@preamble{\"\\newcommand{\\noop}[1]{}\"}\n"
                + "@string{nips = {NeurIPS}}\n\n" + _BIB_ENTRY % ("p1", _BIB_ABS)
                + "@article{broken,\n abstract={" + _BIB_ABS + "\n\n"
                + _BIB_ENTRY % ("p2", _BIB_ABS),
}
BIB_EXPORTS["zotero-crlf"] = BIB_EXPORTS["zotero"].replace("\n", "\r\n")
BIB_EXPORTS["preamble-crlf"] = "\ufeff" + BIB_EXPORTS["preamble"].replace("\n", "\r\n")


@pytest.mark.parametrize("name", list(BIB_EXPORTS))
def test_bibtex_lines_are_the_files_lines(tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture) -> None:
    """Every paper and problem names the line its ``@`` is on (1-based, CRLF one line end), which is
    bibtexparser's 0-based ``start_line`` + 1; bibtexparser's own 0-based abort warning is not shown."""
    import bibtexparser

    text = BIB_EXPORTS[name]
    f = tmp_path / f"{name}.bib"
    f.write_bytes(text.encode("utf-8"))
    body = text.removeprefix("\ufeff")
    at = {m.group(1): body.count("\n", 0, m.start()) + 1
          for m in re.finditer(r"^@article\{(\w+)", body, re.M)}
    parsed = {b.key: b.start_line + 1 for b in bibtexparser.parse_string(body).entries}
    caplog.clear()
    r = load(f)
    got = {p.id.removeprefix("bib:"): p.origin_line for p in r.papers}
    assert len(r.papers) == 2 and len(r.problems) == 1 and "'broken'" in r.problems[0].reason, r.problems
    got["broken"] = r.problems[0].line
    assert got == at, (got, at)
    assert all(parsed[k] == at[k] for k in parsed), (parsed, at)  # the entries bibtexparser could parse
    assert not [rec for rec in caplog.records if rec.name.startswith("bibtexparser")], caplog.text


# ---------------------------------------------------------------- CSV / JSON / JSONL

def test_csv_quoted_multiline_rows() -> None:
    r = load(FIX / "papers.csv")
    assert r.format == "csv" and [p.origin_line for p in r.papers] == [2, 5, 7]
    assert [(x.line, x.reason) for x in r.problems] == [(6, "no abstract")]
    p = by_line(r)
    assert p[2].title == 'Learning to Rank with "Soft" Labels' and p[2].authors == ["J. Smith", "A. B. Doe"]
    assert p[2].abstract == ('We study learning to rank when relevance labels are soft. The abstract spans three '
                             'lines, and has "quotes", commas, and a 5% gain.')
    assert p[2].id == "doi:10.1000/xyz123" and p[2].year == 2018
    assert p[2].categories == ["ranking", "information retrieval"]
    assert p[5].id == "id:102" and p[5].authors == ["Alice Zhang", "Bob Li"] and p[5].categories == ["chemistry", "gnn"]
    assert p[7].id == "id:104" and p[7].year is None  # "not a year"


def test_csv_mapping() -> None:
    with pytest.raises(InputError, match="no abstract column.*'Paper Summary'"):
        load(FIX / "mapped.csv")
    mapping = {"abstract": "Paper Summary", "title": "Headline", "authors": "Written By", "year": "pub year"}
    r = load(FIX / "mapped.csv", mapping=mapping)
    assert [(p.title, p.authors, p.year) for p in r.papers] == [
        ("Sparse Coding Revisited", ["Eve Adams"], 2016), ("Tiny Transformers", ["Frank Moore"], 2022)]
    assert "1%" in r.papers[1].abstract


def test_mapping_errors_name_the_column() -> None:
    with pytest.raises(InputError) as e:
        iter_records(FIX / "mapped.csv", mapping={"abstract": "Summary Text"})  # raised before iterating
    msg = str(e.value)
    assert "'Summary Text'" in msg and "'Headline'" in msg and "'Paper Summary'" in msg and "\n" not in msg
    with pytest.raises(InputError, match="unknown field 'abstrakt'"):
        load(FIX / "mapped.csv", mapping={"abstrakt": "Paper Summary"})
    with pytest.raises(InputError, match="no such column"):
        load(FIX / "papers.jsonl", mapping={"title": "headline"})
    with pytest.raises(InputError, match="applies to csv, json and jsonl"):
        load(FIX / "zotero.bib", mapping={"abstract": "abstract"})


def test_json_records() -> None:
    r = load(FIX / "papers.json")
    assert r.format == "json" and [p.origin_line for p in r.papers] == [1, 3]
    assert [(x.line, "not an object" in x.reason) for x in r.problems] == [(2, True)]
    a, b = r.papers
    assert a.authors == ["Kaiming He", "Xiangyu Zhang", "Shaoqing Ren", "Jian Sun"]
    assert a.id == "doi:10.1109/cvpr.2016.90" and a.year == 2015
    assert a.categories == ["computer vision", "deep learning"]
    assert a.url == "https://arxiv.org/abs/1512.03385"
    assert b.id == "id:p3" and b.venue == "NeurIPS" and b.year == 2017 and b.categories == ["transformers", "attention"]


def test_json_shapes(tmp_path: Path) -> None:
    abstract = "An abstract that is certainly long enough to keep."
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"a1": {"abstract": abstract}, "b2": {"abstract": abstract + " Two."}}))
    assert [p.id for p in load(keyed).papers] == ["id:a1", "id:b2"]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"data": [{"Abstract": abstract, "Title": "T"}]}))
    assert load(wrapped).papers[0].title == "T"
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"abstract": abstract}))
    assert len(load(single).papers) == 1


def test_jsonl_records() -> None:
    r = load(FIX / "papers.jsonl")
    assert r.format == "jsonl" and [p.origin_line for p in r.papers] == [1, 2, 4]
    assert [(x.line, x.reason) for x in r.problems] == [(3, "no abstract")]
    a, b, c = r.papers
    assert a.id == "arxiv:2101.00190" and a.authors == ["Xiang Lisa Li", "Percy Liang"] and a.categories == ["cs.CL"]
    assert b.id == "doi:10.1145/3442188.3445922" and b.year == 2021 and len(b.authors) == 4
    assert b.categories == ["ethics", "language models"]
    assert c.id == "id:42" and c.authors == ["Ada Lovelace", "Charles Babbage"] and c.year == 1843


def test_jsonl_fields_the_first_record_lacks_are_read_from_later_records(tmp_path: Path) -> None:
    """Records of a JSON Lines file need not share keys: a title or authors first seen on line 2 are used."""
    rows = [{"abstract": "We study the first question at length and find that it holds.", "year": 2020},
            {"title": "Second Paper", "authors": "Ann Lee; Bo Ruiz", "doi": "10.1000/two",
             "abstract": "We study the second question at length and find that it holds."},
            {"summary": "Not read as the abstract: the file's abstract column is 'abstract'.", "title": "Third",
             "abstract": "We study the third question at length and find that it holds."}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    a, b, c = load(path).papers
    assert (a.title, a.authors, a.year) == (None, [], 2020)
    assert (b.title, b.authors, b.doi) == ("Second Paper", ["Ann Lee", "Bo Ruiz"], "10.1000/two")
    assert c.title == "Third" and c.abstract.startswith("We study the third")  # a field keeps its column
    mapped = load(path, mapping={"abstract": "abstract", "title": "title"}).papers
    assert [p.title for p in mapped] == [None, "Second Paper", "Third"]
    # beyond the records checked before streaming starts: a title first seen on line 150 is still used
    late = tmp_path / "late.jsonl"
    late.write_text("".join(json.dumps({"abstract": f"We study question {i} at length and find that it holds.",
                                        **({"title": f"Paper {i}", "creators": ["Ann Lee"]} if i >= 150 else {})})
                            + "\n" for i in range(1, 161)))
    got = load(late).papers
    assert len(got) == 160 and {p.title for p in got[:149]} == {None}
    assert (got[149].title, got[149].authors, got[-1].title) == ("Paper 150", ["Ann Lee"], "Paper 160")


def test_fmt_override_reads_snapshot_as_plain_jsonl() -> None:
    r = load(FIX / "arxiv_snapshot.jsonl", fmt="jsonl", mapping={"venue": "journal-ref"})
    assert r.format == "jsonl" and len(r.papers) == 3 and r.papers[0].venue == "Phys.Rev.D76:013009,2007"


@needs_datasets
def test_nips_csvs_load_without_mapping() -> None:
    files = sorted(NIPS.glob("*.csv"))
    results = [load(f) for f in files]
    assert [len(r.papers) for r in results] == [360, 411, 403]
    assert sum(len(r.papers) for r in results) == 1174 and all(not r.problems for r in results)
    first = results[0].papers[0]
    assert first.title == "The Randomized Dependence Coefficient" and first.year == 2013 and first.origin_line == 2
    assert "Hirschfeld-Gebelein-Rényi" in first.abstract
    assert {p.year for r in results for p in r.papers} == {2013, 2014, 2015}


# ---------------------------------------------------------------- BEIR

def test_beir_fixture() -> None:
    r = load(FIX / "beir" / "scifact-mini")
    assert r.format == "beir" and [p.id for p in r.papers] == ["scifact-mini:4983", "scifact-mini:5836"]
    assert [(x.line, x.reason) for x in r.problems] == [(3, "no abstract")]
    p = r.papers[0]
    assert p.title == ("Microstructural development of human newborn cerebral white matter assessed in vivo by "
                       "diffusion tensor magnetic resonance imaging")
    assert p.authors == ["R. C. McKinstry", "A. Mathur"] and p.year == 2002
    assert p.origin_file.endswith("corpus.jsonl")
    with pytest.raises(InputError, match="BEIR queries file"):
        load(FIX / "beir" / "scifact-mini" / "queries.jsonl")


@needs_datasets
def test_cranfield_corpus() -> None:
    r = load(CRANFIELD)
    # 1,400 documents; two have an empty text and are reported, not loaded.
    assert len(r.papers) + len(r.problems) == 1400
    assert len(r.papers) == 1398 and [(x.line, x.reason) for x in r.problems] == [(471, "no abstract"),
                                                                                 (995, "no abstract")]
    first = r.papers[0]
    assert first.id == "cranfield:1" and first.authors == ["m. brenckman"] and first.year == 1958
    assert first.title == "experimental investigation of the aerodynamics of a wing in a slipstream"
    assert first.abstract.startswith("experimental investigation of the aerodynamics of a wing in a slipstream.")
    assert len({p.id for p in r.papers}) == 1398
    assert all(re.fullmatch(r"cranfield:\d+", p.id) for p in r.papers)


# ---------------------------------------------------------------- API shape

def test_iter_records_streams_items() -> None:
    it = iter_records(FIX / "arxiv_snapshot.jsonl")
    first = next(it)
    assert isinstance(first, Paper) and first.id == "arxiv:0704.0001"
    rest = list(it)
    assert sum(isinstance(x, RecordProblem) for x in rest) == 2
    assert str(rest[1]) == f"{FIX / 'arxiv_snapshot.jsonl'}:3: {rest[1].reason}"


def test_jsonl_is_streamed_not_read_whole(tmp_path: Path) -> None:
    import tracemalloc

    f = tmp_path / "big.jsonl"
    pad = "x" * 10_000
    with f.open("w") as out:
        for i in range(1_000):
            out.write(json.dumps({"id": f"r{i}", "abstract": "short", "pad": pad}) + "\n")
    assert f.stat().st_size > 10_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_records(f))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1_000 and peak < 2_000_000


def test_listing_wrapped_abstract_and_crlf(tmp_path: Path) -> None:
    f = tmp_path / "wrapped.txt"
    f.write_bytes("\ufeff论文检索\r\n\r\nTheory · Learning Theory\r\n\r\nAnn Lee, Bo Wu\r\n\r\n"
                  "We study generalisation of deep networks trained with stochastic gradient descent and\r\n"
                  "show a new bound.\r\n\r\nApplications\r\n\r\nCy Twombly\r\n\r\n"
                  "A second abstract that is long enough to count as running text in a listing.\r\n".encode())
    r = load(f)
    assert [(p.origin_line, p.categories, p.authors) for p in r.papers] == [
        (3, ["Theory", "Learning Theory"], ["Ann Lee", "Bo Wu"]), (10, ["Applications"], ["Cy Twombly"])]
    assert r.papers[0].abstract.endswith("gradient descent and show a new bound.") and not r.problems


def test_csv_with_bom_and_crlf(tmp_path: Path) -> None:
    f = tmp_path / "excel.csv"
    f.write_bytes(b"\xef\xbb\xbfabstract,title\r\n\"Line one of the abstract,\r\nline two of it.\",T1\r\n"
                  b"\"Another abstract that is long enough.\",T2\r\n")
    r = load(f)
    assert [(p.origin_line, p.title, p.abstract) for p in r.papers] == [
        (2, "T1", "Line one of the abstract, line two of it."), (4, "T2", "Another abstract that is long enough.")]


# ---------------------------------------------------------------- field helpers

@pytest.mark.parametrize("raw, style, names", [
    ("A. One, B. Two and C. Three", "plain", ["A. One", "B. Two", "C. Three"]),
    ("M\\\"uller, H. and Smith, J. R.", "plain", ["H. Müller", "J. R. Smith"]),
    ("eggers, a.j., syvertson, c.a., and krqus, s.", "plain", ["a.j. eggers", "c.a. syvertson", "s. krqus"]),
    ("Zhang, Wei; Li, Na", "plain", ["Wei Zhang", "Na Li"]),
    ("Smith, John", "plain", ["John Smith"]),
    ("Yuan Sui, Bryan Hooi", "plain", ["Yuan Sui", "Bryan Hooi"]),
    ("Ann Lee & Bo Wu", "plain", ["Ann Lee", "Bo Wu"]),
    ("{\\O}stergaard, S{\\o}ren and {Google Research} and others", "bibtex", ["Søren Østergaard", "Google Research"]),
    ("van der Berg, Jan and Berg, Jr., Tom", "bibtex", ["Jan van der Berg", "Tom Berg Jr."]),
    ("", "plain", []),
])
def test_split_authors(raw: str, style: str, names: list[str]) -> None:
    from rag.ingest.loaders.common import split_authors

    assert split_authors(raw, style=style) == names


@pytest.mark.parametrize("raw, year", [
    (2019, 2019), ("2019-08-19", 2019), ("Mon, 2 Apr 2007 19:18:42 GMT", 2007), ("1799", None), (2101, None),
    ("circa 1958.", 1958), (2020.0, 2020), (True, None), (None, None), ("no year", None), ("12345", None),
])
def test_parse_year(raw: object, year: int | None) -> None:
    from rag.ingest.loaders.common import parse_year

    assert parse_year(raw) == year


def test_json_list_file_is_json_not_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "list.json"
    f.write_text('[\n{"abstract": "A long enough abstract for the record."},\n{"abstract": "And another one here."}\n]')
    assert detect_format(f) == "json" and len(load(f).papers) == 2


# ---------------------------------------------------------------- exports recognised by their shape (issue 18)

def test_web_of_science_csv_without_map() -> None:
    r = load(FIX / "wos.csv")  # CRLF line ends and a BOM, as WoS writes them
    assert r.format == "csv"
    papers = by_line(r)
    assert papers[2].title == "Homogeneous Einstein metrics on compact Lie groups"
    assert papers[2].authors == ["Yang Gao", "Xin Li"]  # "Author Full Names" preferred over short "Authors"
    assert papers[2].year == 2021 and papers[2].venue == "JOURNAL OF GEOMETRY AND PHYSICS"
    assert papers[2].id == "doi:10.1016/j.geomphys.2021.104101"
    assert papers[2].categories == ["Einstein metrics"]  # MSC codes 53C30; 53C25 are not categories
    assert papers[3].authors == ["Maria Aparecida Silva"]  # one surname-first name is one author
    assert [(p.line, p.reason) for p in r.problems] == [(4, "no abstract")]


def test_scopus_csv_surname_first_names() -> None:
    r = load(FIX / "scopus.csv")
    papers = by_line(r)
    assert papers[2].title == "Ricci flow on homogeneous spaces"
    assert papers[2].authors == ["Yang Gao", "Xin Li"]  # Scopus author ids "(5719...)" dropped
    assert papers[2].year == 2022 and papers[2].venue == "Journal of Geometric Analysis"
    assert papers[2].categories == ["Ricci flow", "homogeneous spaces"]
    # empty full names: the short "Gao Y." form, surname moved last so a surname search finds it
    assert papers[3].authors == ["J.-P. Pereira", "A. van der Berg"]
    assert papers[3].venue == "Revista Brasileira de Computação" and papers[3].id == "doi:10.5555/rbc.2020.5"


def test_unmapped_title_and_author_columns_are_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Paper Name Title X,Writer List,Abstract\n"
                 "A title,Ann Lee,An abstract long enough to be stored as a paper by the loader here.\n")
    with caplog.at_level("WARNING"):
        r = load(f)
    assert r.papers[0].title is None
    warned = [m for m in caplog.messages if "--map" in m]
    assert len(warned) == 2
    assert "'Paper Name Title X'" in warned[0] and "--map title=" in warned[0]
    assert "'Writer List'" in warned[1] and "--map authors=" in warned[1]


def test_csl_json_library_by_shape() -> None:
    f = FIX / "zotero_csl.json"
    assert detect_format(f) == "csl-json" and "csl-json" in FORMATS
    r = load(f)
    papers = by_line(r)  # "line" is the item's position in the list
    assert papers[1].title == "Homogeneous geodesics in pseudo-Riemannian manifolds"
    assert papers[1].authors == ["Yang Gao", "Anna van der Berg"]  # family/given, surname last
    assert papers[1].year == 2021 and papers[1].venue == "Journal of Geometry and Physics"
    assert papers[1].id == "doi:10.1016/j.geomphys.2021.104200"
    assert papers[1].categories == ["homogeneous geodesics", "Lorentzian geometry"]
    assert papers[2].year == 2019 and papers[2].id == "csl:smith2019"  # date-parts given as a string
    assert papers[2].authors == ["The Deep Metric Consortium", "J. Smith"]
    assert [(p.line, p.reason) for p in r.problems] == [(3, "no abstract")]


def test_plain_json_list_is_not_taken_for_csl(tmp_path: Path) -> None:
    f = tmp_path / "plain.json"
    f.write_text(json.dumps([{"type": "paper", "title": "T", "abstract": "An abstract long enough to store.",
                              "author": "Ann Lee"}]))
    assert detect_format(f) == "json"


def test_ris_export_with_crlf_line_ends() -> None:
    f = FIX / "endnote.ris"
    assert b"\r\n" in f.read_bytes() and detect_format(f) == "ris"
    r = load(f)
    papers = by_line(r)  # a record's line is that of its TY tag
    assert papers[1].title == "Homogeneous Einstein metrics and the Ricci flow"
    assert papers[1].authors == ["Yang Gao", "Anna van der Berg"]
    assert papers[1].year == 2021 and papers[1].venue == "Journal of Geometric Analysis"
    assert papers[1].id == "doi:10.1007/s12220-021-00600-1"
    assert papers[1].categories == ["Ricci flow", "Einstein metrics"]
    assert papers[1].abstract.endswith("only fixed points up to scaling.")  # continuation line joined
    assert (papers[16].title, papers[16].authors, papers[16].year) == ("Metric learning with scarce labels",
                                                                      ["J. Smith"], 2019)
    assert papers[16].venue == "Proc. NeurIPS" and papers[16].id == "ris:smith2019"  # A1/Y1/JO/N2/ID tags
    assert [(p.file, p.line, p.reason) for p in r.problems] == [(str(f), 25, "no abstract")]


def test_ris_without_records_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "empty.ris"
    f.write_text("Provider: nobody\n\n")
    with pytest.raises(InputError, match="no RIS record"):
        load(f)


def test_pubmed_medline_nbib() -> None:
    f = FIX / "pubmed.nbib"
    assert detect_format(f) == "medline"
    r = load(f)
    papers = by_line(r)  # a record's line is that of its PMID tag
    first = papers[1]
    assert first.title == "Fear conditioning with an unconditioned stimulus (US) in adolescent mice."
    assert first.abstract.endswith("between 0.5 and 4.5 Hz.")  # six-space continuation lines joined
    assert first.authors == ["Yang Gao", "Anna Maria van der Berg"]  # FAU "Gao, Yang" preferred over AU
    assert (first.year, first.venue, first.id) == (2021, "Neurobiology of learning and memory",
                                                   "doi:10.1016/j.nlm.2021.107001")
    assert first.categories == ["fear conditioning", "adolescence"]
    last = papers[25]  # no DOI (only a [pii] AID), short AU names, TA for the venue
    assert (last.id, last.authors, last.year, last.venue) == ("pmid:33000003", ["M. A. Silva"], 2020, "J Sleep Res")
    assert last.url == "https://pubmed.ncbi.nlm.nih.gov/33000003/"
    assert [(p.line, p.reason) for p in r.problems] == [(19, "no abstract")]


def test_arxiv_oai_pmh_harvest_in_both_metadata_formats() -> None:
    f = FIX / "arxiv_oai.xml"
    assert detect_format(f) == "arxiv-oai" and detect_format(FIX / "arxiv_oai_raw.xml") == "arxiv-oai"
    r = load(f)
    (p,) = r.papers
    assert (p.id, p.title, p.year) == ("arxiv:2103.01234", "Homogeneous geodesics and Einstein metrics", 2021)
    assert p.authors == ["Yang Gao", "Pavol Brunovský"]  # forenames + keyname, surname last
    assert p.categories == ["math.DG", "math.GR"] and p.venue == "J. Geom. Phys. 165 (2021) 104200"
    assert p.doi == "10.1016/j.geomphys.2021.104300" and p.origin_line == 6
    assert [(x.line, x.reason) for x in r.problems] == [
        (23, "deleted in the harvest: oai:arXiv.org:math/0101001"), (26, "no abstract")]
    (raw,) = load(FIX / "arxiv_oai_raw.xml").papers  # arXivRaw: an authors string, dates in versions
    assert (raw.id, raw.year, raw.categories) == ("arxiv:1905.00001", 2019, ["gr-qc"])
    assert raw.authors == ["Maria Aparecida Silva", "João Pereira"]


def test_oai_harvest_in_another_metadata_format_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "dc.xml"
    f.write_text('<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords><record><metadata>'
                 '<dc xmlns="http://www.openarchives.org/OAI/2.0/oai_dc/"/></metadata></record></ListRecords>'
                 "</OAI-PMH>")
    with pytest.raises(InputError, match="metadataPrefix=arXiv or arXivRaw"):
        load(f)


def test_paperchat_ingest_of_every_export_format(paperchat_home: Path) -> None:
    import os
    import subprocess

    from conftest import paperchat_cmd

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(paperchat_cmd(*args), capture_output=True, text=True, cwd=ROOT, env=dict(os.environ),
                              timeout=600)

    files = ["wos.csv", "scopus.csv", "zotero_csl.json", "endnote.ris", "pubmed.nbib", "arxiv_oai.xml",
             "arxiv_oai_raw.xml"]
    out = run("ingest", "--json", *(str(FIX / f) for f in files))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["added"] == 12, report  # 2 + 2 + 2 + 2 + 2 + 1 + 1; records without abstracts skipped
    gao = json.loads(run("papers", "--author", "Gao", "--json").stdout)  # surname-first names found by surname
    assert len(gao) == 6, [p.get("title") for p in gao]
    y2021 = json.loads(run("papers", "--year", "2021", "--json").stdout)  # CSL/RIS/MEDLINE/OAI years usable
    assert {p["title"] for p in y2021} >= {"Homogeneous geodesics in pseudo-Riemannian manifolds",
                                           "Homogeneous Einstein metrics and the Ricci flow",
                                           "Homogeneous geodesics and Einstein metrics"}


def test_web_of_science_tab_delimited_savedrecs() -> None:
    f = FIX / "wos_savedrecs.txt"  # WoS "Tab-delimited file": two-letter tags, BOM, CRLF, a trailing tab
    assert detect_format(f) == "csv"
    papers = by_line(load(f))
    assert (papers[2].title, papers[2].authors, papers[2].year) == (
        "Left-invariant Einstein metrics on SO(n)", ["Yang Gao", "Xin Li"], 2020)
    assert papers[2].venue == "JOURNAL OF LIE THEORY" and papers[2].categories == ["Einstein metrics"]
    assert papers[2].id == "doi:10.5555/jlt.2020.30"
    assert papers[3].authors == ["Maria Aparecida Silva"] and papers[3].id == "id:WOS:000400000000002"


def test_two_letter_columns_alone_are_not_taken_for_wos_tags(tmp_path: Path) -> None:
    f = tmp_path / "plain.csv"
    f.write_text("ti,abstract\nnot a title,An abstract long enough to be stored as a paper by the loader.\n")
    assert load(f).papers[0].title is None


def test_openalex_and_semantic_scholar_json() -> None:
    r = load(FIX / "openalex.json")  # {"results": [...]}, abstract as an inverted index
    (p,) = r.papers
    assert p.abstract == "We compare the ages of the twins along timelike geodesics."
    assert (p.title, p.year) == ("Ages of twins in stationary spacetimes", 2021)
    assert p.authors == ["Yang Gao", "João Pereira"]
    assert p.venue == "Physical review. D" and p.id == "doi:10.1103/physrevd.103.064001"
    assert [(x.line, x.reason) for x in r.problems] == [(2, "no abstract")]  # null inverted index
    (s2,) = load(FIX / "semantic_scholar.json").papers  # {"data": [...]}, DOI under externalIds
    assert s2.id == "doi:10.48550/arxiv.2104.00001" and s2.authors == ["Yang Gao", "Anna van der Berg"]
    assert (s2.year, s2.venue) == (2021, "NeurIPS")
