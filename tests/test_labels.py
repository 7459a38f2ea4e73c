"""Which sentence states an abstract's contribution, and the label and summary lines built from it
(rag/contribution.py), on made-up abstracts and on real ones."""

from __future__ import annotations

import re

import pytest

from rag.contribution import Role, analyse_abstract, label_phrase, method_name, paper_phrase
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


# Real abstracts of NeurIPS 2013-2015 papers in the dev half of `python -m bench.labels --titles` (rules were
# changed looking at these; the held-out half is only scored).
LADDER = ("We combine supervised learning with unsupervised learning in deep neural networks. The proposed model is "
          "trained to simultaneously minimize the sum of supervised and unsupervised cost functions by "
          "backpropagation, avoiding the need for layer-wise pre-training. Our work builds on top of the Ladder "
          "network proposed by Valpola (2015) which we extend by combining the model with supervision. We show that "
          "the resulting model reaches state-of-the-art performance in semi-supervised MNIST and CIFAR-10 "
          "classification in addition to permutation-invariant MNIST classification with all labels.")
DFACTO = ("We present a technique for significantly speeding up Alternating Least Squares (ALS) and Gradient Descent "
          "(GD), two widely used algorithms for tensor factorization. By exploiting properties of the Khatri-Rao "
          "product, we show how to efficiently address a computationally challenging sub-step of both algorithms. "
          "Our algorithm, DFacTo, only requires two matrix-vector products and is easy to parallelize.")
COPULAS = ("The estimation of dependencies between multiple variables is a central problem in the analysis of "
           "financial time series. A common approach is to express these dependencies in terms of a copula function. "
           "Typically the copula function is assumed to be constant but this may be innacurate when there are "
           "covariates that could have a large influence on the dependence structure of the data. To account for "
           "this, a Bayesian framework for the estimation of conditional copulas is proposed. In this framework the "
           "parameters of a copula are non-linearly related to some arbitrary conditioning variables.")
# From data/sample: the task's acronym is defined by the background sentence, the method is named later.
COSTFILTER = ("Unsupervised anomaly detection (UAD) seeks to localize the anomaly mask of an input image with respect "
              "to normal samples. Either by reconstructing normal counterparts (reconstruction-based) or by learning "
              "an image feature embedding space (embedding-based), existing approaches fundamentally rely on "
              "image-level or feature-level matching to derive anomaly scores. To address this issue, we introduce "
              "the concept of cost filtering, borrowed from classical matching tasks, such as depth and flow "
              "estimation, into the UAD problem. We call this approach CostFilter-AD. Specifically, we first "
              "construct a matching cost volume between the input and normal samples, comprising two spatial "
              "dimensions and one matching dimension that encodes potential matches.")


def test_prior_work_the_paper_builds_on_is_not_its_label() -> None:
    label = paper_phrase(LADDER)
    assert "Valpola" not in label and "Ladder" not in label and not label.lower().startswith("on top")


@pytest.mark.parametrize("sentence", [
    # a baseline the method is compared with, a method family it speeds up, a test it uses
    "We propose a novel sampling framework for inference in probabilistic models: an active learning approach that "
    "converges more quickly (in wall-clock time) than Markov chain Monte Carlo (MCMC) benchmarks.",
    "We propose a family of non-uniform sampling strategies to provably speed up a class of stochastic optimization "
    "algorithms with linear convergence including Stochastic Variance Reduced Gradient (SVRG).",
    "We propose an exploratory approach to statistical model criticism using maximum mean discrepancy (MMD) two "
    "sample tests.",
    # the acronym of a task or of a model class the method is for, and one that only qualifies the noun after it
    "We develop an automated variational method for approximate inference in Gaussian process (GP) models whose "
    "posteriors are often intractable.",
    "We propose a compressed sensing (CS) calcium imaging framework for monitoring large neuronal populations.",
])
def test_names_of_prior_work_tasks_and_qualifiers_are_not_the_proposal(sentence: str) -> None:
    assert method_name(sentence) is None
    assert not re.match(r"[A-Z]{2,}\b", label_phrase(sentence))  # the label is what is proposed, not the acronym


def test_task_acronym_and_baseline_named_in_the_proposal_sentence_are_skipped() -> None:
    task = "To address this, we propose FedX for heterogeneous federated learning (HtFL), which shares prototypes."
    assert method_name(task).name == "FedX"  # type: ignore[union-attr]
    assert method_name("We present Unsupervised Anomaly Detection (UAD) for images.") is None  # a task, not a method
    # the Ladder abstract's prior work, named right after the verb: only "proposed by … (2015)" says it is not theirs
    assert method_name("We revisit the Ladder Network (LN) proposed by Valpola (2015) and add supervision.") is None
    assert method_name("We revisit the Ladder Network (LN) of Valpola [12] and add supervision.") is None
    assert method_name("We present the Ladder Network (LN), which adds supervision.").name == "LN"  # type: ignore[union-attr]


def test_a_name_another_sentence_gives_the_method_labels_it() -> None:
    label = label_phrase(COSTFILTER)
    assert label.startswith("CostFilter-AD: ") and "UAD" not in label
    assert label_phrase(DFACTO).startswith("DFacTo: technique for significantly speeding up")
    assert not label_phrase(DFACTO).startswith("Alternating Least Squares")


def test_a_proposal_in_the_passive_voice_is_the_contribution() -> None:
    c = analyse_abstract(COPULAS)
    assert c.main == 3 and c.roles[3] == Role.PROPOSAL
    assert label_phrase(COPULAS) == "Bayesian framework for estimation of conditional copulas"


def test_a_result_stated_as_an_object_labels_a_theory_paper() -> None:
    abstract = ("We prove the first finite-sample convergence rates for any incremental PCA algorithm using "
                "sub-quadratic time and memory per iteration. The algorithm analyzed is Oja's learning rule, an "
                "efficient and well-known scheme for estimating the top principal component.")
    assert label_phrase(abstract).startswith("Finite-sample convergence rates for any incremental PCA algorithm")
