"""docs/pages/reading.md, "Reading mirrored tables": every Python block of the page runs as
written, in the folder holding the `warehouse` a mirror wrote, against a mirrored table with
deletion vectors; the reader the page says refuses them does; and `lakemirror.read_table`'s
choices and errors."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import lakemirror
from lakemirror.reference import ROW_MARKER as M

from conftest import REPO, SPARK_UNAVAILABLE, deletion_vectors_added, mirror_setup, spark_session

PAGE = REPO / "docs/pages/reading.md"
# Put right before a ```python block of the page: `python` runs it, `python with spark` runs it
# with a Spark session as `spark`, `python raising <Error>` expects that error.
EXAMPLE = re.compile(r"<!-- example: (python[^>]*) -->\n```python\n(.*?)```", re.DOTALL)
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), (M, pa.int32())])
CURRENT = [{"id": 1, "name": "Ada L."}, {"id": 3, "name": "Edsger"}]


def examples(kind: str) -> list[str]:
    return [code for marker, code in EXAMPLE.findall(PAGE.read_text()) if marker == kind]


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `warehouse`, whose dbo.customers had an update and a delete applied
    by a MERGE, as deletion vectors; with its history table."""
    root = tmp_path_factory.mktemp("reading")
    zone, service = mirror_setup(root)
    project = service.settings.project_dir / "dbt_project.yml"
    project.write_text(project.read_text().replace(
        "vars:\n", "vars:\n  lakemirror_history: ['dbo.customers']\n"))
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, [{"id": 1, "name": "Ada", M: 0}, {"id": 2, "name": "Grace", M: 0},
                                {"id": 3, "name": "Edsger", M: 0}], SCHEMA)
    assert [status.status for status in service.run()] == ["replicating"]
    zone.write("Customers", 2, [{"id": 1, "name": "Ada L.", M: 1}, {"id": 2, M: 2}], SCHEMA)
    assert [status.status for status in service.run()] == ["replicating"]
    table = root / "warehouse/dbo/customers"
    assert "deletionVectors" in (DeltaTable(str(table)).protocol().reader_features or [])
    assert deletion_vectors_added(table) > 0
    return root


@pytest.fixture
def in_folder(mirrored: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(mirrored)
    yield mirrored


def run_example(code: str, **names: Any) -> None:
    exec(compile(code, str(PAGE), "exec"), dict(names))


@pytest.mark.slow
def test_every_python_block_of_the_page_is_an_example():
    text = PAGE.read_text()
    assert text.count("```python") == len(EXAMPLE.findall(text)) >= 6


@pytest.mark.slow
def test_the_python_examples_read_the_current_rows(in_folder, capsys):
    for code in examples("python"):
        run_example(code)
        shown = capsys.readouterr().out
        assert "Edsger" in shown and "Grace" not in shown, (code, shown)  # Grace: deleted
        assert not re.search(r"Ada(?! L\.)", shown), (code, shown)  # Ada: updated


@pytest.mark.slow
def test_the_reader_the_page_warns_of_refuses_deletion_vectors(in_folder):
    [code] = examples("python raising DeltaProtocolError")
    with pytest.raises(Exception, match="deletionVectors") as raised:
        run_example(code)
    assert type(raised.value).__name__ == "DeltaProtocolError"


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.skipif(SPARK_UNAVAILABLE is not None, reason=f"spark skipped: {SPARK_UNAVAILABLE}")
def test_the_spark_example_reads_the_current_rows(in_folder, capsys):
    [code] = examples("python with spark")
    run_example(code, spark=spark_session())
    shown = capsys.readouterr().out
    assert "Ada L." in shown and "Edsger" in shown and "Grace" not in shown, shown


@pytest.mark.slow
def test_read_table_drops_bookkeeping_unless_asked_and_picks_columns(mirrored):
    warehouse = mirrored / "warehouse"
    rows = lakemirror.read_table(warehouse, "Customers")
    assert rows.column_names == ["id", "name"]
    assert rows.sort_by("id").to_pylist() == CURRENT
    kept = lakemirror.read_table(str(warehouse), "dbo.customers", bookkeeping=True)
    assert kept.column_names == ["id", "name", "_lm_position"]
    assert lakemirror.read_table(warehouse, "dbo.customers", columns=["name", "id"]
                                 ).column_names == ["name", "id"]


@pytest.mark.slow
def test_read_table_reads_the_history_table_with_its_version_columns(mirrored):
    versions = lakemirror.read_table(mirrored / "warehouse", "dbo.Customers__History",
                                     columns=["id", "name", "_lm_is_current", "_lm_is_deleted"])
    assert sorted(versions.to_pylist(), key=lambda row: (row["id"], row["_lm_is_current"])) == [
        {"id": 1, "name": "Ada", "_lm_is_current": False, "_lm_is_deleted": False},
        {"id": 1, "name": "Ada L.", "_lm_is_current": True, "_lm_is_deleted": False},
        {"id": 2, "name": "Grace", "_lm_is_current": False, "_lm_is_deleted": True},
        {"id": 3, "name": "Edsger", "_lm_is_current": True, "_lm_is_deleted": False}]
    assert "_lm_valid_from" in lakemirror.read_table(mirrored / "warehouse",
                                                     "dbo.customers__history").column_names


@pytest.mark.slow
def test_read_table_names_what_to_pass_instead(mirrored):
    warehouse = mirrored / "warehouse"
    with pytest.raises(lakemirror.ConfigError, match="dbo.customers") as unknown:
        lakemirror.read_table(warehouse, "dbo.orders")
    assert "no Delta table 'dbo.orders'" in str(unknown.value)
    assert "_lakemirror" not in unknown.value.hint  # staging and control tables are not offered
    with pytest.raises(lakemirror.ConfigError, match="not a lakemirror warehouse"):
        lakemirror.read_table(mirrored, "dbo.customers")
    with pytest.raises(lakemirror.ConfigError, match="is a Delta table, not a lakemirror"):
        lakemirror.read_table(warehouse / "dbo/customers", "dbo.customers")
    with pytest.raises(lakemirror.ConfigError, match="no column email") as column:
        lakemirror.read_table(warehouse, "dbo.customers", columns=["id", "email"])
    assert "id, name, _lm_position" in column.value.hint
    with pytest.raises(lakemirror.ConfigError, match="no Delta table 'dbo/../dbo.customers'"):
        lakemirror.read_table(warehouse, "dbo/../dbo.customers")


def test_read_table_reads_a_warehouse_at_a_url_with_its_storage_options(s3_server):
    """A hand-made warehouse in moto's S3: a table with a name to quote, and the control
    folder every run writes."""
    url = s3_server.url(s3_server.fresh_prefix("warehouse"))
    options = dict(s3_server.options)
    write_deltalake(f"{url}/_lakemirror/control/relations", pa.table({"x": [1]}),
                    storage_options=options)
    write_deltalake(f"{url}/sales/order_lines", pa.table({"Order Id": [2, 1], "_lm_position": [
        20, 10]}), storage_options=options)
    rows = lakemirror.read_table(url, "Sales.Order_Lines", storage_options=options)
    assert rows.sort_by("Order Id").to_pylist() == [{"Order Id": 1}, {"Order Id": 2}]
