"""Answer length (issue 32, item 2): brief (2-3 sentences, at most 3 papers), normal (as before) and thorough
(every retrieved paper that bears on the question, grouped by what each says), in the extractive and the llm
mode; and abstract sentences that read on their own (no leading connective, no pronoun without antecedent)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from conftest import SAMPLE
from conftest import STUB_KEY as KEY

from rag.answer import papers_considered
from rag.config import get_settings
from rag.errors import InputError
from rag.qa.chain import AnswerChain
from rag.qa.generate.standalone import drop_connective, leans_back, name_subject, standalone
from rag.qa.prompts import LENGTH_RULES, SYSTEM_PROMPT, system_prompt
from rag.qa.verify import statements
from rag.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAIServer

QUESTIONS = ["Which papers use reinforcement learning from human feedback?", "How do agents explore efficiently?",
             "What methods improve diffusion model sampling?", "How are graph neural networks trained?"]


# ---- sentences that read on their own --------------------------------------------------------------------
def test_a_leading_connective_is_dropped_and_the_next_word_capitalised() -> None:
    assert drop_connective("Moreover, to enhance stealthiness, we introduce a trigger.") == \
        "To enhance stealthiness, we introduce a trigger."
    assert drop_connective("In addition, the model is fast.") == "The model is fast."
    assert drop_connective("However, existing methods fail.") == "Existing methods fail."
    assert drop_connective("Furthermore , results hold.") == "Results hold."
    assert drop_connective("To this end, we propose X.") == "We propose X."
    assert drop_connective("However, in addition, it scales.") == "It scales."
    assert drop_connective("However we disagree.") == "However we disagree."  # no comma: not a connective
    assert drop_connective("Moreover,") == "Moreover,"  # nothing after it: kept


def test_a_pronoun_needing_its_antecedent_is_resolved_or_the_sentence_does_not_stand_alone() -> None:
    authors = ["Ada Gao", "Bo Li", "Cy Wu"]
    assert standalone("This method reaches 90% accuracy.", authors) == "The method of Gao et al. reaches 90% accuracy."
    assert standalone("Moreover, these models scale well.", authors) == "The models of Gao et al. scale well."
    assert standalone("This paper studies bandits.", ["Ada Gao"]) == "The paper by Gao studies bandits."
    assert standalone("This method is fast.", []) is None  # no one to name
    for leaning in ("They are widely used in practice.", "It also scales to large graphs.",
                    "However, this allows faster training.", "These show strong gains.", "Its loss is convex."):
        assert leans_back(leaning) and standalone(leaning, authors) is None, leaning
    for alone in ("It is well known that PPO is unstable.", "Transformers dominate NLP.",
                  "Thistle pollen is studied."):
        assert not leans_back(alone) and standalone(alone, authors) == alone, alone


def test_a_they_left_by_rewording_we_names_the_authors() -> None:
    two = ["Ada Gao", "Bo Li"]
    assert name_subject("To enhance stealthiness, they introduce a trigger.",
                        "To enhance stealthiness, we introduce a trigger.", two) == \
        "To enhance stealthiness, Gao and Li introduce a trigger."
    assert name_subject("They propose X.", "We propose X.", ["Ada Gao"]) == "Gao proposes X."
    assert name_subject("Here they study Y.", "Here we study Y.", ["Ada Gao"]) == "Here Gao studies Y."
    assert name_subject("Their method wins.", "Our method wins.", two) == "Gao and Li's method wins."
    # a "they" the abstract itself wrote refers to something else: left alone
    assert name_subject("They are widely used.", "They are widely used.", two) == "They are widely used."


# ---- the sample corpus, in both modes --------------------------------------------------------------------
@pytest.fixture(scope="module")
def rt(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    runtime = Runtime(get_settings(home=tmp_path_factory.mktemp("length-home")), _embedder=embedder)
    runtime.ingestor(progress=False).ingest(SAMPLE)
    yield runtime
    runtime.close()


def _synthesis(text: str) -> str:
    """The answer's synthesis: the text before its reference lines."""
    return re.split(r"\n\n(?=\[1\] )", text)[0]


def test_extractive_lengths_differ_as_asked(rt: Runtime) -> None:
    chain = AnswerChain(rt)
    more_papers = shorter = 0
    for q in QUESTIONS:
        brief, normal, thorough = (chain.ask(q, length=n) for n in ("brief", "normal", "thorough"))
        assert brief.answerable and normal.answerable and thorough.answerable, q
        nb, nn, nt = len(brief.citations), len(normal.citations), len(thorough.citations)
        assert 1 <= nb <= min(3, nn) and nn <= nt, (q, nb, nn, nt)
        assert len(brief.answer) < len(normal.answer) <= len(thorough.answer), q
        assert 1 <= len(statements(_synthesis(brief.answer))) <= 3, brief.answer
        assert set(normal.cited_ids) <= set(thorough.cited_ids)
        assert {r["paper_id"] for r in thorough.retrieved} >= set(thorough.cited_ids)
        more_papers += nt > nn
        shorter += len(brief.answer) < 0.7 * len(normal.answer)
    assert more_papers >= 1 and shorter >= 2  # thorough reaches further, brief is clearly shorter
    assert chain.ask(QUESTIONS[0]).answer == chain.ask(QUESTIONS[0], length="normal").answer
    with pytest.raises(InputError, match="brief, normal, thorough"):
        chain.ask(QUESTIONS[0], length="short")


