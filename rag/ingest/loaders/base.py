"""What every loader yields, and the helpers they share."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rag.records import Paper

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordProblem:
    """A record that was skipped: where it is and why."""

    file: str
    line: int
    reason: str
    # a record skipped now whose paper an earlier run may have stored (a Zotero item without an abstract, stored
    # from its full text): (paper id, collections it names), so that paper keeps its synced memberships
    keeps: tuple[str, tuple[str, ...]] | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


Item = Paper | RecordProblem

# Records kept with a caveat (an abstract cut to the length limit, a BibTeX field given twice) are noted, not
# skipped. A caller that summarises them (``rag.ingest.report.collecting``) sets a collector here; the same
# note twice (a strict run reads its file twice) is kept once.
NOTES: ContextVar[dict[RecordProblem, None] | None] = ContextVar("record_notes", default=None)


def note(path: Path, line: int, reason: str) -> None:
    """Note that the record at ``path:line`` was kept with a caveat: into the collector when one is set (one
    log line each only at INFO, i.e. with -v), else as a warning."""
    item = RecordProblem(str(path), line, reason)
    sink = NOTES.get()
    if sink is None:
        log.warning("%s", item)
        return
    sink[item] = None
    log.info("noted %s", item)


@dataclass
class LoadResult:
    format: str
    papers: list[Paper] = field(default_factory=list)
    problems: list[RecordProblem] = field(default_factory=list)


class Loader(Protocol):
    """One input format. ``sniff`` decides from the name and first bytes; ``iter_records`` streams.

    ``iter_records`` raises ``InputError`` when the file cannot be parsed at all (before yielding
    anything where possible) and yields a ``RecordProblem`` for each record it has to skip.
    """

    name: str

    def sniff(self, path: Path, head: str) -> bool: ...

    def iter_records(self, path: Path, mapping: dict[str, str] | None = None) -> Iterator[Item]: ...
