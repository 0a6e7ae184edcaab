"""Plumbing: a pytest plugin that times every fixture's setup, for profiling the suite (docs/testing.md).

    .venv/bin/python -m pytest tests -m "not slow" -n 0 -p _fixture_timing --durations=20

prints, after the run, the fixtures whose setups took longest in all (name, scope, where defined, how many setups).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import pytest

_SECONDS: defaultdict[str, float] = defaultdict(float)
_SETUPS: Counter[str] = Counter()
SHOWN = 15


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    yield
    key = f"{fixturedef.argname} ({fixturedef.scope}, {fixturedef.baseid or 'conftest'})"
    _SECONDS[key] += time.perf_counter() - started
    _SETUPS[key] += 1


def pytest_terminal_summary(terminalreporter):
    terminalreporter.section(f"{SHOWN} costliest fixtures (setup seconds in all)")
    for key, seconds in sorted(_SECONDS.items(), key=lambda item: -item[1])[:SHOWN]:
        terminalreporter.write_line(f"{seconds:8.2f}s  x{_SETUPS[key]:<4} {key}")
