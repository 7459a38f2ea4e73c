"""The answer chain end to end over the ingested sample corpus: the seed set in extractive mode, follow-ups
(offline and with an LLM rewrite), and the llm path against the fake OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import SAMPLE
from conftest import STUB_KEY as KEY

from evals.gate import check, load_thresholds
from evals.run import run_eval
from evals.sets import SEED, load_set
from rag.answer import Answer
from rag.config import get_settings
from rag.errors import BudgetExceeded, ConfigError, InputError
from rag.index.paper_query import PaperQuery
from rag.qa.chain import AnswerChain, Conversation, TurnState
from rag.qa.prompts import CANNOT_ANSWER, SOURCES_OPEN, SYSTEM_PROMPT
from rag.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers import scored_pairs


@pytest.fixture(scope="module")
def rt(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """One store with the whole sample corpus for this module (ingest once, ~10 s)."""
    import torch

    home = tmp_path_factory.mktemp("chain-home")
    # One intra-op thread: single-question embeddings are several times faster when other processes share
    # the CPUs (two spinning OpenMP threads fight over two cores); restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    runtime = Runtime(get_settings(home=home), _embedder=embedder)
    report = runtime.ingestor(progress=False).ingest(SAMPLE)
    assert report.added == 40
    yield runtime
    runtime.close()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def chain(rt: Runtime) -> AnswerChain:
    return AnswerChain(rt)


@pytest.fixture(scope="module")
def llm_chain(rt: Runtime, server: FakeOpenAIServer) -> AnswerChain:
    settings = rt.settings.with_overrides(llm={"base_url": server.base_url, "api_key": KEY, "model": "stub-model",
                                               "max_tokens": 256, "max_retries": 0, "timeout_s": 10})
    return AnswerChain(rt, settings=settings)


@pytest.fixture(scope="module")
def ids(rt: Runtime) -> dict[str, str]:
    """Paper ids by a distinctive word of their abstracts."""
    out = {}
    for p in rt.store.papers():
        for word in ("EPPO", "FedGMT", "Video-MTR", "flashbulb", "Extreme Value"):
            if word in p.abstract:
                out[word] = p.id
    return out


# ---- extractive mode -----------------------------------------------------------------------------
def test_seed_set_meets_the_committed_thresholds(chain: AnswerChain) -> None:
    """The CI gate: the seed set in extractive mode against evals/thresholds.toml; a failure names the
    failing questions."""
    report = run_eval(chain, load_set(SEED), mode="extractive", progress=False)
    summary = report["summary"]
    assert summary["cases"] == summary["labelled"] == 66
    assert not [r["id"] for r in report["rows"] if "match no stored paper" in r["why"]]
    failures = check(report, load_thresholds())
    assert not failures, "eval gate failed:\n" + "\n".join(failures)


def test_follow_up_retrieves_the_paper_under_discussion(chain: AnswerChain, ids: dict[str, str]) -> None:
    conv = Conversation(chain)
    first = conv.ask("What is the energy loss phenomenon in RLHF?")
    assert first.cited_ids[:1] == [ids["EPPO"]]
    second = conv.ask("What does it penalize?")
    assert second.retrieved[0]["paper_id"] == ids["EPPO"] and second.cited_ids[:1] == [ids["EPPO"]]
    assert second.standalone_question != second.question and "EPPO" in second.standalone_question
    assert "penalizes" in second.answer and len(conv.turns) == 2


def test_a_follow_up_is_scored_against_each_paper_once(chain: AnswerChain, ids: dict[str, str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The follow-up's own words are scored against the retrieved papers once per turn: the re-ranking that keeps
    the paper under discussion first and the extractive answer read the same scores."""
    conv = Conversation(chain)
    conv.ask("What is the energy loss phenomenon in RLHF?")
    scored = scored_pairs(monkeypatch)
    answer = conv.ask("What does it penalize?")
    assert answer.cited_ids[:1] == [ids["EPPO"]] and len(answer.retrieved) > 1
    follow_up = sorted(p for q, p in scored if q == "What does it penalize?")
    assert follow_up == sorted(r["paper_id"] for r in answer.retrieved)  # every paper once


