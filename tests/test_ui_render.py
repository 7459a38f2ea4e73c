"""Pure UI code on hostile input: chat Markdown, paper cards, exports, BibTeX, and the helpers behind the app."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import bibtexparser
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from rag.answer import Answer, Citation, StatementCheck, render_text
from rag.errors import BudgetExceeded, InputError
from rag.records import StoredPaper
from tests.support.fuzz import fuzz_settings
from ui import render, services
from ui.export import bib_key, bibtex, conversation_markdown, conversation_scope, papers_markdown
from ui.library import answer_text
from ui.safe import MATH, inline, paper_links, safe_url

HOSTILE = (
    'Zebrafish lensing works. <script>window.__pwned=1</script> See [code](javascript:window.__pwned=1) and '
    '![pixel](http://evil.example/p.png) <img src=x onerror="window.__pwned=1"> <a href="javascript:x()" '
    'onclick="x()">click</a> </details><details open id="fake"><summary>x</summary> '
    '[ref]: javascript:alert(1) <http://evil.example/auto> www.evil.example mail@evil.example '
    '<svg onload=alert(1)> ```js\nalert(1)\n``` Costs $5 and $10, math $x^2 < y$ stays.'
)
CARD_TAGS = {"div", "p", "details", "summary", "span", "strong", "em", "mark", "a", "code"}
CARD_ATTRS = {"class", "id", "href", "title", "target", "rel", "open"}


class Audit(HTMLParser):
    """Every start tag and attribute of an HTML fragment."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    def hrefs(self) -> list[str]:
        return [v for t, k, v in self.attrs if k in ("href", "src")]