def test_thorough_groups_papers_into_paragraphs(rt: Runtime) -> None:
    answer = AnswerChain(rt).ask("How do agents explore efficiently?", length="thorough")
    paragraphs = [p for p in _synthesis(answer.answer).split("\n\n") if p.strip()]
    cited = [sorted({int(n) for n in re.findall(r"\[(\d+)\]", p)}) for p in paragraphs]
    assert len(answer.citations) >= 2 and sum(len(c) for c in cited) == len(answer.citations)  # each once
    assert sorted(n for c in cited for n in c) == list(range(1, len(answer.citations) + 1))


def _quoting_model(body: dict) -> str:
    """A model that does what the sources allow: one paragraph per source it was given, quoting the first
    sentence of its abstract and citing it."""
    user = body["messages"][-1]["content"]
    sources = re.findall(r'<source n="(\d+)">\n[^\n]*\n(.*?)\n</source>', user, re.S)
    firsts = [(n, re.split(r"(?<=[.!?])\s", text.strip())[0]) for n, text in sources]
    return "\n\n".join(f"{first} [{n}]" for n, first in firsts)


def test_the_llm_mode_honours_the_length(rt: Runtime, srv: FakeOpenAIServer) -> None:
    """Rule 5 of the system prompt says how long; at the default k a thorough answer retrieves and sends twice the
    papers, a brief one three under a smaller token cap: a model citing what it is given answers brief < normal
    < thorough in papers and in length, and a brief answer keeps at most 3 papers whatever the model cites."""
    settings = rt.settings.with_overrides(llm={"base_url": srv.base_url, "api_key": KEY, "model": "stub-model",
                                               "max_tokens": 600, "max_retries": 0, "timeout_s": 10},
                                          verify={"judge": "rules"})
    chain = AnswerChain(rt, settings=settings)
    k = settings.retrieval.k
    got = {}
    try:
        srv.responder = _quoting_model
        for length in ("brief", "normal", "thorough"):
            answer = chain.ask(QUESTIONS[1], mode="llm", length=length)
            body = srv.chat_requests[-1]
            got[length] = (body["messages"][0]["content"], body["messages"][-1]["content"].count('<source n="'),
                           body.get("max_completion_tokens"), answer)
        srv.responder = lambda body: " ".join(f"Source {n} bears on it [{n}]." for n in range(1, 6))
        unruly = chain.ask(QUESTIONS[0], mode="llm", length="brief")  # a model citing [1]-[5] of the 3 it got
    finally:
        srv.responder = None
    assert got["normal"][0] == SYSTEM_PROMPT == system_prompt("normal")  # the default prompt is unchanged
    for length in ("brief", "thorough"):
        assert got[length][0] == system_prompt(length) and LENGTH_RULES[length] in got[length][0]
    assert [got[n][1] for n in ("brief", "normal", "thorough")] == [3, k, 2 * k]  # papers sent to the model
    assert got["brief"][2] == 250 and got["normal"][2] == got["thorough"][2] == 600  # the answer's token cap
    brief, normal, thorough = (got[n][3] for n in ("brief", "normal", "thorough"))
    assert len(thorough.retrieved) == 2 * k and len(normal.retrieved) == k
    assert 1 <= len(brief.citations) <= 3 < len(normal.citations) < len(thorough.citations), \
        [len(a.citations) for a in (brief, normal, thorough)]
    assert len(brief.answer) < len(normal.answer) < len(thorough.answer)
    assert set(normal.cited_ids) <= set(thorough.cited_ids)
    assert len(unruly.citations) == 3  # only the three papers a brief answer was given survive verification
    # a k the request gives is kept as asked, at every length
    assert papers_considered(5, "thorough") == 10 and papers_considered(5, "thorough", explicit=True) == 5
    assert papers_considered(40, "thorough") == 50 and papers_considered(5, "brief") == 5


def test_the_cli_takes_length(rt: Runtime, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    from rag.cli import main

    rt.close()  # the embedded store belongs to one process at a time: the command opens it
    monkeypatch.setenv("PAPERCHAT_HOME", str(rt.settings.home))
    out = {}
    for length in ("brief", "thorough"):
        capsys.readouterr()
        assert main(["ask", "--json", "--mode", "extractive", "--length", length, QUESTIONS[1]]) == 0
        out[length] = json.loads(capsys.readouterr().out)
    assert len(out["brief"]["citations"]) < len(out["thorough"]["citations"])
    assert len(out["brief"]["answer"]) < len(out["thorough"]["answer"])
