"""Limits (``limits`` in rag/config.py, checked by rag.limits): question length, tokens per LLM request,
questions per session per minute, upload size, abstract length — each configurable and enforced."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from rag import limits
from rag.config import LimitSettings, get_settings
from rag.errors import BudgetExceeded, InputError, PaperchatError
from rag.ingest.loaders import load
from rag.qa.prompts import SYSTEM_PROMPT, USER_TEMPLATE, format_source, sources_block
from rag.records import StoredPaper
from ui import services

ABSTRACT = "We propose okapi kernels, periodic covariance functions that forecast tidal heights well."


def test_every_limit_is_configurable_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"QUESTION_CHARS": "50", "UPLOAD_MB": "0.5", "ABSTRACT_CHARS": "2000",
                       "REQUESTS_PER_MINUTE": "3", "REQUEST_TOKENS": "1500"}.items():
        monkeypatch.setenv(f"PAPERCHAT_LIMITS__{key}", value)
    lim = get_settings().limits
    assert (lim.question_chars, lim.upload_mb, lim.abstract_chars, lim.requests_per_minute, lim.request_tokens) == (
        50, 0.5, 2000, 3, 1500)
    for field in LimitSettings.model_fields.values():  # a bound and a description each
        assert field.description and field.metadata, field
    monkeypatch.setenv("PAPERCHAT_LIMITS__REQUEST_TOKENS", "10")
    with pytest.raises(Exception, match="request_tokens"):
        get_settings()


# ---- question length -----------------------------------------------------------------------------------
def test_question_length() -> None:
    lim = LimitSettings(question_chars=20)
    assert limits.check_question("  What is EPPO?  ", lim) == "What is EPPO?"
    assert limits.check_question("x" * 20, lim) == "x" * 20
    with pytest.raises(BudgetExceeded, match=r"the question has 21 characters; the limit is 20 \(PAPERCHAT_LIMITS__"):
        limits.check_question("x" * 21, lim)
    for empty in ("", "   \n\t", None):
        with pytest.raises(InputError, match="empty"):
            limits.check_question(empty, lim)


def test_question_length_through_paperchat_ask(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               embedder: object) -> None:
    """The configured limit reaches `paperchat ask`: one clear line on stderr, exit status 2, no answer."""
    from rag import cli

    monkeypatch.setenv("PAPERCHAT_LIMITS__QUESTION_CHARS", "30")
    status = cli.main(["ask", "--json", "What does EPPO penalize in the final layer of the network?"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.strip() == ("paperchat: error: the question has 58 characters; the limit is 30 "
                           "(PAPERCHAT_LIMITS__QUESTION_CHARS)")


# ---- tokens per request --------------------------------------------------------------------------------
def _prompt(abstracts: list[str], question: str) -> list[str]:
    papers = [StoredPaper(f"p{i}", f"P{i}", title=f"P{i}", abstract=a) for i, a in enumerate(abstracts)]
    block = sources_block([format_source(i + 1, p) for i, p in enumerate(papers)])
    return [SYSTEM_PROMPT, USER_TEMPLATE.format(sources=block, question=question)]


def test_request_tokens_are_counted_and_capped() -> None:
    messages = _prompt([ABSTRACT * 3] * 5, "What are okapi kernels?")
    used = limits.request_tokens(messages, max_completion=700)
    from rag import tokens

    assert used == sum(tokens.count_tokens(m) for m in messages) + 700 + 2 * 4 + 3
    lim = LimitSettings(request_tokens=used)
    assert limits.check_request_tokens(messages, 700, lim) == used  # exactly at the limit is fine
    with pytest.raises(BudgetExceeded, match=rf"would use {used + 1} tokens .*the limit is {used} "
                                             r"\(PAPERCHAT_LIMITS__REQUEST_TOKENS"):
        limits.check_request_tokens(messages, 701, lim)
    huge = _prompt([ABSTRACT * 200] * 5, "What are okapi kernels?")
    with pytest.raises(BudgetExceeded):
        limits.check_request_tokens(huge, 700, LimitSettings(request_tokens=2000))


def test_request_token_limit_stops_the_llm_call_before_it_is_sent(make_runtime, server) -> None:
    from rag.qa.chain import AnswerChain

    server.reset()
    rt = make_runtime(llm={"base_url": server.base_url, "api_key": "sk-test", "model": "stub-model"},
                      limits={"request_tokens": 1000})
    rt.ingestor(progress=False).ingest([_corpus(rt.settings.home)])
    chain = AnswerChain(rt)
    with pytest.raises(BudgetExceeded, match="PAPERCHAT_LIMITS__REQUEST_TOKENS"):
        chain.ask("What are okapi kernels?", mode="llm")
    assert server.chat_requests == []  # refused before anything was sent
    # Under a limit the same question is sent and answered: the refusal above was the cap, not a broken path.
    roomy = AnswerChain(rt, settings=rt.settings.with_overrides(limits={"request_tokens": 100_000}))
    roomy.ask("What are okapi kernels?", mode="llm")
    assert len(server.chat_requests) == 1


def _corpus(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    f = home / "papers.json"
    f.write_text(json.dumps([{"title": f"Okapi kernels {i}", "abstract": f"{ABSTRACT} Variant {i} adds "
                              + "periodic structure and sparse gauges. " * 30} for i in range(5)]))
    return f


# ---- requests per session per minute ----------------------------------------------------------------------
def test_requests_per_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE", "3")
    per_minute = get_settings().limits.requests_per_minute
    stamps: list[float] = []
    for t in (0.0, 10.0, 20.0):
        stamps = services.check_rate(stamps, per_minute, now=t)  # the UI's per-session check
    with pytest.raises(BudgetExceeded, match=r"limit is 3 a minute \(PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE\); "
                                             r"try again in 31 s"):
        limits.check_rate(stamps, per_minute, now=30.0)
    assert limits.check_rate(stamps, per_minute, now=60.0) == [10.0, 20.0, 60.0]  # the first left the window
    other_session: list[float] = []
    assert limits.check_rate(other_session, per_minute, now=30.0) == [30.0]  # sessions count separately


# ---- upload size -------------------------------------------------------------------------------------------
def test_upload_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAPERCHAT_LIMITS__UPLOAD_MB", "1")
    settings = get_settings()
    limits.check_upload(1024 * 1024, settings.limits)  # exactly 1 MiB passes
    with pytest.raises(BudgetExceeded, match=r"big.csv: the file has 1.0 MB; the upload limit is 1 MB"):
        limits.check_upload(1024 * 1024 + 1, settings.limits, name="big.csv")
    src = tmp_path / "big.csv"
    src.write_bytes(b"x" * (1024 * 1024 + 1))
    with pytest.raises(BudgetExceeded, match="PAPERCHAT_LIMITS__UPLOAD_MB"):
        services.accept_upload(src, settings.home / "uploads", settings.limits.upload_mb)
    assert not (settings.home / "uploads").exists()  # nothing was copied
    from ui.app import launch_kwargs

    assert launch_kwargs(settings)["max_file_size"] == 1024 * 1024  # Gradio refuses it before it is stored


# ---- abstract length ---------------------------------------------------------------------------------------
def test_abstract_length(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PAPERCHAT_LIMITS__ABSTRACT_CHARS", "1000")
    limit = get_settings().limits.abstract_chars
    f = tmp_path / "long.jsonl"
    f.write_text(json.dumps({"abstract": "Okapi kernels forecast tides. " * 100}) + "\n"
                 + json.dumps({"abstract": "word " * 400}) + "\n" + json.dumps({"abstract": ABSTRACT}) + "\n")
    with caplog.at_level(logging.WARNING, logger="rag.ingest.loaders"):
        papers = load(f, abstract_chars=limit).papers
    assert [len(p.abstract) <= 1000 for p in papers] == [True, True, True]
    assert papers[0].abstract.endswith("tides. \u2026")  # at a sentence end
    assert papers[1].abstract.endswith("word \u2026")  # else at a word end
    assert papers[2].abstract == ABSTRACT
    cut = [r.getMessage() for r in caplog.records if "ABSTRACT_CHARS" in r.getMessage()]
    assert len(cut) == 2 and cut[0].startswith(f"{f}:1: abstract cut to the 1000-character limit")
    assert "(3000 characters, now " in cut[0]
    text, was_cut = limits.cap_abstract("a" * 5000, 1000)  # no space at all: a hard cut
    assert was_cut and len(text) <= 1000


def test_ingest_applies_the_configured_abstract_cap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    make_runtime) -> None:
    monkeypatch.setenv("PAPERCHAT_LIMITS__ABSTRACT_CHARS", "1000")
    f = tmp_path / "long.jsonl"
    f.write_text(json.dumps({"title": "Tides", "abstract": "Okapi kernels forecast tides. " * 100}) + "\n")
    rt = make_runtime()
    assert rt.ingestor(progress=False).ingest([f]).added == 1
    (stored,) = rt.store.papers()
    assert len(stored.abstract) <= 1000 and stored.abstract.endswith("tides. \u2026")


def test_limit_errors_are_paperchat_errors() -> None:
    """The CLI and UI map PaperchatError to one line; every limit error is one."""
    assert issubclass(BudgetExceeded, PaperchatError) and issubclass(InputError, PaperchatError)
