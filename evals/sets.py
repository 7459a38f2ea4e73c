"""Eval question sets: JSONL, one case per line, validated with errors that name the file, line and field.

The schema is documented in evals/sets/README.md (and summarised in the top-level README). Gold papers
are *match rules* (id, author, abstract prefix, title substring) resolved against the stored papers at
run time, so a set survives a re-ingest that changes ids.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.resources import resource_path
from rag.text import plain_text

SETS_DIR = resource_path("evals", "sets")
SEED = SETS_DIR / "seed.jsonl"  # written against the bundled sample corpus (rag.resources.sample_corpus)

TYPES = ("single", "multi", "author", "category", "filter", "follow-up", "out-of-corpus")
RULE_KEYS = ("id", "paper_id", "author", "abstract_prefix", "title_contains")
CASE_KEYS = {"id", "type", "question", "turns", "gold", "facts", "answerable", "needs_review", "note",
             "flagged_citations", "answer_was"}


@dataclass
class Case:
    """One eval case. ``question`` is the last turn for a conversation."""

    id: str
    type: str
    turns: list[str]
    gold: list[dict[str, str]] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    answerable: bool = True
    needs_review: bool = False  # exported from feedback, gold papers not labelled yet
    line: int = 0

    @property
    def question(self) -> str:
        return self.turns[-1]

    @property
    def labelled(self) -> bool:
        """Whether pass/fail can be scored: gold given, or a question nothing should answer."""
        return not self.needs_review and (bool(self.gold) or not self.answerable)


def _require(cond: bool, msg: str, where: str) -> None:
    if not cond:
        raise InputError(msg, where=where)


def parse_case(obj: Any, where: str, line: int = 0) -> Case:
    """One JSON object → Case, or an InputError naming ``where`` and the field."""
    _require(isinstance(obj, dict), "a case is a JSON object", where)
    unknown = sorted(set(obj) - CASE_KEYS)
    _require(not unknown, f"unknown field(s) {unknown}; known: {sorted(CASE_KEYS)}", where)
    cid = obj.get("id")
    _require(isinstance(cid, str) and bool(cid.strip()), "field 'id': a non-empty string is required", where)
    kind = obj.get("type")
    _require(kind in TYPES, f"field 'type': {kind!r} is not one of {list(TYPES)}", where)
    if "turns" in obj:
        turns = obj["turns"]
        _require(isinstance(turns, list) and bool(turns) and all(isinstance(t, str) and t.strip() for t in turns),
                 "field 'turns': a non-empty list of non-empty strings", where)
        _require("question" not in obj or obj["question"] == turns[-1],
                 "give 'question' or 'turns', not both (or 'question' equal to the last turn)", where)
    else:
        q = obj.get("question")
        _require(isinstance(q, str) and bool(q.strip()), "field 'question': a non-empty string is required "
                                                         "(or 'turns' for a conversation)", where)
        turns = [q]
    _require(kind != "follow-up" or len(turns) >= 2, "field 'turns': a follow-up needs at least two turns", where)
    gold = obj.get("gold", [])
    _require(isinstance(gold, list), "field 'gold': a list of match rules", where)
    for i, rule in enumerate(gold):
        _require(isinstance(rule, dict) and bool(rule), f"field 'gold[{i}]': a non-empty object", where)
        bad = sorted(set(rule) - set(RULE_KEYS))
        _require(not bad, f"field 'gold[{i}]': unknown key(s) {bad}; known: {list(RULE_KEYS)}", where)
        _require(all(isinstance(v, str) and v.strip() for v in rule.values()),
                 f"field 'gold[{i}]': values must be non-empty strings", where)
    facts = obj.get("facts", [])
    _require(isinstance(facts, list) and all(isinstance(f, str) and f for f in facts),
             "field 'facts': a list of non-empty strings", where)
    answerable = obj.get("answerable", kind != "out-of-corpus")
    _require(isinstance(answerable, bool), "field 'answerable': true or false", where)
    _require(not (kind == "out-of-corpus" and answerable), "field 'answerable': out-of-corpus cases are false", where)
    needs_review = obj.get("needs_review", False)
    _require(isinstance(needs_review, bool), "field 'needs_review': true or false", where)
    return Case(id=cid, type=kind, turns=list(turns), gold=list(gold), facts=list(facts), answerable=answerable,
                needs_review=needs_review, line=line)


def load_set(path: Path) -> list[Case]:
    """Every case of a JSONL set, in file order; ids must be unique."""
    if not path.is_file():
        raise InputError("no such question set", where=str(path))
    cases: list[Case] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise InputError(f"not JSON ({e})", where=where) from None
            case = parse_case(obj, where, n)
            _require(case.id not in seen, f"field 'id': {case.id!r} already used on line {seen.get(case.id)}", where)
            seen[case.id] = n
            cases.append(case)
    if not cases:
        raise InputError("the question set has no cases", where=str(path))
    return cases


# ---- gold rules ------------------------------------------------------------------------------------
def _name(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return " ".join("".join(c for c in s if not unicodedata.combining(c)).casefold().split())


def _prefix_text(s: str) -> str:
    return " ".join(plain_text(s).replace("*", "").split()).casefold()


def rule_matches(rule: dict[str, str], paper: dict[str, Any]) -> bool:
    """One gold rule against one stored paper (metadata row): every key it gives must match."""
    pid = paper.get("paper_id", paper.get("id"))
    if rule.get("id", rule.get("paper_id", pid)) != pid:
        return False
    if "author" in rule and _name(rule["author"]) not in {_name(a) for a in paper.get("authors") or []}:
        return False
    if "abstract_prefix" in rule and not _prefix_text(paper.get("abstract") or "").startswith(
            _prefix_text(rule["abstract_prefix"])):
        return False
    return not ("title_contains" in rule and rule["title_contains"] not in (paper.get("title") or ""))


def resolve_gold(rules: list[dict[str, str]], papers: list[dict[str, Any]]) -> list[str | None]:
    """Paper id per rule (None when no stored paper, or more than one, matches)."""
    out: list[str | None] = []
    for rule in rules:
        found = [p.get("paper_id", p.get("id")) for p in papers if rule_matches(rule, p)]
        out.append(found[0] if len(found) == 1 else None)
    return out
