"""`paperchat ask` end to end, in subprocesses, over a store ingested once for the module."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, paperchat_cmd

from rag.config import get_settings
from rag.qa.prompts import CANNOT_ANSWER, VERDICT_SYSTEM
from rag.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAIServer

EPPO_FILE = next(p for p in SAMPLE if p.name.startswith("003_"))  # the EPPO paper is in this half
KEYS = {"question", "standalone_question", "answer", "answerable", "mode", "filters", "citations", "retrieved",
        "timings", "warnings"}


@pytest.fixture(scope="module")
def home(embedder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Half the sample corpus, ingested in-process with the session's model (no extra model load)."""
    home = tmp_path_factory.mktemp("ask-home")
    rt = Runtime(get_settings(home=home), _embedder=embedder)
    try:
        assert rt.ingestor(progress=False).ingest([EPPO_FILE]).added == 20
    finally:
        rt.close()
    return home


@pytest.fixture(scope="module")
def eppo_id(home: Path, embedder) -> str:
    rt = Runtime(get_settings(home=home), _embedder=embedder)
    try:
        return next(p.id for p in rt.read_store().papers() if "EPPO" in p.abstract)
    finally:
        rt.close()


def ask(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # One OpenMP thread: the child's few small embeddings are much faster when other processes share the CPUs.
    return subprocess.run(paperchat_cmd("ask", *args), capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PAPERCHAT_HOME": str(home), "OMP_NUM_THREADS": "1", **(env or {})})


def lines(out: subprocess.CompletedProcess[str]) -> list[dict]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_two_turns_of_one_conversation_as_json(home: Path, eppo_id: str) -> None:
    rows = lines(ask(home, "What is the energy loss phenomenon in RLHF?", "What does it penalize?", "--json"))
    assert len(rows) == 2 and all(set(r) >= KEYS for r in rows)
    first, second = rows
    assert first["citations"][0]["paper_id"] == eppo_id and first["mode"] == "extractive"
    assert second["question"] == "What does it penalize?" and second["standalone_question"] != second["question"]
    assert second["citations"][0]["paper_id"] == eppo_id and second["answerable"] is True
    assert second["retrieved"][0]["paper_id"] == eppo_id and second["timings"]["total_ms"] > 0
    cite = second["citations"][0]
    assert cite["n"] == 1 and "Yuchun Miao" in cite["authors"] and cite["evidence"] and cite["summary"]


def test_jsonl_batch_in_llm_mode_runs_fresh_conversations(home: Path, tmp_path: Path, eppo_id: str) -> None:
    """Also the LLM judge end to end: with an endpoint and verify.judge = auto, each answer the model wrote is
    judged in one more call, and ``statements[]`` carries its verdicts and quotes."""
    batch = tmp_path / "cases.jsonl"
    batch.write_text("\n".join(json.dumps(o) for o in [
        {"id": "ooc", "question": "What is the capital of Australia?"},
        {"id": "fu", "turns": ["What is the energy loss phenomenon in RLHF?", "What does it penalize?"]},
    ]) + "\n")
    quote = "thereby mitigating reward hacking"

    def reply(body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system == VERDICT_SYSTEM:
            return json.dumps({"verdicts": [
                {"id": 1, "verdict": "supported", "quote": "which penalizes the increase in energy loss"},
                {"id": 2, "verdict": "contradicted", "quote": quote, "said": "makes reward hacking worse"}]})
        if "standalone question" in system:
            return "What does the Energy loss-aware PPO algorithm (EPPO) penalize?"
        if "Australia" in user:
            return CANNOT_ANSWER
        return ("EPPO penalizes the increase in energy loss in the final layer [1]. EPPO makes reward hacking "
                "worse [1].")

    with FakeOpenAIServer(model="stub-model", api_key="sk-cli", responder=reply) as srv:
        out = ask(home, "--batch", str(batch), "--json", "--k", "3", "--author", "Yuchun Miao",
                  env={"PAPERCHAT_LLM__BASE_URL": srv.base_url, "PAPERCHAT_LLM__API_KEY": "sk-cli",
                       "PAPERCHAT_LLM__MODEL": "stub-model", "PAPERCHAT_VERIFY__JUDGE": "auto"})
        requests = srv.chat_requests
    rows = lines(out)
    assert len(rows) == 3 and all(r["mode"] == "llm" and set(r) >= KEYS for r in rows)
    assert (rows[0]["answer"], rows[0]["answerable"], rows[0]["citations"]) == (CANNOT_ANSWER, False, [])
    assert rows[1]["standalone_question"] == rows[1]["question"]  # a new conversation, not a follow-up
    assert rows[2]["standalone_question"].startswith("What does the Energy loss-aware PPO")  # the LLM's rewrite
    assert rows[2]["citations"][0]["paper_id"] == eppo_id and rows[2]["answerable"]
    assert all(r["filters"] == {"author": "Yuchun Miao"} for r in rows)
    judged = [r for r in requests if r["messages"][0]["content"] == VERDICT_SYSTEM]
    answers = [r for r in requests if r not in judged and "standalone question" not in r["messages"][0]["content"]]
    assert len(answers) == 3 and all(r["messages"][-1]["content"].count("<source n=") == 1 for r in answers)
    assert len(judged) == 2  # the two cited answers, once each; the refusal cites nothing to judge
    good, bad = rows[2]["statements"]
    assert set(good) == {"text", "cited", "supported", "why", "verdict", "rule", "said", "source_says"}
    assert (good["verdict"], good["rule"], good["source_says"]) == (
        "supported", "llm", "which penalizes the increase in energy loss")
    assert (bad["verdict"], bad["rule"], bad["said"], bad["source_says"]) == (
        "contradicted", "llm", "makes reward hacking worse", quote)


def test_llm_mode_without_an_endpoint_says_what_to_set(home: Path) -> None:
    out = ask(home, "What does EPPO penalize?", "--mode", "llm")
    assert out.returncode == 2 and "PAPERCHAT_LLM__BASE_URL" in out.stderr and "Traceback" not in out.stderr


def test_questions_or_batch_are_required(home: Path, tmp_path: Path) -> None:
    out = ask(home)
    assert out.returncode == 2 and "--batch" in out.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok?"}\n{"nope": 1}\n')
    out = ask(home, "--batch", str(bad))
    assert out.returncode == 2 and "bad.jsonl:2" in out.stderr


def test_ask_on_an_empty_library_says_how_to_fill_it(tmp_path: Path) -> None:
    out = ask(tmp_path / "empty-home", "What does EPPO penalize?")
    assert out.returncode != 0 and out.stdout == ""
    assert "the library is empty: run `paperchat ingest FILE`" in out.stderr
    assert "catalog" not in out.stderr and "sqlite" not in out.stderr and "Traceback" not in out.stderr


def test_the_chain_and_the_api_report_an_empty_library(make_runtime, tmp_path: Path) -> None:
    from rag.errors import EmptyLibrary
    from rag.qa.chain import AnswerChain
    from ui.api import from_paperchat

    chain = AnswerChain(make_runtime(home=tmp_path / "empty"))
    with pytest.raises(EmptyLibrary, match=r"the library is empty: run `paperchat ingest FILE`") as caught:
        chain.ask("What does EPPO penalize?")
    err = from_paperchat(caught.value)
    assert (err.status, err.code) == (409, "library_empty") and "paperchat ingest" in err.message

