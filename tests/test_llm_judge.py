"""The LLM judge of cited statements (rag.qa.llm_judge) against the local OpenAI-compatible stub: one batched call
per answer, verdicts applied only with a quote found in the cited source, and every failure (bad JSON, a refusal,
a timeout, HTTP 500) leaving the rules' verdicts in place with a warning."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from conftest import STUB_KEY

from rag.config import get_settings
from rag.errors import ConfigError
from rag.qa.evidence import EvidenceIndex
from rag.qa.findings import Claim, JudgeUnavailable
from rag.qa.generate import Generation
from rag.qa.llm_judge import LLMJudge, judge_endpoint, quote_in, quote_key, uses_llm_judge
from rag.qa.prompts import VERDICT_SYSTEM
from rag.qa.retrieval import PaperHit
from rag.qa.verify import verify
from rag.records import StoredPaper

# As a PDF extraction leaves it: a word hyphenated at a line end, a ligature, curly quotes.
EPPO = ("This work identifies the Energy Loss Phenomenon in RLHF. We propose an Energy loss-aware PPO algorithm "
        "(EPPO) which penalizes the in-\ncrease in energy loss in the final layer during reward calculation. "
        "Experiments show that EPPO signi\ufb01cantly mitigates \u201creward hacking\u201d.")
FEDGMT = ("Federated learning struggles with heterogeneous data. We propose FedGMT, which needs only a single "
          "backward pass per iteration.")
PENALIZES = "(EPPO) which penalizes the increase in energy loss in the final layer"  # unhyphenated
MITIGATES = 'EPPO significantly mitigates "reward hacking"'


def claims() -> list[Claim]:
    return [Claim("EPPO penalizes energy loss in the final layer.", (1,), (EPPO,)),
            Claim("EPPO rewards energy loss in the first layer.", (1,), (EPPO,)),
            Claim("FedGMT needs two backward passes.", (2,), (FEDGMT,))]


def reply(*entries: dict[str, Any]) -> str:
    return json.dumps({"verdicts": list(entries)})


def make_judge(srv: Any, timeout_s: float = 5.0, max_statements: int = 12) -> LLMJudge:
    settings = get_settings(llm={"base_url": srv.base_url, "api_key": STUB_KEY, "model": "stub-model"},
                            verify={"judge": "llm", "judge_timeout_s": timeout_s,
                                    "judge_max_statements": max_statements})
    return LLMJudge.from_settings(settings)


def test_quotes_match_through_whitespace_hyphenation_ligatures_and_quotes() -> None:
    assert quote_key("signi\ufb01cantly \u201cfast\u201d") == 'significantly "fast'  # end quote stripped
    assert quote_in(PENALIZES, [EPPO]) and quote_in(MITIGATES + ".", [EPPO])
    assert quote_in("the in- crease in energy loss", [EPPO])
    assert not quote_in("EPPO rewards the increase in energy loss", [EPPO])  # a word changed
    assert not quote_in("energy loss", [EPPO])  # too short to show anything
    assert not quote_in(PENALIZES, [FEDGMT, ""])


def test_a_good_reply_gives_each_statement_its_verdict_and_quote_in_one_call(srv: Any) -> None:
    srv.queue_reply(reply(
        {"id": 1, "verdict": "supported", "quote": PENALIZES + "."},
        {"id": 2, "verdict": "contradicted", "quote": PENALIZES, "said": "rewards energy loss"},
        {"id": 3, "verdict": "not_in_source", "quote": "", "said": "two backward passes"}))
    found = make_judge(srv).judge(claims())
    assert [f[0].verdict for f in found if f] == ["supported", "contradicted", "not_in_source"]
    assert found[0] and found[0][0].source_says == PENALIZES + "." and found[0][0].rule == "llm"
    assert found[1] and found[1][0].said == "rewards energy loss" and found[1][0].source_says == PENALIZES
    assert found[2] and found[2][0].source_says == ""
    (body,) = srv.chat_requests  # one request for the whole answer
    assert body["messages"][0]["content"] == VERDICT_SYSTEM and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    user = body["messages"][1]["content"]
    assert user.count('<source n="1">') == 1 and user.count('<source n="2">') == 1  # each source once
    assert user.index("</sources>") < user.index('"statement": "EPPO rewards')  # statements after the data block


def test_wrong_quotes_and_missing_statements_keep_the_rules_verdict(srv: Any) -> None:
    srv.queue_reply(reply(
        {"id": 1, "verdict": "supported", "quote": "EPPO penalizes energy loss everywhere it can"},  # invented
        {"id": 2, "verdict": "contradicted", "quote": PENALIZES},
        {"id": 3, "verdict": "maybe", "quote": ""}))  # not a verdict
    found = make_judge(srv).judge(claims())
    assert found[0] is None and found[2] is None and found[1] and found[1][0].verdict == "contradicted"
    srv.queue_reply(reply({"id": 2, "verdict": "contradicted", "quote": PENALIZES}))  # 1 and 3 left out
    found = make_judge(srv).judge(claims())
    assert found[0] is None and found[2] is None and found[1]
    srv.queue_reply(reply({"id": 1, "verdict": "supported", "quote": "the model is great"}))
    with pytest.raises(JudgeUnavailable, match="no verdict with a quote found"):
        make_judge(srv).judge(claims()[:1])


def test_statements_past_the_limit_are_left_to_the_rules(srv: Any) -> None:
    srv.queue_reply(reply({"id": 1, "verdict": "supported", "quote": PENALIZES},
                          {"id": 2, "verdict": "contradicted", "quote": PENALIZES}))
    found = make_judge(srv, max_statements=2).judge(claims())
    assert found[0] and found[1] and found[2] is None
    assert "FedGMT needs" not in srv.chat_requests[0]["messages"][1]["content"]


@pytest.mark.parametrize(("script", "says"), [
    (lambda s: s.queue_reply('{"verdicts": [{"id": 1, "verdict": "supported", "quote": "EPPO pen'), "not the JSON"),
    (lambda s: s.queue_reply("I'm sorry, but I can't help with that."), "not the JSON"),
    (lambda s: s.queue_reply("", finish_reason="content_filter"), "refused"),
    (lambda s: s.queue_reply('{"verdicts": [', finish_reason="length"), "cut off"),
    (lambda s: s.queue_fault("500"), "HTTP 500"),
    (lambda s: s.queue_fault("timeout", seconds=3), "timed out after 0.5 s"),
])
def test_a_failed_judge_is_unavailable_at_once(srv: Any, script: Any, says: str) -> None:
    script(srv)
    t0 = time.monotonic()
    with pytest.raises(JudgeUnavailable, match=says):
        make_judge(srv, timeout_s=0.5).judge(claims())
    assert time.monotonic() - t0 < 2.5 and len(srv.chat_requests) <= 1  # one attempt, no retries


def test_auto_picks_the_rules_offline_and_the_llm_judge_for_model_answers_with_an_endpoint() -> None:
    offline = get_settings(verify={"judge": "auto"})
    online = get_settings(llm={"base_url": "http://127.0.0.1:9/v1"}, verify={"judge": "auto"})
    assert not uses_llm_judge(offline, "llm") and not uses_llm_judge(offline, "extractive")
    assert uses_llm_judge(online, "llm") and not uses_llm_judge(online, "extractive")
    assert not uses_llm_judge(online.with_overrides(verify={"judge": "rules"}), "llm")
    assert uses_llm_judge(online.with_overrides(verify={"judge": "llm"}), "extractive")
    with pytest.raises(ConfigError, match="PAPERCHAT_LLM__BASE_URL"):
        uses_llm_judge(offline.with_overrides(verify={"judge": "llm"}), "llm")
    endpoint = judge_endpoint(online.with_overrides(verify={"judge_timeout_s": 7}))
    assert (endpoint.timeout_s, endpoint.max_retries) == (7, 0)


# ---- through verify: the judge's verdicts replace the rules', its failures leave them with a warning -------------
def hit(n: int, abstract: str) -> PaperHit:
    pid = f"p{n}"
    return PaperHit(pid, 1.0, paper=StoredPaper(id=pid, label=f"Paper {n}", title=None, authors=("A B",),
                                                categories=("Test",), year=2025, abstract=abstract))


ANSWER = Generation("EPPO penalizes the increase in energy loss in the final layer [1]. "
                    "FedGMT needs only a single backward pass per iteration [2].", [hit(1, EPPO), hit(2, FEDGMT)])


@pytest.fixture(scope="module")
def evidence(embedder) -> EvidenceIndex:
    return EvidenceIndex(embedder, lambda terms: {t: 1.0 for t in terms})


def test_verify_takes_the_llm_verdicts(srv: Any, evidence: EvidenceIndex) -> None:
    rules = verify(ANSWER, evidence)
    assert [s.verdict for s in rules.statements] == ["supported", "supported"]
    srv.queue_reply(reply({"id": 1, "verdict": "supported", "quote": PENALIZES},
                          {"id": 2, "verdict": "not_in_source", "quote": "", "said": "a single backward pass"}))
    out = verify(ANSWER, evidence, make_judge(srv))
    first, second = out.statements
    assert (first.verdict, first.rule, first.source_says, first.why) == ("supported", "llm", PENALIZES, "")
    assert (second.verdict, second.rule, second.said) == ("not_in_source", "llm", "a single backward pass")
    assert not any("judge" in w for w in out.warnings)


def test_verify_keeps_the_rules_for_a_statement_whose_quote_is_wrong(srv: Any, evidence: EvidenceIndex) -> None:
    srv.queue_reply(reply({"id": 1, "verdict": "contradicted", "quote": "EPPO rewards the increase in energy loss"},
                          {"id": 2, "verdict": "contradicted", "quote": "which needs only a single backward pass"}))
    out = verify(ANSWER, evidence, make_judge(srv))
    assert [(s.verdict, s.rule) for s in out.statements] == [("supported", ""), ("contradicted", "llm")]
    assert any("no usable verdict for 1 of 2 statements" in w for w in out.warnings), out.warnings


@pytest.mark.parametrize("fault", ["bad json", "500", "timeout"])
def test_verify_falls_back_to_the_rules_and_says_so(srv: Any, evidence: EvidenceIndex, fault: str) -> None:
    if fault == "bad json":
        srv.queue_reply("{verdicts: nope")
    else:
        srv.queue_fault(fault, **({"seconds": 3} if fault == "timeout" else {}))
    out = verify(ANSWER, evidence, make_judge(srv, timeout_s=0.5))
    assert [(s.verdict, s.rule) for s in out.statements] == [(s.verdict, s.rule) for s in
                                                             verify(ANSWER, evidence).statements]
    (note,) = [w for w in out.warnings if "judge" in w]
    assert note.startswith("the llm judge was unavailable (") and "the offline rules judged" in note
