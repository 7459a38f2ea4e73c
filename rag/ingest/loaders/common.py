"""Helpers every loader shares: reading files safely, cleaning fields, building a ``Paper``.

Whole-file problems (missing, unreadable, empty, binary, wrong encoding) become one ``InputError``;
record-level problems become a ``RecordProblem`` so one bad record never loses the others.
"""

from __future__ import annotations

import codecs
import contextvars
import logging
import os
import re
from collections.abc import Callable, Generator
from pathlib import Path
from typing import IO, Any

from rag.errors import InputError
from rag.ingest.loaders.base import RecordProblem, note
from rag.ingest.loaders.fields import (  # noqa: F401  (re-exported: the loaders import field helpers from here)
    as_text,
    clean_name,
    clean_title,
    fix_latex,
    parse_year,
    split_authors,
    split_list,
    squash_spaces,
    unescape_entities,
)
from rag.limits import DEFAULTS, cap_abstract
from rag.records import Paper, assign_id, clean_arxiv_id, clean_doi
from rag.text import normalize_abstract

log = logging.getLogger(__name__)

FORMATS = ("listing", "arxiv-jsonl", "arxiv-atom", "bibtex", "csv", "json", "jsonl", "beir")
HEAD_BYTES = 64 * 1024
MIN_ABSTRACT_CHARS = 20
MAX_WHOLE_FILE_BYTES = 512 * 1024 * 1024  # formats that must be parsed in one piece (JSON, BibTeX, Atom)
MAX_LINE_BYTES = 64 * 1024 * 1024  # line formats (JSONL, CSV): longer lines are not records
# limits.abstract_chars for the records being read; ``rag.ingest.loaders.iter_records`` sets it around every step.
ABSTRACT_CHARS: contextvars.ContextVar[int] = contextvars.ContextVar("abstract_chars", default=DEFAULTS.abstract_chars)

