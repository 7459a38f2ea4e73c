"""Pure rendering for the UI: an ``Answer`` → chat Markdown and sources-panel HTML (paper cards).

No Gradio here: these functions take answer objects and return strings, and the tests feed them
hostile input. Untrusted text goes through ``ui.safe.inline``; the only links are ones we build
(``#card`` anchors, arXiv/DOI/http(s) URLs checked by ``ui.safe.safe_url``) and nothing renders images.

Each cited statement's verdict is read from ``Answer.statements`` (never from warning text): a *contradicted*
statement is shown prominently under the answer, the statement and the source sentence side by side, and its
citations are flagged; one *not in the source* gets a quiet note; a *supported* one is listed on its paper's
card with the sentence that says it, highlighted in the abstract.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rag.answer import Answer, AppliedFilters, Citation, StatementCheck, filter_phrases
from rag.display import author_list
from rag.records import StoredPaper
from rag.text import split_sentences
from ui.safe import escape_html, inline, paper_links
from ui.why_view import steer_links, why_html

_PAGE = r"(?:,\s*pp?\.\s*\d+(?:\u2013\d+)?)?"  # a full-text citation's page: "[2, p. 5]", "[1; 2, pp. 5–6]"
CITE = re.compile(rf"\[(\d+{_PAGE}(?:\s*[,;]\s*\d+{_PAGE})*)\]")
CONTRADICTED_TITLE = "Contradicted: a statement citing this paper says otherwise than its abstract"


def card_id(turn: int, n: int) -> str:
    """The HTML id of citation ``n``'s card in turn ``turn`` (what ``[n]`` links to)."""
    return f"pc-card-{int(turn)}-{int(n)}"


def describe_filters(filters: AppliedFilters) -> str:
    """Applied filters in words (plain text): "collection: R · author: X · category: Y · years: 2020–2024"."""
    return " · ".join(filter_phrases(filters))


def page_label(c: Citation) -> str:
    """"p. 5" or "pp. 5–6" for a citation of a full-text passage, else ""."""
    if c.page is None:
        return ""
    return f"p. {c.page}" if (c.page_end or c.page) <= c.page else f"pp. {c.page}\u2013{c.page_end}"


def _cite_link(c: Citation | None, n: int, turn: int, flagged: bool) -> str:
    if c is None:  # a number the verified answer does not define: shown, not linked
        return f"&#91;{n}&#93;"
    title = escape_html(c.title or c.paper_id)
    label = f"{n}, {escape_html(page_label(c))}" if c.page is not None else str(n)
    if not flagged:
        return f'<a class="pc-cite" href="#{card_id(turn, n)}" title="{title}">&#91;{label}&#93;</a>'
    return (f'<a class="pc-cite pc-contradicted-cite" href="#{card_id(turn, n)}" title="{CONTRADICTED_TITLE}: '
            f'{title}">&#91;{label}&#8201;&#9888;&#93;</a>')


def cited_markdown(text: str, citations: Iterable[Citation], turn: int, flagged: set[int] | None = None) -> str:
    """Answer text with every ``[n]`` (and ``[1, 2]``) turned into links to the turn's paper cards; those in
    ``flagged`` (cited by a contradicted statement) carry a warning sign."""
    by_n = {c.n: c for c in citations}
    out: list[str] = []
    pos = 0
    for m in CITE.finditer(text):
        out.append(inline(text[pos:m.start()], "chat"))
        numbers = [int(x) for x in re.findall(rf"(\d+){_PAGE}", m.group(1))]
        out.append("".join(_cite_link(by_n.get(n), n, turn, n in (flagged or ())) for n in numbers))
        pos = m.end()
    out.append(inline(text[pos:], "chat"))
    return "".join(out)


def _marks(st: StatementCheck) -> str:
    return "".join(f"&#91;{int(n)}&#93;" for n in st.cited)


