"""Verification: invalid [n] removed and reported, statements scored against their abstracts, renumbering."""

from __future__ import annotations

import pytest
from conftest import SAMPLE

from rag.ingest import loaders
from rag.qa.evidence import EvidenceIndex
from rag.qa.generate import Generation
from rag.qa.prompts import CANNOT_ANSWER
from rag.qa.retrieval import PaperHit
from rag.qa.verify import parse_marker, renumber, statements, verify
from rag.records import StoredPaper

PAPERS = [
    ("p-eppo", "Miao et al.: EPPO", ["Yuchun Miao", "Sen Zhang"],
     "This work identifies the Energy Loss Phenomenon in RLHF. We propose an Energy loss-aware PPO algorithm (EPPO) "
     "which penalizes the increase in energy loss in the final layer during reward calculation. Experiments show "
     "that EPPO mitigates reward hacking."),
    ("p-fl", "Li et al.: FedGMT", ["Yuhang Li"],
     "Federated learning struggles with heterogeneous data. We propose FedGMT, which needs only a single backward "
     "pass per iteration. FedGMT outperforms sharpness-aware baselines on CIFAR-10."),
    ("p-video", "Xie et al.: Video-MTR", ["Yuan Xie", "Tianshui Chen", "Zheng Ge"],
     "Long-form video understanding is hard. We propose Video-MTR, a multi-turn reasoning framework trained with "
     "RL. Video-MTR needs only 8K training samples."),
]


def hit(i: int) -> PaperHit:
    pid, label, authors, abstract = PAPERS[i]
    return PaperHit(pid, 1.0 - i / 10, paper=StoredPaper(id=pid, label=label, title=None, authors=tuple(authors),
                                                          categories=("Test",), year=2025, abstract=abstract,
                                                          url=f"https://example.org/{pid}"))


@pytest.fixture(scope="module")
def evidence(embedder) -> EvidenceIndex:
    return EvidenceIndex(embedder, lambda terms: {t: 1.0 for t in terms})


def test_parse_marker_forms() -> None:
    assert parse_marker("1") == [1]
    assert parse_marker("1, 3") == [1, 3]
    assert parse_marker("2-4") == [2, 3, 4]
    assert parse_marker("1\u20132") == [1, 2]


def test_renumber_drops_unknown_sources_and_orders_by_first_use() -> None:
    text, order, warnings = renumber("EPPO helps [2]. So does this [9]. And FL [1, 9].", 3)
    assert text == "EPPO helps [1]. So does this. And FL [2]."
    assert order == [2, 1]
    assert warnings == ["removed citation [9]: there are only 3 sources"]


def test_statements_split_sentences_and_reference_lines() -> None:
    found = statements("EPPO penalizes energy loss [1]. It works well [1][2].\n\n[2] Li et al. \u2014 FedGMT is fast.")
    assert [(s.text, s.cites) for s in found] == [("EPPO penalizes energy loss.", [1]), ("It works well.", [1, 2]),
                                                ("FedGMT is fast.", [2])]


def test_invalid_citation_removed_and_citations_renumbered(evidence: EvidenceIndex) -> None:
    gen = Generation("FedGMT needs a single backward pass per iteration [2]. EPPO penalizes the increase in energy "
                     "loss in the final layer [1]. Something else entirely [9].", [hit(0), hit(1), hit(2)])
    out = verify(gen, evidence)
    assert "[9]" not in out.text and any("[9]" in w for w in out.warnings) and out.removed_citations == 1
    assert out.text.startswith("FedGMT needs a single backward pass per iteration [1].")
    assert "final layer [2]." in out.text
    assert [c.paper_id for c in out.citations] == ["p-fl", "p-eppo"]  # the uncited Video-MTR paper is dropped
    assert [c.n for c in out.citations] == [1, 2]
    assert all(c.supported for c in out.citations)
    assert "single backward pass" in out.citations[0].evidence
    assert "penalizes" in out.citations[1].evidence
    c = out.citations[1]
    assert (c.title, c.authors, c.year, c.url) == ("Miao et al.: EPPO", ["Yuchun Miao", "Sen Zhang"], 2025,
                                                   "https://example.org/p-eppo")
    assert out.answerable


