"""Collections named as people type them: a nested collection by its last part, any case, when that names one
collection; an ambiguous name is refused listing the candidates, an unknown one lists the closest names. One
resolver (``rag.index.collections.resolve_name``) serves the CLI, the API, MCP, the UI and the answer chain."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLE

from rag.errors import InputError
from rag.index.collections import resolve_name
from rag.index.paper_query import PaperQuery, find_papers

NAMES = ["Computer Science/Distributed Systems", "Computer Science/Machine Learning", "Reading/Machine Learning",
         "To read", "Surveys"]


def test_the_resolver_takes_a_last_part_or_any_case_when_it_names_one() -> None:
    assert resolve_name("Surveys", NAMES) == "Surveys"
    assert resolve_name("to READ", NAMES) == "To read"
    assert resolve_name("Distributed Systems", NAMES) == "Computer Science/Distributed Systems"
    assert resolve_name("  distributed systems ", NAMES) == "Computer Science/Distributed Systems"
    assert resolve_name("computer science/distributed SYSTEMS", NAMES) == "Computer Science/Distributed Systems"
    # several trailing parts, as Zotero nests deeper
    deep = ["A/B/C", "X/C"]
    assert resolve_name("b/c", deep) == "A/B/C"
    # the exact name wins over a case-insensitive one
    assert resolve_name("ml", ["ML", "ml"]) == "ml"


def test_an_ambiguous_name_lists_its_candidates_and_an_unknown_one_the_closest() -> None:
    with pytest.raises(InputError) as e:
        resolve_name("machine learning", NAMES)
    msg = str(e.value)
    assert "ambiguous" in msg and "'Computer Science/Machine Learning'" in msg and "'Reading/Machine Learning'" in msg
    with pytest.raises(InputError, match="ambiguous"):
        resolve_name("ml", ["ML", "Ml"])  # two names differing only in case
    with pytest.raises(InputError) as e:
        resolve_name("Distributed Sytems", NAMES)
    assert "did you mean 'Computer Science/Distributed Systems'" in str(e.value)
    with pytest.raises(InputError, match="there are no collections yet"):
        resolve_name("Anything", [])
    # a part in the middle is not the name's end
    with pytest.raises(InputError, match="no collection named 'Computer Science'"):
        resolve_name("Computer Science", NAMES)


@pytest.fixture
def sample_rt(make_runtime):
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE)
    return rt


def test_the_cli_and_the_chain_take_the_last_part(sample_rt, capsys: pytest.CaptureFixture[str]) -> None:
    from rag.cli import main
    from rag.qa.chain import AnswerChain

    rt = sample_rt
    rl = [p.id for p in find_papers(rt.store, PaperQuery(text="reinforcement"), limit=10_000)]
    diff = [p.id for p in find_papers(rt.store, PaperQuery(text="diffusion"), limit=10_000)]
    assert rl and diff
    sets = rt.collections()
    sets.add("Computer Science/RL Reading", rl)
    sets.add("Computer Science/Generative", diff)
    sets.add("Art/Generative", diff[:1])
    answer = AnswerChain(rt).ask("How do agents explore efficiently?", filters=PaperQuery(collection="rl reading"))
    assert answer.filters == {"collection": "Computer Science/RL Reading"}  # reported by its stored name
    assert answer.citations and {c.paper_id for c in answer.citations} <= set(rl)
    named = AnswerChain(rt).ask("In my rl reading collection, how do agents explore efficiently?")
    assert named.filters.get("collection") == "Computer Science/RL Reading"  # named in the question, too
    assert named.citations and {c.paper_id for c in named.citations} <= set(rl)
    rt.close()  # the embedded store belongs to one process at a time: the commands below open it

    def cli(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(args))
        out = capsys.readouterr()
        return rc, out.out, out.err

    rc, out, err = cli("papers", "--json", "--collection", "RL READING")
    assert rc == 0, err
    assert sorted(p["id"] for p in json.loads(out)) == sorted(rl)
    rc, out, err = cli("ask", "--json", "--collection", "rl reading", "How do agents explore efficiently?")
    assert rc == 0, err
    got = json.loads(out)
    assert got["filters"]["collection"] == "Computer Science/RL Reading"
    assert got["citations"] and {c["paper_id"] for c in got["citations"]} <= set(rl)
    rc, out, err = cli("ask", "--collection", "generative", "What is proposed for image generation?")
    assert rc == 2 and "ambiguous" in err and "'Art/Generative'" in err and "'Computer Science/Generative'" in err
    rc, out, err = cli("papers", "--collection", "RL Readings")
    assert rc == 2 and "did you mean 'Computer Science/RL Reading'" in err and "Traceback" not in err


def test_a_question_naming_a_collection_by_its_last_part() -> None:
    from rag.qa.question_filters import FilterCatalog, parse_question

    cat = FilterCatalog.build([])
    one = parse_question("In my distributed systems collection, what is consensus?", cat, NAMES)
    assert one.filters.collection == "Computer Science/Distributed Systems" and one.cleaned == "what is consensus?"
    two = parse_question("Within the machine learning reading list, what is dropout?", cat, NAMES)
    assert two.filters.collection is None
    assert any("Computer Science/Machine Learning, Reading/Machine Learning" in n for n in two.notes), two.notes
    exact = parse_question("In the Surveys collection, what is dropout?", cat, [*NAMES, "Old/Surveys"])
    assert exact.filters.collection == "Surveys"  # the exact name wins over a nested one ending the same way
