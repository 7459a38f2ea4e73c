"""``pytest --long``: also run the long reliability variants (full crash loop, 20 sessions × 60 s load), and the
property-based tests with random seeds and more examples (tests/support/fuzz.py; without it they are derandomized).

Loaded with ``-p tests.plugins.long`` (pyproject ``addopts``); tests read the flag with
``request.config.getoption("--long", default=False)``, so they simply skip when the plugin is absent."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="run the long reliability variants (crash loop, load at full size; minutes)")


def pytest_configure(config: pytest.Config) -> None:
    from tests.support.fuzz import use_profile

    use_profile(bool(config.getoption("--long", default=False)))


LONG_TIMEOUT_S = 3600  # the long variants run minutes; the suite's 300 s per test (pyproject) is for make test


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--long``, a test without a timeout of its own gets ``LONG_TIMEOUT_S`` instead of the suite's."""
    if not config.getoption("--long", default=False):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(LONG_TIMEOUT_S))
