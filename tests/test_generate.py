"""The extractive generator on real sample abstracts and the real embedding model (no store, no LLM)."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from conftest import SAMPLE

from rag.analysis import analyze
from rag.display import prose_surnames
from rag.index.lexical import paper_text
from rag.ingest import loaders
from rag.qa.evidence import EvidenceIndex, QuestionScorer
from rag.qa.generate import Generation, GenerationInput
from rag.qa.generate.extractive import ExtractiveGenerator, asks_for_several, attribute, cite
from rag.qa.prompts import CANNOT_ANSWER
from rag.qa.retrieval import PaperHit
from rag.records import StoredPaper
from tests.helpers import scored_pairs


@pytest.fixture(scope="module")
def papers() -> dict[str, StoredPaper]:
    """Sample papers as retrieval returns them, by id."""
    out = {}
    for path in SAMPLE:
        for p in loaders.load(path).papers:
            out[p.id] = StoredPaper(id=p.id, label=p.label, title=p.title, authors=tuple(p.authors),
                                    categories=tuple(p.categories), year=p.year, url=p.url, abstract=p.abstract)
    return out


def find(papers: dict[str, StoredPaper], author: str, word: str) -> StoredPaper:
    return next(p for p in papers.values() if author in p.authors and word in p.abstract)


@pytest.fixture(scope="module")
def evidence(embedder, papers) -> EvidenceIndex:
    df: Counter[str] = Counter()
    for p in papers.values():
        df.update(set(analyze(paper_text(p))))
    n = len(papers)
    return EvidenceIndex(embedder, lambda terms: {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) if df[t] else 0.0
                                                  for t in terms})


@pytest.fixture(scope="module")
def gen(evidence) -> ExtractiveGenerator:
    return ExtractiveGenerator(evidence)


def hits(*ps: StoredPaper) -> list[PaperHit]:
    return [PaperHit(p.id, 1.0 - i / 10, paper=p) for i, p in enumerate(ps)]


def synthesis(text: str) -> str:
    return text.split("\n\n")[0]


def test_answer_cites_the_paper_that_answers(gen, papers) -> None:
    eppo = find(papers, "Yuchun Miao", "EPPO")
    fl = find(papers, "Yuhang Li", "Federated")
    pmd = find(papers, "Zhenghao Xu", "PMD")
    g = gen.generate(GenerationInput("What does the EPPO algorithm penalize during reward calculation?",
                                     hits(eppo, fl, pmd)))
    assert g.answerable and [h.paper_id for h in g.sources] == [eppo.id]  # only the relevant paper is cited
    first = synthesis(g.text)
    n_sentences = len(re.findall(r"\[\d+\][.!?]", first))
    assert 2 <= n_sentences <= 4
    assert "penalizes the increase in energy loss" in first
    assert "Miao et al." in g.text and "\n\n[1] " + eppo.label + " \u2014 " in g.text
    assert g.summaries[1] and g.summaries[1] not in first  # the reference line adds something


def test_two_papers_for_a_two_paper_question(gen, papers) -> None:
    mia = find(papers, "Antoni Kowalczuk", "membership")
    tools = find(papers, "Jiali Cheng", "ToolDelete")
    other = find(papers, "Zinan Zheng", "weather")
    g = gen.generate(GenerationInput("Which papers build or use membership inference attacks?",
                                     hits(mia, tools, other)))
    assert {h.paper_id for h in g.sources} == {mia.id, tools.id}
    assert "[1]" in synthesis(g.text) and "[2]" in synthesis(g.text)


def test_a_paper_that_only_shares_words_is_not_cited(gen, papers) -> None:
    # The backdoor-poisoning paper and the tool-unlearning paper share "attack", "image", "model", even
    # "membership inference" with the question; only the first paper measures what is asked.
    mia = find(papers, "Antoni Kowalczuk", "membership")
    backdoor = next(p for p in papers.values() if "Clean-Label Backdoor" in p.abstract)
    tools = find(papers, "Jiali Cheng", "ToolDelete")
    others = [backdoor, tools]
    g = gen.generate(GenerationInput("How much more vulnerable to membership inference are image autoregressive "
                                     "models than diffusion models?", hits(mia, *others)))
    assert g.answerable and [h.paper_id for h in g.sources] == [mia.id]
    # A parameter-efficient fine-tuning paper and a KV-cache paper share "fine-tuning", "LLMs", "rank" with a
    # question that only the rank-1 LoRA paper answers.
    lora, sdt, scd = (next(p for p in papers.values() if phrase in p.abstract)
                      for phrase in ("rank-1 LoRA", "Sparse Dimension Tuning", "SCD"))
    g = gen.generate(GenerationInput("Why does rank-1 LoRA collapse when fine-tuning multimodal LLMs, and what "
                                     "initialization fixes it?", hits(lora, sdt, scd)))
    assert g.answerable and [h.paper_id for h in g.sources] == [lora.id]
    # Asked for every paper on the topic, the one that uses membership inference attacks is cited too.
    g = gen.generate(GenerationInput("Which papers use membership inference attacks?", hits(mia, *others)))
    assert {mia.id, tools.id} <= {h.paper_id for h in g.sources}


def test_a_comparison_cites_each_paper_compared(gen, papers) -> None:
    eppo = find(papers, "Yuchun Miao", "EPPO")
    pmd = find(papers, "Zhenghao Xu", "PMD")
    other = find(papers, "Zinan Zheng", "weather")
    g = gen.generate(GenerationInput("Compare the papers that modify PPO or mirror-descent style policy "
                                     "optimization for LLMs.", hits(pmd, other, eppo)))
    assert [h.paper_id for h in g.sources] == [pmd.id, eppo.id]


@pytest.mark.parametrize(("question", "several"), [
    ("Which papers study reward hacking?", True), ("Compare EVO and MICE.", True),
    ("What approaches to parameter-efficient fine-tuning are proposed?", True),
    ("What work is there on neural PDE solvers, and how do the approaches differ?", True),
    ("Are there methods that make kernel two-sample tests cheaper?", True),
    ("What regularizer does PMD-mean implicitly optimize?", False),
    ("How does APCG compare with SDCA on ill-conditioned problems?", False),  # one paper's own comparison
    ("Does the method beat both APG and Prox-SVRG?", False),
    ("How are greedy value function methods related to policy gradient methods?", False),
])
def test_questions_asking_for_several_papers(question: str, several: bool) -> None:
    assert asks_for_several(question) is several


def test_a_refusal_names_the_closest_papers_without_citing_them(gen, papers) -> None:
    some = list(papers.values())
    g = gen.generate(GenerationInput("How much speedup does speculative decoding with a small draft model give "
                                     "for LLM inference?", hits(*some[:5])))
    assert (g.text, g.sources, g.answerable) == (CANNOT_ANSWER, [], False)
    assert g.closest and len(g.closest) <= 3 and {h.paper_id for h in g.closest} <= {p.id for p in some[:5]}
    # Nothing in the library is near a question about baking: no paper is named as close.
    assert gen.generate(GenerationInput("How do I bake sourdough bread?", hits(*some[:5]))).closest == []


@pytest.mark.parametrize("question", ["What is the capital of Australia?", "How do I bake sourdough bread?"])
def test_out_of_corpus_gets_the_fixed_reply(gen, papers, question: str) -> None:
    some = list(papers.values())[:5]
    g = gen.generate(GenerationInput(question, hits(*some)))
    assert (g.text, g.sources, g.answerable) == (CANNOT_ANSWER, [], False)
    assert gen.generate(GenerationInput(question, [])).text == CANNOT_ANSWER


def test_math_stays_intact(gen, papers) -> None:
    pmd = find(papers, "Zhenghao Xu", "PMD")
    g = gen.generate(GenerationInput("What regularizer does PMD-mean implicitly optimize?", hits(pmd)))
    assert "$\\chi^2$" in g.text
    for m in re.finditer(r"\$[^$]*\$", g.text):
        assert "[" not in m.group(0)  # no marker inside math


def test_stream_is_progressive_and_matches(gen, papers) -> None:
    video = find(papers, "Yuan Xie", "Video-MTR")
    inp = GenerationInput("How many training samples does Video-MTR need?", hits(video))
    items = list(gen.stream(inp))
    assert isinstance(items[-1], Generation) and all(isinstance(x, str) for x in items[:-1])
    assert len(items) >= 4  # sentence by sentence, then the reference line
    assert "".join(items[:-1]) == items[-1].text == gen.generate(inp).text
    assert "8K" in items[-1].text


def test_listing_names_every_matching_paper(gen, papers) -> None:
    a = find(papers, "Shiqing Gao", "Extreme Value")
    b = find(papers, "Shiqing Gao", "flashbulb")
    g = gen.generate(GenerationInput("What has worked on?", hits(a, b), listing=True, filtered=True,
                                     filter_text="author: Shiqing Gao", total_matches=2))
    assert g.text.startswith("2 papers match (author: Shiqing Gao):")
    assert "\n[1] " in g.text and "\n[2] " in g.text and g.answerable
    assert "EVO" in g.summaries[1] and "MICE" in g.summaries[2]


def test_sentence_vectors_are_cached(gen, papers, evidence) -> None:
    calls = []
    inner = evidence.embedder

    class Spy:
        name, dim = inner.name, inner.dim

        def embed(self, texts):
            calls.append(len(texts))
            return inner.embed(texts)

    spy = ExtractiveGenerator(EvidenceIndex(Spy(), evidence._idf))  # type: ignore[arg-type]
    eppo = find(papers, "Yuchun Miao", "EPPO")
    spy.generate(GenerationInput("What does EPPO penalize?", hits(eppo)))
    first = list(calls)
    spy.generate(GenerationInput("What does EPPO penalize?", hits(eppo)))
    assert len(first) == 2 and first[0] > 3  # one batch of sentences, then the question
    assert calls == first  # nothing embedded again


def test_a_follow_up_scored_by_the_chain_is_not_scored_again(gen, papers, evidence, monkeypatch) -> None:
    """The chain's follow-up re-ranking hands its scorer over: the generator reads its rows (scored in another
    order) instead of scoring the follow-up's words again, and answers exactly as when it scores them itself."""
    eppo, fl, pmd = find(papers, "Yuchun Miao", "EPPO"), find(papers, "Yuhang Li", "Federated"), \
        find(papers, "Zhenghao Xu", "PMD")
    follow = "What does it penalize?"
    standalone = f"{follow} ; What is the energy loss phenomenon in RLHF? ; {eppo.title} ; {eppo.title}"
    alone = gen.generate(GenerationInput(standalone, hits(eppo, fl, pmd), focus=follow))
    scorer = QuestionScorer(evidence, follow)
    scorer.sentences(evidence.papers([pmd, eppo, fl]))  # the retrieved order, before the re-ranking
    scored = scored_pairs(monkeypatch)
    handed = gen.generate(GenerationInput(standalone, hits(eppo, fl, pmd), focus=follow, focus_scorer=scorer))
    assert [q for q, _ in scored] == [standalone] * 3  # the standalone question only: the follow-up was scored
    assert alone.answerable and alone.sources[0].paper_id == eppo.id
    assert (handed.text, [h.paper_id for h in handed.sources]) == (alone.text, [h.paper_id for h in alone.sources])