def verdict_markdown(st: StatementCheck) -> str:
    """One statement's verdict under the answer: a contradiction prominently, the statement and the source
    sentence side by side; a statement not in the source as a quiet note; "" for a supported one (its card
    shows what says it)."""
    if st.verdict == "contradicted":
        why = (f'<span class="pc-why-not">About: {inline(st.said, "chat")}</span>'
               if st.said and st.said.strip() != st.text.strip() else "")
        source = inline(st.source_says, "chat") if st.source_says else "<em>(no sentence quoted)</em>"
        return (f'<span class="pc-contradicted"><strong>&#9888; Contradicted by the cited abstract {_marks(st)}'
                f'</strong><span class="pc-side"><span class="pc-said"><em>The answer says</em> '
                f'{inline(st.text, "chat")}</span><span class="pc-source-says"><em>The abstract says</em> {source}'
                f"</span></span>{why}</span>")
    if st.verdict == "not_in_source":
        return (f'<span class="pc-absent">Not in the cited abstract {_marks(st)}: '
                f'\u201c{inline(st.text, "chat")}\u201d</span>')
    return ""


def shown_by_a_verdict(warning: str, statements: Sequence[StatementCheck]) -> bool:
    """Whether ``warning`` is about a cited statement (it quotes it), whose verdict is shown from its fields
    instead: the warnings say what the rules found, which an LLM judge may have overruled."""
    return any(s.text[:60] in warning for s in statements)


def answer_markdown(answer: Answer, turn: int = 0) -> str:
    """The chat message for a finished answer: filters used, cited text, notes, mode and time."""
    parts: list[str] = []
    applied = describe_filters(answer.filters)
    if applied:
        parts.append(f'<span class="pc-filters">Filters: {inline(applied, "chat")}</span>')
    parts.append(cited_markdown(answer.answer.strip(), answer.citations, turn, answer.contradicted))
    order = {"contradicted": 0, "not_in_source": 1}
    for st in sorted((s for s in answer.statements if s.verdict in order), key=lambda s: order[s.verdict]):
        parts.append(verdict_markdown(st))
    if answer.closest:  # a refusal: what came closest, as plain titles (no links, no [n]) to rephrase toward
        titles = "; ".join(inline(c["title"] or c["paper_id"], "chat") for c in answer.closest)
        parts.append(f'<span class="pc-closest">Closest papers in the library: {titles}</span>')
    parts += [why_html(answer)] if answer.why or answer.not_cited else []  # collapsed (rag.qa.why)
    for w in answer.warnings:
        if shown_by_a_verdict(w, answer.statements):
            continue
        parts.append(f'<span class="pc-note">&#9888; {inline(w, "chat")}</span>')
    seconds = (answer.timings or {}).get("total_ms", 0.0) / 1000
    meta = f"{inline(answer.mode, 'chat')} answer · {seconds:.2f} s"
    if answer.citations:
        meta += f" · {len(answer.citations)} source{'s' if len(answer.citations) != 1 else ''}"
    parts.append(f'<span class="pc-meta">{meta}</span>')
    return "\n\n".join(parts)


def streaming_markdown(text: str) -> str:
    """Partial answer text while it streams (citations not linked yet, a cursor at the end)."""
    return inline(text, "chat") + ' <span class="pc-cursor">&#9612;</span>'


def notice_markdown(message: str) -> str:
    """An error or refusal shown as the assistant's message (the text is escaped)."""
    return f'<span class="pc-error">&#9888; {inline(message, "chat")}</span>'


def evidence_spans(abstract: str, *evidence: str) -> list[tuple[int, int]]:
    """Where the evidence sentences (or quoted parts of sentences) occur in the abstract (whitespace-insensitive),
    merged and sorted."""
    spans: list[tuple[int, int]] = []
    for sentence in (s for text in evidence for s in split_sentences(text or "")):
        words = sentence.split()
        if len(words) < 3:
            continue
        m = re.search(r"\s+".join(re.escape(w) for w in words), abstract)
        if m:
            spans.append((m.start(), m.end()))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def highlighted_abstract(abstract: str, *evidence: str) -> str:
    """The abstract as HTML with its evidence sentences (and the quotes that say a statement) in ``<mark>``."""
    out: list[str] = []
    pos = 0
    for s, e in evidence_spans(abstract, *evidence):
        out.append(inline(abstract[pos:s], "html"))
        out.append(f'<mark class="pc-evidence">{inline(abstract[s:e], "html")}</mark>')
        pos = e
    out.append(inline(abstract[pos:], "html"))
    return "".join(out)


def _links_html(c: Citation) -> str:
    links = [f'<a href="{escape_html(href)}" target="_blank" rel="noopener noreferrer nofollow">'
             f"{escape_html(label)}</a>" for label, href in paper_links(c.paper_id, c.url)]
    links.append(f'<code class="pc-id">{escape_html(c.paper_id)}</code>')
    return " · ".join(links)


