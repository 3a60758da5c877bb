"""The `spark` target (Apache Spark + delta-spark, session method) on the same contract cases.

Runs only where Delta's JVM jars are present: set LAKEMIRROR_DELTA_JARS to a folder holding
delta-spark_2.13-*.jar and delta-storage-*.jar (Maven is not reachable from our machines).
"""

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService

from conftest import as_multiset, copy_project, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])


def delta_jars_missing() -> str | None:
    folder = os.environ.get("LAKEMIRROR_DELTA_JARS")
    if not folder:
        return "LAKEMIRROR_DELTA_JARS is not set (Delta's jars come only from Maven)"
    if not list(Path(folder).glob("delta-spark_*.jar")):
        return f"no delta-spark_*.jar in LAKEMIRROR_DELTA_JARS={folder}"
    if shutil.which("java") is None:
        return "no java on PATH"
    return None


pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(delta_jars_missing() is not None,
                                 reason=f"spark target skipped: {delta_jars_missing()}")]


def test_spark_target_mirrors_like_the_reference(zone, tmp_path):
    zone.table("T", ["id"])
    files = [[{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}],
             [{"id": 1, "v": "a2", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 3, "v": "c", M: 4}]]
    service = MirrorService(zone.root, tmp_path / "wh", copy_project(tmp_path / "project"),
                            target="spark", quiet=True)
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, SCHEMA)
        [status] = service.run()
        assert status.status == "replicating", status.error
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(service.warehouse, "dbo", "t") == as_multiset(expected)
