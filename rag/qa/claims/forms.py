"""Other forms of a name: what lets a statement's name count as one its source uses in another form.

An abbreviation the field uses for a word ("IL" for interleukin, "Th" for T helper), a name spelled by the
initials of the source's words with its digits ("Th2" for "T helper 2"), and Greek letters spelled out or not
("AlphaBeta" for "Aβ", "alpha" for α), all once case and hyphens are folded (the source text comes ``squash``ed).
A group and its member ("birds" for "zebra finch") are not names to the name rule and need nothing here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import rag.qa.claims.notation as notation


@dataclass(frozen=True)
class Abbreviations:
    """Abbreviations common in a field, each with the words it stands for (lower case): an answer writes either."""

    field: str
    pairs: tuple[tuple[str, str], ...]


IMMUNOLOGY = Abbreviations("immunology and cell biology", (
    ("il", "interleukin"), ("tnf", "tumor necrosis factor"), ("tnf", "tumour necrosis factor"), ("ifn", "interferon"),
    ("th", "t helper"), ("treg", "regulatory t"), ("tgf", "transforming growth factor"), ("ab", "antibody"),
    ("mab", "monoclonal antibody"), ("nk", "natural killer"), ("hla", "human leukocyte antigen"),
    ("mhc", "major histocompatibility complex"), ("dc", "dendritic cell"), ("tcr", "t cell receptor"),
    ("egf", "epidermal growth factor"), ("vegf", "vascular endothelial growth factor")))
MOLECULAR = Abbreviations("molecular biology and medicine", (
    ("dna", "deoxyribonucleic acid"), ("rna", "ribonucleic acid"), ("mrna", "messenger rna"),
    ("sirna", "small interfering rna"), ("mirna", "microrna"), ("pcr", "polymerase chain reaction"),
    ("hiv", "human immunodeficiency virus"), ("bmi", "body mass index"), ("ci", "confidence interval"),
    ("rct", "randomized controlled trial"), ("hr", "hazard ratio")))
COMPUTING = Abbreviations("computing and engineering", (
    ("nn", "neural network"), ("cnn", "convolutional neural network"), ("rnn", "recurrent neural network"),
    ("svm", "support vector machine"), ("gp", "gaussian process"), ("lda", "latent dirichlet allocation"),
    ("mcmc", "markov chain monte carlo"), ("sgd", "stochastic gradient descent"),
    ("nlp", "natural language processing"),
    ("mse", "mean squared error"), ("kl", "kullback leibler"), ("iid", "independent and identically distributed")))
FLUID_DYNAMICS = Abbreviations("fluid dynamics and heat transfer: the dimensionless numbers", (
    ("pr", "prandtl"), ("re", "reynolds"), ("nu", "nusselt"), ("gr", "grashof"), ("pe", "peclet"), ("kn", "knudsen"),
    ("ra", "rayleigh")))
FIELD_ABBREVIATIONS = (IMMUNOLOGY, MOLECULAR, COMPUTING, FLUID_DYNAMICS)

GREEK_NAMES = tuple(sorted(notation.GREEK_NAMES, key=len, reverse=True))
_GREEK_WORD = re.compile("|".join(GREEK_NAMES))


def squash(text: str) -> str:
    """Case and hyphens folded, so "CIFAR-10" and "cifar10" compare equal."""
    return re.sub(r"[-\u2010-\u2013]", "", text.casefold())


def _found(key: str, squashed: str) -> bool:
    return bool(key) and re.search(r"(?<!\w)" + re.escape(key) + r"(?!\w)", squashed) is not None


@lru_cache(maxsize=4096)
def _greek_key(text: str) -> str:
    """Each spelled-out Greek letter as its Latin initial: "alphabeta" and "abeta" (Aβ folded) both read "ab"."""
    return _GREEK_WORD.sub(lambda m: m.group(0)[0], text)


def _spellings(name: str) -> set[str]:
    """The name with each field abbreviation written out, and each written-out one abbreviated, squashed."""
    low = " " + re.sub(r"[-\u2010-\u2013]", " ", name.casefold()) + " "
    out = set()
    for group in FIELD_ABBREVIATIONS:
        for short, long in group.pairs:
            for a, b in ((short, long), (long, short)):
                pattern = r"(?<![a-z])" + re.escape(a) + r"(?![a-z])"
                if re.search(pattern, low):
                    out.add(squash(re.sub(pattern, b, low).replace(" ", "")))
    return out


def _initials(name: str, squashed_words: str) -> bool:
    """The name's letters are the initials of consecutive source words, its digits follow ("Th2": T helper 2)."""
    m = re.fullmatch(r"([a-z]{2,4})(\d+[a-z]?)", squash(name))
    if not m:
        return False
    pattern = r"\b" + r"\w*[\s-]+".join(m.group(1)) + r"\w*[\s-]*" + m.group(2) + r"\b"
    return re.search(pattern, squashed_words) is not None


