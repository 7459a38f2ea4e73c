"""The suite's own guards: a test whose data or tool is missing is skipped with the reason on a developer's
machine and fails under CI=true; the property-based tests draw the same examples every default run and new
ones under ``--long``; every test module that reads the shared datasets declares them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT, require_data, require_tool
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import data
from tests.support.fuzz import LONG_FACTOR, fuzz_settings, use_profile


@pytest.mark.parametrize("ci", ["", "true"])
def test_a_missing_tool_or_dataset_is_a_named_skip_locally_and_a_failure_in_ci(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PATH", str(tmp_path))  # no command on it
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="'curl' is not installed.*make test"):
        require_tool("curl", "apt-get install curl")
    missing = tmp_path / "shared" / "datasets" / "cranfield"
    with pytest.raises(expected, match=f"test data missing: {missing}"):
        require_data(missing)
    (tmp_path / "curl").write_text("#!/bin/sh\n")
    (tmp_path / "curl").chmod(0o755)
    assert require_tool("curl", "apt-get install curl") == str(tmp_path / "curl")
    require_data(tmp_path)  # present: nothing happens


def _draws() -> list[int]:
    drawn: list[int] = []

    @fuzz_settings(20)
    @given(st.integers())
    def draw(n: int) -> None:
        drawn.append(n)

    draw()
    return drawn


def test_fuzzers_replay_their_examples_by_default_and_draw_new_ones_under_long(request: pytest.FixtureRequest) -> None:
    long = bool(request.config.getoption("--long"))
    assert settings.default.derandomize is (not long)  # tests/plugins/long.py loaded the profile of this run
    try:
        use_profile(False)
        first, second = _draws(), _draws()
        assert first == second and len(set(first)) > 5  # reproducible: the same examples, and not one example
        use_profile(True)
        long_a, long_b = _draws(), _draws()
        assert long_a != long_b and len(long_a) == LONG_FACTOR * len(first)  # random seeds, more examples
    finally:
        use_profile(long)


def test_every_test_that_reads_the_shared_datasets_declares_them() -> None:
    """A module importing a dataset path from tests.support.data marks its tests ``requires_data`` (or calls
    ``require_data``), so that a missing ../shared is a named skip, or a failure in CI, not a FileNotFoundError."""
    paths = {n for n, v in vars(data).items() if isinstance(v, Path) and n != "ROOT"}
    undeclared = []
    for f in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        used = {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module in ("tests.support.data", "bench.common") for a in node.names} & paths
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        if used and not names & {"requires_data", "require_data"}:
            undeclared.append(f"{f.name}: {sorted(used)}")
    assert undeclared == []
