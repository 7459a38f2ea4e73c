"""What every loader yields, and the helpers they share."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rag.records import Paper


@dataclass(frozen=True)
class RecordProblem:
    """A record that was skipped: where it is and why."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


Item = Paper | RecordProblem


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