def test_attribution_and_markers() -> None:
    assert prose_surnames(["Yuchun Miao", "Sen Zhang", "Liang Ding"]) == "Miao et al."
    assert prose_surnames(["Jiali Cheng", "Hadi Amiri"]) == "Cheng and Amiri"
    assert attribute("We propose EPPO, which works.", ["Yuchun Miao", "Sen Zhang", "X Y"], True) == \
        "Miao et al. propose EPPO, which works."
    assert attribute("In this paper, we also study $we$ and our bounds.", ["A B", "C D"], True) == \
        "B and D also study $we$ and their bounds."
    assert attribute("We analyze falling trees.", ["Cynthia Rudin"], True) == "Rudin analyzes falling trees."
    assert attribute("This work identifies a phenomenon.", ["A Miao", "B C", "D E"], True) == \
        "The work by Miao et al. identifies a phenomenon."
    assert attribute("Then we show it.", ["A B"], False) == "Then they show it."
    assert attribute("To fix this, we offer a view.", ["A Zhao", "B Zhang"], True) == \
        "To fix this, Zhao and Zhang offer a view."
    assert attribute("Our results show gains.", ["A Zhao", "B Zhang"], True) == "Zhao and Zhang's results show gains."
    assert cite("EPPO penalizes energy loss.", 2) == "EPPO penalizes energy loss [2]."
    assert cite("Is it (really) so?", 1) == "Is it (really) so [1]?"
    assert cite("No final stop", 3) == "No final stop [3]."


def test_pronoun_swap_leaves_acronyms_and_quotes_alone() -> None:
    assert attribute("The unconditioned stimulus (US) follows the tone for us.", ["A B", "C D"], False) == \
        "The unconditioned stimulus (US) follows the tone for them."
    assert attribute('Then we call it "our rule" in OUR toolkit.', ["A B"], False) == \
        'Then they call it "our rule" in OUR toolkit.'
    assert attribute("We name it \u201cwe-space\u201d.", ["A B", "C D"], False) == "They name it \u201cwe-space\u201d."


def test_citation_keeps_closing_quotes_with_their_words() -> None:
    assert cite('This is known as the "Twin Paradox."', 1) == 'This is known as the "Twin Paradox" [1].'
    assert cite("It is \u201cflat.\u201d", 2) == "It is \u201cflat\u201d [2]."
    assert cite('The "Twin Paradox" is old.', 3) == 'The "Twin Paradox" is old [3].'
