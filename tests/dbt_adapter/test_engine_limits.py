"""The embedded engine's limits that lakemirror refuses before any SQL runs, with a message
naming the model, what it asked for and why (docs/pages/dbt-project.md, "dbt features and
their status per engine"), in a user's project with lakemirror as a package (conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt

pytestmark = pytest.mark.slow

PARQUET_TABLE = "{{ config(materialized='table', file_format='parquet') }}\nselect 1 as id\n"
PARTITIONED_OVERWRITE = (
    "{{ config(materialized='incremental', incremental_strategy='insert_overwrite', "
    "partition_by=['id']) }}\nselect 1 as id\n")


def run_failure(select: str) -> str:
    results = run_dbt(["run", "--select", select], expect_pass=False)
    assert len(results) == 1 and str(results[0].status) == "error"
    return str(results[0].message)


class TestRefusedOnEmbeddedEngine:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"parquet_table.sql": PARQUET_TABLE,
                "partitioned_overwrite.sql": PARTITIONED_OVERWRITE}

    def test_a_non_delta_table_is_refused_and_no_table_is_written(self, project: Any) -> None:
        message = run_failure("parquet_table")
        assert ("model parquet_table asks for file_format 'parquet', which the embedded engine "
                "(Sail) cannot do") in message
        assert "unsigned integer" in message and "file_format 'delta'" in message
        assert project.adapter.get_relation(None, project.test_schema, "parquet_table") is None

    def test_insert_overwrite_by_partition_is_refused(self, project: Any) -> None:
        message = run_failure("partitioned_overwrite")  # from its first build on
        assert ("asks for incremental_strategy 'insert_overwrite' with partition_by, which the "
                "embedded engine (Sail) cannot do") in message
        assert "merge strategy" in message
