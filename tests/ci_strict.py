"""A pytest plugin for both test roots: with CI=true nothing may skip, and property tests
are deterministic.

A skip in CI means a whole engine or server went missing (Java, Delta's jars, a storage
emulator) while the run still looked green, so there it fails, with the skip's reason. One
test function may be marked `ci_skip_allowed` (the spark target on object storage, whose
Hadoop connectors cannot be downloaded here): its skip stays a skip; a second is refused.
Hypothesis draws the same examples on every CI run (`derandomize`); elsewhere each run draws
new ones, which is how the property tests keep finding new cases on developers' machines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")

settings.register_profile("ci", derandomize=True, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


ALLOWED = "ci_skip_allowed"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ALLOWED}(reason): the one test whose skip CI accepts")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    marked = {getattr(item, "originalname", item.name) for item in items
              if item.get_closest_marker(ALLOWED)}
    if len(marked) > 1:
        raise pytest.UsageError(f"only one test may be marked {ALLOWED}: {sorted(marked)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]
                              ) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if (IN_CI and report.skipped and not hasattr(report, "wasxfail")
            and not item.get_closest_marker(ALLOWED)):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"CI=true: skipped tests fail in CI, so a missing engine or server "
                           f"cannot pass unseen. Skip reason: {reason}")
