"""The `ask --json` schema is written in three places that must agree with one definition, the typed answer of
rag/answer.py: ``Answer.to_dict`` (what is printed), the ``Answer`` docstring and the table of docs/usage.md
("Answers"). Same keys in the same order, the documented JSON type of each, and the nested keys (citations,
statements, filters, retrieved, closest) named in the table."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from rag.answer import Answer, AppliedFilters, Citation, Closest, Retrieved, StatementCheck, Why

ROOT = Path(__file__).resolve().parents[1]
USAGE = ROOT / "docs" / "usage.md"
JSON_TYPES = {"str": str, "bool": bool, "int": int, "object": dict, "dict": dict, "list": list}


def full_answer() -> Answer:
    """An answer with every field set, so each key's JSON type shows."""
    cite = Citation(n=1, paper_id="p1", title="T", authors=["A B"], categories=["cs.LG"], year=2024, abstract="x",
                    summary="s", evidence="e", supported=True, url="https://example.org")
    check = StatementCheck(text="It works.", cited=[1], supported=True)
    return Answer(question="q", standalone_question="q", answer="It works [1].", answerable=True, mode="extractive",
                  filters=AppliedFilters(author="A B", year_from=2020), citations=[cite],
                  retrieved=[Retrieved(paper_id="p1", score=0.5)], timings={"total_ms": 1.0}, warnings=["w"],
                  removed_citations=1, closest=[Closest(paper_id="p2", title="U")], statements=[check],
                  why=[Why(paper_id="p1", title="T", n=1, rank=1, score=0.5, matched=["works"], dense=0.6, dense_rank=1,
                           scope=[])],
                  not_cited=[Why(paper_id="p3", title="V", n=None, rank=2, score=0.4, matched=[], dense=None,
                                 dense_rank=None, scope=["pinned"])])


def usage_table(text: str | None = None, heading: str = "`paperchat ask --json` prints one object per turn"
                ) -> dict[str, tuple[str, str]]:
    """docs/usage.md's `ask --json` table (or the same in ``text``; or the table after ``heading``): key → (type,
    meaning), in order."""
    text = USAGE.read_text(encoding="utf-8") if text is None else text
    start = text.index(heading)
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        m = re.match(r"\| `(\w+)` \| (\w+) \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


def docstring_table() -> dict[str, str]:
    """The ``Answer`` docstring's table: key → type, in order."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^ {8}(\w+) +(str|bool|int|dict|list) ", Answer.__doc__ or "",
                                                         re.M)}


def names(meaning: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", meaning)) | {n.strip() for m in re.findall(r"\{([\w, ]+)\}", meaning)
                                                   for n in m.split(",")}


def test_to_dict_the_docstring_and_the_docs_list_the_same_keys_in_order() -> None:
    printed = list(full_answer().to_dict())
    assert set(printed) == {f.name for f in fields(Answer)}
    assert list(docstring_table()) == printed
    assert list(usage_table()) == printed


def test_each_documented_type_is_the_printed_one() -> None:
    printed = full_answer().to_dict()
    for source, table in (("docs/usage.md", {k: t for k, (t, _) in usage_table().items()}),
                          ("Answer docstring", docstring_table())):
        wrong = {k: (t, type(printed[k]).__name__) for k, t in table.items() if not isinstance(printed[k],
                                                                                           JSON_TYPES[t])}
        assert not wrong, f"{source}: documented type vs printed {wrong}"


def test_the_docs_name_the_nested_keys() -> None:
    table = usage_table()
    printed: dict[str, Any] = full_answer().to_dict()
    expected = {"citations": set(printed["citations"][0]), "statements": set(printed["statements"][0]),
                "filters": set(AppliedFilters.__annotations__), "retrieved": set(Retrieved.__annotations__),
                "closest": set(Closest.__annotations__), "why": set(Why.__annotations__),
                "not_cited": set(Why.__annotations__)}
    assert expected["citations"] == {f.name for f in fields(Citation)}
    assert expected["statements"] == {f.name for f in fields(StatementCheck)}
    missing = {k: sorted(want - names(table[k][1])) for k, want in expected.items() if want - names(table[k][1])}
    assert not missing, f"docs/usage.md does not name these keys: {missing}"


def test_the_checks_see_a_drifted_table() -> None:
    """Not vacuous: the parser reads the whole table, and a row dropped, a type changed or a nested key unnamed
    in a copy of it reads differently."""
    text = USAGE.read_text(encoding="utf-8")
    table = usage_table(text)
    assert len(table) == len(fields(Answer)) and names(table["filters"][1]) >= {"collection", "paper_ids"}
    dropped = usage_table(re.sub(r"^\| `complete` \|.*\n", "", text, flags=re.M))
    assert "complete" not in dropped and len(dropped) == len(table) - 1
    retyped = usage_table(text.replace("| `filters` | object |", "| `filters` | list |"))
    assert not isinstance(full_answer().to_dict()["filters"], JSON_TYPES[retyped["filters"][0]])
    unnamed = usage_table(text.replace("`paper_ids`, `collection`", "`paper_ids`"))
    assert "collection" not in names(unnamed["filters"][1])


def test_the_paper_object_is_documented_key_by_key() -> None:
    """`paperchat papers --json` (and GET /v1/papers, MCP get_paper) print ``StoredPaper.to_dict``: docs/usage.md
    lists its keys in order with the JSON type each has when set."""
    from rag.records import StoredPaper

    paper = StoredPaper(id="arxiv:1", label="L", title="T", authors=("A B",), categories=("cs.LG",), year=2024,
                        venue="V", url="https://example.org", doi="10.1/x", arxiv_id="1", abstract="x",
                        origin="a.jsonl:3")
    printed = paper.to_dict()
    table = usage_table(heading="`paperchat papers --json` prints a list of paper objects")
    assert list(table) == list(printed)
    assert not {k: t for k, (t, _) in table.items() if not isinstance(printed[k], JSON_TYPES[t])}
