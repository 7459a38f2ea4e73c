"""Mutation check: break a safeguard in a copy of the repo and see the tests that guard it fail.

    python -m bench.mutations [--only NAME ...] [--keep]      (= make mutations)

Copies the working tree (``git ls-files --cached --others --exclude-standard``: committed files with their
uncommitted edits, and new files not ignored) to a temporary directory, then for each mutation applies it to
a fresh copy and runs its tests there with this repo's .venv python. A mutation passes the check when its
tests FAIL; a mutation the tests do not notice is a safeguard nothing protects.

Three runs keep the verdicts honest:
- a baseline: every mutation's tests on the unmutated copy must pass, or a failure later proves nothing;
- a sanity run: a copy whose ``rag`` package raises on import must fail, and ``rag`` must be imported from
  the copy (the .venv has an editable install of the checkout, which must not shadow the copy: pytest runs
  from the copy's root, where ``pythonpath = ["."]`` and ``PYTHONPATH`` put the copy first);
- each mutation's anchor text must be found (a refactor that moves it makes this script fail loudly,
  not report a mutation that was never applied).

The tests run without ``CI`` in their environment: the copy has no ``../shared/datasets`` beside it, and tests
that need them are skipped there (in CI they would fail for that reason alone, not the mutation's).
Results: printed, and with ``--out FILE.json`` written as JSON; docs/reliability.md ("Mutation check") quotes
a run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import ROOT

PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():  # a worktree without its own .venv: the interpreter running this script
    PYTHON = Path(sys.executable)


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (a literal, or a regex when ``regex``) by ``new`` in ``file``; ``old`` must occur."""

    file: str
    old: str
    new: str
    regex: bool = False


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    edits: tuple[Edit, ...]
    tests: tuple[str, ...]  # pytest arguments: files, node ids, -k expressions
    expect_fail: bool = True


# A call ``name(...)`` with arguments that may span lines and hold one level of nested parentheses.
def _call(name: str) -> str:
    return rf"\b{name}\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"