def named_otherwise(name: str, squashed: str, text: str = "") -> bool:
    """``name`` (as the statement writes it) names what the source names in another form. ``squashed``: the
    source's folded text (``squash`` of ``notation.fold_symbols``); ``text``: its words, hyphens kept as spaces."""
    key = squash(notation.fold_symbols(name))
    if any(_found(k, squashed) for k in _spellings(name)):
        return True
    if _GREEK_WORD.search(key) and _found(_greek_key(key), _greek_key(squashed)):
        return True
    return _initials(name, text or squashed)


# ---- names ---------------------------------------------------------------------------------------
_DIGIT_NAME = re.compile(r"(?<![\w-])[^\W\d_][\w.-]*\d[\w-]*(?:\.\d+)?")
_PROPER = re.compile(r"(?<=[a-z0-9,;] )[A-Z][a-z]{2,}(?:-[A-Z]?[a-z]+)*\b")  # "Kronecker", "Tucker" mid-sentence


def _squash(text: str) -> str:
    """Case and hyphens folded, so "CIFAR-10" and "cifar10" compare equal."""
    return re.sub(r"[-\u2010-\u2013]", "", text.casefold())


def _parts(texts: Sequence[str]) -> list[tuple[str, bool]]:
    """The source's words in order, hyphenated ones as their parts, each marked when it is not a hyphenated
    word's first part ("state-of-the-art" → state, of*, the*, art*)."""
    out: list[tuple[str, bool]] = []
    for s in texts:
        for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", s.casefold()):
            out += [(p, i > 0) for i, p in enumerate(w.split("-"))]
    return out


_LINKING = {"and", "of", "the", "for", "to", "in", "on", "with", "from", "by", "a", "an"}


def _expands(acronym: str, parts: Sequence[tuple[str, bool]]) -> bool:
    """Consecutive source words spell ``acronym`` ("rl": reinforcement learning; "sota": state-of-the-art).
    Each word that starts a word must be long (4+ letters for a two-letter acronym), so two short words that
    happen to start with the right letters do not count."""
    n = len(acronym)
    least = 4 if n == 2 else 3
    # Acronyms skip the small words between the words they spell ("PU" for positive and unlabeled, "QA" for
    # question answering, "MoE" spelled either way), so the words are also tried without them.
    content = [(p, inner) for p, inner in parts if inner or p not in _LINKING]
    for seq in (parts, content):
        for i in range(len(seq) - n + 1):
            window = seq[i:i + n]
            if "".join(p[0] for p, _ in window) == acronym and all(inner or len(p) >= least for p, inner in window):
                return True
    return False


# Adjectives made of a name ("Newtonian" of Newton, "Gaussian" of Gauss, "Euclidean" of Euclid, "Bayesian" of Bayes).
_ADJECTIVE_ENDINGS = ("ian", "ean", "ic")


def adjective_of(term: str, terms: frozenset[str]) -> bool:
    """``term`` is an adjective made of a name in ``terms``, or a name whose adjective is in ``terms``: "newtonian"
    for "newton", "gauss" for "gaussian" (the name at least four letters)."""
    for end in _ADJECTIVE_ENDINGS:
        if term.endswith(end) and len(term) - len(end) >= 4 and term[:-len(end)] in terms:
            return True
    return len(term) >= 4 and any(term + end in terms for end in _ADJECTIVE_ENDINGS)


_WORD = re.compile(r"[^\W\d_]+")


def abbreviated_in(name: str, statement: str, source_text: str) -> bool:
    """The statement spells out what the source abbreviates: the initials of the statement's words around ``name``
    ("restricted Boltzmann machines", "Markov random field", "Vapnik-Chervonenkis dimension") are an acronym the
    source writes in capitals ("RBMs", "MRF", "VC-dimension"); small words ("of", "and") are skipped."""
    mine = [p.casefold() for p in _WORD.findall(name)]
    ws = [w for w in _WORD.findall(statement) if w.casefold() not in _LINKING]
    low = [w.casefold() for w in ws]
    n = len(mine)
    for k in (k for k in range(len(low) - n + 1) if mine and low[k:k + n] == mine):
        for a in range(max(0, k - 4), k + 1):
            for b in range(k + n, min(len(ws), k + n + 4) + 1):
                if 2 <= b - a <= 6 and _capitals_in("".join(w[0] for w in ws[a:b]).upper(), source_text):
                    return True
    return False


def _capitals_in(acronym: str, text: str) -> bool:
    """``text`` writes ``acronym`` as a word of its own, in capitals, maybe plural ("RBMs")."""
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(acronym) + r"s?(?![A-Za-z0-9])", text) is not None
