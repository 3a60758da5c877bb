"""The smallest part of the conformance suite (test_conformance.py) that takes dbt's adapter
path on the `connect` target, a standalone Spark cluster behind a Spark Connect server with
Delta (tests/spark_cluster.py, the session's one, shared with tests/python's connect tests):
seeds, tables, views and incremental models across sessions, each dbt command on a new Spark
Connect session (about 200 s on a loaded 2-core machine: one class is what the suite's time
allows). It skips, saying why, where Java or Delta's jars are missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt_adapter import test_conformance as conformance
from dbt_adapter.conftest import new_warehouse

CONNECT = [pytest.mark.spark]
pytestmark = CONNECT


@pytest.fixture(scope="class")
def lakemirror_target() -> str:
    return "connect"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory, spark_cluster: Any) -> Iterator[Path]:
    """The module's warehouse, on a server whose catalog holds no earlier test's tables."""
    spark_cluster.forget_tables()
    yield from new_warehouse(tmp_path_factory)


class TestConnectSimpleMaterializations(conformance.TestSimpleMaterializations):
    pytestmark = CONNECT
