"""Why these papers (rag.qa.why): each cited paper's reasons and the close papers left out, and the reader's
steering, pin (must be considered) and exclude (never cited), through the chain, a conversation and the CLI,
in extractive mode over the sample corpus."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import SAMPLE, paperchat_cmd

from rag.answer import Answer, render_text
from rag.config import get_settings
from rag.qa.chain import AnswerChain, Conversation
from rag.qa.why import steering_command, why_text
from rag.runtime import Runtime

QUESTION = "Which papers study reward hacking in reinforcement learning from human feedback?"


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Single-question embeddings run faster on one thread when other processes share the CPUs."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def rt(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """The whole sample corpus in this module's own home."""
    with one_torch_thread():
        runtime = Runtime(get_settings(home=tmp_path_factory.mktemp("why-home")), _embedder=embedder)
        try:
            assert runtime.ingestor(progress=False).ingest(SAMPLE).added == 40
            yield runtime
        finally:
            runtime.close()


@pytest.fixture(scope="module")
def chain(rt: Runtime) -> AnswerChain:
    return AnswerChain(rt)


@pytest.fixture(scope="module")
def plain(chain: AnswerChain) -> Answer:
    return chain.ask(QUESTION, k=3, mode="extractive")


def test_each_cited_paper_says_why_and_the_close_ones_left_out_are_listed(plain: Answer) -> None:
    assert plain.answerable and plain.citations
    assert [(w["n"], w["paper_id"]) for w in plain.why] == [(c.n, c.paper_id) for c in plain.citations]
    lead = plain.why[0]
    assert {"reward", "hacking", "human", "feedback"} <= set(lead["matched"])
    assert lead["dense"] is not None and lead["dense_rank"] == 1 and lead["scope"] == []
    retrieved = [r["paper_id"] for r in plain.retrieved]
    assert [w["paper_id"] for w in plain.not_cited] == [p for p in retrieved if p not in plain.cited_ids]
    assert all(w["n"] is None for w in plain.not_cited) and plain.not_cited
    assert "pinned" not in plain.filters and "excluded" not in plain.filters
    again = Answer.from_dict(json.loads(json.dumps(plain.to_dict())))
    assert again.to_dict() == plain.to_dict()
    lines = why_text(plain.why, plain.not_cited)
    assert lines[1] == "Why these papers:" and lines[2].startswith("  [1] matches ")
    assert "Why these papers" not in render_text(plain)  # the default text is unchanged


def test_a_pinned_paper_is_considered_and_cited(chain: AnswerChain, plain: Answer) -> None:
    left_out = plain.not_cited[0]["paper_id"]
    pinned = chain.ask(QUESTION, k=3, mode="extractive", pin=[left_out])
    assert left_out not in plain.cited_ids and pinned.cited_ids[0] == left_out
    assert pinned.filters["pinned"] == [left_out] and pinned.why[0]["scope"][:1] == ["pinned"]


def test_a_pinned_paper_retrieval_did_not_rank_joins_the_candidates(chain: AnswerChain, plain: Answer) -> None:
    wide = [r["paper_id"] for r in chain.ask(QUESTION, k=10, mode="extractive").retrieved]
    outside = wide[5]
    one = chain.ask(QUESTION, k=1, mode="extractive", pin=[outside])
    assert outside not in [r["paper_id"] for r in plain.retrieved]
    assert [r["paper_id"] for r in one.retrieved] == [outside, wide[0]]


def test_an_excluded_paper_is_never_cited(chain: AnswerChain, plain: Answer) -> None:
    gone = plain.cited_ids[0]
    answer = chain.ask(QUESTION, k=3, mode="extractive", exclude=[gone])
    assert gone not in answer.cited_ids and gone not in [r["paper_id"] for r in answer.retrieved]
    assert answer.answerable and answer.cited_ids and len(answer.retrieved) == 3
    assert answer.filters["excluded"] == [gone]
    both = chain.ask(QUESTION, k=3, mode="extractive", pin=[gone], exclude=[gone])  # exclusion wins
    assert gone not in both.cited_ids + [r["paper_id"] for r in both.retrieved]


def test_steering_acts_on_the_next_turn_of_a_conversation(chain: AnswerChain, plain: Answer) -> None:
    conv = Conversation(chain, k=3, mode="extractive")
    first = conv.ask(QUESTION)
    assert first.cited_ids == plain.cited_ids
    conv.exclude.append(first.cited_ids[0])
    conv.pin.append(plain.not_cited[-1]["paper_id"])
    second = conv.ask(QUESTION)
    assert first.cited_ids[0] not in second.cited_ids
    assert second.retrieved[0]["paper_id"] == plain.not_cited[-1]["paper_id"]
    conv.reset()  # a new conversation starts unsteered
    assert (conv.pin, conv.exclude) == ([], []) and conv.ask(QUESTION).cited_ids == plain.cited_ids


