"""One immutable piece of the lexical index: a batch of papers' term postings, lengths and filter fields.

A segment is a folder written once and never changed: per-term postings (term id → local doc, term
frequency) sorted by term, each doc's length and year, author/category filter postings, and the
forward index (each doc's term ids in text order) that deletions and merges read instead of analysing
text again. Arrays are ``.npy`` files opened memory-mapped, so opening a 100k-paper segment reads only
its small JSON header; the doc records (filter keys, display names) are read only by a merge.

Scores are not stored: BM25's idf and average length are global, so they are computed at query time
from the postings and the index-wide statistics (``rag.index.lexical``), which is what lets a small new
segment join a large one without rewriting it. Term ids are global (the index's vocabulary).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

NO_YEAR = np.iinfo(np.int32).min
_ARRAYS = ("lengths", "years", "terms", "indptr", "docs", "tf", "fwd", "fwd_off",
           "authors_off", "authors_pos", "categories_off", "categories_pos")


@dataclass
class Doc:
    """What a segment keeps of one paper."""

    key: str  # ``paper_id#content_hash``: the stored version it was analysed from
    pid: str
    terms: np.ndarray  # global term ids, in text order (int32)
    year: int | None
    author_keys: list[str]
    category_keys: list[str]
    authors: list[str]  # display names, for the question-filter catalog
    categories: list[str]


def _clip_year(year: int | None) -> int:
    return int(NO_YEAR) if year is None else min(max(year, int(NO_YEAR)), 2**31 - 1)


def year_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Postings(Mapping[str, np.ndarray]):
    """Key → local doc positions, as saved (sorted keys, offsets, one positions array)."""

    def __init__(self, keys: list[str], offsets: np.ndarray, pos: np.ndarray) -> None:
        self._keys, self._off, self._pos = keys, offsets, pos
        self._index: dict[str, int] = dict(zip(keys, range(len(keys))))

    def __getitem__(self, key: str) -> np.ndarray:
        i = self._index[key]
        return np.asarray(self._pos[self._off[i]:self._off[i + 1]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _postings(lists: Sequence[list[str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    table: dict[str, list[int]] = {}
    for i, keys in enumerate(lists):
        for k in dict.fromkeys(keys):
            table.setdefault(k, []).append(i)
    keys = sorted(table)
    off = np.cumsum([0] + [len(table[k]) for k in keys]).astype(np.int64)
    pos = np.array([i for k in keys for i in table[k]], dtype=np.int32)
    return keys, off, pos


def file_sha256(path: Path) -> str:
    """A file's sha256, read in 1 MB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a rename into it) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)  # one write: json.dump's many small ones cost 10× more
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


