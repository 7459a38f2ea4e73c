"""Votes from the chat UI (``$PAPERCHAT_HOME/feedback.jsonl``) → a new eval set.

A thumbs-down becomes a case with ``needs_review: true``: the question (or the whole conversation), what
the answer cited (``flagged_citations``) and said (``answer_was``), and no gold papers yet — a person adds
the gold rules and drops ``needs_review``; until then ``paperchat eval`` runs the case and reports its
citations, support and latency but no pass/fail. A thumbs-up (with ``--votes all``) keeps the cited papers
as gold rules, so a liked answer becomes a regression case.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from evals.sets import parse_case
from rag.errors import InputError

log = logging.getLogger(__name__)


def case_from_vote(row: dict[str, Any]) -> dict[str, Any]:
    """One feedback row → one eval case (a dict in the set schema)."""
    draft = row.get("case") or {}
    turns = [str(t) for t in draft.get("turns") or [row["question"]]]
    kind = "follow-up" if len(turns) > 1 else "single"
    cid = "feedback-" + hashlib.sha1("\x1f".join(turns).encode()).hexdigest()[:10]
    case: dict[str, Any] = {"id": cid, "type": kind}
    if len(turns) > 1:
        case["turns"] = turns
    else:
        case["question"] = turns[0]
    case["answerable"] = True  # a vote is about a question the user expected answered
    if row.get("vote") == "up" and draft.get("gold"):
        case["gold"] = [{k: v for k, v in rule.items() if k in ("paper_id", "author", "abstract_prefix") and v}
                        for rule in draft["gold"]]
    else:
        case["gold"] = []
        case["needs_review"] = True
    case["flagged_citations" if row.get("vote") == "down" else "note"] = (
        [c.get("title") or c.get("paper_id") for c in row.get("citations") or []] if row.get("vote") == "down"
        else f"thumbs-up {row.get('ts', '')}")
    case["answer_was"] = str(row.get("answer", ""))[:600]
    return case


def export_feedback(log_path: Path, out: Path, votes: str = "down", force: bool = False) -> dict[str, int]:
    """Write the set; returns counts (votes read, cases written, lines skipped)."""
    if not log_path.is_file():
        raise InputError("no feedback yet (vote on answers in the chat UI first)", where=str(log_path))
    if out.exists() and not force:
        raise InputError("exists; pass --force to replace it", where=str(out))
    cases: dict[str, dict[str, Any]] = {}
    read = skipped = 0
    with log_path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                    raise ValueError("not a vote row")
            except ValueError as e:
                log.warning("%s:%d: skipped (%s)", log_path, n, e)
                skipped += 1
                continue
            read += 1
            if votes != "all" and row.get("vote") != votes:
                continue
            case = case_from_vote(row)
            parse_case(case, f"{log_path}:{n}")  # the exported case must load as a set
            cases[case["id"]] = case  # the latest vote on a question wins
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases.values()), encoding="utf-8")
    tmp.replace(out)
    return {"votes": read, "cases": len(cases), "skipped": skipped}
