"""The paper record every loader produces (``Paper``), the ids and labels derived from it, and the paper as
read back from the store (``StoredPaper``), which retrieval, answers, citations and every front end share."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rag.contribution import paper_phrase
from rag.display import label_surnames
from rag.text import normalize_for_hash

if TYPE_CHECKING:
    from rag.ingest.fulltext.base import Passage

_ARXIV_NEW = re.compile(r"^(\d{4}\.\d{4,5})(v\d+)?$")
_ARXIV_OLD = re.compile(r"^([a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")
_DOI = re.compile(r"^10\.\d{4,9}/\S+$")


def clean_arxiv_id(raw: str | None) -> str | None:
    """Return the version-less arXiv id from an id or abs/pdf URL, or None when it is not one."""
    if not raw:
        return None
    s = raw.strip()
    s = re.sub(r"^(https?://)?(www\.|export\.)?arxiv\.org/(abs|pdf)/", "", s)
    s = re.sub(r"^arxiv:", "", s, flags=re.I)
    s = re.sub(r"\.pdf$", "", s)
    for pat in (_ARXIV_NEW, _ARXIV_OLD):
        m = pat.match(s)
        if m:
            return m.group(1)
    return None


def clean_doi(raw: str | None) -> str | None:
    """Return a lower-cased bare DOI from a DOI or doi.org URL, or None when it is not one."""
    if not raw:
        return None
    s = raw.strip()
    s = re.sub(r"^(https?://)?(dx\.)?doi\.org/", "", s, flags=re.I)
    s = re.sub(r"^doi:\s*", "", s, flags=re.I)
    s = s.lower()
    return s if _DOI.match(s) else None


@dataclass
class Paper:
    """One paper as paperchat stores it. ``abstract`` is display text (Markdown, ``$math$`` kept)."""

    id: str
    abstract: str
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    origin_file: str = ""
    origin_line: int = 0
    # Named sets the record belongs to where it was read from (a Zotero collection path "Parent/Child").
    # Membership is kept apart from the paper (``rag.index.collections``), so it is not part of the content hash.
    collections: list[str] = field(default_factory=list)
    # The full text's passages (``rag.ingest.fulltext.Passage``), read only when full text is on: stored as further
    # rows of the paper with their own version, so not part of the content hash either.
    passages: tuple[Passage, ...] = field(default=(), compare=False, repr=False)

    @property
    def origin(self) -> str:
        """``file:line`` of the record this paper was read from."""
        return f"{self.origin_file}:{self.origin_line}"

    @property
    def abstract_hash(self) -> str:
        """Identity of the abstract text, insensitive to whitespace, case and LaTeX noise."""
        return hashlib.sha1(normalize_for_hash(self.abstract).encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """A heading that is never empty: the title, else first authors + the paper's key phrase."""
        if self.title:
            return self.title
        who = label_surnames(self.authors)
        phrase = paper_phrase(self.abstract)
        if who and phrase:
            return f"{who}: {phrase}"
        return who or phrase or f"Paper {self.id}"

    def content_hash(self) -> str:
        """Hash of everything stored for the paper; a changed hash means 'update in place'.

        The label is stored too and derived by code (``rag.contribution``), so it is part of the hash: when
        labelling improves, the next ingest of the same files rewrites exactly the papers whose label changed."""
        data = asdict(self)
        data.pop("origin_file")
        data.pop("origin_line")
        data.pop("collections")
        data.pop("passages")
        data["label"] = self.label
        return hashlib.sha1(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("passages")
        d["label"] = self.label
        return d


@dataclass(frozen=True)
class StoredPaper:
    """A paper as read back from the store (``rag.index.rows.read_paper``): what retrieval ranks, answers
    cite and front ends list. ``label`` is the heading stored at ingest (never empty); ``origin`` is
    ``file:line`` of the record it was read from."""

    id: str
    label: str
    title: str | None = None
    authors: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    abstract: str = ""
    origin: str | None = None

    @property
    def heading(self) -> str:
        """What a citation or a source is headed by: the title, else the label."""
        return self.title or self.label or self.id

    def to_dict(self) -> dict[str, Any]:
        """The public paper object (``paperchat papers --json``), lists as lists."""
        return {"id": self.id, "label": self.label, "title": self.title, "authors": list(self.authors),
                "categories": list(self.categories), "year": self.year, "venue": self.venue, "url": self.url,
                "doi": self.doi, "arxiv_id": self.arxiv_id, "abstract": self.abstract, "origin": self.origin}


def assign_id(paper_kind: str | None, own_id: str | None, *, doi: str | None, arxiv_id: str | None,
              abstract: str) -> str:
    """Stable id: the arXiv id, else the DOI, else the record's own key in its file, else a content hash."""
    if arxiv_id:
        return f"arxiv:{arxiv_id}"
    if doi:
        return f"doi:{doi}"
    if own_id and paper_kind:
        return f"{paper_kind}:{own_id}"
    return "h:" + hashlib.sha1(normalize_for_hash(abstract).encode()).hexdigest()[:16]