MUTATIONS = [
    Mutation(
        "output-guard",
        "delete the output guard: the chain's guard stage passes the answer text through unchecked "
        "(guard_stream(...) -> its first argument) and the import goes too",
        (Edit("rag/qa/chain.py", r"from rag\.qa\.injection import guard_stream\n", "", regex=True),
         Edit("rag/qa/chain.py", r"\bguard_stream\(\s*([^,()]+),(?:[^()]|\([^()]*\))*\)", r"\1", regex=True)),
        ("tests/test_injection.py",)),
    Mutation(
        "token-cap",
        "delete the request-token cap: the check_request_tokens(...) call in the LLM generator and its import",
        (Edit("rag/qa/generate/llm.py", r"from rag\.limits import check_request_tokens\n", "", regex=True),
         Edit("rag/qa/generate/llm.py", _call("check_request_tokens"), "None", regex=True)),
        ("tests/test_limits.py",)),
    Mutation(
        "bibtex-line",
        "break the BibTeX line count: a block's line is bibtexparser's 0-based start_line + 2 (one too many)",
        (Edit("rag/ingest/loaders/bibtex.py", "return (block.start_line or 0) + 1",
              "return (block.start_line or 0) + 2"),),
        ("tests/test_fuzz_loaders.py", "tests/test_loaders.py", "-k", "bib")),
    Mutation(
        "citation-support",
        "break the citation-support rule: every `supported=` the verifier computes (per statement and per "
        "citation) becomes `True or ...`, so nothing is ever unsupported",
        (Edit("rag/qa/verify.py", r"\bsupported=(?!True or )", "supported=True or ", regex=True),),
        ("tests/test_verify.py",)),
    Mutation(
        "quarantine",
        "disable quarantine: no abstract sentence is ever flagged as an instruction (the set of flagged sentences "
        "starts and stays empty)",
        (Edit("rag/quarantine.py", "flagged = {i for i, s in enumerate(sentences) if is_instruction(s)}",
              "flagged: set[int] = set()"),),
        ("tests/test_injection.py::test_every_template_is_quarantined_in_every_position",
         "tests/test_injection.py::test_abstract_injections_extractive")),
    Mutation(
        "evidence-gate",
        "open the evidence gate: the extractive answerer answers even when no paper's support reaches the floor "
        "(the cannot-answer reply is never chosen for weak evidence)",
        (Edit("rag/qa/generate/extractive.py", "if max(support) < floor and not any(",
              "if False and max(support) < floor and not any("),),
        ("tests/test_chain.py", "-k", "out_of_corpus or refusal_names or human_readable")),
    Mutation(
        "collection-scoping",
        "ignore collection scoping: a query within a named collection keeps its unscoped paper ids (scoped() "
        "returns the query unchanged)",
        (Edit("rag/index/paper_query.py", "    return replace(q, paper_ids=ids)", "    return q"),),
        ("tests/test_collections.py::test_a_question_within_a_collection_cites_only_its_papers",)),
    Mutation(
        "api-auth",
        "accept any API key: the comparison of the key's hash with the configured hashes never refuses",
        (Edit("ui/api.py", "if not any(hmac.compare_digest(digest, h) for h in self.hashes):", "if False:"),),
        ("tests/test_api.py::test_errors_are_openai_error_objects_without_tracebacks",)),
    Mutation(
        "html-escaping",
        "stop escaping HTML: escape_html returns its text unchanged (titles, links, ids in citations and cards)",
        (Edit("ui/safe.py", 'return html.escape(text, quote=True).replace("$", "&#36;")', "return text"),),
        ("tests/test_ui_render.py",)),
    Mutation(
        "upload-size",
        "drop the upload size limit: check_upload never refuses a file",
        (Edit("rag/limits.py", "if size_bytes > limits.upload_mb * 1024 * 1024:", "if False:"),),
        ("tests/test_limits.py::test_upload_size",)),
    Mutation(
        "upload-count",
        "drop the upload count limit: UploadCount never refuses a multipart request with too many files",
        (Edit("ui/upload_limit.py", "if seen > self.max_files + 1:", "if False:"),),
        ("tests/test_ui_launch.py::test_running_server_is_private_bounded_and_logged_in",)),
    Mutation(
        "api-body-limit",
        "drop the API's request body limit: BodyLimit never finds a body too big",
        (Edit("ui/api.py", "too_big = size > self.max_bytes", "too_big = False"),
         Edit("ui/api.py", "too_big = declared is not None and declared.isdigit() and int(declared) > self.max_bytes",
              "too_big = False")),
        ("tests/test_api.py::test_errors_are_openai_error_objects_without_tracebacks",)),
    Mutation(
        "open-bind",
        "let the app serve beyond loopback without a login: check_open_bind returns at once",
        (Edit("ui/app.py", "    if is_loopback(host) or auth:\n        return", "    if True:\n        return"),),
        ("tests/test_ui_launch.py::test_an_open_bind_without_a_login_refuses_to_start",)),
]

SANITY = Mutation(
    "sanity-broken-copy",
    "rag/__init__.py raises on import: every test must fail, proving the copy (not the checkout) is imported",
    (Edit("rag/__init__.py", r"\Z", '\nraise ImportError("bench.mutations sanity run: this copy is broken")\n',
          regex=True),),
    ("tests/test_loaders.py", "-k", "bibtex_zotero"))


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def copy_tree(root: Path, dest: Path, files: list[str]) -> None:
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, target, follow_symlinks=False)


def apply(copy: Path, m: Mutation) -> None:
    """Apply every edit of ``m`` to the copy; raise when an anchor is missing (the mutation would be a no-op)."""
    for e in m.edits:
        path = copy / e.file
        text = path.read_text(encoding="utf-8")
        if e.regex:
            new, n = re.subn(e.old, e.new, text, flags=re.M)
        else:
            n = text.count(e.old)
            new = text.replace(e.old, e.new)
        if n == 0 or new == text:
            raise SystemExit(f"mutation {m.name}: anchor not found in {e.file}: {e.old!r} -- update bench/mutations.py")
        path.write_text(new, encoding="utf-8")