_CARD_VERDICT = {"supported": ("pc-stmt-supported", "&#10003; Says"),
                 "contradicted": ("pc-stmt-contradicted", "&#9888; Contradicts"),
                 "not_in_source": ("pc-stmt-absent", "Not in this abstract")}


def statement_html(st: StatementCheck) -> str:
    """A statement citing a card's paper, on the card: its verdict, the statement and the sentence that says it
    (or says otherwise)."""
    cls, head = _CARD_VERDICT[st.verdict]
    quote = (f' <span class="pc-source-says">&#8212; \u201c{inline(st.source_says, "html")}\u201d</span>'
             if st.source_says and st.verdict != "not_in_source" else "")
    return f'<p class="pc-stmt {cls}"><strong>{head}:</strong> {inline(st.text, "html")}{quote}</p>'


def card_html(c: Citation, turn: int, open_: bool = False, statements: Sequence[StatementCheck] = (),
              flagged: bool | None = None) -> str:
    """One paper card: a ``<details>`` whose summary line is number, title and authors; ``statements``: the
    answer's statements citing this paper, listed with their verdicts; ``flagged``: a statement citing it is
    contradicted (default: the citation is marked unsupported)."""
    flagged = not c.supported if flagged is None else flagged
    flag = f'<span class="pc-flag" title="{CONTRADICTED_TITLE}">&#9888; contradicted</span>' if flagged else ""
    meta = " · ".join(x for x in (author_list(c.authors), str(c.year or "")) if x)
    cats = "".join(f'<span class="pc-chip">{inline(cat, "html")}</span>' for cat in c.categories if cat)
    summary = (f'<summary><span class="pc-n">{int(c.n)}</span><span class="pc-head">'
               f'<span class="pc-title">{inline(c.title or c.paper_id, "html")}</span>{flag}'
               f'<span class="pc-byline">{inline(meta, "html")}</span>'
               f'<span class="pc-coverage">{inline(c.coverage, "html")}</span></span></summary>')
    body = ['<div class="pc-body">']
    if cats:
        body.append(f'<div class="pc-chips">{cats}</div>')
    if c.summary:
        body.append(f'<p class="pc-why"><strong>On your question:</strong> {inline(c.summary, "html")}</p>')
    if len(c.authors) > 3:
        body.append(f'<p class="pc-authors">{inline(", ".join(c.authors), "html")}</p>')
    body += [statement_html(st) for st in statements]
    says = [st.source_says for st in statements if st.verdict == "supported"]
    if c.passage:  # the answer quotes a full-text passage: it first, with its page and section, then the abstract
        where = " · ".join(x for x in (page_label(c) or "page unknown", c.section or "") if x)
        body.append(f'<p class="pc-passage"><span class="pc-page">{inline(where, "html")}</span> '
                    f'{highlighted_abstract(c.passage, c.evidence or "", *says)}</p>')
        body.append(f'<p class="pc-abstract">{highlighted_abstract(c.abstract or "")}</p>')
    else:
        body.append(f'<p class="pc-abstract">{highlighted_abstract(c.abstract or "", c.evidence or "", *says)}</p>')
    body.append(steer_links(c.paper_id))  # pin / exclude for the next turn (rag.qa.why)
    body.append(f'<p class="pc-links">{_links_html(c)}</p></div>')
    cls = "pc-card" + (" pc-card-contradicted" if flagged else "")
    return (f'<details class="{cls}" id="{card_id(turn, c.n)}"{" open" if open_ else ""}>'
            + summary + "".join(body) + "</details>")


def sources_html(answer: Answer | None, turn: int = 0) -> str:
    """The sources panel for one answer: a head line and a card per cited paper (one line of HTML)."""
    if answer is None:
        return ('<div class="pc-sources"><p class="pc-empty">Ask a question: the papers an answer cites '
                "appear here as cards, with the supporting sentences highlighted.</p></div>")
    if not answer.citations:
        return ('<div class="pc-sources"><p class="pc-empty">This answer cites no papers.</p></div>')
    n = len(answer.citations)
    head = (f'<p class="pc-sources-head">{n} paper{"s" if n != 1 else ""} cited for '
            f'<em>{inline(answer.question, "html")}</em> · open a card for its abstract</p>')
    flagged = answer.contradicted
    cards = "".join(card_html(c, turn, statements=[s for s in answer.statements if c.n in s.cited],
                              flagged=c.n in flagged) for c in answer.citations)
    return f'<div class="pc-sources">{head}{cards}</div>'


