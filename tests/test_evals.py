"""`paperchat eval`: set validation, per-case scoring, reports, compare, the gate, the LLM judge (against the
local stub) and the feedback → set export. Scoring is checked on hand-built answers, so a wrong rule fails."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import STUB_KEY, paperchat_cmd

from evals.compare import compare, to_markdown
from evals.feedback import export_feedback
from evals.gate import check, load_thresholds
from evals.judge import Judge, parse_verdict
from evals.report import load_report, ordered_rows, write_report
from evals.run import case_metrics, score_case, split_summaries, summarise, verdict
from evals.sets import (
    SEED,
    SETS_DIR,
    Case,
    expand_corpus,
    in_store,
    load_set,
    resolve_gold,
    set_corpus,
)
from rag.answer import Answer, Citation, StatementCheck
from rag.config import get_settings
from rag.errors import InputError
from rag.qa.prompts import CANNOT_ANSWER
from rag.records import StoredPaper
from rag.resources import sample_corpus


def cite(n: int, pid: str, supported: bool = True) -> Citation:
    return Citation(n=n, paper_id=pid, title=f"Paper {pid}", authors=["A. Author"], categories=[], year=2024,
                    abstract=f"Abstract of {pid}.", summary="s", evidence="e", supported=supported)


def answer(text: str, cited: list[str], retrieved: list[str], warnings: list[str] | None = None,
           unsupported: tuple[str, ...] = (), verdicts: tuple[str, ...] = (), removed: int = 0) -> Answer:
    return Answer(question="q", standalone_question="q", answer=text, answerable=bool(cited), mode="extractive",
                  citations=[cite(i + 1, p, p not in unsupported) for i, p in enumerate(cited)],
                  retrieved=[{"paper_id": p, "score": 1.0 / (i + 1)} for i, p in enumerate(retrieved)],
                  timings={"retrieve_ms": 10.0, "total_ms": 20.0}, warnings=warnings or [], removed_citations=removed,
                  statements=[StatementCheck(f"statement {i}", [1], v == "supported", verdict=v)  # type: ignore[arg-type]
                              for i, v in enumerate(verdicts)])


def refusal() -> Answer:
    return Answer(question="q", standalone_question="q", answer=CANNOT_ANSWER, answerable=False,
                  mode="extractive", retrieved=[{"paper_id": "x", "score": 0.1}], timings={"total_ms": 5.0})


# ---- sets -------------------------------------------------------------------------------------------
def test_the_seed_set_loads_with_its_documented_mix() -> None:
    cases = load_set(SEED)
    kinds = [c.type for c in cases]
    assert len(cases) == 66 and kinds.count("single") == 22 and kinds.count("out-of-corpus") == 8
    assert [c.answerable for c in cases if c.type == "filter"] == [False] * 6  # the refusal floor under filters
    assert all(c.labelled for c in cases) and all(len(c.turns) >= 2 for c in cases if c.type == "follow-up")


@pytest.mark.parametrize(("line", "needle"), [
    ("not json", "not JSON"),
    ('{"id": "a", "type": "weird", "question": "q"}', "field 'type'"),
    ('{"id": "a", "type": "single"}', "field 'question'"),
    ('{"id": "a", "type": "single", "question": "q", "gold": [{"authr": "x"}]}', "field 'gold[0]'"),
    ('{"id": "a", "type": "follow-up", "turns": ["only one"]}', "at least two turns"),
    ('{"id": "a", "type": "out-of-corpus", "question": "q", "answerable": true}', "field 'answerable'"),
    ('{"id": "a", "type": "single", "question": "q", "colour": 1}', "unknown field"),
    ('{"id": "a", "type": "single", "question": "q", "answered_by": [{"id": "p"}]}', "field 'answered_by'"),
    ('{"id": "a", "type": "out-of-corpus", "question": "q", "answered_by": [{"titel": "x"}]}', "answered_by[0]"),
])
def test_bad_cases_are_refused_naming_file_line_and_field(tmp_path: Path, line: str, needle: str) -> None:
    p = tmp_path / "set.jsonl"
    p.write_text('{"id": "ok", "type": "single", "question": "fine?"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_set(p)
    assert needle in str(e.value) and f"{p}:3" in str(e.value)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    p = tmp_path / "dup.jsonl"
    p.write_text('{"id": "a", "type": "single", "question": "x"}\n{"id": "a", "type": "single", "question": "y"}\n')
    with pytest.raises(InputError, match=r"already used on line 1") as e:
        load_set(p)
    assert f"{p}:2" in str(e.value)


def test_gold_rules_resolve_by_id_author_and_prefix() -> None:
    papers = [StoredPaper(id="p1", label="p1", authors=("Leif Döring",), abstract="We study  $65\\%$ of bandits.",
                          title=""),
              StoredPaper(id="p2", label="T", authors=("Leif Doring",), abstract="Another paper.", title="T")]
    assert resolve_gold([{"author": "leif doring", "abstract_prefix": "we study 65%"}], papers) == ["p1"]
    assert resolve_gold([{"author": "Leif Doring"}], papers) == [None]  # ambiguous → unresolved
    assert resolve_gold([{"paper_id": "p2"}, {"id": "nope"}], papers) == ["p2", None]


def test_an_out_of_corpus_case_is_scored_as_answerable_where_the_store_holds_its_answer(tmp_path: Path) -> None:
    p = tmp_path / "set.jsonl"
    p.write_text('{"id": "o", "type": "out-of-corpus", "question": "Which GNNs predict molecular properties?", '
                 '"answered_by": [{"title_contains": "Molecular Fingerprints"}]}\n', encoding="utf-8")
    case = load_set(p)[0]
    sample = [StoredPaper(id="s1", label="s1", authors=(), abstract="Reward hacking in RLHF.", title="")]
    assert in_store(case, sample) is case and not case.answerable  # the sample alone: out of corpus
    held = sample + [StoredPaper(id="d1", label="d1", authors=(), abstract="Graph convolutions on molecules.",
                                 title="Convolutional Networks on Graphs for Learning Molecular Fingerprints")]
    as_run = in_store(case, held)
    assert (as_run.type, as_run.answerable, resolve_gold(as_run.gold, held)) == ("single", True, ["d1"])
    assert verdict(as_run, ["d1"], answer("t [1]", ["d1"], ["d1"]))[0] is True
    assert verdict(as_run, ["d1"], refusal())[0] is False


# ---- scoring ----------------------------------------------------------------------------------------
def test_case_metrics_by_hand() -> None:
    case = Case(id="m", type="multi", turns=["q"], gold=[{"id": "a"}, {"id": "b"}], facts=["alpha", "beta"])
    ans = answer("alpha [1] and more [2]", ["a", "x"], ["a", "x", "y", "b"],
                 warnings=["removed citation [7]: there are only 4 sources"], removed=1, unsupported=("x",),
                 verdicts=("supported", "contradicted", "not_in_source", "supported"))
    m = case_metrics(case, ["a", "b"], ans)
    assert m["citation_validity"] == pytest.approx(2 / 3)  # two valid, one removed by the verifier
    assert m["support_rate"] == pytest.approx(1 / 2)
    assert (m["statements_supported"], m["statements_contradicted"], m["statements_not_in_source"]) == (2, 1, 1)
    assert m["statement_contradicted_rate"] == pytest.approx(1 / 4) and m["statement_supported_rate"] == 0.5
    assert m["citation_precision"] == pytest.approx(1 / 2) and m["citation_recall"] == pytest.approx(1 / 2)
    assert m["recall@k"] == pytest.approx(1.0) and m["mrr@10"] == pytest.approx(1.0)
    assert m["ndcg@10"] == pytest.approx((1 + 1 / 2.321928) / (1 + 1 / 1.584963), rel=1e-4)
    assert m["fact_recall"] == pytest.approx(1 / 2)
    assert verdict(case, ["a", "b"], ans) == (False, "1 of 2 gold papers not cited")


def test_verdicts_by_type() -> None:
    single = Case(id="s", type="single", turns=["q"], gold=[{"id": "a"}])
    assert verdict(single, ["a"], answer("t [1] [2]", ["a", "b"], ["a", "b"]))[0] is True
    assert verdict(single, ["a"], answer("t [1] [2]", ["b", "a"], ["b", "a"])) == (
        False, "gold paper cited as [2], not first")
    assert verdict(single, ["a"], refusal()) == (False, "gave the cannot-answer reply to an answerable question")
    assert verdict(single, [None], answer("t [1]", ["a"], ["a"]))[0] is False  # unresolved gold fails loudly
    ooc = Case(id="o", type="out-of-corpus", turns=["q"], answerable=False)
    assert verdict(ooc, [], refusal()) == (True, "")
    assert verdict(ooc, [], answer("made up [1]", ["a"], ["a"]))[0] is False
    follow = Case(id="f", type="follow-up", turns=["q1", "q2"], gold=[{"id": "a"}])
    assert verdict(follow, ["a"], answer("t [1]", ["b"], ["b", "a"]))[0] is True
    review = Case(id="r", type="single", turns=["q"], needs_review=True)
    assert verdict(review, [], answer("t [1]", ["a"], ["a"])) == (None, "unlabelled (needs gold papers)")


def _rows() -> list[dict]:
    s = Case(id="s1", type="single", turns=["which?"], gold=[{"id": "a"}], facts=["alpha"])
    o = Case(id="o1", type="out-of-corpus", turns=["<script>alert(1)</script> cooking?"], answerable=False)
    r = Case(id="r1", type="single", turns=["unlabelled?"], needs_review=True)
    return [score_case(s, ["a"], answer("beta [1]", ["b"], ["b", "a"], verdicts=("contradicted",)), {"a": "Paper A"}),
            score_case(o, [], refusal(), {}),
            score_case(r, [], answer("x [1]", ["a"], ["a"]), {})]


def test_summary_and_failures_first() -> None:
    rows = _rows()
    s = summarise(rows)
    assert (s["cases"], s["labelled"], s["passed"]) == (3, 2, 1)
    assert s["by_type"] == {"out-of-corpus": {"n": 1, "pass_rate": 1.0}, "single": {"n": 1, "pass_rate": 0.0}}
    assert s["answer"]["cannot_answer_accuracy"] == 1.0 and s["answer"]["false_refusal_rate"] == 0.0
    assert s["metrics"]["fact_recall"] == {"mean": 0.0, "n": 1}
    assert s["metrics"]["mrr@10"]["mean"] == pytest.approx(0.5)
    assert s["latency_ms"]["total_ms"]["p95"] == 20.0
    assert [r["id"] for r in ordered_rows(rows)] == ["s1", "r1", "o1"]
    assert s["statements"] == {"supported": 0, "not_in_source": 0, "contradicted": 1}
    assert s["metrics"]["statement_contradicted_rate"] == {"mean": 1.0, "n": 1}
    (failure,) = check({"summary": s, "rows": rows}, {"metrics": {"statement_contradicted_rate": 0.0}})
    assert failure.startswith("[metrics] statement_contradicted_rate = 1 > 0") and "s1: 'which?'" in failure


def test_reports_are_written_self_contained_and_escaped(tmp_path: Path) -> None:
    rows = _rows()
    report = {"summary": summarise(rows), "rows": rows,
              "meta": {"set_name": "t", "mode": "extractive", "k": 5, "cases": 3, "when": "now", "seconds": 1.0,
                       "command": "paperchat eval t.jsonl", "commit": "abc"}}
    paths = write_report(report, tmp_path / "out")
    page = paths["html"].read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<svg") == 3 and not any(x in page for x in ("src=", "href=", "@import", "url("))
    assert "default-src 'none'" in page  # and a CSP that would block any outside request anyway
    assert page.index("s1") < page.index("o1")  # the failure comes first
    md = paths["md"].read_text()
    assert "| FAIL | s1 | single |" in md and "gold paper not cited" in md
    assert load_report(tmp_path / "out")["summary"]["passed"] == 1
    with pytest.raises(InputError, match="no eval report"):
        load_report(tmp_path)


def test_compare_names_what_broke_and_what_was_fixed() -> None:
    rows_a, rows_b = _rows(), _rows()
    rows_b[0] = {**rows_b[0], "ok": True, "why": ""}
    rows_b[1] = {**rows_b[1], "ok": False, "why": "answered an out-of-corpus question (cited 1)"}
    meta = {"label": "A"}
    a = {"meta": meta, "summary": summarise(rows_a), "rows": rows_a}
    b = {"meta": {"label": "B"}, "summary": summarise(rows_b), "rows": rows_b}
    c = compare(a, b)
    assert c["fixed"] == ["s1"] and c["broke"] == ["o1"]
    md = to_markdown(c)
    assert "Now failing (were passing): 1" in md and "**o1**" in md and "answered an out-of-corpus" in md
    assert "| pass rate: out-of-corpus | 100.0% | 0.0% | WORSE (-100.0 pts) |" in md


def test_the_refusal_floor_under_filters_counts_only_filtered_unanswerable_cases_and_gates_them() -> None:
    """filtered_refusal: of the author/category/filter cases nothing under the filter answers, the share refused
    without citations; an answered one fails the committed gate by name, and plain out-of-corpus cases and
    answerable filtered ones do not enter it."""
    by_author = Case(id="filter-01", type="filter", turns=["What did Kolter's group find about reward hacking?"],
                     answerable=False)
    by_category = Case(id="filter-02", type="category", turns=["Which Deep RL papers study tumours?"],
                       answerable=False)
    plain_ooc = Case(id="o1", type="out-of-corpus", turns=["capital of Australia?"], answerable=False)
    listed = Case(id="a1", type="author", turns=["What has Kolter worked on?"], gold=[{"id": "a"}])
    rows = [score_case(by_author, [], refusal(), {}),
            score_case(by_category, [], answer("off-topic [1]", ["b"], ["b"]), {"b": "Paper B"}),
            score_case(plain_ooc, [], answer("made up [1]", ["c"], ["c"]), {}),
            score_case(listed, ["a"], answer("t [1]", ["a"], ["a"]), {})]
    s = summarise(rows)
    assert s["answer"]["filtered_refusal"] == 0.5 and s["answer"]["cannot_answer_accuracy"] == 0.3333
    failures = [f for f in check({"summary": s, "rows": rows}, load_thresholds())
                if f.startswith("[answer] filtered_refusal")]
    assert len(failures) == 1 and "filter-02" in failures[0] and "filter-01" not in failures[0]
    assert "o1" not in failures[0] and "answered an out-of-corpus question (cited 1)" in failures[0]
    rows[1] = score_case(by_category, [], refusal(), {})
    s = summarise(rows)
    assert s["answer"]["filtered_refusal"] == 1.0
    assert not [f for f in check({"summary": s, "rows": rows}, load_thresholds()) if "filtered_refusal" in f]
    assert summarise(rows[2:])["answer"]["filtered_refusal"] is None  # no filtered case: no figure


def test_gate_failure_names_the_failing_questions(tmp_path: Path) -> None:
    rows = _rows()
    report = {"summary": summarise(rows), "rows": rows}
    failures = check(report, {"pass_rate": {"single": 0.9, "out-of-corpus": 1.0}, "metrics": {"fact_recall": 0.5},
                              "answer": {"false_refusal_rate": 0.1}, "latency_ms": {"total_ms_p95": 10}})
    assert len(failures) == 3
    assert failures[0].startswith("[pass_rate] single = 0 < 0.9") and "s1: 'which?'" in failures[0]
    assert "[metrics] fact_recall" in failures[1] and "s1" in failures[1]
    assert "[latency_ms] total_ms_p95 = 20 > 10" in failures[2]
    assert check(report, {"pass_rate": {"out-of-corpus": 1.0}}) == []
    bad = tmp_path / "t.toml"
    bad.write_text("[speed]\nx = 1\n")
    with pytest.raises(InputError, match=r"unknown table \[speed\]"):
        load_thresholds(bad)
    assert load_thresholds()["pass_rate"]["out-of-corpus"] == 1.0  # the committed file parses


# ---- LLM judge ---------------------------------------------------------------------------------------
def test_judge_verdicts_parse_strictly() -> None:
    v = parse_verdict('Sure: {"faithfulness": 0.5, "relevance": 1, "citations": [{"n": 1, "supported": true},'
                      ' {"n": 2, "supported": false}, {"n": 9, "supported": true}]}', [1, 2])
    assert (v.faithfulness, v.relevance, v.citation_support, v.error) == (0.5, 1.0, 0.5, None)
    assert parse_verdict("no idea", [1]).error == "the judge reply has no JSON object"
    bad = parse_verdict('{"faithfulness": 7, "relevance": "high"}', [1])
    assert bad.faithfulness is None and "faithfulness / relevance" in (bad.error or "")


def test_judge_against_the_local_stub(srv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_EVALS__JUDGE_BASE_URL", srv.base_url)
    monkeypatch.setenv("PAPERCHAT_EVALS__JUDGE_MODEL", "stub-model")
    monkeypatch.setenv("PAPERCHAT_EVALS__JUDGE_API_KEY", STUB_KEY)
    judge = Judge(get_settings())
    srv.queue_reply('{"faithfulness": 0.75, "relevance": 0.9, "citations": [{"n": 1, "supported": true}]}')
    v = judge.score("which?", answer("alpha [1]", ["a"], ["a"]))
    assert (v.faithfulness, v.relevance, v.citation_support) == (0.75, 0.9, 1.0)
    sent = srv.chat_requests[-1]
    assert sent["model"] == "stub-model" and sent["temperature"] == 0
    assert "Abstract of a." in sent["messages"][-1]["content"] and "<abstracts>" in sent["messages"][-1]["content"]
    srv.queue_reply("I refuse to grade.")
    assert judge.score("which?", answer("alpha [1]", ["a"], ["a"])).error == "the judge reply has no JSON object"
    n = len(srv.chat_requests)
    assert judge.score("q", refusal()).to_dict() == {} and len(srv.chat_requests) == n  # refusals not judged
    srv.queue_fault("401")
    assert "judge request failed" in (judge.score("q", answer("a [1]", ["a"], ["a"])).error or "")


# ---- feedback → set ----------------------------------------------------------------------------------
def test_thumbs_down_feedback_exports_to_a_loadable_set(tmp_path: Path) -> None:
    from ui.services import FeedbackLog

    log = FeedbackLog(tmp_path / "feedback.jsonl")
    bad = answer("wrong [1]", ["x"], ["x"])
    log.record(bad, liked=False)
    first = answer("about EPPO [1]", ["a"], ["a"])
    first.question = first.standalone_question = "What is EPPO?"
    follow = answer("it penalizes [1]", ["a"], ["a"])
    follow.question, follow.standalone_question = "What does it penalize?", "What does EPPO penalize?"
    log.record(follow, liked=False, history=[first])
    log.record(first, liked=True)
    with (tmp_path / "feedback.jsonl").open("a") as f:
        f.write("{broken\n")
    out = tmp_path / "sets" / "fb.jsonl"
    counts = export_feedback(tmp_path / "feedback.jsonl", out)
    assert counts == {"votes": 3, "cases": 2, "skipped": 1}
    cases = load_set(out)
    assert [c.type for c in cases] == ["single", "follow-up"] and all(c.needs_review for c in cases)
    assert cases[1].turns == ["What is EPPO?", "What does it penalize?"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["flagged_citations"] == ["Paper x"] and rows[0]["answer_was"] == "wrong [1]"
    with pytest.raises(InputError, match="exists; pass --force"):
        export_feedback(tmp_path / "feedback.jsonl", out)
    export_feedback(tmp_path / "feedback.jsonl", out, votes="up", force=True)
    (liked,) = load_set(out)
    assert liked.labelled and liked.gold[0]["paper_id"] == "a"


# ---- the command -------------------------------------------------------------------------------------
def test_eval_command_writes_reports_and_the_gate_fails_naming_questions(tmp_path: Path) -> None:
    strict = tmp_path / "strict.toml"
    strict.write_text("[pass_rate]\noverall = 1.0\n[latency_ms]\ntotal_ms_p95 = 0.001\n")
    out = tmp_path / "run"
    proc = subprocess.run(paperchat_cmd("eval", "--limit", "8", "--out", str(out), "--check", str(strict)),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "eval gate FAILED" in proc.stderr and "[latency_ms] total_ms_p95" in proc.stderr
    assert "single-01: 'How does GCA generalize" in proc.stderr  # the failing questions are named
    report = json.loads((out / "report.json").read_text())
    assert report["summary"]["cases"] == 8 and report["meta"]["mode"] == "extractive"
    assert report["summary"]["by_type"]["single"]["pass_rate"] >= 0.75
    assert (out / "report.html").stat().st_size > 2000 and "| metric | value |" in (out / "report.md").read_text()
    cmp = subprocess.run(paperchat_cmd("eval", "--compare", str(out), str(out)), capture_output=True, text=True,
                         timeout=300)
    assert cmp.returncode == 0 and "| pass rate | " in cmp.stdout and "Now failing (were passing): 0" in cmp.stdout


# ---- splits ------------------------------------------------------------------------------------------
def test_split_is_a_checked_field_and_the_neurips_set_carries_it_from_its_ids(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "a", "split": "dev", "type": "single", "question": "q"}\n'
                 '{"id": "b", "type": "single", "question": "q"}\n')
    assert [c.split for c in load_set(p)] == ["dev", None]
    p.write_text('{"id": "a", "split": "train", "type": "single", "question": "q"}\n')
    with pytest.raises(InputError, match="field 'split'"):
        load_set(p)
    cases = load_set(SETS_DIR / "neurips.jsonl")
    assert {c.split for c in cases} == {"dev", "test"} and all(c.split == c.id.split("-")[1] for c in cases)
    assert sum(c.split == "test" for c in cases) == 66


def test_reports_give_every_figure_per_split_and_overall(tmp_path: Path) -> None:
    dev = Case(id="d1", type="single", turns=["which?"], gold=[{"id": "a"}], split="dev")
    test = Case(id="t1", type="single", turns=["which?"], gold=[{"id": "a"}], split="test")
    rows = [score_case(dev, ["a"], answer("x [1]", ["a"], ["a"]), {}),
            score_case(test, ["a"], answer("x [1] [2]", ["b", "a"], ["b", "a"]), {})]
    splits = split_summaries(rows)["splits"]
    assert splits["dev"]["pass_rate"] == 1.0 and splits["test"]["pass_rate"] == 0.0
    assert splits["dev"]["answer"]["single_only_gold"] == 1.0 and summarise(rows)["answer"]["single_only_gold"] == 0.5
    assert split_summaries(_rows()) == {}  # a set without splits gets no split section
    report = {"summary": summarise(rows), **split_summaries(rows), "rows": rows,
              "meta": {"set_name": "t", "mode": "extractive", "k": 5, "cases": 2, "when": "now", "seconds": 1.0,
                       "command": "paperchat eval t.jsonl"}}
    paths = write_report(report, tmp_path / "out")
    md = paths["md"].read_text()
    assert "| figure | all | dev | test |" in md
    assert "| pass rate: single | 50.0% (2) | 100.0% (1) | 0.0% (1) |" in md
    assert "| single only gold | 50.0% | 100.0% | 0.0% |" in md
    assert "By split" in paths["html"].read_text()
    assert load_report(tmp_path / "out")["splits"]["test"]["passed"] == 0


# ---- a set's corpus and distractors ------------------------------------------------------------------
def test_a_set_names_its_corpus_in_a_sidecar_and_a_missing_dataset_names_its_path(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("b.csv", "a.csv", "_skip.csv", ".hidden"):
        (data / name).write_text("title,abstract\nT,An abstract.\n")
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "s.jsonl").write_text('{"id": "a", "type": "single", "question": "q"}\n')
    assert set_corpus(sets / "s.jsonl") is None  # no sidecar: the set names no corpus
    (sets / "s.corpus").write_text("# a comment\n../data/*.csv\n../data   # the folder again: nothing twice\n@sample\n")
    got = set_corpus(sets / "s.jsonl")
    assert got is not None and got[:3] == [data / "_skip.csv", data / "a.csv", data / "b.csv"]  # the glob takes all
    assert got[3:] == sample_corpus()  # the folder adds nothing new; @sample is the bundled sample
    (sets / "s.corpus").write_text("../shared/datasets/nowhere/*.csv\n")
    with pytest.raises(InputError) as e:
        set_corpus(sets / "s.jsonl")
    assert str(tmp_path / "shared" / "datasets" / "nowhere" / "*.csv") in str(e.value)
    assert "corpus not found" in str(e.value) and "s.corpus" in str(e.value)
    assert expand_corpus([data]) == [data / "a.csv", data / "b.csv"]  # a folder: no package or hidden files


def test_eval_with_distractors_builds_one_store_from_the_sets_corpus_and_the_distractors(tmp_path: Path) -> None:
    (tmp_path / "own.csv").write_text(
        "title,abstract,authors\n"
        "Quantum Annealing for Protein Folding,We fold proteins with a quantum annealer and reach native states.,"
        "Ada Quark\n")
    (tmp_path / "near.csv").write_text(
        "title,abstract,authors\n"
        "Glacier Melt Forecasting,We forecast glacier melt from satellite radar with gradient boosting.,Bo Ice\n")
    s = tmp_path / "mini.jsonl"
    s.write_text('{"id": "dev-1", "split": "dev", "type": "single", "question": "How can a quantum annealer fold '
                 'proteins?", "gold": [{"title_contains": "Protein Folding"}]}\n'
                 '{"id": "test-1", "split": "test", "type": "single", "question": "How is glacier melt forecast '
                 'from radar?", "gold": [{"title_contains": "Glacier Melt"}]}\n')
    (tmp_path / "mini.corpus").write_text("own.csv\n")
    out = tmp_path / "run"
    proc = subprocess.run(paperchat_cmd("eval", str(s), "--distractors", str(tmp_path / "near.csv"), "--mode",
                                        "extractive", "--out", str(out), "--json"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["corpus"] == [str(tmp_path / "own.csv"), str(tmp_path / "near.csv")]
    assert report["meta"]["distractors"] == [str(tmp_path / "near.csv")]
    rows = {r["id"]: r for r in report["rows"]}
    # the distractor paper is in the store: its rule resolves
    assert set(rows) == {"dev-1", "test-1"} and all(r["gold"][0] for r in rows.values())
    assert rows["dev-1"]["ok"] and rows["dev-1"]["split"] == "dev"
    assert set(report["splits"]) == {"dev", "test"} and report["splits"]["dev"]["cases"] == 1
    assert "| figure | all | dev | test |" in (out / "report.md").read_text()
    (tmp_path / "mini.corpus").unlink()  # a set without a corpus cannot take distractors: they would be all
    proc = subprocess.run(paperchat_cmd("eval", str(s), "--distractors", str(tmp_path / "near.csv")),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "names none: pass --corpus" in proc.stderr


def test_beir_scoring_on_a_tiny_collection_and_systems_with_unknown_settings_refused(tmp_path: Path,
                                                                                      embedder) -> None:
    from evals.beir import evaluate

    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": "Glaciers melt faster under black carbon deposits on the ice surface.",
            "d2": "Transformers attend to every token of the input sequence at once.",
            "d3": "Protein folding predicted from amino acid sequences with deep networks."}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                               for k, v in docs.items()))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "why do glaciers melt faster"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = evaluate(root, get_settings(), {"bm25": {"mode": "bm25"}, "rrf": {"feedback_docs": 0}}, embedder=embedder)
    assert out["queries"] == 1 and out["results"]["bm25"]["mrr@10"] == 1.0 and out["results"]["rrf"]["ndcg@10"] == 1.0
    # ms/query from a separate pass at the app's k, each system through its own empty embedding cache
    assert all(r["timing_k"] == get_settings().retrieval.k and r["mean_ms"] > 0 and "quality_pass_ms" in r
               for r in out["results"].values())
    with pytest.raises(InputError, match=r"unknown retrieval setting\(s\) \['feedback_dcos'\]"):
        evaluate(root, get_settings(), {"typo": {"feedback_dcos": 3}}, embedder=embedder)
    # a system may name a Retriever subclass (a variant under study) and is run through it
    out = evaluate(root, get_settings(), {"reversed": {"retriever": "tests.support.retrievers:Reversed"}},
                   embedder=embedder)
    assert out["results"]["reversed"]["mrr@10"] < 1.0  # the relevant paper is no longer first
    with pytest.raises(InputError, match=r"rag.config:Settings is not a Retriever subclass"):
        evaluate(root, get_settings(), {"bad": {"retriever": "rag.config:Settings"}}, embedder=embedder)
