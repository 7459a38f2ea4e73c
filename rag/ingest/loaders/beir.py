"""BEIR corpora: ``corpus.jsonl`` rows of ``_id``, ``title``, ``text`` and optional ``metadata``.

The path may be the corpus file or the dataset folder holding it. Ids are ``<dataset>:<_id>`` where the
dataset is the folder name (``cranfield/corpus.jsonl`` → ``cranfield:1``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag.ingest.loaders.arxiv import first_json_object, iter_json_lines
from rag.ingest.loaders.base import Item
from rag.ingest.loaders.common import as_text, make_paper, parse_year, split_authors, split_list
from rag.records import Paper, assign_id

CORPUS = "corpus.jsonl"


def corpus_file(path: Path) -> Path:
    """The corpus file for a BEIR dataset folder or file."""
    return path / CORPUS if path.is_dir() else path


def dataset_name(path: Path) -> str:
    """The id kind: the dataset folder's name (or the file's stem when it is not ``corpus.jsonl``)."""
    f = corpus_file(path)
    name = f.parent.name if f.stem == "corpus" else f.stem
    return re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "beir"


def clean_beir_title(raw: Any) -> str | None:
    """Drop the tokenised-text artifact of a trailing `` .`` (``"… slipstream ."``)."""
    s = as_text(raw)
    if not s:
        return None
    return re.sub(r"(\s+[.])+\s*$", "", s).strip() or None


def beir_paper(path: Path, n: int, row: dict[str, Any], kind: str) -> Item:
    """One corpus row → ``Paper`` or ``RecordProblem``."""
    meta: dict[str, Any] = row["metadata"] if isinstance(row.get("metadata"), dict) else {}
    published = as_text(meta.get("source"))  # BEIR's bibliographic field: where the paper was published
    year = meta.get("year") or meta.get("date")
    if parse_year(year) is None and published:  # cranfield: "j. ae. scs. 25, 1958, 324."
        year = published
    own = (as_text(row.get("_id")) or "").strip() or None
    item = make_paper(
        path, n, abstract=row.get("text"), title=clean_beir_title(row.get("title")),
        authors=split_authors(meta.get("authors")), categories=split_list(meta.get("categories")), year=year,
        venue=meta.get("venue") or meta.get("journal"), url=meta.get("url"), doi=meta.get("doi"),
        kind=kind, own_id=own)
    if isinstance(item, Paper):  # qrels refer to _id, so the id is always <dataset>:<_id>
        item.id = assign_id(kind, own, doi=None, arxiv_id=None, abstract=item.abstract)
    return item


class BeirLoader:
    """Loader for a BEIR ``corpus.jsonl`` (or the folder holding it)."""

    name = "beir"

    def sniff(self, path: Path, head: str) -> bool:
        """``corpus.jsonl``, a folder with one, or JSON Lines whose rows have ``_id``, ``title`` and ``text``."""
        if path.is_dir():
            return (path / CORPUS).is_file()
        if path.name.lower() == CORPUS:
            return True
        obj = first_json_object(head)
        return obj is not None and {"_id", "title", "text"} <= obj.keys()

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]:
        """Stream the corpus line by line."""
        f = corpus_file(path)
        kind = dataset_name(path)
        return iter_json_lines(f, lambda n, row: beir_paper(f, n, row, kind))