def chat_html(markdown: str) -> str:
    """Render chat Markdown the permissive way (raw HTML on, every link allowed) to see what could come out."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True
    return md.render(markdown)


def assert_inert(html: str, allowed_tags: set[str], anchors_only: bool = False) -> Audit:
    audit = Audit(html)
    assert set(audit.tags) <= allowed_tags, set(audit.tags) - allowed_tags
    assert not [a for a in audit.attrs if a[1].startswith("on")], audit.attrs
    for href in audit.hrefs():
        if anchors_only:
            assert re.fullmatch(r"#pc-card-\d+-\d+", href), href
        else:
            steer = re.fullmatch(r"#pc-(pin|exclude)-[\w.~%-]+", href)  # a card's steering link (ui.why_view)
            assert steer or href.startswith(("https://", "http://", "#pc-card-")), href
    return audit


def no_stray_dollars(text: str) -> None:
    """Every ``$`` belongs to a math span, and Gradio pairs them as we do: its Markdown renderer pulls out
    ``$$…$$`` then ``$…$`` (non-greedy, across the whole message) before parsing."""
    assert "$" not in MATH.sub("", text), text
    blocks: list[str] = []
    rest = text
    for fence in ("$$", "$"):
        pattern = re.escape(fence) + r"([\s\S]+?)" + re.escape(fence)
        rest = re.sub(pattern, lambda m: blocks.append(m.group(0)) or "%%", rest)
    assert sorted(blocks) == sorted(m.group(0) for m in MATH.finditer(text)), text


def cite(n: int = 1, **kw: object) -> Citation:
    base = dict(n=n, paper_id=f"h:{n:016x}", title=f"Paper {n}", authors=["Ada Lovelace", "Alan Turing"],
                categories=["Theory"], year=2021, abstract="First sentence here. The key finding is strong. Done.",
                summary="It finds the key thing.", evidence="The key finding is strong.", supported=True, url=None)
    base.update(kw)
    return Citation(**base)  # type: ignore[arg-type]


def answer(text: str = "It works [1].", citations: list[Citation] | None = None, **kw: object) -> Answer:
    base = dict(question="What works?", standalone_question="What works?", answer=text, answerable=True,
                mode="extractive", citations=[cite()] if citations is None else citations,
                timings={"total_ms": 12.0})
    base.update(kw)
    return Answer(**base)  # type: ignore[arg-type]


# ---- chat Markdown ------------------------------------------------------------------------------------
def test_chat_markdown_of_hostile_answer_is_inert() -> None:
    a = answer(HOSTILE + " [1]", citations=[cite(title='T <img src=x onerror=alert(1)>', abstract=HOSTILE)])
    md = render.answer_markdown(a, turn=3)
    html = chat_html(md)
    audit = assert_inert(html, {"p", "a", "span", "em", "strong", "br"}, anchors_only=True)
    assert audit.hrefs() == ["#pc-card-3-1"]
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert "javascript:" not in md.lower() and "http:" not in md  # colons are entities: no autolinks either
    assert "www." not in md and "@" not in md
    no_stray_dollars(md)
    assert "$x^2 &lt; y$" in md  # math kept for KaTeX, its HTML escaped


def test_citations_link_to_cards_and_contradicted_ones_are_flagged() -> None:
    a = answer("A [1]. B [2]. C [1, 2]. D [7].",
               citations=[cite(1), cite(2, supported=False, title="Shaky")])
    md = render.answer_markdown(a, turn=0)
    audit = Audit(chat_html(md))
    assert audit.hrefs() == ["#pc-card-0-1", "#pc-card-0-2", "#pc-card-0-1", "#pc-card-0-2"]
    assert md.count("pc-contradicted-cite") == 2 and "&#9888;" in md  # no statements: the citation's flag
    assert "&#91;7&#93;" in md  # a number without a citation is shown, not linked
    card = render.card_html(a.citations[1], 0)
    assert "pc-flag" in card and "contradicted" in card and "pc-card-contradicted" in card


SAYS = "The key finding is strong"
VERDICTS = [
    StatementCheck("The key finding is strong.", [1], True, verdict="supported", rule="llm", source_says=SAYS),
    StatementCheck("The finding is weak <b>x</b>.", [2], False, why="weak vs strong", verdict="contradicted",
                   rule="direction", said="weak vs strong", source_says="The key finding is strong."),
    StatementCheck("It also cures the common cold.", [1], False, verdict="not_in_source", rule="on_topic"),
]


def verdict_answer() -> Answer:
    return answer("The key finding is strong [1]. The finding is weak <b>x</b> [2]. It also cures the common "
                  "cold [1].", citations=[cite(1, evidence=""), cite(2, title="Other")], statements=VERDICTS,
                  warnings=["contradicted: \u201cThe finding is weak <b>x</b>.\u201d", "removed citation [7]",
                            "[1] may not support: \u201cIt also cures the common cold.\u201d (support 0.21)",
                            "[1] may not support: \u201cThe key finding is strong.\u201d"])  # the judge overruled it


def test_each_verdict_is_shown_from_the_statement_fields() -> None:
    md = render.answer_markdown(verdict_answer(), turn=0)
    assert_inert(chat_html(md), {"p", "a", "span", "em", "strong", "br"}, anchors_only=True)
    # contradicted: prominent, the statement and the source sentence side by side; only its citation flagged
    block = re.search(r'<span class="pc-contradicted">.*?</span></span>', md, re.S)
    assert block and "The answer says" in block.group(0) and "The abstract says" in block.group(0)
    assert "The finding is weak &lt;b&gt;x&lt;/b&gt;." in block.group(0) and "The key finding is strong." in md
    assert md.count("pc-contradicted-cite") == 1 and 'href="#pc-card-0-2" title="Contradicted' in md
    # not in the source: a quiet note, never "does not support"
    assert 'class="pc-absent">Not in the cited abstract &#91;1&#93;: \u201cIt also cures' in md
    assert "support" not in md.replace("supported", "")
    # the warnings about those statements are not repeated; the others are
    assert md.count("pc-note") == 1 and "removed citation" in md
    # a supported statement: on its card, with the sentence that says it, highlighted in the abstract
    html = render.sources_html(verdict_answer(), turn=0)
    first, second = html.split('<details')[1:]
    assert '<strong>&#10003; Says:</strong> The key finding is strong.' in first and "pc-flag" not in first
    assert f'<mark class="pc-evidence">{SAYS}</mark>' in first and "Not in this abstract" in first
    assert "&#9888; Contradicts:" in second and "pc-card-contradicted" in second and "pc-flag" in second
    # the terminal and the API's answer text flag the contradicted citation alone
    for text in (render_text(verdict_answer()), answer_text(verdict_answer())):
        assert text.count("(contradicted") == 1 and re.search(r"\[2\] Other.*\(contradicted", text), text


def test_filters_warnings_and_errors_are_shown_escaped() -> None:
    a = answer(filters={"author": "<b>Eve</b>", "year_from": 2020, "year_to": 2022},
               warnings=["removed [3] <i>x</i>"])
    md = render.answer_markdown(a)
    assert "Filters" in md and "author&#58; &lt;b&gt;Eve&lt;/b&gt;" in md and "2020–2022" in md
    assert "removed \\[3\\] &lt;i&gt;x&lt;/i&gt;" in md
    assert_inert(chat_html(render.notice_markdown("<script>alert(1)</script> too long")), {"p", "span"})
    assert_inert(chat_html(render.streaming_markdown("partial ![x](http://e/x.png) [1")), {"p", "span"})


def test_a_refusal_shows_the_closest_papers_as_plain_titles() -> None:
    a = answer("I cannot answer that.", citations=[], answerable=False,
               closest=[{"paper_id": "h:1", "title": "Speculative <b>Sampling</b> [1]"},
                        {"paper_id": "h:2", "title": ""}])
    md = render.answer_markdown(a, turn=2)
    assert "Closest papers in the library: " in md and "h&#58;2" in md  # an untitled paper by its id
    html = chat_html(md)
    audit = assert_inert(html, {"p", "span", "em", "strong", "br"}, anchors_only=True)
    assert audit.hrefs() == [] and "<b>" not in html  # titles are text, not citations or markup
    assert "Closest papers" not in render.answer_markdown(answer())


def test_markdown_structure_cannot_be_opened_from_text() -> None:
    md = inline("# Title\n> quote\n- item\n1. one\n    code\n| a | b |\n===\n---", "chat")
    html = chat_html(md)
    assert not re.search(r"<(h\d|blockquote|ul|ol|pre|code|table|hr)\b", html), html


@fuzz_settings(300)
@given(st.text(alphabet=st.sampled_from(list("<>\"'`*_[]()!#:/@$\\{}=&;|~ \nabcjsvrptx.-0123")), max_size=80))
def test_inline_never_emits_markup_from_text(text: str) -> None:
    html = inline(text, "html")
    assert_inert(html, {"span", "em", "strong"})
    no_stray_dollars(html)
    chat = inline(text, "chat")
    assert_inert(chat_html(chat), {"p", "span", "em", "strong", "br"})
    no_stray_dollars(chat)


# ---- paper cards -----------------------------------------------------------------------------------------
def test_cards_of_hostile_paper_are_inert_and_closed_correctly() -> None:
    c = cite(1, title="<script>alert(1)</script>T", abstract=HOSTILE, summary=HOSTILE,
             evidence="Zebrafish lensing works.", categories=["Sec <b onmouseover=x>"], authors=["<img src=x>"],
             url="javascript:alert(1)")
    html = render.sources_html(answer(citations=[c, cite(2)]), turn=1)
    audit = assert_inert(html, CARD_TAGS)
    assert {k for _, k, _ in audit.attrs} <= CARD_ATTRS
    assert audit.tags.count("details") == 2  # the abstract's </details><details> is text
    assert [v for t, k, v in audit.attrs if k == "id"] == ["pc-card-1-1", "pc-card-1-2"]
    # javascript: URL dropped, no arXiv/DOI id; only each card's own pin / exclude links (ui.why_view)
    assert [h for h in audit.hrefs() if not re.fullmatch(r"#pc-(pin|exclude)-h%3A\d+", h)] == []
    no_stray_dollars(html)
    assert "$x^2 &lt; y$" in html


def test_card_highlights_evidence_and_shows_metadata() -> None:
    c = cite(1, paper_id="arxiv:2101.00001", abstract="Intro text.  The key\n finding is   strong. Outro.",
             evidence="The key finding is strong.", authors=["A One", "B Two", "C Three", "D Four"],
             categories=["Deep Learning", "LLMs"], url="https://example.org/p?a=1&b=2")
    card = render.card_html(c, 0)
    assert re.search(r'<mark class="pc-evidence">The key\s+finding is\s+strong.</mark>', card)
    assert "A One, B Two, C Three et al." in card and "2021" in card and "Deep Learning" in card
    assert 'href="https://arxiv.org/abs/2101.00001"' in card
    assert 'href="https://example.org/p?a=1&amp;b=2"' in card and 'rel="noopener noreferrer nofollow"' in card
    assert "It finds the key thing." in card


def test_safe_urls() -> None:
    assert safe_url("https://arxiv.org/abs/1") == "https://arxiv.org/abs/1"
    for bad in ("javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "//evil.example/x", "ftp://x/y",
                "http://user:pw@evil.example/", "https://ex ample.org", 'https://e.org/"onmouseover=x', None, ""):
        assert safe_url(bad) is None, bad
    assert paper_links("doi:10.1000/xyz(1)")[0][1].startswith("https://doi.org/10.1000/xyz")
    assert paper_links("h:abc", "javascript:x") == []


# ---- exports -------------------------------------------------------------------------------------------------
def test_conversation_markdown_has_one_reference_list() -> None:
    shared = cite(1, paper_id="arxiv:2101.00001", title="Shared paper")
    first = answer("Alpha [1] and beta [2].", citations=[shared, cite(2, title="Second")], question="Q one?")
    second = answer("Again [1]; new [2].", citations=[cite(1, paper_id="h:new", title="Third <img src=x>"),
                                                      shared.__class__(**{**shared.to_dict(), "n": 2})],
                    question="Q two <script>?", filters={"category": "Theory"})
    md = conversation_markdown([first, second])
    assert md.count("## References") == 1
    assert "Alpha [1] and beta [2]." in md and "Again [3]; new [1]." in md  # renumbered to the global list
    refs = md.split("## References")[1]
    assert re.search(r"^1\. \*\*Shared paper\*\*", refs, re.M) and re.search(r"^3\. \*\*Third", refs, re.M)
    assert "[arXiv:2101.00001](<https://arxiv.org/abs/2101.00001>)" in refs
    assert "*Filters: category: Theory*" in md
    html = chat_html(md)
    assert_inert(html, {"h1", "h2", "p", "em", "strong", "ol", "li", "a", "blockquote", "span"})
    assert "<script" not in html and "<img" not in html


def test_the_export_says_each_statements_verdict() -> None:
    other = answer("Alpha [1].", citations=[cite(1, paper_id="h:other", title="Other first")])
    md = conversation_markdown([other, verdict_answer()])
    assert "- Supported [2]: “The key finding is strong.” — the abstract says: “The key finding is strong”" in md
    assert "- Contradicted [3]: “The finding is weak &lt;b&gt;x&lt;/b&gt;.” — the abstract says otherwise" in md
    assert "- Not in the cited abstract [2]: “It also cures the common cold.”" in md
    assert md.count("> Note:") == 1  # the warnings quoting those statements are the verdicts above
    assert_inert(chat_html(md), {"h1", "h2", "p", "em", "strong", "ol", "ul", "li", "a", "blockquote", "span"})


def test_exports_name_their_scope() -> None:
    scoped = answer("It works [1].", filters={"collection": "RLHF"})
    picked = answer("It works [1].", filters={"paper_ids": ["a", "b"]})
    assert "Scope: the whole library" in conversation_markdown([answer()])
    assert "Scope: collection “RLHF”\n" in conversation_markdown([scoped, scoped])
    assert "Scopes: collection “RLHF”; 2 selected papers; the whole library" in conversation_markdown(
        [scoped, picked, answer()])
    head = bibtex([cite(1)], scope=conversation_scope([scoped])).split("\n\n")[0]
    assert head == "% Exported by paperchat\n% Scope: collection “RLHF”"
    papers = [StoredPaper(id="arxiv:2101.00001", label="L", title="Shared <img src=x>", authors=("Ada Lovelace",),
                          year=2021, abstract="A."), StoredPaper(id="h:1", label="Second")]
    md = papers_markdown(papers, "collection “To read”")
    assert "Scope: collection “To read” · 2 papers" in md and re.search(r"^2\. \*\*Second\*\*", md, re.M)
    assert_inert(chat_html(md), {"h1", "p", "ol", "li", "strong", "a"})


def test_bibtex_scope_of_any_name_keeps_the_file_parseable() -> None:
    name = 'evil\n@misc{x, title={y}} 100% {"'
    text = bibtex([cite(1), cite(2)], scope=f"collection “{name}”")
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks and [e.key for e in lib.entries] == [bib_key(cite(1)), bib_key(cite(2))]
    assert text.splitlines()[1].startswith("% Scope: collection “evil ＠misc")


def test_export_of_hostile_answer_is_inert() -> None:
    c = cite(1, title="[x](javascript:alert(1))", abstract=HOSTILE, url="javascript:alert(1)")
    html = chat_html(conversation_markdown([answer(HOSTILE + " [1]", citations=[c], question=HOSTILE)]))
    assert_inert(html, {"h1", "h2", "p", "em", "strong", "ol", "li", "a", "blockquote", "span", "br"})


def test_bibtex_parses_with_escaped_braces_and_stable_keys() -> None:
    nasty = [
        cite(1, paper_id="arxiv:2101.00001", title="A {B} \\emph{C} 100% & #1 $x_{i}^2$ ~_^"),
        cite(2, title="Unbalanced } brace { here", abstract="Back\\slash }{ and $a{b$ math, @misc{x, y}"),
        cite(3, paper_id="doi:10.1/abc", title="Müller–Straße: Ünïcode", authors=["José Ñúñez", "Tom and Jerry"]),
        cite(1, paper_id="arxiv:2101.00001"),  # cited again: one entry
    ]
    text = bibtex(nasty)
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks, [b.error for b in lib.failed_blocks]
    assert len(lib.entries) == 3
    keys = [e.key for e in lib.entries]
    assert len(set(keys)) == 3 and all(re.fullmatch(r"[a-z0-9_]+", k) for k in keys)
    assert keys == [bib_key(c) for c in nasty[:3]]  # stable: the same paper, the same key
    first = lib.entries[0].fields_dict
    assert "\\{B\\}" in first["title"].value and "$x_{i}^2$" in first["title"].value
    assert "\\%" in first["title"].value and first["eprint"].value == "2101.00001"
    second = lib.entries[1].fields_dict
    assert "\\textbraceright{}" in second["title"].value and "\\textbackslash{}" in second["abstract"].value
    assert lib.entries[2].fields_dict["doi"].value == "10.1/abc"
    for entry in lib.entries:
        for f in entry.fields:
            depth = 0
            for ch in str(f.value):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                assert depth >= -1
            assert str(f.value).count("{") - str(f.value).count("}") in (0,), (f.key, f.value)


# ---- helpers behind the app -----------------------------------------------------------------------------------
def test_rate_limit_and_filters_from_controls() -> None:
    stamps: list[float] = []
    for i in range(3):
        stamps = services.check_rate(stamps, 3, now=100.0 + i)
    with pytest.raises(BudgetExceeded, match="3 a minute"):
        services.check_rate(stamps, 3, now=110.0)
    assert services.check_rate(stamps, 3, now=161.0) == [102.0, 161.0]  # the first two have left the window
    assert services.filters_from_controls(None, " ", "", None) is None
    q = services.filters_from_controls("Theory", " Ada ", "2024", "2020")
    assert q is not None and (q.category, q.author, q.year_from, q.year_to) == ("Theory", "Ada", 2020, 2024)
    for bad in ("20x1", "1700", "1e3"):
        with pytest.raises(InputError):
            services.filters_from_controls(None, None, bad, None)
    assert services.controls_from_filters({"author": "Ada", "year_from": 2020}) == (None, "Ada", "2020", "")


def test_example_questions_come_from_the_corpus() -> None:
    papers = [StoredPaper(id=f"p{i}", label=label, categories=(cat,), abstract="x")
              for i, (label, cat) in enumerate([("Gao et al.: SyncMind", "Evaluation"),
                                                ("Li et al.: FedGMT", "General"),
                                                ("Bad: <script>x</script>", "Security"),
                                                ("Wang et al.: Predictive planning", "LLMs"),
                                                ("Li & Wu: Another eval", "Evaluation")])]
    qs = services.example_questions(papers, n=4)
    assert ("What is SyncMind?" in qs) != ("What is another eval?" in qs)  # one question per category
    assert "What is predictive planning?" in qs and "What is FedGMT?" in qs
    assert not any("<" in q for q in qs)
    assert qs[-1] == "Which papers are about Evaluation?"


def test_feedback_rows_are_eval_ready(tmp_path: Path) -> None:
    log = services.FeedbackLog(tmp_path / "feedback.jsonl")
    first = answer(question="What is X?")
    follow = answer(question="And its limits?", standalone_question="What are the limits of X?")
    log.record(first, True)
    log.record(follow, False, history=[first])
    rows = [json.loads(line) for line in (tmp_path / "feedback.jsonl").read_text().splitlines()]
    assert [r["vote"] for r in rows] == ["up", "down"]
    assert rows[0]["citations"] == [{"n": 1, "paper_id": "h:0000000000000001", "title": "Paper 1", "supported": True}]
    assert rows[0]["case"]["gold"][0]["author"] == "Ada Lovelace" and rows[0]["mode"] == "extractive"
    assert rows[1]["case"]["type"] == "follow-up" and rows[1]["case"]["turns"] == ["What is X?", "And its limits?"]
    assert "gold" not in rows[1]["case"]


def test_uploads_are_checked_and_kept_out_of_served_paths(tmp_path: Path) -> None:
    src = tmp_path / "in" / "my papers (1).bib"
    src.parent.mkdir()
    src.write_text("@misc{a, title={T}}\n")
    dest = services.accept_upload(src, tmp_path / "home" / "uploads", 1.0)
    assert dest.parent == tmp_path / "home" / "uploads" and dest.suffix == ".bib"
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}-my_papers_1\.bib", dest.name)
    big = tmp_path / "in" / "big.csv"
    big.write_bytes(b"x" * 2_000_000)
    with pytest.raises(BudgetExceeded, match="upload limit is 1 MB"):
        services.accept_upload(big, tmp_path / "uploads", 1.0)
    exe = tmp_path / "in" / "x.exe"
    exe.write_bytes(b"MZ")
    with pytest.raises(InputError, match="unsupported file type"):
        services.accept_upload(exe, tmp_path / "uploads", 1.0)


def test_stats_and_library_rows() -> None:
    md = render.stats_markdown({"papers": 3, "chunks": 4, "authors": 5, "categories": 2, "years": (2020, 2020),
                                "embedding_model": "m_<x>"})
    assert "**3** papers" in md and "**2020** years" in md and "m\\_&lt;x&gt;" in md
    papers = [StoredPaper(id="a", label="L", authors=("A", "B", "C", "D", "E"), categories=("X",), year=None),
              StoredPaper(id="b", label="M", year=2020)]
    rows = render.library_rows(papers, {"b": ["RLHF", "To read"]})
    assert rows == [[False, "L", "A, B, C, D et al.", "X", "", "", "a"],
                    [False, "M", "", "", 2020, "RLHF; To read", "b"]]
    assert len(rows[0]) == len(render.LIBRARY_HEADERS) == len(render.LIBRARY_TYPES)


def test_selected_ids_reads_the_ticked_rows_once_in_table_order() -> None:
    rows = [[True, "T1", "", "", "", "", "b"], [False, "T2", "", "", "", "", "a"], ["true", "T3", "", "", "", "", "c"],
            [True, "T1 again", "", "", "", "", "b"], [True, "", "", "", "", "", ""],  # a blank row added in the table
            [True, "short row"], None]
    assert render.selected_ids(rows) == ["b", "c"]
    assert render.selected_ids(None) == [] and render.selected_ids([]) == []


def test_collections_are_listed_with_counts_and_escaped() -> None:
    counts = {"RLHF": 3, 'x <img src=x onerror="alert(1)"> [l](javascript:alert(1))': 1}
    assert render.collection_choices(counts) == [("RLHF (3)", "RLHF"), (f"{list(counts)[1]} (1)", list(counts)[1])]
    md = render.collections_markdown(counts)
    assert "**RLHF** (3)" in md
    assert_inert(chat_html(md), {"p", "strong"})
    assert "No collections yet" in render.collections_markdown({})
    scope = render.scope_markdown(["A <script>x</script>", "B"] + [f"P{i}" for i in range(6)])
    assert "8 selected papers" in scope and "(3 more)" in scope and "P5" not in scope
    assert_inert(chat_html(scope), {"p", "span", "em"})
    assert render.scope_markdown([]) == ""


def test_answer_shows_the_collection_it_was_asked_within() -> None:
    md = render.answer_markdown(answer(filters={"collection": "RL <b>papers</b>", "paper_ids": ["a", "b"]}))
    shown = re.search(r'<span class="pc-filters">(.*?)</span>', md)
    assert shown and "collection&#58; RL &lt;b&gt;papers&lt;/b&gt; · 2 selected papers" in shown.group(1)


def test_ingest_report_lists_problems_escaped() -> None:
    from rag.ingest.pipeline import IngestReport

    report = IngestReport(added=2, skipped=1, problems=["x.bib:3: no abstract in <img src=x onerror=alert(1)>"])
    md = render.ingest_report_markdown("x <b>.bib", report)
    html = chat_html(md)
    assert_inert(html, {"p", "strong", "ul", "li", "span"})
    assert "added 2" in md and "skipped 1" in md and "x.bib&#58;3&#58; no abstract in &lt;img" in md
