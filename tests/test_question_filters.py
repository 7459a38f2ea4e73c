"""Filters parsed from the question: authors, categories and years, only when clearly named."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag.index.paper_query import PaperQuery
from rag.qa import question_filters
from rag.qa.question_filters import FilterCatalog, catalog_for, merge_filters, parse_question
from rag.records import StoredPaper

_ROWS = [
    {"paper_id": "p1", "authors": ["Anna Bair", "Zico Kolter"],
     "categories": ["Deep Learning", "Large Language Models"]},
    {"paper_id": "p2", "authors": ["Simon Weissmann", "Leif Döring"], "categories": ["Reinforcement Learning"]},
    {"paper_id": "p3", "authors": ["Calvin Luo", "shuran song"], "categories": ["Reinforcement Learning", "Deep RL"]},
    {"paper_id": "p4", "authors": ["Yuan Sui", "Bryan Hooi"], "categories": ["Reinforcement Learning", "Multi-agent"]},
    {"paper_id": "p5", "authors": ["Evan Frick", "Ion Stoica"],
     "categories": ["General Machine Learning", "Evaluation"]},
    {"paper_id": "p6", "authors": ["Zinan Zheng"], "categories": ["Applications", "Computer Vision"]},
    {"paper_id": "p7", "authors": ["Yash Shah"], "categories": ["Applications", "Health / Medicine"]},
    {"paper_id": "p8", "authors": ["Varun Babbar", "Cynthia Rudin"],
     "categories": ["Social Aspects", "Accountability, Transparency, and Interpretability"]},
    {"paper_id": "p9", "authors": ["Ce Zhang"], "categories": ["Social Aspects", "Privacy"]},
    {"paper_id": "p10", "authors": ["Chengcan Wu"], "categories": ["Social Aspects", "Safety"]},
]
ROWS = [StoredPaper(id=r["paper_id"], label=r["paper_id"], authors=tuple(r["authors"]),
                    categories=tuple(r["categories"])) for r in _ROWS]


@pytest.fixture(scope="module")
def cat() -> FilterCatalog:
    return FilterCatalog.build(ROWS)


@pytest.fixture(scope="module")
def dated() -> FilterCatalog:
    return FilterCatalog.build([replace(r, year=2020 + i % 6) for i, r in enumerate(ROWS)])


@pytest.mark.parametrize("question, author, cleaned", [
    ("papers by Zico Kolter", "Zico Kolter", "papers"),
    ("What did Zico Kolter's group find about attention heads?", "Zico Kolter", "What did find about attention heads?"),
    ("What did Kolter's group find?", "Kolter", "What did find?"),
    ("What did leif doring and co-authors prove about Q-learning?", "Leif Döring", "What did prove about Q-learning?"),
    ("Summarize the Stoica et al. paper", "Stoica", "Summarize the paper"),
    ("What does the paper by Hooi propose?", "Hooi", "What does the paper propose?"),
])
def test_authors_in_the_store_are_found(cat: FilterCatalog, question: str, author: str, cleaned: str) -> None:
    parsed = parse_question(question, cat)
    assert parsed.filters.author == author
    assert parsed.cleaned == cleaned


@pytest.mark.parametrize("question", [
    "Is there a song generation model?",  # a surname that is also a word, with no cue
    "papers by Geoffrey Hinton",  # not in the store
    "How does kolter attention work?",  # lower-case bare surname, no cue
])
def test_no_author_without_a_stored_name_and_a_cue(cat: FilterCatalog, question: str) -> None:
    assert parse_question(question, cat).filters.author is None


def test_several_authors_become_their_papers(cat: FilterCatalog) -> None:
    parsed = parse_question("papers by Hooi or Stoica", cat)
    assert parsed.filters.author is None and parsed.filters.paper_ids == ["p4", "p5"]


@pytest.mark.parametrize("question, category", [
    ("Which Reinforcement Learning papers use memory?", "Reinforcement Learning"),
    ("Which papers are in the Deep RL category?", "Deep RL"),
    ("What papers are filed under evaluation?", "Evaluation"),
    ("Show me the accountability, transparency and interpretability papers.",
     "Accountability, Transparency, and Interpretability"),
    ("List the papers in the Health / Medicine application area.", "Health / Medicine"),
    # nested categories: the most specific one satisfies both
    ("What papers are listed under computer vision applications?", "Computer Vision"),
    ("What multi-agent reinforcement learning work is there?", "Multi-agent"),
    ("large language model papers", "Large Language Models"),
])
def test_categories_named_as_categories(cat: FilterCatalog, question: str, category: str) -> None:
    assert parse_question(question, cat).filters.category == category


@pytest.mark.parametrize("question", [
    "Which federated learning papers are there?",  # not a stored category
    "What is reinforcement learning?",  # a bare topic, no "papers"/"category" cue
    "How do safety constraints work in deep learning?",
    "Does evaluation of LLMs need human preference?",
])
def test_bare_topics_are_not_category_filters(cat: FilterCatalog, question: str) -> None:
    assert parse_question(question, cat).filters.category is None


def test_unrelated_categories_are_not_guessed(cat: FilterCatalog) -> None:
    parsed = parse_question("What are the safety and privacy papers?", cat)
    assert parsed.filters.category is None and "several categories" in parsed.notes[0]


def test_category_phrase_and_cue_leave_the_question(cat: FilterCatalog) -> None:
    parsed = parse_question("Which papers in the Deep RL category use diffusion?", cat)
    assert parsed.filters.category == "Deep RL"
    assert "Deep RL" not in parsed.cleaned and "category" not in parsed.cleaned and "diffusion" in parsed.cleaned


@pytest.mark.parametrize("question, years", [
    ("Which papers from 2025 study RL?", (2025, 2025)),
    ("RL papers since 2020", (2020, None)),
    ("papers between 2019 and 2021 on attention", (2019, 2021)),
    ("What was published in 2024 about routing?", (2024, 2024)),
    ("work before 2020 on clustering", (None, 2019)),
    ("work after 2021 on clustering", (2022, None)),
    ("2021-2023 papers on privacy", (2021, 2023)),
])
def test_years(dated: FilterCatalog, question: str, years: tuple[int | None, int | None]) -> None:
    parsed = parse_question(question, dated)
    assert (parsed.filters.year_from, parsed.filters.year_to) == years
    assert not any(str(y) in parsed.cleaned for y in years if y)


def test_years_are_ignored_when_no_paper_has_one(cat: FilterCatalog) -> None:
    parsed = parse_question("Reinforcement Learning papers from 2025", cat)
    assert parsed.filters.year_from is None and parsed.filters.category == "Reinforcement Learning"
    assert "2025" in parsed.notes[0]


def test_nothing_named_leaves_the_question_alone(cat: FilterCatalog) -> None:
    q = "How does GCA generalize to longer contexts than it was trained on?"
    parsed = parse_question(q, cat)
    assert parsed.filters.is_empty() and parsed.cleaned == q and not parsed.notes


def test_explicit_filters_win_field_by_field() -> None:
    parsed = PaperQuery(author="Kolter", category="Deep RL", year_from=2020)
    merged = merge_filters(parsed, PaperQuery(category="Evaluation", paper_ids=["x"]))
    assert (merged.author, merged.category, merged.year_from, merged.paper_ids) == ("Kolter", "Evaluation", 2020, ["x"])
    assert merge_filters(parsed, None) is parsed


def test_catalog_is_cached_per_store_generation(make_runtime, tmp_path: Path) -> None:
    rt = make_runtime()
    first = Path(__file__).parent / "fixtures" / "loaders" / "listing.txt"
    rt.ingestor(progress=False).ingest([first])
    a = catalog_for(rt.lexical, rt.store)
    assert catalog_for(rt.lexical, rt.store) is a and a.author_papers
    assert a.n_authors == len({x for p in rt.store.papers() for x in p.authors})
    assert a.category_names == tuple(sorted({c for p in rt.store.papers() for c in p.categories},
                                            key=str.casefold))
    extra = tmp_path / "more.jsonl"
    extra.write_text('{"id": "x1", "title": "A paper", "abstract": "We study nothing in particular at all here.", '
                     '"authors": ["Zora Quillfeather"], "categories": ["Quantum Basketry"]}\n')
    rt.ingestor(progress=False).ingest([extra])
    b = catalog_for(rt.lexical, rt.store)
    assert b is not a and parse_question("papers by Zora Quillfeather", b).filters.author == "Zora Quillfeather"
    assert parse_question("Quantum Basketry papers", b).filters.category == "Quantum Basketry"
    # A fresh process (a second runtime on the same home) reads the catalog saved with the lexical index.
    rt.lexical._bm25 = None
    question_filters._CACHE.clear()
    c = catalog_for(rt.lexical, rt.store)
    assert c is not b and c.author_papers == b.author_papers and c.category_papers == b.category_papers
    assert c.author_papers["Zora Quillfeather"] == {"id:x1"}


@pytest.mark.parametrize("damage", ["torn", "missing"])
def test_an_unreadable_catalog_file_is_rebuilt_not_trusted(make_runtime, damage: str) -> None:
    rt = make_runtime()
    rt.ingestor(progress=False).ingest([Path(__file__).parent / "fixtures" / "loaders" / "listing.txt"])
    rt.lexical.sync(rt.store)
    want = catalog_for(rt.lexical, rt.store).author_papers
    question_filters._CACHE.clear()
    if damage == "torn":
        rt.lexical.catalog_path.write_bytes(b"{torn" * 100)
    else:
        rt.lexical.catalog_path.unlink()
    cat = catalog_for(rt.lexical, rt.store)  # the sync rebuilt the index and its catalog
    assert cat.author_papers == want and want
    assert rt.lexical.catalog_path.is_file()


def test_the_catalog_is_looked_up_not_loaded(cat: FilterCatalog) -> None:
    assert cat.names_from("zico") == ((("zico", "kolter"), "Zico Kolter"),)
    assert cat.surname("doring") == "Döring" and cat.surname("nobody") is None
    assert cat.papers_by("Kolter") == {"p1"} and cat.papers_by("Zico Kolter") == {"p1"}
    assert cat.papers_in("Reinforcement Learning") == {"p2", "p3", "p4"}
    assert cat.category_counts()["Reinforcement Learning"] == 3 and cat.category_counts()["Privacy"] == 1
    assert cat.n_authors == 16 and not cat.has_years


def test_a_superseded_catalog_is_freed() -> None:
    """Its word lookups are memoised per catalog: nothing process-wide keeps an old one (and its file) alive."""
    import gc
    import weakref

    old = FilterCatalog.build(ROWS)
    assert old.names_from("zico") and old.surname("kolter") == "Kolter"
    ref = weakref.ref(old)
    del old
    gc.collect()
    assert ref() is None
