"""arXiv OAI-PMH harvests: ``ListRecords`` pages in the ``arXiv`` or ``arXivRaw`` metadata format.

The bulk route for whole categories (``https://oaipmh.arxiv.org/oai?verb=ListRecords&metadataPrefix=arXiv``).
``arXiv``: id, title, abstract, ``authors/author/keyname+forenames``, categories, created, journal-ref, doi.
``arXivRaw``: the same with an ``authors`` string and the first ``version/date`` as the date. Parsed with the
Atom loader's DTD-refusing expat tree (lines kept for problems); deleted records are reported, not stored.
Ids: ``arxiv:<id>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import clean_name, make_paper, problem, split_authors, squash_spaces
from rag.ingest.loaders.safe_xml import SafeTree

OAI = "{http://www.openarchives.org/OAI/2.0/}"
ARXIV_OAI = "{http://arxiv.org/OAI/arXiv/}"
ARXIV_RAW = "{http://arxiv.org/OAI/arXivRaw/}"


def _text(el: ET.Element, tag: str) -> str | None:
    found = el.find(tag)
    return found.text if found is not None and found.text and found.text.strip() else None


def _arxiv_authors(meta: ET.Element) -> list[str]:
    names = []
    for a in meta.findall(f"{ARXIV_OAI}authors/{ARXIV_OAI}author"):
        parts = [_text(a, f"{ARXIV_OAI}{k}") for k in ("forenames", "keyname", "suffix")]
        names.append(clean_name(" ".join(p for p in parts if p)))
    return [n for n in dict.fromkeys(names) if n]


def oai_paper(path: Path, line: int, record: ET.Element) -> Item | None:
    """One ``<record>`` → ``Paper``/``RecordProblem``; None for a record in another metadata format."""
    header = record.find(f"{OAI}header")
    if header is not None and header.get("status") == "deleted":
        return problem(path, line, f"deleted in the harvest: {squash_spaces(_text(header, f'{OAI}identifier') or '')}")
    meta = record.find(f"{OAI}metadata/{ARXIV_OAI}arXiv")
    if meta is not None:
        ns, authors, date = ARXIV_OAI, _arxiv_authors(meta), _text(meta, f"{ARXIV_OAI}created")
    else:
        meta = record.find(f"{OAI}metadata/{ARXIV_RAW}arXivRaw")
        if meta is None:
            return None
        ns, authors = ARXIV_RAW, split_authors(_text(meta, f"{ARXIV_RAW}authors"))
        date = _text(meta, f"{ARXIV_RAW}version/{ARXIV_RAW}date")
    raw_id = squash_spaces(_text(meta, f"{ns}id") or "")
    return make_paper(
        path, line, abstract=_text(meta, f"{ns}abstract"), title=_text(meta, f"{ns}title"), authors=authors,
        categories=(_text(meta, f"{ns}categories") or "").split(), year=date,
        venue=_text(meta, f"{ns}journal-ref"), doi=_text(meta, f"{ns}doi"), arxiv_id=raw_id,
        kind="arxiv", own_id=raw_id or None)


class ArxivOaiLoader:
    """Loader for arXiv OAI-PMH ``ListRecords``/``GetRecord`` responses."""

    name = "arxiv-oai"

    def sniff(self, path: Path, head: str) -> bool:
        """XML whose root is ``<OAI-PMH>``."""
        return "<OAI-PMH" in head

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole page first (so a malformed one fails before any paper), then yield its records."""
        tree = SafeTree(path)
        root = tree.parse()
        if root.tag != f"{OAI}OAI-PMH":
            raise InputError(f"not an OAI-PMH response (root element is <{root.tag.split('}')[-1]}>)",
                             where=str(path))
        error = root.find(f"{OAI}error")
        if error is not None:
            raise InputError(f"the OAI-PMH server answered with an error: {error.get('code', '?')} "
                             f"{squash_spaces(error.text or '')}", where=str(path))
        records = root.findall(f"{OAI}ListRecords/{OAI}record") + root.findall(f"{OAI}GetRecord/{OAI}record")
        formats = {child.tag for r in records for md in r.findall(f"{OAI}metadata") for child in md}
        if formats and not formats & {f"{ARXIV_OAI}arXiv", f"{ARXIV_RAW}arXivRaw"}:
            raise InputError("the harvest is in a metadata format paperchat does not read; harvest with "
                             "metadataPrefix=arXiv or arXivRaw", where=str(path))
        items = (oai_paper(path, tree.lines.get(id(r), 1), r) for r in records)
        return (item for item in items if item is not None)
