"""Shared pytest configuration for the unit tests (kept minimal on purpose)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: left out of `make test-quick` (-m 'not slow'): a seeded Monte Carlo check (sizes "
        "shrink under DPFDA_QUICK=1), or a test that took 5 s of CPU or more on the unit suite's "
        "last measurement (benchmarks/bench_tests.py; the slowest are listed in benchmarks/README.md)",
    )


# Property-based tests draw their examples deterministically (a fixed sequence per test,
# no example database), so a run in CI checks exactly what the last run checked; a failure
# found by exploring locally (e.g. with --hypothesis-seed) is added as an @example.
try:
    from hypothesis import settings as _hyp_settings
except ImportError:  # hypothesis comes with the test extra
    pass
else:
    _hyp_settings.register_profile("dpfda", derandomize=True, database=None)
    _hyp_settings.load_profile("dpfda")