def test_an_off_topic_statement_is_not_in_the_source(evidence: EvidenceIndex) -> None:
    """The on-topic score may only say a statement is not in the cited abstract: a quiet note, never "does not
    support", and the citation is not marked (only a contradiction marks it)."""
    gen = Generation("The capital of Australia is Canberra, a planned city [1].", [hit(0)])
    out = verify(gen, evidence)
    st = out.statements[0]
    assert (st.verdict, st.rule, st.supported) == ("not_in_source", "on_topic", False)
    assert "is about something else" in st.said and st.source_says in PAPERS[0][3]
    assert out.citations and out.citations[0].supported
    assert any(w.startswith("[1] not in the cited abstract: \u201cThe capital") for w in out.warnings), out.warnings
    assert not any("support" in w.split("(")[0] for w in out.warnings)


def test_no_valid_citation_withholds_the_answer(evidence: EvidenceIndex) -> None:
    out = verify(Generation("Canberra is the capital of Australia [7].", [hit(0)]), evidence)
    assert (out.text, out.citations, out.answerable) == (CANNOT_ANSWER, [], False)
    assert any("cited none" in w for w in out.warnings) and out.removed_citations == 1
    out = verify(Generation("Canberra is the capital of Australia.", [hit(0)]), evidence)
    assert (out.text, out.answerable) == (CANNOT_ANSWER, False)


@pytest.mark.parametrize("reply", [CANNOT_ANSWER, "I can't answer that from the papers in this collection",
                                   "I can\u2019t answer that from the papers in this collection. [1]"])
def test_cannot_answer_has_no_citations(evidence: EvidenceIndex, reply: str) -> None:
    out = verify(Generation(reply, [hit(0)]), evidence)
    assert (out.text, out.citations, out.answerable) == (CANNOT_ANSWER, [], False)


def test_summaries_follow_the_renumbering(evidence: EvidenceIndex) -> None:
    gen = Generation("Video-MTR needs only 8K training samples [3].", [hit(0), hit(1), hit(2)],
                     summaries={3: "Video-MTR is a multi-turn reasoning framework."})
    out = verify(gen, evidence)
    assert out.text == "Video-MTR needs only 8K training samples [1]."
    assert out.citations[0].summary == "Video-MTR is a multi-turn reasoning framework."


# ---- claim checks: a statement that contradicts its abstract is unsupported, with the reason ----------------
SAMPLE_EPPO = next(p for f in SAMPLE for p in loaders.load(f).papers if "Energy loss-aware PPO" in p.abstract)


def sample_hit() -> PaperHit:
    p = SAMPLE_EPPO
    return PaperHit(p.id, 1.0, paper=StoredPaper(id=p.id, label=p.label, title=p.title, authors=tuple(p.authors),
                                                 categories=tuple(p.categories), year=p.year, abstract=p.abstract))


def one(evidence: EvidenceIndex, text: str, h: PaperHit | None = None):
    out = verify(Generation(text, [h or sample_hit()]), evidence)
    assert len(out.statements) == 1
    return out, out.statements[0]


@pytest.mark.parametrize(("text", "rule", "because"), [
    ("EPPO rewards the increase in energy loss in the first layer [1].", "direction", "penalizes"),
    ("EPPO does not mitigate reward hacking [1].", "negation", "mitigating"),
])
def test_the_issue_19_contradictions_are_caught_but_not_called_contradicted_offline(
        evidence: EvidenceIndex, text: str, rule: str, because: str) -> None:
    """On the real sample abstract, both statements were supported=True on score alone: now each is flagged, with
    the rule, what it said and the source sentence. Offline the rules say "not in the source", never
    "contradicted": on the blind set claims_heldout7 these families were right as contradicted 5/8 (negation) and
    13/19 (direction), under issue 29's 0.9 bar (rag/qa/claims/table.py); so the citation itself is not marked."""
    out, st = one(evidence, text)
    assert (st.verdict, st.rule, st.supported, st.cited) == ("not_in_source", rule, False, [1])
    assert because in st.why and because in st.said and st.source_says in SAMPLE_EPPO.abstract
    assert out.citations[0].supported
    assert any(w.startswith("[1] not in the cited abstract: ") and st.text in w and because in w
               for w in out.warnings), out.warnings


