"""The import rules that keep the two flows readable, checked by reading every import in rag/ (late ones
inside functions included): the index never imports qa or ingest, ingest never imports qa, only the CLI
wires in the front ends (ui, evals, bench), the text leaves import nothing from rag but one another, and the rag
import graph has no cycle; no test imports bench. Also that importing the store or the lexical index stays light
(no LangChain, Gradio,
evals or ui), as a process that only reads the index relies on.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RAG = ROOT / "rag"

FRONT_ENDS = ("ui", "evals", "bench")
WIRING = "rag.cli"  # the one module that may import the front ends
LEAVES = ("rag.analysis", "rag.display", "rag.latex", "rag.text")  # a leaf imports from rag only other leaves
NEVER = {  # importer package → packages it must not import
    "rag.index": ("rag.qa", "rag.ingest"),
    "rag.ingest": ("rag.qa",),
}


@dataclass(frozen=True)
class Import:
    """One module imported by one statement of a rag module."""

    importer: str  # dotted name of the importing module
    path: str  # its file, relative to the repository
    line: int
    code: str  # the statement as written
    target: str  # dotted name of an imported module

    def where(self) -> str:
        return f"{self.path}:{self.line} `{self.code}`"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(RAG.rglob("*.py"))}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _targets(importer: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Modules a statement imports: the named module (a package counts as its ``__init__``) and each ``from``
    name that is itself a module."""
    if isinstance(node, ast.Import):
        named = [a.name for a in node.names]
    else:
        if node.level:  # relative: resolved against the importer's package
            base = importer.split(".") if is_package else importer.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        named = [prefix] + [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in MODULES]
    return named


def scan(modules: Mapping[str, Path]) -> list[Import]:
    """Every import of every module, at module level or inside a function, class or ``if``."""
    found: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                code = ast.unparse(node)
                for target in _targets(name, path.name == "__init__.py", node):
                    found.append(Import(name, str(path.relative_to(ROOT)), node.lineno, code, target))
    return found


IMPORTS = scan(MODULES)


def rule_breaches(imports: Iterable[Import]) -> list[str]:
    """One line per import that breaks a layering rule, naming the module and the statement."""
    out: list[str] = []
    for imp in imports:
        for importer, banned in NEVER.items():
            for package in banned:
                if _within(imp.importer, importer) and _within(imp.target, package):
                    out.append(f"{imp.where()}: {importer} must not import {package}")
        front_end = next((f for f in FRONT_ENDS if _within(imp.target, f)), None)
        if front_end and imp.importer != WIRING:
            out.append(f"{imp.where()}: only {WIRING} may import the front end {front_end!r}")
        if imp.importer in LEAVES and _within(imp.target, "rag") and imp.target not in ("rag", *LEAVES):
            out.append(f"{imp.where()}: {imp.importer} is a leaf and imports nothing from rag but the other leaves")
    return list(dict.fromkeys(out))  # one line per statement, however many of its names break the rule


def find_cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of a directed graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(edges.get(start, ())))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def import_graph(imports: Iterable[Import]) -> dict[str, dict[str, Import]]:
    """rag module → rag modules it imports → the first statement that does."""
    graph: dict[str, dict[str, Import]] = {m: {} for m in MODULES}
    for imp in imports:
        if imp.target in MODULES and imp.target != imp.importer:
            graph[imp.importer].setdefault(imp.target, imp)
    return graph


# ---- the rules, on the real tree ------------------------------------------------------------------------------

def test_layers_and_front_ends_are_respected() -> None:
    breaches = rule_breaches(IMPORTS)
    if breaches:
        pytest.fail("import rules broken:\n" + "\n".join(breaches))


def test_rag_import_graph_has_no_cycle() -> None:
    graph = import_graph(IMPORTS)
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"  {graph[a][b].where()}  ({a} → {b})" for a, b in zip(cycle, cycle[1:])]
        pytest.fail("import cycle " + " → ".join(cycle) + ":\n" + "\n".join(steps))


def test_no_test_imports_bench() -> None:
    """Tests stand on tests/support; a benchmark they check runs as a script (tests/support/scripts.py)."""
    tests = {_module_name(p): p for p in sorted((ROOT / "tests").rglob("*.py"))}
    found = [i.where() for i in scan(tests) if _within(i.target, "bench")]
    assert not found, "tests import bench:\n" + "\n".join(found)


@pytest.mark.parametrize("module", ["rag.index.store", "rag.index.lexical"])
def test_importing_the_index_stays_light(module: str) -> None:
    code = (f"import json, sys; import {module}; print(json.dumps(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('ui', 'evals') or m.split('.')[0].startswith(('langchain', 'gradio')))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert heavy == [], f"`import {module}` loads {heavy}"


# ---- the checker itself: it sees late imports and would catch a breach or a loop -------------------------------

def test_the_scan_sees_imports_inside_functions() -> None:
    late = [i for i in IMPORTS if i.importer == WIRING and _within(i.target, "ui")]
    assert late and all(i.code.startswith("from ui") for i in late)
    tree = ast.parse(MODULES[WIRING].read_text(encoding="utf-8"))
    top_level = {n.lineno for n in tree.body}
    assert any(i.line not in top_level for i in late)  # the CLI imports the UI inside a function


def test_a_planted_breach_is_reported_with_its_line() -> None:
    planted = [Import("rag.index.paper_query", "rag/index/paper_query.py", 11,
                      "from rag.ingest.pipeline import name_key", "rag.ingest.pipeline"),
               Import("rag.text", "rag/text.py", 3, "from rag.config import Settings", "rag.config"),
               Import("rag.qa.chain", "rag/qa/chain.py", 9, "import evals", "evals")]
    got = rule_breaches(planted)
    assert len(got) == 3
    assert got[0].startswith("rag/index/paper_query.py:11 `from rag.ingest.pipeline import name_key`")
    assert "rag.text is a leaf" in got[1] and "front end 'evals'" in got[2]


def test_a_planted_cycle_is_found() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b", "c"], "b": ["c"], "c": []}) is None
