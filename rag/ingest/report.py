"""Skipped and noted records summarised: one line per reason with a count and a few ``file:line`` examples.

A library export can have hundreds of records without an abstract, or with an abstract cut to the length
limit; one warning each buries everything else, so ingest groups the skipped records (``RecordProblem``s)
and the records kept with a caveat (the loaders' notes, gathered by ``collecting``) by reason, prints the
groups, and writes the full list to a file.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rag.ingest.loaders.base import NOTES, RecordProblem

EXAMPLES = 3
# The part of a reason that names the record (a quoted key or text, a count in brackets, a detail after ':')
# differs from record to record; what is left is the same for every record skipped for that reason.
_DETAIL = re.compile(r"""\s*(?:'[^']*'|"[^"]*"|\([^)]*\)|:.*)""")


def reason_of(problem: RecordProblem) -> str:
    """The reason ``problem`` shares with other records, e.g. "no abstract in entry" for any entry key."""
    kind = _DETAIL.sub("", problem.reason).strip(" ;,")
    kind = re.sub(r"\s+in entry$", "", kind)  # BibTeX's "no abstract in entry 'key'" is the same as "no abstract"
    return kind or problem.reason


def group(problems: Iterable[RecordProblem]) -> dict[str, list[RecordProblem]]:
    """Problems by shared reason, the most frequent reason first."""
    groups: dict[str, list[RecordProblem]] = defaultdict(list)
    for p in problems:
        groups[reason_of(p)].append(p)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def counts(problems: Iterable[RecordProblem]) -> dict[str, int]:
    """How many records were skipped for each reason."""
    return dict(Counter({k: len(v) for k, v in group(problems).items()}))


def _where(p: RecordProblem) -> str:
    return f"{Path(p.file).name}:{p.line}"


@contextmanager
def collecting() -> Iterator[dict[RecordProblem, None]]:
    """Gather the notes the loaders make in this block (records kept with a caveat) instead of logging a
    warning for each; yields them, in the order made, as the keys of a dict."""
    sink: dict[RecordProblem, None] = {}
    token = NOTES.set(sink)
    try:
        yield sink
    finally:
        NOTES.reset(token)


def summary_lines(problems: Iterable[RecordProblem], report: Path | None = None,
                  noted: Iterable[RecordProblem] = ()) -> list[str]:
    """One line per reason: ``skipped 240 records: no abstract in entry (refs.bib:12, …; full list: FILE)``,
    then ``noted 12 records: abstract cut at a sentence end … (refs.bib:40, …)`` for the records kept with a
    caveat."""
    lines = []
    for verb, items_of in (("skipped", group(problems)), ("noted", group(noted))):
        for reason, items in items_of.items():
            shown = ", ".join(_where(p) for p in items[:EXAMPLES])
            more = ", …" if len(items) > EXAMPLES else ""
            tail = f"; full list: {report}" if report else ""
            noun = "record" if len(items) == 1 else "records"
            lines.append(f"{verb} {len(items)} {noun}: {reason} ({shown}{more}{tail})")
    return lines


def default_path(home: Path) -> Path:
    """``$PAPERCHAT_HOME/reports/ingest-YYYYMMDD-HHMMSS.txt``."""
    return home.expanduser() / "reports" / f"ingest-{time.strftime('%Y%m%d-%H%M%S')}.txt"


def write(problems: list[RecordProblem], path: Path, noted: Iterable[RecordProblem] = ()) -> Path:
    """Write every skipped record, then every noted one (``file:line: reason``), grouped by reason, to
    ``path``; return it."""
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for verb, items_of in (("skipped", group(problems)), ("noted", group(noted))):
        for reason, items in items_of.items():
            out.append(f"# {len(items)} {verb}: {reason}")
            out.extend(str(p) for p in items)
            out.append("")
    path.write_text("\n".join(out), encoding="utf-8")
    return path