def test_a_new_question_is_not_treated_as_a_follow_up(chain: AnswerChain, ids: dict[str, str]) -> None:
    conv = Conversation(chain)
    conv.ask("What is the energy loss phenomenon in RLHF?")
    answer = conv.ask("Is there a federated learning paper based on sharpness-aware minimization?")
    assert answer.standalone_question == answer.question and answer.cited_ids[:1] == [ids["FedGMT"]]


def test_out_of_corpus_reply(chain: AnswerChain) -> None:
    a = chain.ask("What is the capital of Australia?")
    assert (a.answer, a.answerable, a.citations) == (CANNOT_ANSWER, False, [])


def test_a_refusal_names_the_closest_papers(chain: AnswerChain) -> None:
    from rag.answer import render_text

    a = chain.ask("How much speedup does speculative decoding with a small draft model give for LLM inference?")
    assert (a.answer, a.answerable, a.citations) == (CANNOT_ANSWER, False, [])  # the eval/API contract holds
    retrieved = [r["paper_id"] for r in a.retrieved]
    assert 1 <= len(a.closest) <= 3 and all(c["paper_id"] in retrieved and c["title"] for c in a.closest)
    assert a.to_dict()["closest"] == a.closest
    text = render_text(a)
    line = "Closest papers in the library: " + "; ".join(c["title"] for c in a.closest)
    assert text.endswith(CANNOT_ANSWER + "\n\n" + line) and "[1]" not in line
    answered = chain.ask("How many training samples does Video-MTR need?")
    assert answered.closest == [] and answered.to_dict()["closest"] == []


def test_answer_json_schema(chain: AnswerChain) -> None:
    d = chain.ask("How many training samples does Video-MTR need?").to_dict()
    assert set(d) >= {"question", "standalone_question", "answer", "answerable", "mode", "filters", "citations",
                      "retrieved", "timings", "warnings", "closest"}
    assert d["mode"] == "extractive" and d["answerable"] is True and isinstance(d["filters"], dict)
    c = d["citations"][0]
    assert set(c) >= {"n", "paper_id", "title", "authors", "categories", "year", "abstract", "summary", "evidence",
                      "supported"}
    assert c["n"] == 1 and isinstance(c["authors"], list) and c["title"] and c["summary"] and c["evidence"]
    assert c["supported"] is True and c["evidence"] in c["abstract"]
    assert all(set(r) == {"paper_id", "score"} for r in d["retrieved"]) and len(d["retrieved"]) == 5
    assert {"condense_ms", "retrieve_ms", "generate_ms", "verify_ms", "total_ms"} <= set(d["timings"])
    assert d["timings"]["total_ms"] >= d["timings"]["generate_ms"]


def test_filters_from_the_question_and_explicit(chain: AnswerChain, ids: dict[str, str]) -> None:
    a = chain.ask("What has Shiqing Gao worked on?")
    assert a.filters == {"author": "Shiqing Gao"}
    assert set(a.cited_ids) == {ids["flashbulb"], ids["Extreme Value"]} and a.answerable
    b = chain.ask("Which papers use reinforcement learning?", filters=PaperQuery(category="Deep RL"))
    assert b.filters == {"category": "Deep RL"} and b.citations
    assert all("Deep RL" in c.categories for c in b.citations)
    c = chain.ask("Reinforcement Learning papers about memory", filters=PaperQuery(category="Deep RL"))
    assert c.filters["category"] == "Deep RL"  # explicit beats parsed


def test_streaming_matches_ask(chain: AnswerChain) -> None:
    items = list(Conversation(chain).stream("What does EPPO penalize?"))
    answer = items[-1]
    assert isinstance(answer, Answer) and len(items) > 3
    assert "".join(items[:-1]) == answer.answer  # extractive numbers citations as it goes: nothing to renumber


def test_ask_gives_the_answer_a_drained_stream_ends_with(chain: AnswerChain) -> None:
    """One driver: turn by turn (a follow-up and a listing included), ask() and stream() answer alike."""
    asked, streamed = Conversation(chain), Conversation(chain)
    for question in ("What is the energy loss phenomenon in RLHF?", "What does it penalize?", "papers by Shiqing Gao"):
        a = asked.ask(question)
        items = list(streamed.stream(question))
        s = items[-1]
        assert isinstance(s, Answer) and items[:-1] and all(isinstance(i, str) for i in items[:-1])
        assert list(a.timings) == list(s.timings)  # the same stages timed, in the same order
        assert {**a.to_dict(), "timings": None} == {**s.to_dict(), "timings": None}
    assert "EPPO" in asked.turns[1].standalone_question  # the follow-up was condensed with the history
    assert asked.turns[2].answer.startswith("2 papers match (author: Shiqing Gao)")


