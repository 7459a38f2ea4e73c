"""Eval question sets: JSONL, one case per line, validated with errors that name the file, line and field.

The schema is documented in evals/sets/README.md (and summarised in docs/evals.md). Gold papers
are *match rules* (id, author, abstract prefix, title substring) resolved against the stored papers at
run time, so a set survives a re-ingest that changes ids.
"""

from __future__ import annotations

import glob
import json
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.records import StoredPaper
from rag.resources import resource_path, sample_corpus
from rag.text import plain_text

SETS_DIR = resource_path("evals", "sets")
SEED = SETS_DIR / "seed.jsonl"  # written against the bundled sample corpus (rag.resources.sample_corpus)

TYPES = ("single", "multi", "author", "category", "filter", "follow-up", "out-of-corpus")
RULE_KEYS = ("id", "paper_id", "author", "abstract_prefix", "title_contains")
CASE_KEYS = {"id", "type", "question", "turns", "gold", "facts", "answerable", "needs_review", "note",
             "flagged_citations", "answer_was", "split", "answered_by"}
SPLITS = ("dev", "test")  # tune on dev; test is held out and reported apart


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
    split: str | None = None  # "dev" or "test" when the set keeps a held-out part
    # out-of-corpus cases: the papers that answer it after all when a store holds them (a distractor set)
    answered_by: list[dict[str, str]] = field(default_factory=list)
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
    gold = _rules(obj, "gold", where)
    answered_by = _rules(obj, "answered_by", where)
    _require(not answered_by or kind == "out-of-corpus", "field 'answered_by': only for out-of-corpus cases", where)
    facts = obj.get("facts", [])
    _require(isinstance(facts, list) and all(isinstance(f, str) and f for f in facts),
             "field 'facts': a list of non-empty strings", where)
    answerable = obj.get("answerable", kind != "out-of-corpus")
    _require(isinstance(answerable, bool), "field 'answerable': true or false", where)
    _require(not (kind == "out-of-corpus" and answerable), "field 'answerable': out-of-corpus cases are false", where)
    needs_review = obj.get("needs_review", False)
    _require(isinstance(needs_review, bool), "field 'needs_review': true or false", where)
    split = obj.get("split")
    _require(split is None or split in SPLITS, f"field 'split': {split!r} is not one of {list(SPLITS)}", where)
    return Case(id=cid, type=kind, turns=list(turns), gold=gold, facts=list(facts), answerable=answerable,
                needs_review=needs_review, split=split, answered_by=answered_by, line=line)


def _rules(obj: dict[str, Any], key: str, where: str) -> list[dict[str, str]]:
    rules = obj.get(key, [])
    _require(isinstance(rules, list), f"field '{key}': a list of match rules", where)
    for i, rule in enumerate(rules):
        _require(isinstance(rule, dict) and bool(rule), f"field '{key}[{i}]': a non-empty object", where)
        bad = sorted(set(rule) - set(RULE_KEYS))
        _require(not bad, f"field '{key}[{i}]': unknown key(s) {bad}; known: {list(RULE_KEYS)}", where)
        _require(all(isinstance(v, str) and v.strip() for v in rule.values()),
                 f"field '{key}[{i}]': values must be non-empty strings", where)
    return list(rules)


def in_store(case: Case, papers: list[StoredPaper]) -> Case:
    """The case as the store it runs on makes it: an out-of-corpus case whose ``answered_by`` papers are all
    stored (a distractor collection that happens to hold the answer) is scored as a single-paper question with
    them as gold; any other case is returned as it is."""
    if case.answerable or not case.answered_by or not all(resolve_gold(case.answered_by, papers)):
        return case
    return replace(case, type="single", gold=list(case.answered_by), answerable=True)


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


# ---- the corpus a set is written against ------------------------------------------------------------
SAMPLE_ENTRY = "@sample"  # the bundled sample corpus, wherever the package is installed


def corpus_file(set_path: Path) -> Path:
    """Where a set names its own corpus: ``<set>.corpus`` beside the set (``neurips.jsonl`` → ``neurips.corpus``)."""
    return set_path.with_suffix(".corpus")


def set_corpus(set_path: Path) -> list[Path] | None:
    """The files a set was written against, read from its ``.corpus`` sidecar (None when it has none).

    One entry per line (``#`` starts a comment): a file, a folder (its files) or a glob, relative to the
    sidecar's folder, or ``@sample``. Datasets outside the package (``../shared``) are named here, not in
    code, and a missing one is an InputError naming the path."""
    side = corpus_file(set_path)
    if not side.is_file():
        return None
    entries = [ln.split("#", 1)[0].strip() for ln in side.read_text(encoding="utf-8").splitlines()]
    entries = [e for e in entries if e]
    _require(bool(entries), "the corpus file names no file", str(side))
    return expand_corpus(entries, base=side.parent, named_by=side)


def expand_corpus(entries: Sequence[str | Path], base: Path | None = None, named_by: Path | None = None) -> list[Path]:
    """Files for corpus entries (file, folder, glob or ``@sample``), in order, each once. Relative entries are
    taken from ``base`` (default: the working directory). An entry that finds no file is an InputError."""
    out: list[Path] = []
    for entry in entries:
        if str(entry) == SAMPLE_ENTRY:
            found = sample_corpus()
        else:
            p = Path(entry)
            p = Path(os.path.normpath(base / p if base is not None and not p.is_absolute() else p))
            if any(c in str(p) for c in "*?["):
                found = sorted(Path(x) for x in glob.glob(str(p)) if Path(x).is_file())
            elif p.is_dir():  # a folder's papers: package files (__init__.py) and hidden files are not papers
                found = sorted(x for x in p.iterdir() if x.is_file() and not x.name.startswith((".", "_")))
            else:
                found = [p] if p.is_file() else []
            named = f" (named in {named_by})" if named_by else ""
            _require(bool(found), f"corpus not found: no file here{named}", str(p))
        out += [f for f in found if f not in out]
    return out


# ---- gold rules ------------------------------------------------------------------------------------
def _name(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return " ".join("".join(c for c in s if not unicodedata.combining(c)).casefold().split())


def _prefix_text(s: str) -> str:
    return " ".join(plain_text(s).replace("*", "").split()).casefold()


def rule_matches(rule: dict[str, str], paper: StoredPaper) -> bool:
    """One gold rule against one stored paper: every key it gives must match."""
    if rule.get("id", rule.get("paper_id", paper.id)) != paper.id:
        return False
    if "author" in rule and _name(rule["author"]) not in {_name(a) for a in paper.authors}:
        return False
    if "abstract_prefix" in rule and not _prefix_text(paper.abstract).startswith(
            _prefix_text(rule["abstract_prefix"])):
        return False
    return not ("title_contains" in rule and rule["title_contains"] not in (paper.title or ""))


def resolve_gold(rules: list[dict[str, str]], papers: list[StoredPaper]) -> list[str | None]:
    """Paper id per rule (None when no stored paper, or more than one, matches)."""
    out: list[str | None] = []
    for rule in rules:
        found = [p.id for p in papers if rule_matches(rule, p)]
        out.append(found[0] if len(found) == 1 else None)
    return out
