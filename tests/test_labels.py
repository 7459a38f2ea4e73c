"""Which sentence states an abstract's contribution, and the label and summary lines built from it
(rag/contribution.py), on made-up abstracts."""

from __future__ import annotations

from rag.contribution import Role, analyse_abstract, label_phrase, paper_phrase
from rag.records import Paper
from rag.text import key_phrase

COMPONENT = ("Vision-language models have achieved remarkable success across many tasks. However, their "
             "robustness to poisoned training data remains underexplored. To address this limitation, we propose "
             "the Stealthy Poison Attack via Diffusion (SPAD), which uses diffusion models to craft natural "
             "poisoned images. We also design a Saliency-guided Blend (SB) module that hides the trigger. "
             "Experiments on three benchmarks show that SPAD reaches a 95% attack success rate.")


def test_background_sentences_are_marked_and_never_the_contribution() -> None:
    c = analyse_abstract(COMPONENT)
    assert c.roles[0] == c.roles[1] == Role.BACKGROUND
    assert c.main == 2 and c.roles[2] == Role.PROPOSAL
    assert c.roles[3] == Role.PART  # "we also design": a part of the method
    assert c.ranked()[0] == 2 and set(c.ranked()[-2:]) == {0, 1}


def test_label_names_the_method_not_a_component_defined_later() -> None:
    label = label_phrase(COMPONENT)
    assert label.startswith("Stealthy Poison Attack via Diffusion (SPAD)")
    assert "Saliency" not in label and "SB" not in label


def test_label_skips_a_dataset_for_the_method_built_on_it() -> None:
    abstract = ("Forecast reports are written by hand. We construct ForeSet, the first instruction dataset of "
                "forecast reports. Based on this corpus, we develop ReportNet, a model that writes forecast "
                "reports from weather maps.")
    assert label_phrase(abstract).startswith("ReportNet: model that writes forecast reports")


def test_label_takes_the_name_after_namely_and_a_coined_name() -> None:
    named = "Clients differ. We propose an elastic expert layer (EEL) for clients, namely FedEEL, that adapts to data."
    assert label_phrase(named).startswith("FedEEL")
    coined = "Agents drift apart. We introduce SyncBot, a framework that resynchronises coding agents."
    assert label_phrase(coined) == "SyncBot: framework that resynchronises coding agents"


def test_label_states_the_finding_when_no_method_is_proposed() -> None:
    abstract = ("Attention heads are many. Prior work studies them one by one. We show that most skills of a "
                "transformer live in fewer than ten attention heads.")
    c = analyse_abstract(abstract)
    assert c.main == 2 and c.roles[2] == Role.FINDING
    assert label_phrase(abstract) == "Most skills of a transformer live in fewer than ten attention heads"


def test_label_of_a_proposal_without_a_name_is_its_object() -> None:
    abstract = ("Clustering is used widely. We propose an efficient algorithm for hierarchical clustering under "
                "deletions, and prove its stability.")
    assert label_phrase(abstract) == "Efficient algorithm for hierarchical clustering under deletions"


def test_abstract_without_a_contribution_falls_back_to_the_older_rules() -> None:
    assert label_phrase("Graph neural networks are popular. They work.") == ""
    assert paper_phrase("Graph neural networks are popular. They work.") == "Graph neural networks are popular"
    assert key_phrase("We propose FooNet, a model for bar.") == "FooNet"


def test_paper_label_uses_the_contribution() -> None:
    p = Paper(id="h:1", abstract=COMPONENT, authors=["Ada Lovelace", "Alan Turing", "Grace Hopper"])
    assert p.label.startswith("Lovelace et al.: Stealthy Poison Attack via Diffusion (SPAD)")