def test_the_stages_exchange_one_typed_turn_state(chain: AnswerChain) -> None:
    """The stages, in order, each take and return the TurnState, filling their own fields; run by hand they
    give what ask() gives."""
    steps = [*chain.until_text.steps, *chain.after_text.steps]
    assert [s.name for s in steps] == ["filters", "condense", "retrieve", "generate", "guard", "verify", "answer"]
    question = "What does EPPO penalize?"
    state = TurnState(question=question, history=[], k=5, explicit=PaperQuery(author="Yuchun Miao"),
                      mode="extractive", live=False)
    for step in steps:
        if step.name == "verify":  # what the driver does between the halves: produce the guarded text
            (generation,) = state.output  # not live: the whole generation at once
            state.generation = generation
        state = step.invoke(state)
        assert isinstance(state, TurnState)
        if step.name == "filters":
            assert state.filters.author == "Yuchun Miao" and state.condensed is None and not state.hits
        if step.name == "retrieve":
            assert state.condensed is not None and state.condensed.standalone == question and len(state.hits) == 1
        if step.name == "guard":
            assert state.generation is None  # set up, not produced
    assert state.answer is not None and state.answer.cited_ids == [state.hits[0].paper_id]
    expected = chain.ask(question, filters=PaperQuery(author="Yuchun Miao"))
    assert {**state.answer.to_dict(), "timings": None} == {**expected.to_dict(), "timings": None}
    assert list(state.timings) == ["condense_ms", *[k for k in expected.timings if k.startswith("retrieve_")],
                                   "verify_ms", "total_ms"]  # generate_ms is the driver's, which did not run


def test_bad_questions(chain: AnswerChain) -> None:
    with pytest.raises(InputError):
        chain.ask("   ")
    with pytest.raises(BudgetExceeded, match="PAPERCHAT_LIMITS__QUESTION_CHARS"):
        chain.ask("x" * 2001)
    with pytest.raises(ConfigError, match="PAPERCHAT_LLM__BASE_URL"):
        chain.ask("What does EPPO penalize?", mode="llm")


# ---- llm mode against the fake server ------------------------------------------------------------
def test_llm_answer_with_an_invalid_citation(llm_chain: AnswerChain, srv: FakeOpenAIServer, ids) -> None:
    srv.queue_reply("EPPO penalizes the increase in energy loss in the final layer [1]. It also cures cancer [9].")
    a = llm_chain.ask("What does EPPO penalize?")
    assert a.mode == "llm" and a.answerable and "[9]" not in a.answer
    assert a.answer.startswith("EPPO penalizes the increase in energy loss in the final layer [1].")
    assert any("[9]" in w for w in a.warnings) and a.removed_citations == a.to_dict()["removed_citations"] == 1
    assert a.cited_ids == [ids["EPPO"]] and a.citations[0].supported
    body = srv.chat_requests[-1]
    assert body["model"] == "stub-model" and body.get("max_completion_tokens", body.get("max_tokens")) == 256
    assert body["messages"][0]["content"] == SYSTEM_PROMPT
    user = body["messages"][-1]["content"]
    assert user.startswith(SOURCES_OPEN) and "Energy loss-aware PPO algorithm" in user


def test_eval_in_llm_mode_counts_citations_the_verifier_removed(llm_chain: AnswerChain, srv: FakeOpenAIServer) -> None:
    """`paperchat eval --mode llm` drives the same chain; a model citing a source that does not exist shows up
    as lower citation validity, not as a clean report."""
    srv.responder = lambda body: "The first source addresses this question [1]. So does a made-up one [7]."
    try:
        cases = [c for c in load_set(SEED) if c.type == "single"][:3]
        report = run_eval(llm_chain, cases, mode="llm", progress=False)
    finally:
        srv.responder = None
    rows = report["rows"]
    assert len(rows) == 3 and len(srv.chat_requests) == 3 and all("generate_ms" in r["timings"] for r in rows)
    assert all(r["metrics"]["citation_validity"] == pytest.approx(0.5) for r in rows)
    assert report["summary"]["metrics"]["citation_validity"]["mean"] == pytest.approx(0.5)


