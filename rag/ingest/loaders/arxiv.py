"""arXiv metadata: the Kaggle ``arxiv-metadata-oai-snapshot.json`` (JSON Lines, streamed) and the Atom
feed the arXiv API (``export.arxiv.org/api/query``) returns (parsed with expat, no DTDs or entities)."""

from __future__ import annotations

import json
import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import (
    as_text,
    clean_name,
    iter_lines,
    make_paper,
    problem,
    split_authors,
    squash_spaces,
)
from rag.ingest.loaders.safe_xml import SafeTree

log = logging.getLogger(__name__)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
_SNAPSHOT_KEYS = {"authors_parsed", "update_date", "versions", "submitter", "journal-ref", "report-no"}


def first_json_object(head: str) -> dict[str, Any] | None:
    """The first non-blank line of ``head`` parsed as a JSON object; keys found by regex if the line is cut."""
    for line in head.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("{"):
            return None
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            keys = re.findall(r'"([^"\\]{1,64})"\s*:', line)
            return dict.fromkeys(keys) if keys else None
        return obj if isinstance(obj, dict) else None
    return None


# ---------------------------------------------------------------- JSON Lines snapshot

def _snapshot_authors(row: dict[str, Any]) -> list[str]:
    parsed = row.get("authors_parsed")
    if isinstance(parsed, list) and parsed and all(isinstance(p, list) for p in parsed):
        names = []
        for p in parsed:
            parts = [x for x in p if isinstance(x, str)]
            last, first, suffix = (parts + ["", "", ""])[:3]
            names.append(clean_name(" ".join(x for x in (first, last, suffix) if x.strip())))
        return [n for n in dict.fromkeys(names) if n]
    return split_authors(row.get("authors"))


def _snapshot_year(row: dict[str, Any]) -> Any:
    versions = row.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict) and versions[0].get("created"):
        return versions[0]["created"]
    return row.get("update_date")


def snapshot_paper(path: Path, n: int, row: dict[str, Any]) -> Item:
    """One snapshot row → ``Paper`` (or ``RecordProblem``)."""
    raw_id = squash_spaces(as_text(row.get("id")) or "")
    doi = (as_text(row.get("doi")) or "").split()
    return make_paper(
        path, n, abstract=row.get("abstract"), title=row.get("title"), authors=_snapshot_authors(row),
        categories=(as_text(row.get("categories")) or "").split(), year=_snapshot_year(row),
        venue=row.get("journal-ref"), doi=doi[0] if doi else None, arxiv_id=raw_id,
        url=f"https://arxiv.org/abs/{raw_id}" if raw_id else None, kind="arxiv", own_id=raw_id or None)


class ArxivJsonlLoader:
    """Loader for the arXiv metadata snapshot (one JSON object per line)."""

    name = "arxiv-jsonl"

    def sniff(self, path: Path, head: str) -> bool:
        """JSON Lines whose rows have ``id`` and ``abstract`` plus snapshot-only fields (update_date, versions, …)."""
        obj = first_json_object(head)
        return obj is not None and "id" in obj and "abstract" in obj and bool(_SNAPSHOT_KEYS & obj.keys())

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Stream the snapshot line by line."""
        return iter_json_lines(path, lambda n, row: snapshot_paper(path, n, row))


def iter_json_lines(path: Path, build: Any) -> Iterator[Item]:
    """Stream a JSON Lines file; bad lines become problems. If none of the first lines is a JSON object
    the file is not JSON Lines and an ``InputError`` is raised before anything is yielded."""
    held: list[Item] = []
    seen_object = False
    for n, line in iter_lines(path):
        if line is None:
            item: Item | dict[str, Any] = problem(path, n, "line is not valid UTF-8")
        elif not line.strip():
            continue
        else:
            try:
                obj = json.loads(line)
            except RecursionError:
                item = problem(path, n, "JSON nested too deeply")
            except ValueError as e:
                item = problem(path, n, f"invalid JSON: {e}")
            else:
                item = obj if isinstance(obj, dict) else problem(path, n, f"expected a JSON object, got "
                                                                          f"{type(obj).__name__}")
        if isinstance(item, dict):
            if not seen_object:
                seen_object = True
                yield from held
                held.clear()
            yield build(n, item)
        elif seen_object:
            yield item
        else:
            held.append(item)
            if len(held) >= 5:
                break
    if not seen_object:
        first = f": {held[0]}" if held else ""
        raise InputError(f"not JSON Lines (no line holds a JSON object){first}", where=str(path))


# ---------------------------------------------------------------- Atom feed

def _text(el: ET.Element, tag: str) -> str | None:
    found = el.find(tag)
    return found.text if found is not None and found.text else None


def atom_paper(path: Path, line: int, entry: ET.Element) -> Item:
    """One Atom ``<entry>`` → ``Paper`` (or ``RecordProblem``)."""
    raw_id = squash_spaces(_text(entry, f"{ATOM}id") or "")
    authors = [clean_name(a.text or "") for a in entry.findall(f"{ATOM}author/{ATOM}name")]
    cats: list[str] = []
    primary = entry.find(f"{ARXIV}primary_category")
    for el in ([primary] if primary is not None else []) + entry.findall(f"{ATOM}category"):
        term = squash_spaces(el.get("term") or "")
        if term and term not in cats:
            cats.append(term)
    url = None
    for link in entry.findall(f"{ATOM}link"):
        if link.get("rel", "alternate") == "alternate" and link.get("href"):
            url = link.get("href")
            break
    return make_paper(
        path, line, abstract=_text(entry, f"{ATOM}summary"), title=_text(entry, f"{ATOM}title"),
        authors=[a for a in dict.fromkeys(authors) if a], categories=cats,
        year=_text(entry, f"{ATOM}published") or _text(entry, f"{ATOM}updated"),
        venue=_text(entry, f"{ARXIV}journal_ref"), doi=_text(entry, f"{ARXIV}doi"), arxiv_id=raw_id,
        url=url, kind="atom", own_id=raw_id or None)


class ArxivAtomLoader:
    """Loader for arXiv API Atom feeds."""

    name = "arxiv-atom"

    def sniff(self, path: Path, head: str) -> bool:
        """XML whose root is an Atom ``<feed>`` (the arXiv API response)."""
        return "<feed" in head and ("arxiv" in head.lower() or "http://www.w3.org/2005/Atom" in head)

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole feed first (so a malformed one fails before any paper), then yield entries."""
        tree = SafeTree(path)
        root = tree.parse()
        if root.tag != f"{ATOM}feed":
            raise InputError(f"not an Atom feed (root element is <{root.tag.split('}')[-1]}>)", where=str(path))
        entries = root.findall(f"{ATOM}entry")
        errors = [e for e in entries if "/api/errors" in (_text(e, f"{ATOM}id") or "")]
        if errors and len(errors) == len(entries):
            msg = squash_spaces(_text(errors[0], f"{ATOM}summary") or "unknown error")
            raise InputError(f"the arXiv API answered with an error: {msg}", where=str(path))
        if not entries:
            log.warning("%s: the feed has no entries", path)
        return (problem(path, tree.lines.get(id(e), 0),
                        "arXiv API error: " + squash_spaces(_text(e, f"{ATOM}summary") or ""))
                if e in errors else atom_paper(path, tree.lines.get(id(e), 0), e) for e in entries)
