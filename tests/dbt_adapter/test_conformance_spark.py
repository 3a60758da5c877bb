"""A representative part of the conformance suite (test_conformance.py) on the `spark` target,
Apache Spark + Delta Lake, in a user's project with lakemirror as a package: tables, views and
seeds across sessions, a snapshot's history, a parquet model with insert_overwrite by
partition (both refused on the embedded engine), and dbt-spark's microbatch model (dynamic
partition overwrite here, replace where on the embedded engine). The whole suite takes too
long on the JVM engine for CI (the classes here share one warehouse, so one Spark session).
It skips, saying why, where Spark or Delta's jars are missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dbt_adapter import test_conformance as conformance
from dbt_adapter.conftest import new_warehouse

from lakemirror.engine import spark_unavailable

SPARK_UNAVAILABLE = spark_unavailable()

SPARK = [pytest.mark.spark,
         pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                            reason=f"spark target skipped: {SPARK_UNAVAILABLE}")]
pytestmark = SPARK


@pytest.fixture(scope="class")
def lakemirror_target() -> str:
    return "spark"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One warehouse for the module: Spark keeps its session (and JVM caches) across classes,
    each dbt command still seeing only what the registry gives a new session."""
    yield from new_warehouse(tmp_path_factory)


class TestSparkSimpleMaterializations(conformance.TestSimpleMaterializations):
    pytestmark = SPARK


class TestSparkInsertOverwriteOnSchemaChange(conformance.InsertOverwriteOnSchemaChange):
    pytestmark = SPARK


class TestSparkSnapshotCheckCols(conformance.TestSnapshotCheckCols):
    pytestmark = SPARK


class TestSparkMicrobatch(conformance.TestMicrobatch):
    pytestmark = SPARK
