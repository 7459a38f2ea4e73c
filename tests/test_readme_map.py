"""The module map in docs/architecture.md (linked from README.md) is the one made from the tree
(tests/readme_map.py): every module listed once, with the first line of its docstring."""

from __future__ import annotations

from tests import readme_map


def test_every_module_has_a_docstring() -> None:
    missing = [p.relative_to(readme_map.ROOT).as_posix() for p in readme_map.modules() if not readme_map.summary(p)]
    assert not missing, f"modules without a docstring (the map's line comes from it): {missing}"


def test_readme_map_matches_the_tree() -> None:
    text = readme_map.README.read_text(encoding="utf-8")
    block = readme_map.current(text)
    assert block, f"{readme_map.README} has no module map markers"
    made = readme_map.make_map()
    if block != made:
        listed = {line.split()[0] for line in block.splitlines()[2:-2] if line.strip()}
        actual = {line.split()[0] for line in made.splitlines()[2:-2] if line.strip()}
        raise AssertionError(
            "docs/architecture.md's module map is out of date; run `python -m tests.readme_map --write`.\n"
            f"  missing from the map: {sorted(actual - listed)}\n  no longer in the tree: {sorted(listed - actual)}")


def test_the_map_follows_the_tree(tmp_path) -> None:
    """Not vacuous: a module added to a tree, or a docstring changed, changes the map made from it."""
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag" / "__init__.py").write_text('"""The package."""\n', encoding="utf-8")
    (tmp_path / "rag" / "alpha.py").write_text('"""Alpha does one thing.\n\nMore."""\n', encoding="utf-8")
    first = readme_map.make_map(tmp_path)
    assert "rag/          The package.\nrag/alpha.py  Alpha does one thing.\n" in first
    (tmp_path / "rag" / "beta.py").write_text('"""Beta."""\n', encoding="utf-8")
    assert "rag/beta.py" in readme_map.make_map(tmp_path)
    (tmp_path / "rag" / "alpha.py").write_text("x = 1\n", encoding="utf-8")
    assert "rag/alpha.py  (no docstring)" in readme_map.make_map(tmp_path)
