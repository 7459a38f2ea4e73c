"""Escaping primitives for untrusted text (abstracts, titles, model output) → Markdown or HTML.

Everything a paper or a model wrote is data: it may carry ``<script>``, ``javascript:`` links, Markdown
images or unbalanced ``$``. These functions let only ``$…$`` math and ``*emphasis*`` through, as
constructs we emit ourselves; every other character that Markdown or HTML would interpret is escaped.
The chat's Markdown renderer (marked + KaTeX auto-render in Gradio) pulls ``$…$`` spans out before
parsing, so a lone ``$`` must never reach it: it is written as an entity inside its own element.
"""

from __future__ import annotations

import html
import re
from typing import Literal
from urllib.parse import quote, urlsplit

Target = Literal["chat", "html", "export"]

# $$display$$ or $inline$ (no blank around the inner text, no newline): anything else is a literal dollar.
MATH = re.compile(r"\$\$(?=\S)([^$]+?)(?<=\S)\$\$|\$(?=\S)([^$\n]+?)(?<=\S)\$")
_EMPHASIS = re.compile(r"(\*\*|\*)(?=[^\s*])([^*\n]+?)(?<=[^\s*])\1")
# A lone dollar in its own element: KaTeX's auto-render joins adjacent text nodes, never across elements.
LONE_DOLLAR = '<span class="pc-dollar">&#36;</span>'

# Characters that start Markdown constructs anywhere in a line (links, images, code, emphasis, tables,
# strike-through, HTML) and the colon/at that GFM would autolink: escaped for the chat renderer.
_CHAT_ESCAPES = {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_",
    "[": "\\[", "]": "\\]", "|": "\\|", "~": "\\~", "!": "\\!", ":": "&#58;", "@": "&#64;", "$": LONE_DOLLAR,
}
# The export is read as raw text too: fewer escapes, GFM autolinks of http(s) URLs are fine there.
_EXPORT_ESCAPES = {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
    "]": "\\]", "|": "\\|", "~": "\\~", "$": "\\$",
}
# HTML: every character Markdown could read is an entity too, so the output stays inert even if a
# renderer parses it as Markdown after all.
_HTML_ESCAPES = {c: f"&#{ord(c)};" for c in "&<>\"'`*_[]()|~:@\\!#{}="} | {"$": LONE_DOLLAR}
_LINE_START = re.compile(r"^([ \t]*)(?:([#>+\-=])|(\d+)([.)]))", re.M)
_WWW = re.compile(r"(?i)\bwww\.")


def escape_html(text: str) -> str:
    """Plain text → HTML text or attribute value (quotes escaped; no dollar tricks)."""
    return html.escape(text, quote=True).replace("$", "&#36;")


def _escape_chars(text: str, table: dict[str, str]) -> str:
    return "".join(table.get(c, c) for c in text)


def _escape_plain(text: str, target: Target) -> str:
    if target == "html":
        return _escape_chars(text, _HTML_ESCAPES)
    table = _CHAT_ESCAPES if target == "chat" else _EXPORT_ESCAPES
    out = _escape_chars(text, table)
    if target == "chat":
        out = _WWW.sub("www&#46;", out)  # no GFM autolink of www.host
    # A line must not open a heading, quote, list or setext underline.
    return _LINE_START.sub(_escape_line_start, out)


def _escape_line_start(m: re.Match[str]) -> str:
    if m.group(2):
        return f"{m.group(1)}\\{m.group(2)}"
    return f"{m.group(1)}{m.group(3)}\\{m.group(4)}"


def _math(inner: str, display: bool, target: Target) -> str:
    fence = "$$" if display else "$"
    if target == "export":  # raw LaTeX for Markdown viewers with math; no HTML in it
        return fence + inner.replace("<", r"\lt ").replace(">", r"\gt ") + fence
    # Entities for what Markdown could read even inside math (code spans, links): the browser decodes them
    # before KaTeX sees the text, so the formula is unchanged.
    escaped = html.escape(inner, quote=True).replace("`", "&#96;").replace("[", "&#91;").replace("]", "&#93;")
    return fence + escaped + fence


def _emphasis_and_text(text: str, target: Target) -> str:
    out: list[str] = []
    pos = 0
    for m in _EMPHASIS.finditer(text):
        out.append(_escape_plain(text[pos:m.start()], target))
        inner = _escape_plain(m.group(2), target)
        if target == "html":
            tag = "strong" if m.group(1) == "**" else "em"
            out.append(f"<{tag}>{inner}</{tag}>")
        else:
            out.append(f"{m.group(1)}{inner}{m.group(1)}")
        pos = m.end()
    out.append(_escape_plain(text[pos:], target))
    return "".join(out)


def inline(text: str | None, target: Target = "chat") -> str:
    """Untrusted display text → safe Markdown (``chat``/``export``) or HTML (``html``).

    Kept: ``$…$``/``$$…$$`` math (HTML-escaped inside) and ``*emphasis*``/``**bold**``. Everything
    else is literal text: no links, images, HTML, code or autolinks can come out of it.
    """
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\x00", "")
    if target != "html":  # an indented line would become a code block showing our entities literally
        text = re.sub(r"\n[ \t]+", "\n", text)
    out: list[str] = []
    pos = 0
    for m in MATH.finditer(text):
        out.append(_emphasis_and_text(text[pos:m.start()], target))
        if next((x for x in reversed(out) if x), "").endswith("$"):  # "$a$$b$" must not read as "$$" display math
            out.append(" " if target == "export" else '<span class="pc-sep"></span>')
        display = m.group(1) is not None
        out.append(_math(m.group(1) if display else m.group(2), display, target))
        pos = m.end()
    out.append(_emphasis_and_text(text[pos:], target))
    return "".join(out)


def safe_url(url: str | None) -> str | None:
    """The URL when it is an absolute http(s) link without credentials, percent-quoted; else None."""
    if not url or not isinstance(url, str):
        return None
    url = url.strip()
    if any(ord(c) < 0x21 or c in '"<>\\`' for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    return quote(url, safe=":/?#[]!&()*+,;=%~-._'")


def paper_links(paper_id: str, url: str | None = None) -> list[tuple[str, str]]:
    """(label, href) links for a paper: arXiv and DOI from its id, else its own http(s) URL."""
    links: list[tuple[str, str]] = []
    kind, _, ident = paper_id.partition(":")
    if kind == "arxiv" and ident:
        links.append((f"arXiv:{ident}", f"https://arxiv.org/abs/{quote(ident, safe='./')}"))
    elif kind == "doi" and ident:
        links.append((f"doi:{ident}", f"https://doi.org/{quote(ident, safe='/.()-_;:')}"))
    own = safe_url(url)
    if own and all(own != href for _, href in links):
        host = urlsplit(own).hostname or "link"
        links.append((host.removeprefix("www."), own))
    return links