def test_llm_streaming(llm_chain: AnswerChain, srv: FakeOpenAIServer, ids) -> None:
    reply = "The target update frequency should grow geometrically [2][1]. Adaptive schedules help [1]."
    srv.queue_reply(reply)
    items = list(llm_chain.stream("How should the target network update frequency change in Q-learning?"))
    answer = items[-1]
    # Streamed sentence by sentence: each is checked for obeyed injections before it is shown.
    assert isinstance(answer, Answer) and len(items) == 3 and srv.chat_requests[-1]["stream"] is True
    assert "".join(items[:-1]).replace("  ", " ").strip() == reply
    assert "geometrically [1][2]." in answer.answer  # renumbered by first appearance
    assert [c.n for c in answer.citations] == [1, 2]


def test_llm_reply_without_citations_is_withheld(llm_chain: AnswerChain, srv: FakeOpenAIServer) -> None:
    srv.queue_reply("Canberra is the capital of Australia.")
    a = llm_chain.ask("What is the capital of Australia?")
    assert (a.answer, a.answerable, a.citations) == (CANNOT_ANSWER, False, [])
    assert any("cited none" in w for w in a.warnings)


def test_llm_cannot_answer(llm_chain: AnswerChain, srv: FakeOpenAIServer) -> None:
    srv.queue_reply(CANNOT_ANSWER)
    a = llm_chain.ask("Who won the 2018 FIFA World Cup?")
    assert (a.answer, a.answerable, a.citations) == (CANNOT_ANSWER, False, [])


def test_llm_prompt_is_trimmed_to_the_budget(rt: Runtime, srv: FakeOpenAIServer) -> None:
    settings = rt.settings.with_overrides(llm={"base_url": srv.base_url, "api_key": KEY, "context_tokens": 500,
                                               "max_retries": 0})
    srv.queue_reply("Energy loss grows during RL [1].")
    a = AnswerChain(rt, settings=settings).ask("What is the energy loss phenomenon in RLHF?")
    assert srv.chat_requests[-1]["messages"][-1]["content"].count("<source n=") < 5
    assert any("context_tokens=500" in w for w in a.warnings) and a.answerable


def test_follow_up_rewritten_by_the_llm(llm_chain: AnswerChain, srv: FakeOpenAIServer, ids) -> None:
    conv = Conversation(llm_chain)
    srv.queue_reply("This work identifies the energy loss phenomenon in RLHF [1].")
    conv.ask("What is the energy loss phenomenon in RLHF?")
    rewrite = "What does the Energy loss-aware PPO algorithm (EPPO) penalize?"
    srv.queue_reply(rewrite)
    srv.queue_reply("It penalizes the increase in energy loss in the final layer [1].")
    a = conv.ask("What does it penalize?")
    condense = srv.chat_requests[-2]["messages"][-1]["content"]
    assert "energy loss phenomenon" in condense and "What does it penalize?" in condense
    assert a.standalone_question == rewrite
    assert a.retrieved[0]["paper_id"] == ids["EPPO"] and a.cited_ids == [ids["EPPO"]]


def test_condense_falls_back_offline_when_the_llm_fails(llm_chain: AnswerChain, srv: FakeOpenAIServer, ids) -> None:
    conv = Conversation(llm_chain)
    srv.queue_reply("This work identifies the energy loss phenomenon in RLHF [1].")
    conv.ask("What is the energy loss phenomenon in RLHF?")
    srv.queue_fault(500)
    srv.queue_reply("It penalizes the increase in energy loss [1].")
    a = conv.ask("What does it penalize?")
    assert any("offline rewrite" in w for w in a.warnings)
    assert a.retrieved[0]["paper_id"] == ids["EPPO"] and a.answerable


def test_human_readable_rendering(chain: AnswerChain) -> None:
    from rag.answer import render_text

    answer = chain.ask("What does EPPO penalize?", filters=PaperQuery(author="Yuchun Miao"))
    text = render_text(answer)
    assert text.startswith("Q: What does EPPO penalize?\n   filters: author=Yuchun Miao\n")
    assert f"\nReferences:\n  [1] {answer.citations[0].title}\n" in text and "Miao" in answer.citations[0].title
    assert "Yuchun Miao, Sen Zhang, Liang Ding et al. \u00b7 Deep Learning; Large Language Models" in text
    assert render_text(chain.ask("What is the capital of Australia?")).endswith(CANNOT_ANSWER)
