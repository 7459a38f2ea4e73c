"""A regression corpus of markup real exports left in stored titles, authors and abstracts (issue 18): every
snippet comes out free of LaTeX commands outside math, of HTML entities and tags, and of publisher boilerplate."""

from __future__ import annotations

import re

import pytest

from rag.ingest.loaders.fields import clean_name, clean_title
from rag.text import normalize_abstract

_COMMAND = re.compile(r"\\[A-Za-z]+")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+);", re.I)
_MATH = re.compile(r"\$[^$]+\$")


def assert_clean(text: str) -> None:
    outside = _MATH.sub(" ", text)
    assert not _COMMAND.search(outside), text
    assert not _ENTITY.search(text), text
    assert "{" not in outside and "}" not in outside, text
    assert not re.search(r"</?(?:p|i|b|sup|sub|jats:\w+)\b", text), text


ABSTRACTS = [  # (exported abstract, what the reader should see)
    (r"The band lies between 0.5 and {4.5&#xa0;Hz.}", "The band lies between 0.5 and 4.5 Hz."),
    (r"{\textless}p{\textgreater}We study flows on surfaces.{\textless}/p{\textgreater}",
     "We study flows on surfaces."),
    (r"Rates of 3\textendash{}5 per cent were seen.", "Rates of 3–5 per cent were seen."),
    (r"Sites\textsuperscript1 differ from controls.", "Sites1 differ from controls."),
    (r"{{{\emphWhat}}} drives the effect? We answer this.", "What drives the effect? We answer this."),
    (r"{\textquestiondown Existen soluciones peri{\'o}dicas? S{\'\i}, las hay.",
     "¿Existen soluciones periódicas? Sí, las hay."),
    ("Tom &amp; Jerry meet &lt;i&gt;in vivo&lt;/i&gt; at 5&nbsp;K.", "Tom & Jerry meet in vivo at 5 K."),
    ("<jats:p>Crossref abstracts come wrapped.</jats:p>", "Crossref abstracts come wrapped."),
    ("We measure heat flow in graphene. © 2021 Elsevier B.V. All rights reserved.",
     "We measure heat flow in graphene."),
    ("We measure heat flow. Copyright © 2019 The Authors. Published by Elsevier Ltd.", "We measure heat flow."),
    (r"We measure heat flow. c{\copyright} 2003 Academic Press.", "We measure heat flow."),
    ("We measure heat flow. (c) 2003 Society for Industrial and Applied Mathematics", "We measure heat flow."),
    (r"A 50% drop & a 2$\times$ gain.", "A 50% drop & a 2× gain."),
]


@pytest.mark.parametrize(("raw", "want"), ABSTRACTS)
def test_exported_abstracts_come_out_clean(raw: str, want: str) -> None:
    got = normalize_abstract(raw)
    assert got == want
    assert_clean(got)


def test_formulas_with_commands_stay_formulas() -> None:
    """Only math of numbers and symbols with a Unicode stand-in becomes text; "\\mathcal{O}" is no "mathcalO"."""
    got = normalize_abstract(r"Bounds of order $\mathcal{O}(n \log n)$, a factor $\sqrt{n}$, cost $O(n \log n)$, "
                             r"angle $\theta$, $5\%$ less.")
    assert got == r"Bounds of order $\mathcal{O}(n \log n)$, a factor $\sqrt{n}$, cost O(n log n), angle θ, 5% less."


def test_entities_in_a_name_list_do_not_split_names() -> None:
    from rag.ingest.loaders.fields import split_authors, split_list
    from rag.ingest.loaders.tabular import authors_of

    assert authors_of("Silva, Maria Aparecida; Pereira, Jo&#227;o", full_names=True) == [
        "Maria Aparecida Silva", "João Pereira"]
    assert split_authors("Pereira, Jo&#227;o; M&uuml;ller, Hans") == ["João Pereira", "Hans Müller"]
    assert split_list("Astronomy &amp; Astrophysics; Physics") == ["Astronomy & Astrophysics", "Physics"]


def test_formulas_stay_math_for_the_ui() -> None:
    got = normalize_abstract(r"We bound $\|x\|_2^2 \leq \epsilon$ with \textit{no} loss \relax in rate.")
    assert r"$\|x\|_2^2 \leq \epsilon$" in got and "*no*" in got
    assert_clean(got)


def test_copyright_words_inside_an_abstract_stay() -> None:
    text = "We study copyright law in 2003 and case (c) of the statute."
    assert normalize_abstract(text) == text


@pytest.mark.parametrize(("raw", "want"), [
    (r"\relax An. Muchnik", "An. Muchnik"),
    (r"{{Pavol Brunovsk{\'y}}}", "Pavol Brunovský"),
    (r"Garc{\'\i}a-M{\'a}rquez, Jos{\'e}", "García-Márquez, José"),
    ("O&apos;Neil &amp; Sons", "O'Neil & Sons"),
])
def test_author_names_come_out_clean(raw: str, want: str) -> None:
    assert clean_name(raw) == want
    assert_clean(clean_name(raw))


@pytest.mark.parametrize(("raw", "want"), [
    (r"{{{\emphWhat}}} Makes a Good Prior?", "What Makes a Good Prior?"),
    (r"Stable Manifolds {\textendash} a Survey", "Stable Manifolds – a Survey"),
    ("Heat &amp; Mass Transfer in <i>Thin</i> Films", "Heat & Mass Transfer in Thin Films"),
    (r"{BERT}: Pre-training of Deep {Transformers}", "BERT: Pre-training of Deep Transformers"),
    (r"{{The}} $\mathcal{O}(n)$ Bound", r"The $\mathcal{O}(n)$ Bound"),  # the formula keeps its group
    (r"Bounds for \emph{stable} manifolds", "Bounds for stable manifolds"),  # the emphasised word stays
    (r"A survey of {\emph{hyperbolic}} sets", "A survey of hyperbolic sets"),
    ("<i>In vivo</i> uptake of CO<sub>2</sub>", "In vivo uptake of CO2"),  # inline tags leave no space
])
def test_titles_come_out_clean(raw: str, want: str) -> None:
    assert clean_title(raw) == want
    assert_clean(clean_title(raw) or "")
