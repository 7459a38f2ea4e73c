"""Saved conversations in the terminal, through the CLI's own ``main`` on the sample corpus: `chat` saves each turn,
`chat --resume` goes on with one so its follow-ups resolve as they would have without the break, `/new` starts
another, and `conversations list|show|export|rename|delete` read them."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
from conftest import SAMPLE

from rag.cli import main

FIRST = "What is the energy loss phenomenon in RLHF?"
FOLLOW = "What does it penalize?"


@pytest.fixture
def cli(make_runtime: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``cli(*args, stdin="")`` → (return code, stdout, stderr), over a store holding the sample corpus."""
    rt = make_runtime()
    assert rt.ingestor(progress=False).ingest(SAMPLE).added == 40
    rt.close()  # the embedded store belongs to one process at a time: the commands open it

    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        rc = main(list(args))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def listed(cli: Any) -> list[dict[str, Any]]:
    rc, out, err = cli("conversations", "list", "--json")
    assert rc == 0, err
    return json.loads(out)


def test_chat_saves_resumes_and_the_conversations_commands(cli: Any, paperchat_home: Path, tmp_path: Path) -> None:
    rc, out, err = cli("chat", "--resume")
    assert rc == 2 and "no saved conversation yet" in err
    rc, out, err = cli("chat", stdin=f"{FIRST}\n\n")
    assert rc == 0, err
    (conv,) = listed(cli)
    assert conv["title"] == FIRST and conv["turns"] == 1
    assert (paperchat_home / "conversations.sqlite").exists()

    # resumed (the latest, then by a prefix of its id): the follow-up resolves to the restored turn's paper
    rc, out, err = cli("chat", "--resume", stdin=f"{FOLLOW}\n\n")
    assert rc == 0, err
    assert f"(resumed {conv['id'][:8]} \u201c{FIRST}\u201d, 1 turn(s))" in out
    follow_up = out.split("> ")[1]
    assert "EPPO" in follow_up and "[1]" in follow_up
    (again,) = listed(cli)
    assert again["id"] == conv["id"] and again["turns"] == 2

    # the same two turns asked without a break give the same answer and citations as the resumed one
    rc, out, err = cli("ask", "--json", FIRST, FOLLOW)
    assert rc == 0, err
    straight = json.loads(out.splitlines()[1])
    rc, out, err = cli("conversations", "show", conv["id"][:6], "--json")
    assert rc == 0, err
    saved = [json.loads(line) for line in out.splitlines()]
    assert [t["question"] for t in saved] == [FIRST, FOLLOW]
    assert saved[1]["answer"] == straight["answer"]
    assert [c["paper_id"] for c in saved[1]["citations"]] == [c["paper_id"] for c in straight["citations"]]

    # /new starts another conversation; both are listed, the latest first
    rc, out, err = cli("chat", "--resume", conv["id"][:8], stdin="/new\nWhat is FedGMT?\n\n")
    assert rc == 0 and "(new conversation)" in out, err
    both = listed(cli)
    assert [c["title"] for c in both] == ["What is FedGMT?", FIRST] and both[1]["turns"] == 2

    rc, out, err = cli("conversations", "show")  # the latest
    assert rc == 0 and out.startswith("# What is FedGMT?") and "Q: What is FedGMT?" in out, err
    rc, out, err = cli("conversations", "export", conv["id"][:8])
    assert rc == 0, err
    assert out.startswith("# paperchat conversation") and FIRST in out and FOLLOW in out and "## References" in out
    bib = tmp_path / "conv.bib"
    rc, out, err = cli("conversations", "export", conv["id"][:8], "--format", "bib", "--out", str(bib))
    assert rc == 0 and f"wrote {bib}" in err, err
    entries = bibtexparser.parse_string(bib.read_text(encoding="utf-8")).entries
    cited = {c["paper_id"] for t in saved for c in t["citations"]}
    assert len(entries) == len(cited) >= 1
    titles = [e.fields_dict["title"].value for e in entries]
    assert any("EPPO" in t or "Energy" in t for t in titles), titles
    rc, out, err = cli("conversations", "export", conv["id"][:8], "--format", "apa")
    assert rc == 0 and out.startswith("# paperchat references (apa)") and f"{len(cited)} paper" in out, err
    rc, out, err = cli("conversations", "export", "--format", "vancouver")
    assert rc == 2 and "unknown export format 'vancouver': md, bib or a citation style (apa, ieee" in err

    rc, out, err = cli("conversations", "rename", conv["id"][:8], "RLHF energy loss")
    assert rc == 0 and "RLHF energy loss" in out, err
    assert [c["title"] for c in listed(cli)] == ["What is FedGMT?", "RLHF energy loss"]
    rc, out, err = cli("conversations", "--user", "someone-else", "list", "--json")
    assert rc == 0 and json.loads(out) == []  # another owner's list is empty
    rc, out, err = cli("conversations", "delete", "zz")
    assert rc == 2 and "'zz' is not a conversation id" in err
    rc, out, err = cli("conversations", "delete", both[0]["id"][:8])
    assert rc == 0 and re.search(r"deleted the conversation [0-9a-f]{8}", out), err
    assert [c["id"] for c in listed(cli)] == [conv["id"]]
