"""A question's specific terms (names, languages, datasets, methods) must be in what the extractive answer cites:
the rule on its own, then on a small real store of NeurIPS abstracts through the whole chain."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import get_settings
from rag.qa.chain import AnswerChain
from rag.qa.generate.names import mentioned, missing_terms, specific_terms
from rag.qa.prompts import CANNOT_ANSWER
from rag.runtime import Runtime
from tests.support.data import NIPS

OOC_06 = "What BLEU score do Transformer models reach on WMT14 English-German translation?"


@pytest.mark.parametrize(("question", "terms"), [
    (OOC_06, ["BLEU", "Transformer", "WMT14", "English-German"]),
    ("Does the method beat both APG and Prox-SVRG?", ["APG", "Prox-SVRG"]),
    ("Why does rank-1 LoRA collapse when fine-tuning multimodal LLMs?", ["rank-1", "LoRA", "LLMs"]),
    ("What did Leif Döring and co-authors prove about Q-learning?", ["Leif", "Döring", "Q-learning"]),
    # Capitalised only because a sentence starts there, and plain words: no specific term.
    ("Which graph neural networks work best for predicting molecular properties?", []),
    ("How can data anonymization let each individual choose their own level of privacy? Where is it used?", []),
])
def test_specific_terms_are_names_and_capitalised_words_inside_a_sentence(question: str, terms: list[str]) -> None:
    assert [t.text for t in specific_terms(question)] == terms


def test_a_term_is_matched_by_its_surface_form_not_its_stem() -> None:
    seq2seq = ("On the English to French translation task from the WMT'14 dataset, the translations produced by "
               "the LSTM achieve a BLEU score of 34.8.")
    assert [t.text for t in missing_terms(OOC_06, [seq2seq])] == ["Transformer", "English-German"]
    # "Transformer" is a name: "transformation" (the same stem) does not hold it; a plural does.
    transformer = specific_terms(OOC_06)[1]
    assert not mentioned(transformer, ["invariance to a transformation of the input"])
    assert mentioned(transformer, ["Spatial Transformers are differentiable modules"])
    # Punctuation inside a word, accents and the initials of the words an acronym stands for.
    assert not missing_terms("Which score on WMT14?", ["the WMT'14 dataset"])
    assert not missing_terms("What did Leif Doring prove?", ["Leif Döring"])
    assert not missing_terms("How do GNNs scale?", ["graph neural networks scale linearly"])
    assert missing_terms("How do GNNs scale?", ["graph networks scale linearly"])


# ---- on a small real store ------------------------------------------------------------------------------
# NeurIPS 2014-2015 papers on translation and sequence models (by title), and the sequence-to-sequence paper
# that reports BLEU on WMT'14 English-French among them.
PAPERS = ("Sequence to Sequence Learning with Neural Networks", "An Autoencoder Approach to Learning Bilingual Word",
          "Spatial Transformer Networks", "Attention-Based Models for Speech Recognition",
          "Scheduled Sampling for Sequence Prediction", "Learning to Transduce with Unbounded Memory")


@pytest.fixture(scope="module")
def chain(embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnswerChain]:
    tmp = tmp_path_factory.mktemp("specific-terms")
    rows: list[dict[str, str]] = []
    for path in sorted(NIPS.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            rows += [r for r in csv.DictReader(f) if any(r["Title"].startswith(t) for t in PAPERS)]
    assert len(rows) == len(PAPERS)
    corpus = tmp / "translation.csv"
    with corpus.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    rt = Runtime(get_settings(home=Path(tmp / "home")), _embedder=embedder)
    try:
        assert rt.ingestor(progress=False).ingest([corpus]).added == len(PAPERS)
        yield AnswerChain(rt)
    finally:
        rt.close()


def _title(chain: AnswerChain, paper_id: str) -> str:
    return next(p.title or "" for p in chain.runtime.store.papers() if p.id == paper_id)


@pytest.mark.requires_data(NIPS)
def test_a_question_whose_names_no_cited_paper_mentions_is_refused_naming_them(chain: AnswerChain) -> None:
    a = chain.ask(OOC_06, mode="extractive")
    assert (a.answer, a.answerable, a.citations) == (CANNOT_ANSWER, False, [])
    # What is missing is said, and the paper that would have been cited is named as the closest.
    assert a.closest and a.closest[0]["title"].startswith("Sequence to Sequence Learning")
    note = next(w for w in a.warnings if "mentions" in w)
    assert "\u201cTransformer\u201d" in note and "\u201cEnglish-German\u201d" in note
    assert "\u201cBLEU\u201d" not in note and "Sequence to Sequence Learning" in note


@pytest.mark.requires_data(NIPS)
def test_the_close_question_the_paper_answers_is_answered(chain: AnswerChain) -> None:
    a = chain.ask("What BLEU score does an LSTM sequence-to-sequence model reach on WMT'14 English-French "
                  "translation?", mode="extractive")
    assert a.answerable and a.citations
    assert _title(chain, a.citations[0].paper_id).startswith("Sequence to Sequence Learning")
    assert "34.8" in a.answer
