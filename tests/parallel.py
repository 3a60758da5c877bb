"""The suite on several processes (pytest-xdist: `make test` runs `pytest -n N --dist loadgroup`).

A pytest plugin for both test roots (pyproject's addopts). Tests are scheduled in groups: every
test that runs Apache Spark (marked `spark`: the spark target's JVM in this process, the test
cluster) in one group, so that one process holds the JVM and the cluster, and that group first,
as it is the longest and must not start last; every other module is a group of its own, so its
module fixtures are built once. Each process gets its own LAKEMIRROR_HOME (where a background
engine's state file lives), so processes never see each other's engines, nor the user's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

SPARK_GROUP = "spark"


def group_of(item: pytest.Item) -> str:
    """The item's scheduling group: SPARK_GROUP, or its module's file."""
    if item.get_closest_marker("spark") is not None:
        return SPARK_GROUP
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups = {item.nodeid: group_of(item) for item in items}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items.sort(key=lambda item: groups[item.nodeid] != SPARK_GROUP)  # stable: otherwise as found


@pytest.fixture(scope="session", autouse=True)
def lakemirror_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """LAKEMIRROR_HOME for this test process (tests that start processes of their own may set
    another one for them)."""
    home = tmp_path_factory.mktemp("lakemirror-home")
    previous = os.environ.get("LAKEMIRROR_HOME")
    os.environ["LAKEMIRROR_HOME"] = str(home)
    try:
        yield home
    finally:
        if previous is None:
            os.environ.pop("LAKEMIRROR_HOME", None)
        else:
            os.environ["LAKEMIRROR_HOME"] = previous
