"""Small rooms: no module of rag/, ui/ or evals/ over 600 lines and no function over 80, unless listed below
with the reason it is long. The lists are the honest state of the tree when the guard came in (issue 30);
shrinking them is the work, and a list entry that is no longer needed fails too, so they cannot go stale.
ruff's C901 / PLR0915 (pyproject.toml) guard complexity and statement counts the same way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag", "ui", "evals")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

LONG_MODULES = {  # path → why it is over MAX_MODULE_LINES
}
LONG_FUNCTIONS = {  # "path:function" → why it is over MAX_FUNCTION_LINES
    "ui/api.py:create_app": "the FastAPI route table: routes defined inside, sharing the library and the auth",
    "ui/mcp_server.py:build_server": "the MCP tool table: each tool defined inside, over one library",
    "rag/cli.py:build_parser": "the argparse table of every subcommand",
}


def oversized(root: Path = ROOT) -> tuple[dict[str, int], dict[str, int]]:
    """Modules over MAX_MODULE_LINES and functions (nested ones too) over MAX_FUNCTION_LINES, with their
    length in lines (a function from its ``def`` to its last line)."""
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            if (n := len(text.splitlines())) > MAX_MODULE_LINES:
                modules[rel] = n
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        functions[f"{rel}:{node.name}"] = length
    return modules, functions


def test_no_module_is_over_600_lines_unless_listed() -> None:
    modules, _ = oversized()
    new = {m: n for m, n in modules.items() if m not in LONG_MODULES}
    assert not new, f"modules over {MAX_MODULE_LINES} lines (split them, or list one with its reason): {new}"
    stale = sorted(set(LONG_MODULES) - set(modules))
    assert not stale, f"listed as long but no longer are: remove from LONG_MODULES: {stale}"


def test_no_function_is_over_80_lines_unless_listed() -> None:
    _, functions = oversized()
    new = {f: n for f, n in functions.items() if f not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (split them, or list one with its reason): {new}"
    stale = sorted(set(LONG_FUNCTIONS) - set(functions))
    assert not stale, f"listed as long but no longer are: remove from LONG_FUNCTIONS: {stale}"


def test_the_measure_sees_a_long_module_and_a_long_nested_function(tmp_path: Path) -> None:
    (tmp_path / "rag").mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "rag" / "big.py").write_text(f"def outer():\n    def inner():\n{body}\n    return inner\n"
                                             + "y = 0\n" * MAX_MODULE_LINES)
    (tmp_path / "rag" / "small.py").write_text("def f():\n    return 1\n")
    modules, functions = oversized(tmp_path)
    assert modules == {"rag/big.py": MAX_MODULE_LINES + MAX_FUNCTION_LINES + 3}
    assert functions == {"rag/big.py:outer": MAX_FUNCTION_LINES + 3, "rag/big.py:inner": MAX_FUNCTION_LINES + 1}
