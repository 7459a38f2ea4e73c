"""How many examples the property-based tests (Hypothesis) try, and whether they are the same every run.

The default run is reproducible: a derandomized profile draws the same examples every time (a failure seen
once is seen again, on any machine), with no example database. ``pytest --long`` switches to a random profile
with ``LONG_FACTOR`` times the examples: new inputs every run, and a failure prints the blob that replays it
(``@reproduce_failure``) and Hypothesis's seed. tests/plugins/long.py picks the profile; a test takes its
settings from ``fuzz_settings``:

    @fuzz_settings(120)
    @given(st.binary())
    def test_loader_never_crashes(data: bytes) -> None: ...
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

REPRODUCIBLE, RANDOM = "paperchat-reproducible", "paperchat-random"
LONG_FACTOR = 5
_COMMON = {"deadline": None, "database": None,
           "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.large_base_example]}
settings.register_profile(REPRODUCIBLE, derandomize=True, **_COMMON)  # type: ignore[arg-type]
settings.register_profile(RANDOM, derandomize=False, print_blob=True, **_COMMON)  # type: ignore[arg-type]
_long = False


def use_profile(long: bool) -> None:
    """Load the random profile (``long``) or the reproducible one, for every Hypothesis test of the run."""
    global _long
    _long = long
    settings.load_profile(RANDOM if long else REPRODUCIBLE)


def fuzz_settings(max_examples: int) -> settings:
    """The run's profile with ``max_examples`` examples (``LONG_FACTOR`` times as many under ``--long``)."""
    return settings(settings.get_profile(RANDOM if _long else REPRODUCIBLE),
                    max_examples=max_examples * (LONG_FACTOR if _long else 1))
