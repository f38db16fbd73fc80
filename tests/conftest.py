"""Shared pytest configuration for the unit tests (kept minimal on purpose)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: a seeded Monte Carlo check (sizes shrink under DPFDA_QUICK=1); "
        "deselect with -m 'not slow'",
    )
