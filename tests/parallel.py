"""The suite on several processes (pytest-xdist: `make test` runs `pytest -n N`).

A pytest plugin for both test roots (pyproject's addopts). Tests are scheduled in groups: every
test that runs Apache Spark (marked `spark`: the spark target's JVM in this process, the test
cluster) in one group, so that one process holds the JVM and the cluster, and that group first,
as it is the longest and must not start last; every other module is a group of its own, so its
module fixtures are built once. The groups come from the markers, which only the workers see
(they collect): each writes the groups it found to a file the controller's scheduler reads
(xdist's own `loadgroup` renames node ids, which pytest 9 no longer allows). Each process gets
its own LAKEMIRROR_HOME (where a background engine's state file lives), so processes never see
each other's engines, nor the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPARK_GROUP = "spark"
GROUPS = "lakemirror_test_groups"  # the workers' input naming the groups file


def group_of(item: pytest.Item) -> str:
    """The item's scheduling group: SPARK_GROUP, or its module's file."""
    if item.get_closest_marker("spark") is not None:
        return SPARK_GROUP
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item.nodeid: group_of(item) for item in items}
    items.sort(key=lambda item: groups[item.nodeid] != SPARK_GROUP)  # stable: otherwise as found
    path = getattr(config, "workerinput", {}).get(GROUPS)
    if path is not None:  # a worker: tell the controller (every worker collects the same)
        written = Path(f"{path}.{os.getpid()}")
        written.write_text(json.dumps(groups))
        written.replace(path)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller gives each worker the file to write the groups into."""
    config = node.config
    if not hasattr(config, "_lakemirror_groups"):
        config._lakemirror_groups = str(Path(tempfile.mkdtemp(prefix="lakemirror-tests-"))
                                        / "groups.json")
    node.workerinput[GROUPS] = config._lakemirror_groups


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller removes the groups file's folder."""
    path = getattr(config, "_lakemirror_groups", None)
    if path is not None:
        shutil.rmtree(Path(path).parent, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Scopes by the workers' groups, in collection order (the spark group first)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once the workers have collected
                self.groups = json.loads(Path(config._lakemirror_groups).read_text())
            return self.groups.get(nodeid, nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


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