def run_tests(copy: Path, args: tuple[str, ...], timeout_s: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_") and k != "CI"}
    env["PYTHONPATH"] = str(copy)
    cmd = [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
           "addopts=-ra --strict-markers -p tests.plugins.long",
           *args]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout_s)
        out, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, code = f"{e.stdout or ''}\ntimed out after {timeout_s} s", -1
    seconds = time.monotonic() - t0
    failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", out, re.M)))
    summary = next((line.strip("= ") for line in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed|"
                                                                                        r"error|skipped)", line)),
                   out.strip().splitlines()[-1] if out.strip() else "")
    return {"returncode": code, "failed": failed, "summary": summary, "seconds": round(seconds, 1),
            "tail": out[-3000:] if code not in (0, 1) or not failed else ""}


def imported_from(copy: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([str(PYTHON), "-c", "import rag; print(rag.__file__)"], cwd=copy, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class Outcome:
    name: str
    what: str
    tests: list[str]
    result: dict = field(default_factory=dict)
    caught: bool = False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="run only these mutations (names)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per pytest run")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copies")
    a = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not a.only or m.name in a.only]
    if a.only and len(chosen) != len(a.only):
        raise SystemExit(f"unknown mutation in {a.only}; known: {[m.name for m in MUTATIONS]}")
    t_start = time.monotonic()
    files = tracked_files(ROOT)
    work = Path(tempfile.mkdtemp(prefix="paperchat-mutations-"))
    report: dict = {"command": "python -m bench.mutations", "files_copied": len(files), "mutations": []}
    ok = True
    try:
        def fresh(name: str) -> Path:
            dest = work / name
            copy_tree(ROOT, dest, files)
            return dest

        base = fresh("baseline")
        where = imported_from(base)
        if not where.startswith(str(base)):
            raise SystemExit(f"the copy is not what gets imported: rag comes from {where}")
        print(f"copy: {len(files)} files in {work}; rag imported from the copy ({where})", flush=True)
        # One baseline run per mutation's own selection (a -k applies to its files only).
        report["baseline"] = []
        for m in chosen:
            r = run_tests(base, m.tests, a.timeout)
            report["baseline"].append({"name": m.name, **r})
            print(f"baseline {m.name}: {r['summary']} ({r['seconds']} s)", flush=True)
            if r["returncode"] != 0:
                ok = False
                print(f"  the unmutated copy fails these tests; verdicts would mean nothing:\n{r['tail']}")
        if not ok:
            return 2

        sane = fresh(SANITY.name)
        apply(sane, SANITY)
        r = run_tests(sane, SANITY.tests, a.timeout)
        report["sanity"] = {"name": SANITY.name, "what": SANITY.what, **r}
        print(f"sanity ({SANITY.what}): returncode {r['returncode']}, {r['summary']}", flush=True)
        if r["returncode"] == 0:
            print("  a broken copy passed: the tests are not running the copy's code")
            return 2

        for m in chosen:
            copy = fresh(m.name)
            apply(copy, m)
            r = run_tests(copy, m.tests, a.timeout)
            o = Outcome(m.name, m.what, list(m.tests), r, caught=r["returncode"] != 0 and bool(r["failed"]))
            report["mutations"].append(o.__dict__)
            ok &= o.caught
            verdict = "CAUGHT" if o.caught else "NOT CAUGHT"
            print(f"{verdict:10} {m.name}: {r['summary']} ({r['seconds']} s)", flush=True)
            for t in r["failed"]:
                print(f"             {t}")
            if r["tail"]:
                print(r["tail"])
            if not a.keep:
                shutil.rmtree(copy, ignore_errors=True)
    finally:
        report["seconds"] = round(time.monotonic() - t_start, 1)
        if a.out:
            a.out.write_text(json.dumps(report, indent=2) + "\n")
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'all mutations caught' if ok else 'SOME MUTATIONS WERE NOT CAUGHT'} in {report['seconds']} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
