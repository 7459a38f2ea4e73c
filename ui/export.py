"""Pure exports: a conversation as Markdown with one reference list (and each cited statement's verdict:
supported, contradicted or not in the cited abstract), BibTeX of its cited papers, and a selection of the library
(ticked papers or a collection) as a Markdown reading list or BibTeX; either reference list also in a citation
style (APA, IEEE, … through ``rag.references``). Each names its scope (the collection or selected papers it was
asked within or drawn from) in its header."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rag.answer import Answer, Citation, StatementCheck
from rag.display import author_list
from rag.errors import InputError
from rag.records import StoredPaper, clean_arxiv_id, clean_doi
from rag.references import STYLES, bibliography, csl_item
from ui.render import CITE, describe_filters, shown_by_a_verdict
from ui.safe import MATH, inline, paper_links


def cited_papers(answers: Iterable[Answer]) -> list[Citation]:
    """Every paper cited in the conversation, once, in order of first citation."""
    seen: dict[str, Citation] = {}
    for a in answers:
        for c in a.citations:
            seen.setdefault(c.paper_id, c)
    return list(seen.values())


def scope_text(filters: Mapping[str, Any]) -> str:
    """An answer's scope in words (plain text): its collection and/or selected papers; "" for the whole library."""
    parts = []
    if filters.get("collection"):
        parts.append(f"collection “{filters['collection']}”")
    ids = filters.get("paper_ids") or []
    if ids:
        parts.append(f"{len(ids)} selected paper{'s' if len(ids) != 1 else ''}")
    return ", ".join(parts)


def conversation_scope(answers: Iterable[Answer]) -> str:
    """The scopes a conversation was asked within, once each in order ("the whole library" for unscoped turns)."""
    seen = list(dict.fromkeys(scope_text(a.filters) or "the whole library" for a in answers))
    return "; ".join(seen) or "the whole library"


def as_citation(p: StoredPaper, n: int = 0) -> Citation:
    """A stored paper in the shape the exports take (no answer: no summary or evidence)."""
    return Citation(n=n, paper_id=p.id, title=p.heading, authors=list(p.authors), categories=list(p.categories),
                    year=p.year, abstract=p.abstract, summary="", evidence="", supported=True, url=p.url)


def _renumber(answer: Answer, numbers: dict[str, int]) -> str:
    local = {c.n: numbers[c.paper_id] for c in answer.citations}

    def sub(m: re.Match[str]) -> str:
        ns = [(int(x), page) for x, page in re.findall(r"(\d+)(,\s*pp?\.\s*\d+(?:\u2013\d+)?)?", m.group(1))]
        return "".join(f"[{local.get(n, n)}{page}]" for n, page in ns)  # a passage's page kept: "[2, p. 5]"

    out: list[str] = []
    pos = 0
    for m in CITE.finditer(answer.answer):
        out.append(inline(answer.answer[pos:m.start()], "export"))
        out.append(sub(m))  # digits and brackets only: safe as is
        pos = m.end()
    out.append(inline(answer.answer[pos:], "export"))
    return "".join(out)


VERDICT_WORDS = {"supported": "Supported", "contradicted": "Contradicted", "not_in_source": "Not in the cited abstract"}


def verdict_line(st: StatementCheck, local: dict[int, int]) -> str:
    """One statement's verdict as a Markdown list item, its ``[n]`` in the export's numbering (``local``)."""
    marks = "".join(f"[{local.get(n, n)}]" for n in st.cited)
    line = f"- {VERDICT_WORDS[st.verdict]} {marks}: \u201c{inline(st.text, 'export')}\u201d"
    if st.source_says and st.verdict != "not_in_source":
        says = "says" if st.verdict == "supported" else "says otherwise"
        line += f" \u2014 the abstract {says}: \u201c{inline(st.source_says, 'export')}\u201d"
    return line


def reference_markdown(g: int, c: Citation) -> str:
    """One numbered reference line (Markdown, escaped)."""
    parts = [f"**{inline(c.title or c.paper_id, 'export')}**"]
    if c.authors:
        parts.append(inline(author_list(c.authors, 6), "export"))
    if c.year:
        parts.append(str(int(c.year)))
    if c.categories:
        parts.append("*" + inline("; ".join(c.categories), "export") + "*")
    links = [f"[{inline(label, 'export')}](<{href}>)" for label, href in paper_links(c.paper_id, c.url)]
    links.append("id: " + inline(c.paper_id, "export"))
    return f"{g}. " + ". ".join(parts) + ". " + " · ".join(links)