def test_the_old_bar_on_the_eppo_abstract(evidence: EvidenceIndex) -> None:
    """The old bar's four statements (bench.claims): the true one supported; a flipped verb, a flipped negation
    and an invented 73% never supported, and the invented number not called a contradiction."""
    _, st = one(evidence, "EPPO penalizes the increase in energy loss in the final layer during reward calculation "
                          "[1].")
    assert st.verdict == "supported", st.why
    verdicts = [one(evidence, text)[1].verdict for text in (
        "EPPO rewards the increase in energy loss in the first layer [1].",
        "EPPO does not mitigate reward hacking [1].",
        "EPPO mitigates reward hacking in 73% of the evaluated cases [1].")]
    assert verdicts == ["not_in_source", "not_in_source", "not_in_source"]  # never contradicted offline (table.py)


def test_a_paraphrase_is_supported(evidence: EvidenceIndex) -> None:
    out, st = one(evidence, "EPPO penalizes increases in the final-layer energy loss when computing rewards, "
                            "which mitigates reward hacking [1].")
    assert st.supported and st.why == "" and out.citations[0].supported
    assert (st.verdict, st.rule, st.said) == ("supported", "", "") and st.source_says in SAMPLE_EPPO.abstract
    assert not any("support" in w or "contradicted" in w for w in out.warnings)


def test_a_changed_number_is_not_in_the_source_and_an_equal_one_is_supported(evidence: EvidenceIndex) -> None:
    out, st = one(evidence, "Video-MTR needs only 80K training samples [1].", hit(2))
    assert (st.verdict, st.rule) == ("not_in_source", "numbers") and "80K not in the abstract" in st.why
    assert out.citations[0].supported and any(w.startswith("[1] not in the cited abstract") for w in out.warnings)
    _, st = one(evidence, "Video-MTR needs only 8,000 training samples [1].", hit(2))
    assert st.supported, st.why


def test_a_swapped_method_is_not_in_the_source(evidence: EvidenceIndex) -> None:
    _, st = one(evidence, "FedGMT penalizes the increase in energy loss in the final layer [1].")
    assert (st.verdict, st.rule) == ("not_in_source", "names") and "FedGMT not named in the abstract" in st.why


def test_a_statement_is_checked_against_all_the_papers_it_cites(evidence: EvidenceIndex) -> None:
    out = verify(Generation("EPPO penalizes energy loss in the final layer, while FedGMT needs a single backward "
                            "pass per iteration [1][2].", [hit(0), hit(1)]), evidence)
    st = out.statements[0]
    # Each name and number occurs in one of the cited abstracts (the support score is per abstract, and
    # half of this sentence is off topic for each, so only the claim checks are asserted here).
    assert st.cited == [1, 2] and "not named" not in st.why and "not in the abstract" not in st.why, st.why
    # The checks did run on this statement: citing EPPO's paper alone, FedGMT is not named in it.
    alone = verify(Generation("EPPO penalizes energy loss in the final layer, while FedGMT needs a single backward "
                              "pass per iteration [1].", [hit(0), hit(1)]), evidence)
    assert "FedGMT" in alone.statements[0].why and not alone.statements[0].supported, alone.statements[0].why
    out = verify(Generation("EPPO and FedGMT both need 8K training samples [1][2].", [hit(0), hit(1), hit(2)]),
                 evidence)
    assert not out.statements[0].supported and "8K" in out.statements[0].why  # Video-MTR's number, not cited


def test_a_number_in_words_or_another_unit_is_supported_and_a_changed_one_is_not(evidence: EvidenceIndex) -> None:
    _, st = one(evidence, "Video-MTR needs only eight thousand training samples [1].", hit(2))
    assert st.supported, st.why
    for changed, shown in (("Video-MTR needs only eight hundred training samples [1].", "eight hundred"),
                           ("Video-MTR needs only 8 training samples [1].", "8")):
        _, st = one(evidence, changed, hit(2))
        assert not st.supported and f"{shown} not in the abstract" in st.why, (changed, st.why)
