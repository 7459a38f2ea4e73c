"""The blind three-verdict claims set (`evals/sets/claims_heldout7.jsonl`): its format only, never its scores.

The set is scored once at the end of the issue-29 work, so nothing here runs the verifier on it. The kinds and
their counts are read from the set's table in `evals/sets/README.md`, so the file and its documentation agree."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT

SETS = ROOT / "evals" / "sets"
HELDOUT7 = SETS / "claims_heldout7.jsonl"
VERDICTS = {"supported", "contradicted", "not_in_source"}
FIELDS = {"id", "statement", "label", "kind", "source", "title", "abstract"}
SECTION = "## Three-verdict held-out claims (`claims_heldout7.jsonl`)"
TABLE_ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \| (\d+) \|")


def load_rows(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise AssertionError(f"{path.name} line {n}: not JSON ({exc})") from exc
    return rows


def documented_kinds() -> dict[str, tuple[str, int]]:
    """kind -> (label, count) from the set's table in the README section."""
    text = (SETS / "README.md").read_text(encoding="utf-8")
    assert SECTION in text, "evals/sets/README.md has no section for claims_heldout7.jsonl"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    kinds = {}
    for line in section.splitlines():
        match = TABLE_ROW.match(line)
        if match:
            kinds[match[1]] = (match[2], int(match[3]))
    return kinds


def fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return load_rows(HELDOUT7)


def test_every_row_has_the_fields_and_text(rows):
    assert len(rows) >= 200
    for row in rows:
        assert set(row) == FIELDS, (row.get("id"), sorted(set(row) ^ FIELDS))
        for field in ("id", "statement", "label", "kind", "source", "abstract"):
            assert isinstance(row[field], str) and row[field].strip(), (row["id"], field)
        assert isinstance(row["title"], str), row["id"]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), [i for i, c in Counter(ids).items() if c > 1]


def test_labels_and_kinds_are_the_documented_ones(rows):
    kinds = documented_kinds()
    assert {label for label, _ in kinds.values()} == VERDICTS
    for row in rows:
        assert row["label"] in VERDICTS, (row["id"], row["label"])
        assert row["kind"] in kinds, (row["id"], row["kind"])
        assert kinds[row["kind"]][0] == row["label"], (row["id"], row["kind"], row["label"])
    counts = Counter(row["kind"] for row in rows)
    assert counts == Counter({kind: n for kind, (_, n) in kinds.items()})


def test_each_abstract_is_used_at_most_four_times_and_has_one_source(rows):
    uses = Counter(row["abstract"] for row in rows)
    assert max(uses.values()) <= 4, [a[:60] for a, n in uses.items() if n > 4]
    sources: dict[str, set[str]] = {}
    for row in rows:
        sources.setdefault(row["abstract"], set()).add(row["source"])
    assert all(len(s) == 1 for s in sources.values())


def test_no_abstract_is_shared_with_an_older_set(rows):
    older = [path for path in sorted(SETS.glob("claims*.jsonl")) if path != HELDOUT7]
    assert older, "the older claims sets are missing"
    seen_text, seen_source = set(), set()
    for path in older:
        for row in load_rows(path):
            seen_text.add(fold(row["abstract"]))
            seen_source.add(row["source"])
    for row in rows:
        assert fold(row["abstract"]) not in seen_text, (row["id"], row["source"])
        assert row["source"] not in seen_source, (row["id"], row["source"])