class Segment:
    """An opened segment (arrays memory-mapped)."""

    def __init__(self, folder: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.folder, self.name = folder, folder.name
        self.n: int = int(header["n"])
        self.keys: list[str] = header["keys"]
        self.pids: list[str] = header["pids"]
        a = arrays
        self.lengths, self.years = a["lengths"], a["years"]
        self.terms, self.indptr, self.docs, self.tf = a["terms"], a["indptr"], a["docs"], a["tf"]
        self.fwd, self.fwd_off = a["fwd"], a["fwd_off"]
        self.authors = Postings(header["author_keys"], a["authors_off"], a["authors_pos"])
        self.categories = Postings(header["category_keys"], a["categories_off"], a["categories_pos"])

    # ---- writing ---------------------------------------------------------------------------------
    @staticmethod
    def write(folder: Path, docs: Sequence[Doc]) -> Segment:
        """Write ``docs`` as a new segment in ``folder`` (which must not exist): into ``folder``.tmp, each file
        synced, then renamed, so the folder either holds a whole segment or is absent."""
        tmp = folder.with_name(folder.name + ".tmp")
        if tmp.exists():
            for f in tmp.iterdir():
                f.unlink()
        tmp.mkdir(parents=True, exist_ok=True)
        n = len(docs)
        counts = np.array([len(d.terms) for d in docs], dtype=np.int64)
        flat = np.concatenate([d.terms for d in docs]).astype(np.int32) if n else np.zeros(0, np.int32)
        # (term, doc) pairs as one sortable int: term-major, doc-minor. Built and reduced in place, one temporary
        # at a time: a merge of 100k papers (15M terms) is 120 MB per int64 array.
        key = flat.astype(np.int64)
        key *= max(n, 1)
        key += np.repeat(np.arange(n, dtype=np.int32), counts)
        key.sort()
        new = np.empty(len(key), dtype=bool)
        new[:1] = True
        np.not_equal(key[1:], key[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        del new
        tf = np.empty(len(starts), dtype=np.int32)  # each pair's count: the gap to the next pair's start
        np.subtract(starts[1:], starts[:-1], out=tf[:-1], casting="unsafe")
        tf[-1:] = len(key) - starts[-1:]
        pairs = key[starts]
        del key, starts
        doc = (pairs % max(n, 1)).astype(np.int32)
        pairs //= max(n, 1)
        term = pairs.astype(np.int32)  # sorted: a term's postings are one run
        del pairs
        first = np.flatnonzero(np.diff(term, prepend=-1)) if term.size else np.zeros(0, np.int64)
        uniq = term[first]
        indptr = np.append(first, len(term)).astype(np.int64)
        del term
        a_keys, a_off, a_pos = _postings([d.author_keys for d in docs])
        c_keys, c_off, c_pos = _postings([d.category_keys for d in docs])
        arrays = {
            "lengths": counts.astype(np.int32),
            "years": np.array([_clip_year(year_of(d.year)) for d in docs], dtype=np.int32),
            "terms": uniq.astype(np.int32), "indptr": indptr, "docs": doc, "tf": tf,
            "fwd": flat, "fwd_off": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            "authors_off": a_off, "authors_pos": a_pos, "categories_off": c_off, "categories_pos": c_pos,
        }
        for name, arr in arrays.items():
            with open(tmp / f"{name}.npy", "wb") as out:
                np.save(out, np.asarray(arr), allow_pickle=False)
                out.flush()
                os.fsync(out.fileno())
        write_json(tmp / "docs.json", [[year_of(d.year), d.author_keys, d.category_keys, d.authors, d.categories]
                                       for d in docs])
        header = {"n": n, "keys": [d.key for d in docs], "pids": [d.pid for d in docs],
                  "author_keys": a_keys, "category_keys": c_keys}
        write_json(tmp / "header.json", header)  # written last: its presence marks a complete segment
        fsync_dir(tmp)
        tmp.rename(folder)
        fsync_dir(folder.parent)
        return Segment.open(folder)

    @staticmethod
    def open(folder: Path) -> Segment:
        """Open a saved segment; ``ValueError`` if it is incomplete or inconsistent."""
        try:
            header = json.loads((folder / "header.json").read_text(encoding="utf-8"))
            arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
        except (OSError, ValueError, KeyError) as e:
            raise ValueError(f"segment {folder} unreadable: {e}") from e
        n = int(header.get("n", -1))
        a = arrays
        n_post = int(a["indptr"][-1]) if len(a["indptr"]) else 0
        sizes_ok = (len(header.get("keys", ())) == n == len(header.get("pids", ())) == len(a["lengths"])
                    == len(a["years"]) == len(a["fwd_off"]) - 1 and len(a["indptr"]) == len(a["terms"]) + 1
                    and len(a["docs"]) == len(a["tf"]) == n_post
                    and len(a["fwd"]) == (int(a["fwd_off"][-1]) if n else 0))
        if not sizes_ok:
            raise ValueError(f"segment {folder} inconsistent (sizes do not agree)")
        return Segment(folder, header, arrays)

    # ---- reading ---------------------------------------------------------------------------------
    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(local docs, term frequencies) of a global term id (empty arrays when the segment lacks it)."""
        i = int(np.searchsorted(self.terms, term_id))
        if i >= len(self.terms) or self.terms[i] != term_id:
            return _EMPTY_I, _EMPTY_I
        a, b = int(self.indptr[i]), int(self.indptr[i + 1])
        return np.asarray(self.docs[a:b]), np.asarray(self.tf[a:b])

    def df(self) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, number of this segment's docs holding each)."""
        return np.asarray(self.terms), np.diff(np.asarray(self.indptr))

    def forward(self, local: int) -> np.ndarray:
        return np.asarray(self.fwd[self.fwd_off[local]:self.fwd_off[local + 1]])

    def doc_records(self) -> list[list[Any]]:
        """[year, author keys, category keys, authors, categories] per doc (read from disk on each call)."""
        records: list[list[Any]] = json.loads((self.folder / "docs.json").read_text(encoding="utf-8"))
        return records

    def docs_of(self, locals_: Sequence[int]) -> Iterator[Doc]:
        """The saved docs at these local positions (terms from the forward index, no text analysed)."""
        records = self.doc_records()
        for i in locals_:
            year, akeys, ckeys, authors, cats = records[i]
            yield Doc(self.keys[i], self.pids[i], self.forward(i).copy(), year, akeys, ckeys, authors, cats)


_EMPTY_I = np.zeros(0, dtype=np.int32)
