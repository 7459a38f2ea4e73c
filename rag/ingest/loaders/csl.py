"""CSL-JSON, the citation-style JSON that Zotero, Mendeley and Better BibTeX export.

A JSON list of items with ``type``, ``title``, ``author: [{family, given}]``,
``issued: {"date-parts": [[2021, 3]]}``, ``abstract``, ``DOI``, ``URL``, ``container-title`` and ``keyword``.
Recognised by that shape, so the year comes from ``issued`` and authors from their family/given parts
(surname last, as an author search expects). Ids: ``doi:``/``arxiv:`` when known, else ``csl:<id>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import make_paper, problem, read_text, split_authors, split_list

# The head of a CSL-JSON file: a list whose first item has a "type" and an "issued" object or an author list
# of objects (generic JSON lists rarely have either).
_START = re.compile(r"^\s*\[\s*\{")
_TYPE = re.compile(r'"type"\s*:\s*"')
_CSL_KEY = re.compile(r'"issued"\s*:\s*\{|"author"\s*:\s*\[\s*\{\s*"(?:family|given|literal)"')
_PARTS = ("given", "dropping-particle", "non-dropping-particle", "family", "suffix")


def looks_like_csl(head: str) -> bool:
    """The first 64 KB look like a CSL-JSON list."""
    text = head.lstrip("\ufeff")
    return bool(_START.match(text) and _TYPE.search(text) and _CSL_KEY.search(text))


def csl_name(person: Any) -> str | None:
    """One CSL name object as "Given family" (``literal`` names as they are)."""
    if not isinstance(person, dict):
        return person if isinstance(person, str) else None
    if isinstance(person.get("literal"), str):
        return person["literal"]
    parts = [person[k] for k in _PARTS if isinstance(person.get(k), str) and person[k].strip()]
    return " ".join(parts) or None


def csl_year(issued: Any) -> Any:
    """The year of a CSL date: ``date-parts`` first, then its ``raw``/``literal`` text."""
    if not isinstance(issued, dict):
        return issued if isinstance(issued, (str, int)) else None
    parts = issued.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        first = parts[0][0]
        if isinstance(first, (int, str)) and not isinstance(first, bool):
            return first
    for key in ("raw", "literal"):
        if isinstance(issued.get(key), str):
            return issued[key]
    return None


def csl_paper(path: Path, n: int, item: dict[str, Any]) -> Item:
    """One CSL item → ``Paper`` or ``RecordProblem``."""
    people: list[Any] = item["author"] if isinstance(item.get("author"), list) else []
    authors = [name for name in map(csl_name, people) if name]
    own = item.get("id")
    return make_paper(
        path, n, abstract=item.get("abstract"), title=item.get("title"), authors=split_authors(authors),
        categories=split_list(item.get("keyword")), year=csl_year(item.get("issued")),
        venue=item.get("container-title"), url=item.get("URL"), doi=item.get("DOI"), kind="csl",
        own_id=own if isinstance(own, (str, int)) and not isinstance(own, bool) else None)


class CslJsonLoader:
    """Loader for CSL-JSON libraries."""

    name = "csl-json"

    def sniff(self, path: Path, head: str) -> bool:
        """A JSON list whose items carry CSL's ``type`` and ``issued``/``author`` objects."""
        return path.suffix.lower() in ("", ".json", ".csljson") and looks_like_csl(head)

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Parse the whole list now (so errors come before any paper), then yield its items; ``n`` is the
        item's position in the list."""
        try:
            data = json.loads(read_text(path))
        except RecursionError:
            raise InputError("JSON nested too deeply to be a CSL-JSON library", where=str(path)) from None
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON: {e.msg} (column {e.colno})", where=f"{path}:{e.lineno}") from None
        if isinstance(data, dict):  # {"items": [...]}, or one item copied on its own
            data = data["items"] if isinstance(data.get("items"), list) else [data]
        if not isinstance(data, list):
            raise InputError(f"CSL-JSON must be a list of items, not a {type(data).__name__}", where=str(path))
        return (csl_paper(path, i, r) if isinstance(r, dict)
                else problem(path, i, f"item {i} is a {type(r).__name__}, not an object")
                for i, r in enumerate(data, 1))