@pytest.fixture(scope="module")
def cli_home(rt: Runtime, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the module's home, without the lock the open runtime holds, for the CLI's own process."""
    home = tmp_path_factory.mktemp("why-cli") / "home"
    shutil.copytree(rt.settings.home, home, ignore=shutil.ignore_patterns("paperchat.lock"))
    return home


def ask_cli(home: Path, *args: str) -> str:
    out = subprocess.run(paperchat_cmd("ask", QUESTION, "--k", "3", "--mode", "extractive", *args),
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1],
                         env={**os.environ, "PAPERCHAT_HOME": str(home), "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_cli_pins_and_excludes_and_says_why(cli_home: Path, plain: Answer) -> None:
    gone, wanted = plain.cited_ids[0], plain.not_cited[0]["paper_id"]
    row = json.loads(ask_cli(cli_home, "--pin", wanted, "--exclude", gone, "--json"))
    cited = [c["paper_id"] for c in row["citations"]]
    assert cited[0] == wanted and gone not in cited and row["filters"] == {"pinned": [wanted], "excluded": [gone]}
    assert [w["paper_id"] for w in row["why"]] == cited
    text = ask_cli(cli_home, "--why")
    assert text.startswith(render_text(plain) + "\n\nWhy these papers:\n  [1] matches ")
    assert f"not cited: {plain.not_cited[0]['title']} ({wanted})" in text


def test_chat_commands_steer_by_citation_number_or_id(plain: Answer) -> None:
    pin: list[str] = []
    exclude: list[str] = []
    assert steering_command("what is RLHF?", pin, exclude, plain) is None
    said = steering_command("/exclude 1", pin, exclude, plain)
    assert said == f"(excluded {plain.cited_ids[0]} for the next questions)" and exclude == plain.cited_ids[:1]
    assert steering_command("/pin 9", pin, exclude, plain) == ("(no [9] in the last answer: give a cited number or "
                                                               "a paper id)")
    steering_command(f"/pin {plain.cited_ids[0]}", pin, exclude, plain)  # pinning moves it out of the excluded
    assert (pin, exclude) == ([plain.cited_ids[0]], [])
    steering_command("/pin", pin, exclude, plain)
    assert pin == []


def test_the_ui_chat_steers_with_commands_and_shows_why(rt: Runtime, chain: AnswerChain, plain: Answer) -> None:
    import gradio as gr

    from ui.tabs import chat
    from ui.tabs.context import AppContext
    from ui.tabs.session import Session

    ctx = AppContext(rt, rt.settings.with_overrides(ui={"stream_delay_ms": 0}), chain, gr.Blocks())
    handlers, state = chat.ChatHandlers(ctx), Session()

    def say(text: str, history: list) -> list:
        return list(handlers.ask(text, history, state, 3, "extractive", None, None, None, None))[-1][0]

    history = say(QUESTION, [])
    assert state.answers[0].cited_ids == plain.cited_ids and "Why these papers" in history[-1]["content"]
    history = say("/exclude 1", history)
    assert state.exclude == plain.cited_ids[:1] and len(state.answers) == 1
    assert plain.cited_ids[0] in html.unescape(history[-1]["content"])
    history = say(QUESTION, history)
    assert plain.cited_ids[0] not in state.answers[1].cited_ids and state.answers[1].cited_ids
    assert "1 excluded" in history[-1]["content"]


def test_the_api_takes_pin_and_exclude(rt: Runtime, plain: Answer) -> None:
    from fastapi.testclient import TestClient

    from ui import api
    from ui.library import Library

    gone, wanted = plain.cited_ids[0], plain.not_cited[0]["paper_id"]
    with TestClient(api.asgi_app(Library.open(rt))) as http:  # loopback, no keys configured
        body = {"question": QUESTION, "mode": "extractive", "k": 3, "pin": [wanted], "exclude": [gone]}
        turn = http.post("/v1/ask", json=body).json()
        refused = http.post("/v1/ask", json={**body, "pin": "not a list"})
    cited = [c["paper_id"] for c in turn["citations"]]
    assert cited[0] == wanted and gone not in cited and turn["filters"] == {"pinned": [wanted], "excluded": [gone]}
    assert [w["paper_id"] for w in turn["why"]] == cited and refused.status_code == 422  # a bad field, named