def conversation_markdown(answers: Sequence[Answer], exported_at: datetime | None = None) -> str:
    """The conversation as Markdown: each question and answer, citations renumbered into one reference list."""
    when = (exported_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    papers = cited_papers(answers)
    numbers = {c.paper_id: i for i, c in enumerate(papers, start=1)}
    scopes = conversation_scope(answers)
    lines = ["# paperchat conversation", "",
             f"Exported {when} · {len(answers)} question{'s' if len(answers) != 1 else ''} · "
             f"{len(papers)} cited paper{'s' if len(papers) != 1 else ''}", "",
             f"Scope{'s' if '; ' in scopes else ''}: {inline(scopes, 'export')}", ""]
    for i, a in enumerate(answers, start=1):
        lines += [f"## {i}\\. {inline(a.question, 'export')}", ""]
        applied = describe_filters(a.filters)
        if applied:
            lines += [f"*Filters: {inline(applied, 'export')}*", ""]
        lines += [_renumber(a, numbers), ""]
        if a.statements:
            local = {c.n: numbers[c.paper_id] for c in a.citations}
            lines += ["Statement checks:", "", *(verdict_line(st, local) for st in a.statements), ""]
        for w in a.warnings:
            if not shown_by_a_verdict(w, a.statements):
                lines += [f"> Note: {inline(w, 'export')}", ""]
    if papers:
        lines += ["## References", ""]
        lines += [reference_markdown(numbers[c.paper_id], c) for c in papers]
        lines.append("")
    return "\n".join(lines)


def papers_markdown(papers: Sequence[StoredPaper], scope: str, exported_at: datetime | None = None) -> str:
    """A selection of the library as a Markdown reading list, headed by its scope ("collection “RLHF”")."""
    when = (exported_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# paperchat papers", "",
             f"Exported {when} · Scope: {inline(scope, 'export')} · "
             f"{len(papers)} paper{'s' if len(papers) != 1 else ''}", ""]
    lines += [reference_markdown(i, as_citation(p, i)) for i, p in enumerate(papers, start=1)]
    lines.append("")
    return "\n".join(lines)


# ---- BibTeX ---------------------------------------------------------------------------------------
_BIB_TEXT = {"\\": r"\textbackslash{}", "%": r"\%", "&": r"\&", "#": r"\#", "_": r"\_", "$": r"\$",
             "^": r"\textasciicircum{}", "~": r"\textasciitilde{}"}


def _nested(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _bib_text(text: str, braces_ok: bool) -> str:
    table = dict(_BIB_TEXT)
    if braces_ok:  # BibTeX counts \{ as a brace too: only balanced ones may stay braces
        table |= {"{": r"\{", "}": r"\}"}
    else:
        table |= {"{": r"\textbraceleft{}", "}": r"\textbraceright{}"}
    return "".join(table.get(ch, ch) for ch in text)


def bib_escape(text: str | None) -> str:
    """Text → a BibTeX field value that parses whatever the input: specials escaped, math kept when
    its braces balance, every brace balanced."""
    if not text:
        return ""
    text = re.sub(r"\s+", " ", text).strip()
    plain = MATH.sub("", text)
    braces_ok = _nested(plain)
    out: list[str] = []
    pos = 0
    for m in MATH.finditer(text):
        out.append(_bib_text(text[pos:m.start()], braces_ok))
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        fence = "$$" if m.group(1) is not None else "$"
        out.append(fence + inner + fence if _nested(inner) and "\\" not in inner[-1:] else
                   _bib_text(m.group(0), False))
        pos = m.end()
    out.append(_bib_text(text[pos:], braces_ok))
    return "".join(out)


def _ascii_slug(text: str) -> str:
    s = unicodedata.normalize("NFKD", text)
    return re.sub(r"[^a-z0-9]", "", s.encode("ascii", "ignore").decode().lower())


def bib_key(c: Citation) -> str:
    """A stable, ASCII citation key: first author's surname, year, first title word, id hash."""
    surname = _ascii_slug(c.authors[0].split()[-1]) if c.authors and c.authors[0].split() else ""
    word = next((_ascii_slug(w) for w in re.findall(r"[^\W\d_]{4,}", c.title or "") if _ascii_slug(w)), "")
    digest = hashlib.sha1(c.paper_id.encode()).hexdigest()[:6]
    return f"{surname or 'paper'}{c.year or ''}{word[:16]}_{digest}"


def bib_entry(c: Citation) -> str:
    """One ``@misc`` entry for a cited paper."""
    fields: list[tuple[str, str]] = [("title", "{" + bib_escape(c.title or c.paper_id) + "}")]
    if c.authors:
        fields.append(("author", " and ".join(bib_escape(a).replace(" and ", " {and} ") for a in c.authors)))
    if c.year:
        fields.append(("year", str(int(c.year))))
    kind, _, ident = c.paper_id.partition(":")
    if kind == "arxiv":
        fields += [("eprint", bib_escape(ident)), ("archiveprefix", "arXiv")]
    if kind == "doi":
        fields.append(("doi", bib_escape(ident)))
    links = paper_links(c.paper_id, c.url)
    if links:
        fields.append(("url", bib_escape(links[-1][1])))
    if c.categories:
        fields.append(("keywords", bib_escape(", ".join(c.categories))))
    if c.abstract:
        fields.append(("abstract", bib_escape(c.abstract)))
    fields.append(("note", "paperchat id: " + bib_escape(c.paper_id)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{{bib_key(c)},\n{body}\n}}\n"


def _bib_comment(text: str) -> str:
    """Text for a ``%`` line outside the entries: one line, and no ``@`` (which would start an entry there)."""
    return re.sub(r"\s+", " ", text).replace("@", "＠").strip()


def bibtex(citations: Iterable[Citation], scope: str = "") -> str:
    """A ``.bib`` file of the papers (one entry per paper id, in the given order), its header naming the
    ``scope`` they come from when given."""
    seen: set[str] = set()
    entries = []
    for c in citations:
        if c.paper_id not in seen:
            seen.add(c.paper_id)
            entries.append(bib_entry(c))
    head = "% Exported by paperchat\n" + (f"% Scope: {_bib_comment(scope)}\n" if scope else "")
    return head + "\n" + "\n".join(entries)


# ---- citation styles ------------------------------------------------------------------------------
def citation_item(c: Citation) -> dict[str, Any]:
    """A cited paper as a CSL-JSON item (its DOI or arXiv id read from its paper id, as the .bib export does)."""
    kind, _, ident = c.paper_id.partition(":")
    return csl_item(c.paper_id, c.title or c.paper_id, c.authors, c.year, url=c.url,
                    doi=clean_doi(ident) if kind == "doi" else None,
                    arxiv_id=clean_arxiv_id(ident) if kind == "arxiv" else None)


def styled_markdown(items: Sequence[dict[str, Any]], style: str, scope: str,
                    exported_at: datetime | None = None) -> str:
    """A reference list (CSL-JSON items: ``citation_item`` or ``rag.references.paper_item``) in a citation style
    as a Markdown document headed by its style and scope; an unknown style is an ``InputError``."""
    entries = bibliography(items, style, "markdown")
    when = (exported_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    name = STYLES[style.strip().lower()]
    lines = [f"# paperchat references ({name})", "",
             f"Exported {when} · Scope: {inline(scope, 'export')} · "
             f"{len(entries)} paper{'s' if len(entries) != 1 else ''}", ""]
    for e in entries:  # a paragraph each: one entry's lines never run into the next
        lines += [e, ""]
    return "\n".join(lines)


EXPORT_FORMATS = ("md", "bib")  # besides the citation styles of rag.references.STYLES


def conversation_export(answers: Sequence[Answer], fmt: str) -> tuple[str, str]:
    """A conversation as a file's text and suffix: ``md`` (the whole conversation), ``bib`` (its cited papers)
    or a citation style's name (their reference list as Markdown); an ``InputError`` for anything else, or when
    no paper has been cited and the format is a reference list."""
    kind = fmt.strip().lower()
    if kind == "md":
        return conversation_markdown(answers), ".md"
    if kind not in STYLES and kind != "bib":
        raise InputError(f"unknown export format {fmt!r}: md, bib or a citation style ({', '.join(STYLES)})")
    papers = cited_papers(answers)
    if not papers:
        raise InputError("no paper has been cited in this conversation: nothing to list")
    if kind == "bib":
        return bibtex(papers, scope=conversation_scope(answers)), ".bib"
    return styled_markdown([citation_item(c) for c in papers], kind, conversation_scope(answers)), f".{kind}.md"
