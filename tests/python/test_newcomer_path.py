"""A newcomer's path, literally: the wheel installed in a fresh virtualenv, the README's "Your own
project in five minutes" (`lakemirror init`, LAKEMIRROR_LANDING_ZONE and LAKEMIRROR_WAREHOUSE,
`lakemirror run`) over a landing zone written by hand, then the mirrored table read in pandas
as docs/pages/reading.md shows, in that virtualenv."""

import json
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER as M

from conftest import deletion_vectors_added
from test_packaging import build_wheel, free_port, fresh_venv

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("order_id", pa.int64()), ("line", pa.int32()), ("product", pa.string()),
                    ("quantity", pa.int32()), (M, pa.int32())])
FIRST = [  # the initial load
    {"order_id": 1, "line": 1, "product": "tea", "quantity": 2, M: 0},
    {"order_id": 1, "line": 2, "product": "milk", "quantity": 1, M: 0},
    {"order_id": 2, "line": 1, "product": "tea", "quantity": 5, M: 0},
    {"order_id": 2, "line": 2, "product": "bread", "quantity": 1, M: 0},
]
SECOND = [  # an update, a delete (keys only), an insert
    {"order_id": 1, "line": 2, "product": "milk", "quantity": 3, M: 1},
    {"order_id": 2, "line": 1, M: 2},
    {"order_id": 3, "line": 1, "product": "jam", "quantity": 1, M: 0},
]
EXPECTED = [
    {"order_id": 1, "line": 1, "product": "tea", "quantity": 2},
    {"order_id": 1, "line": 2, "product": "milk", "quantity": 3},
    {"order_id": 2, "line": 2, "product": "bread", "quantity": 1},
    {"order_id": 3, "line": 1, "product": "jam", "quantity": 1},
]
READ_IN_PANDAS = """
import os
import sys
import lakemirror

assert lakemirror.__file__.startswith(sys.prefix), lakemirror.__file__  # the wheel's
frame = lakemirror.read_table(os.environ["LAKEMIRROR_WAREHOUSE"], "sales.orderlines").to_pandas()
print(frame.sort_values(["order_id", "line"]).to_json(orient="records"))
"""


def publish(zone, sequence, rows):
    folder = zone / "Sales.schema" / "OrderLines"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["order_id", "line"]}')
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / f"{sequence:020d}.parquet")


def test_from_a_wheel_to_the_mirrored_table_in_pandas(tmp_path):
    venv = fresh_venv(tmp_path, build_wheel(tmp_path))
    zone, warehouse, work = tmp_path / "LandingZone", tmp_path / "warehouse", tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()), "LAKEMIRROR_LANDING_ZONE": str(zone),
           "LAKEMIRROR_WAREHOUSE": str(warehouse)}
    for name in ("LAKEMIRROR_PROJECT_DIR", "DBT_PROFILES_DIR", "PYTHONPATH"):
        env.pop(name, None)

    def run(*args, cwd):
        done = subprocess.run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("lakemirror", "init", "my_project", cwd=work)
    project = work / "my_project"
    publish(zone, 1, FIRST)
    run("lakemirror", "run", cwd=project)
    publish(zone, 2, SECOND)
    assert "sales.orderlines" in run("lakemirror", "run", cwd=project)

    table = warehouse / "sales" / "orderlines"
    assert "deletionVectors" in (DeltaTable(str(table)).protocol().reader_features or [])
    assert deletion_vectors_added(table) > 0
    assert json.loads(run("python", "-c", READ_IN_PANDAS, cwd=work)) == EXPECTED

    run("lakemirror", "engine", "start", cwd=project)  # dbt show, as the page shows it
    try:
        shown = run("python", "-c", "from dbt.cli.main import cli; cli()", "show", "--inline",
                    "select * from {{ ref('sales__orderlines') }}", cwd=project)
    finally:
        run("lakemirror", "engine", "stop", cwd=project)
    header, *rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                     for line in shown.splitlines() if line.startswith("|") and "---" not in line]
    columns = list(EXPECTED[0])
    assert sorted(tuple(row[header.index(name)] for name in columns) for row in rows) == [
        tuple(str(expected[name]) for name in columns) for expected in EXPECTED], shown
