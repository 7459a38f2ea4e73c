"""Property-based questions: arbitrary unicode, control characters, huge and empty input through the question
path — filter parsing, follow-up condensing and ``AnswerChain.ask`` (extractive, over a small real store
built once). Each ends in an ``Answer`` or a ``PaperchatError`` with a one-line message, never anything else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rag.answer import Answer
from rag.errors import BudgetExceeded, InputError, PaperchatError
from rag.qa.prompts import CANNOT_ANSWER
from tests.conftest import SAMPLE
from tests.support.fuzz import fuzz_settings

FAST = fuzz_settings(200)  # the same examples every run; random ones, 5× as many, under --long (tests/support/fuzz.py)
SLOW = fuzz_settings(60)
CONTROL = st.characters(min_codepoint=0, max_codepoint=0x1F) | st.sampled_from(
    ["\x7f", "\x85", "\u2028", "\u202e", "\u200b", "\ufeff", "\ufffd", "\U0001f600", "\u0301", "$", "\\", "[1]",
     "[", "]", "?", "'s", " et al.", " by ", " since 2020", " between 2019 and 2021", "论文", "Ω"])  # pieces, not chars
WORDS = st.sampled_from(["What", "does", "EPPO", "penalize", "papers", "by", "Gao", "it", "they", "and", "what about",
                         "reinforcement", "learning", "federated", "2024", "since", "before", "category", "Deep RL",
                         "Zico Kolter", "Shiqing", "the method", "compare", "or", "vs."])
QUESTION = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(WORDS, CONTROL, st.text(max_size=8)), max_size=40).map(" ".join),
    st.lists(CONTROL, max_size=50).map("".join),
)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Any]:
    """Half the sample corpus in a real store, one chain for the module."""
    from rag.config import get_settings
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    home = tmp_path_factory.mktemp("fuzz-question-home")
    rt = Runtime(get_settings(home=home, limits={"question_chars": 500}), _embedder=embedder)
    try:
        assert rt.ingestor(progress=False).ingest(SAMPLE[-1:]).added == 20
        yield AnswerChain(rt)
    finally:
        rt.close()


@pytest.fixture(scope="module")
def catalog(chain: Any) -> Any:
    from rag.qa.question_filters import catalog_for

    return catalog_for(chain.runtime.lexical, chain.runtime.store)


@pytest.fixture(scope="module")
def history(chain: Any) -> list[Answer]:
    return [chain.ask("What does EPPO penalize?")]


@FAST
@given(q=QUESTION)
@example(q="papers by " * 200)
@example(q="between 1999 and 2099 " * 50)
def test_parse_question_never_crashes(catalog: Any, q: str) -> None:
    from rag.qa.question_filters import filters_dict, parse_question

    parsed = parse_question(q, catalog)
    assert isinstance(parsed.cleaned, str)
    d = filters_dict(parsed.filters)
    if d.get("year_from") and d.get("year_to"):
        assert d["year_from"] <= d["year_to"]
    if d.get("author"):
        assert d["author"] in catalog.author_papers or catalog.papers_by(d["author"])


@FAST
@given(q=QUESTION, follow=st.sampled_from([None, True, False]))
def test_condense_never_crashes(history: list[Answer], q: str, follow: bool | None) -> None:
    from rag.qa.condense import is_follow_up, is_selection, offline_condense

    assert isinstance(is_follow_up(q, history), bool) and isinstance(is_selection(q), bool)
    c = offline_condense(q, history, follow_up=follow)
    assert isinstance(c.standalone, str)
    assert all(isinstance(p, str) for p in c.prefer_ids)
    assert offline_condense(q, [], follow_up=None).follow_up is False


def _ask(chain: Any, q: str, **kw: Any) -> Answer | PaperchatError:
    try:
        a = chain.ask(q, **kw)
    except PaperchatError as e:
        assert "\n" not in str(e) and str(e), repr(e)
        return e
    assert isinstance(a, Answer)
    assert a.answerable == (a.answer != CANNOT_ANSWER)
    retrieved = {r["paper_id"] for r in a.retrieved}
    assert all(c.paper_id in retrieved for c in a.citations)
    assert [c.n for c in a.citations] == list(range(1, len(a.citations) + 1))
    return a


@SLOW
@given(q=QUESTION, follow=st.booleans())
@example(q="", follow=False)
@example(q=" \t\n\x00 ", follow=False)
@example(q="x" * 501, follow=False)
@example(q="\u202e?" * 100, follow=True)
def test_ask_returns_an_answer_or_a_paperchat_error(chain: Any, history: list[Answer], q: str, follow: bool) -> None:
    out = _ask(chain, q, history=history if follow else None)
    stripped = q.strip()
    if not stripped:
        assert isinstance(out, InputError) and "empty" in str(out)
    elif len(stripped) > 500:
        assert isinstance(out, BudgetExceeded) and "limit is 500" in str(out)


def test_huge_questions_are_refused_clearly(chain: Any) -> None:
    for q in ("why " * 100_000, "é" * 501, "\U0001f600" * 1000):
        out = _ask(chain, q)
        assert isinstance(out, BudgetExceeded)
        assert str(out) == (f"the question has {len(q.strip())} characters; the limit is 500 "
                            "(PAPERCHAT_LIMITS__QUESTION_CHARS)")
    assert isinstance(_ask(chain, "x" * 500), Answer)  # at the limit is fine