_MAGIC = {b"\x1f\x8b": "gzip-compressed; decompress it first", b"PK\x03\x04": "a zip archive; extract it first",
          b"%PDF": "a PDF; ingest it without --format (or with --format pdf)",
          # UTF-32 before UTF-16: the UTF-32-LE BOM starts with the UTF-16-LE one (matched in this order)
          b"\xff\xfe\x00\x00": "UTF-32 encoded; save it as UTF-8",
          b"\x00\x00\xfe\xff": "UTF-32 encoded; save it as UTF-8",
          b"\xff\xfe": "UTF-16 encoded; save it as UTF-8", b"\xfe\xff": "UTF-16 encoded; save it as UTF-8"}


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, turning OS errors into one clear ``InputError``."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError("file not found", where=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", where=str(path)) from None
    except PermissionError:
        raise InputError("cannot read the file: permission denied", where=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read the file: {e.strerror or e}", where=str(path)) from None


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of ``path``."""
    with open_binary(path) as f:
        try:
            return f.read(size)
        except OSError as e:
            raise InputError(f"cannot read the file: {e.strerror or e}", where=str(path)) from None


def check_file(path: Path) -> bytes:
    """Raise ``InputError`` unless ``path`` is a readable, non-empty, non-binary file; return its head."""
    if not path.exists():
        raise InputError("file not found", where=str(path))
    if path.is_dir():
        raise InputError("is a directory, not a file (only a BEIR folder with corpus.jsonl can be loaded as a "
                         "folder)", where=str(path))
    head = read_head(path)
    if not head:
        raise InputError("the file is empty", where=str(path))
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            raise InputError(f"the file is {what}", where=str(path))
    if b"\x00" in head:
        raise InputError("the file is binary, not text (it contains NUL bytes)", where=str(path))
    if not head.strip() and _only_whitespace(path):
        raise InputError("the file contains only whitespace", where=str(path))
    return head


def _only_whitespace(path: Path) -> bool:
    with open_binary(path) as f:
        while chunk := f.read(1 << 20):
            if chunk.strip():
                return False
    return True


def utf8_problem(data: bytes, *, final: bool) -> str | None:
    """Describe why ``data`` is not UTF-8 (line and byte), or None when it is.

    With ``final=False`` a multi-byte character cut at the end of ``data`` is not an error.
    """
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
        return None
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        return f"line {line} is not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"


def require_utf8(path: Path, head: bytes) -> None:
    """Raise ``InputError`` when the head of the file is not UTF-8 (e.g. a Latin-1 export)."""
    why = utf8_problem(head, final=len(head) < HEAD_BYTES)
    if why:
        raise InputError(f"the file is not UTF-8 text: {why}; re-save it as UTF-8", where=str(path))


def read_text(path: Path) -> str:
    """The whole file decoded as UTF-8 (a BOM is dropped); for formats parsed in one piece."""
    size = path.stat().st_size
    if size > MAX_WHOLE_FILE_BYTES:
        raise InputError(f"the file is {size / 2**20:.0f} MiB; this format is parsed in one piece and the limit is "
                         f"{MAX_WHOLE_FILE_BYTES // 2**20} MiB (convert it to JSON Lines)", where=str(path))
    with open_binary(path) as f:
        data = f.read()
    why = utf8_problem(data, final=True)
    if why:
        raise InputError(f"the file is not UTF-8 text: {why}; re-save it as UTF-8", where=str(path))
    return data.decode("utf-8-sig")


def iter_lines(path: Path, encoding: str = "utf-8", keepends: bool = False,
               on_error: Callable[[int], None] | None = None) -> Generator[tuple[int, str | None], None, None]:
    """Stream ``(line_number, text)`` pairs; ``text`` is None for a line that cannot be decoded (or, with
    ``on_error``, the line decoded with replacement characters after calling ``on_error(line_number)``).

    Reads bytes line by line, so a multi-GB file is never held in memory. A UTF-8 BOM is dropped.
    """
    with open_binary(path) as f:
        for n, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:  # one record is never this long: a binary blob, or not a line format
                raise InputError(f"line {n} is longer than {MAX_LINE_BYTES // 2**20} MiB; not a file of records",
                                 where=f"{path}:{n}")
            if n == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError:
                if on_error is None:
                    yield n, None
                    continue
                on_error(n)
                text = raw.decode(encoding, errors="replace")
            yield n, text if keepends else text.rstrip("\r\n")


def head_text(head: bytes) -> str:
    """The head decoded for sniffing (never fails; a non-UTF-8 head is read as Latin-1 so its layout shows)."""
    if utf8_problem(head, final=len(head) < HEAD_BYTES) is None:
        return head.decode("utf-8-sig", errors="replace")
    return head.decode("latin-1")


# ---------------------------------------------------------------- building records

# What exporters write in place of a missing abstract (Scopus: "[No abstract available]"). Stored as an
# abstract, one such text would also make every other placeholder record look like its duplicate.
_PLACEHOLDER = re.compile(
    r"(?:no|without)\s+abstract(?:\s+(?:is\s+)?(?:available|provided|given))?|abstract\s+(?:is\s+)?"
    r"(?:not\s+)?(?:available|provided|given)|not\s+available|n\s*/?\s*a|none|null|nil|-+|\.+|\?+", re.I)


def is_placeholder(text: str) -> bool:
    """``text`` only says that there is no abstract: "N/A", "[No abstract available]", "-"…"""
    core = re.sub(r"^[\s\[({<*_\"']+|[\s\])}>*_\"'.:;,!]+$", "", text)
    return len(core) < 60 and (not core or _PLACEHOLDER.fullmatch(core) is not None)


def problem(path: Path, line: int, reason: str) -> RecordProblem:
    """A skipped record at ``path:line``."""
    return RecordProblem(str(path), line, reason)


def make_paper(path: Path, line: int, *, abstract: Any, title: Any = None, authors: list[str] | None = None,
               categories: list[str] | None = None, year: Any = None, venue: Any = None, url: Any = None,
               doi: Any = None, arxiv_id: Any = None, kind: str | None = None,
               own_id: Any = None) -> Paper | RecordProblem:
    """Normalise the raw fields of one record into a ``Paper``, or a ``RecordProblem`` when it has no usable
    abstract. The id comes from ``assign_id``: arXiv id, else DOI, else ``kind:own_id``, else a content hash."""
    raw = as_text(abstract)
    if raw is None or not raw.strip() or is_placeholder(raw):
        return problem(path, line, "no abstract")
    limit = ABSTRACT_CHARS.get()
    size = len(raw)
    if size > 2 * limit:  # normalising only shortens text much, so the rest would be cut anyway: skip the work
        raw = raw[:2 * limit]
    text, cut = cap_abstract(normalize_abstract(fix_latex(raw)), limit)
    if cut:
        note(path, line, f"abstract cut to the {limit}-character limit, PAPERCHAT_LIMITS__ABSTRACT_CHARS "
                         f"({size} characters, now {len(text)})")
    if len(text) < MIN_ABSTRACT_CHARS:
        return problem(path, line, f"abstract too short ({len(text)} characters): {text!r}")
    arxiv = clean_arxiv_id(as_text(arxiv_id))
    clean = clean_doi(as_text(doi))
    own = squash_spaces(as_text(own_id) or "") or None
    if own and not arxiv and not clean:  # an id column often holds an arXiv id or a DOI
        arxiv = clean_arxiv_id(own)
        clean = None if arxiv else clean_doi(own)
    link = squash_spaces(as_text(url) or "") or None
    if not link and arxiv:
        link = f"https://arxiv.org/abs/{arxiv}"
    elif not link and clean:
        link = f"https://doi.org/{clean}"
    return Paper(
        id=assign_id(kind, own, doi=clean, arxiv_id=arxiv, abstract=text),
        abstract=text,
        title=clean_title(as_text(title)),
        authors=list(authors or []),
        categories=list(categories or []),
        year=parse_year(year),
        venue=clean_title(as_text(venue)),
        url=link,
        doi=clean,
        arxiv_id=arxiv,
        origin_file=str(path),
        origin_line=line,
    )


def path_of(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` with ``~`` expanded."""
    return Path(path).expanduser()
