"""The module map (docs/architecture.md, "Every module"; the README links to it), made from the tree: one line
per module of rag/, ui/ and evals/, taken from the first sentence of that module's docstring, so the map cannot
drift from the code.

    python -m tests.readme_map          # print the map
    python -m tests.readme_map --write  # rewrite it in docs/architecture.md, between the map markers

tests/test_readme_map.py fails when the map there differs from what this makes, or a module has no docstring.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "docs" / "architecture.md"  # where the map lives (the README links to it)
PACKAGES = ("rag", "ui", "evals")
WIDTH = 100  # longest summary kept whole; a longer first sentence is cut at a word
START, END = "<!-- module map: made by `python -m tests.readme_map --write` -->", "<!-- end of module map -->"


def modules(root: Path = ROOT) -> list[Path]:
    """Every module of the mapped packages, packages first within each folder, in path order."""
    out: list[Path] = []
    for pkg in PACKAGES:
        out += sorted((root / pkg).rglob("*.py"), key=lambda p: (p.parent.parts, p.name != "__init__.py", p.name))
    return [p for p in out if "__pycache__" not in p.parts]


def summary(path: Path) -> str | None:
    """First sentence of the module docstring's first paragraph (None when there is no docstring)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc or not doc.strip():
        return None
    para = " ".join(doc.strip().split("\n\n")[0].split())
    end = para.find(". ")
    first = para[: end + 1] if end >= 0 else para
    return first if len(first) <= WIDTH else first[: first.rfind(" ", 0, WIDTH)] + " …"


def make_map(root: Path = ROOT) -> str:
    rows = []
    for p in modules(root):
        rel = p.relative_to(root).as_posix()
        name = rel.removesuffix("/__init__.py") + "/" if rel.endswith("__init__.py") else rel
        rows.append((name, summary(p) or "(no docstring)"))
    width = max(len(n) for n, _ in rows)
    body = "\n".join(f"{n:<{width}}  {s}" for n, s in rows)
    return f"{START}\n```\n{body}\n```\n{END}"


def current(text: str) -> str:
    """The map block as it stands in ``text`` (empty when the markers are missing)."""
    if START not in text or END not in text:
        return ""
    return text[text.index(START): text.index(END) + len(END)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the map in docs/architecture.md")
    args = ap.parse_args()
    made = make_map()
    if not args.write:
        print(made)
        return
    text = README.read_text(encoding="utf-8")
    old = current(text)
    if not old:
        raise SystemExit(f"{README}: the markers {START!r} … {END!r} are missing; add them where the map goes")
    README.write_text(text.replace(old, made), encoding="utf-8")


if __name__ == "__main__":
    main()