def stats_markdown(stats: dict[str, Any]) -> str:
    """Corpus statistics as one Markdown line of numbers."""
    years = stats.get("years") or (None, None)
    span = "n/a" if not years[0] else str(years[0]) if years[0] == years[1] else f"{years[0]}–{years[1]}"
    items = [("papers", stats.get("papers", 0)), ("chunks", stats.get("chunks", 0)),
             ("authors", stats.get("authors", 0)), ("categories", stats.get("categories", 0)), ("years", span)]
    cells = " · ".join(f"**{inline(str(v), 'chat')}** {k}" for k, v in items)
    model = stats.get("embedding_model")
    return cells + (f" · model {inline(str(model), 'chat')}" if model else "")


def library_rows(papers: Iterable[StoredPaper], memberships: dict[str, list[str]] | None = None) -> list[list[Any]]:
    """Stored papers (``rag.index.paper_query.find_papers``) → table rows of plain text, each led by its (unticked)
    selection box; ``memberships``: paper id → the collections it is in."""
    member = memberships or {}
    rows = []
    for p in papers:
        rows.append([False, p.label or p.id, author_list(p.authors, 4), "; ".join(p.categories), p.year or "",
                     "; ".join(member.get(p.id, [])), p.id])
    return rows


LIBRARY_HEADERS = ["Select", "Title", "Authors", "Categories", "Year", "Collections", "ID"]
LIBRARY_TYPES: list[Literal["bool", "str"]] = ["bool", "str", "str", "str", "str", "str", "str"]


def selected_ids(rows: Any) -> list[str]:
    """The ids of the ticked rows of the library table (its value as a list of rows), in table order."""
    out: list[str] = []
    for row in rows or []:
        if isinstance(row, (list, tuple)) and len(row) == len(LIBRARY_HEADERS):
            ticked = row[0] is True or str(row[0]).strip().lower() == "true"
            pid = str(row[-1] or "").strip()
            if ticked and pid and pid not in out:
                out.append(pid)
    return out


def collection_choices(counts: dict[str, int]) -> list[tuple[str, str]]:
    """Dropdown choices for the collections: ("Name (N)", name)."""
    return [(f"{name} ({n})", name) for name, n in counts.items()]


def collections_markdown(counts: dict[str, int]) -> str:
    """The collections with their counts, one Markdown line (names escaped)."""
    if not counts:
        return ("No collections yet: tick papers in the table and use **Add to collection** "
                "(or `paperchat collection add NAME …`).")
    items = " · ".join(f"**{inline(name, 'chat')}** ({n})" for name, n in counts.items())
    return f"Collections: {items}"


def scope_markdown(titles: Sequence[str]) -> str:
    """The chat's paper selection ("Ask about these papers"), shown above the conversation (escaped)."""
    if not titles:
        return ""
    shown = "; ".join(inline(t, "chat") for t in titles[:5]) + (f"; … ({len(titles) - 5} more)" if len(titles) > 5
                                                                  else "")
    n = len(titles)
    return (f'<span class="pc-scope">Asking within {n} selected paper{"s" if n != 1 else ""}: {shown} '
            "· <em>Clear filters</em> asks the whole library again</span>")


def ingest_report_markdown(name: str, report: Any, limit: int = 20) -> str:
    """An upload's outcome: counts, then whole-file errors and skipped records (escaped, at most ``limit``)."""
    counts = (f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, "
              f"duplicates {report.duplicates}, skipped {report.skipped}")
    if getattr(report, "full_text", 0):
        counts += f"; full text of {report.full_text} papers ({report.embedded_passages} passages)"
    ok = "&#10060;" if report.failed else ("&#9888;&#65039;" if report.problems else "&#9989;")
    lines = [f"{ok} **{inline(name, 'chat')}**: {inline(counts, 'chat')}"]
    issues = list(report.file_errors) + list(report.problems)
    for issue in issues[:limit]:
        lines.append(f"- {inline(issue, 'chat')}")
    if len(issues) > limit:
        lines.append(f"- … and {len(issues) - limit} more")
    return "\n".join(lines)
