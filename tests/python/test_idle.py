"""An idle run (no new file, everything applied, the project unchanged) starts neither the
engine nor dbt, and still reports every table; anything new makes the next run build."""

import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.idle import left_out
from lakemirror.monitor import TableMonitor
from lakemirror.reference import ROW_MARKER

from conftest import as_multiset, mirror_setup, mirrored_rows

pytestmark = pytest.mark.slow
M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])


@pytest.fixture
def mirrored(tmp_path):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.table("Gap", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    zone.write("Gap", 2, [{"id": 1, "v": "a", M: 0}], SCHEMA)  # waits for file 1
    first = {status.table: status for status in service.run()}
    assert first["t"].status == "replicating" and first["gap"].status == "waiting"
    return zone, service, first


def builds(service, monkeypatch):
    """Record each dbt invocation the service makes from now on."""
    calls = []
    real = service.dbt

    def counting(settings, command, *args, **kwargs):
        calls.append(command)
        return real(settings, command, *args, **kwargs)
    monkeypatch.setattr(service, "dbt", counting)
    return calls


def built_nodes(service, monkeypatch):
    """The nodes of every dbt invocation the service makes from now on."""
    nodes = []
    real = service.dbt

    def recording(settings, command, *args, **kwargs):
        result = real(settings, command, *args, **kwargs)
        nodes.extend(result)
        return result
    monkeypatch.setattr(service, "dbt", recording)
    return nodes


def test_a_run_with_nothing_new_does_not_build_and_reports_every_table(mirrored, monkeypatch):
    zone, service, first = mirrored
    calls = builds(service, monkeypatch)
    again = {status.table: status for status in service.run()}
    assert calls == []
    assert again == first


def test_an_idle_run_reads_each_staging_log_once_and_no_mirrored_table(mirrored, monkeypatch):
    """The retirement check, the ingest, the models and the binding share the table's
    staging log as the run read it, and each table's rows come from its last record."""
    zone, service, first = mirrored
    opened = []
    real = DeltaTable.__init__

    def counting(self, table_uri, *args, **kwargs):
        opened.append(str(table_uri))
        real(self, table_uri, *args, **kwargs)
    monkeypatch.setattr(DeltaTable, "__init__", counting)
    for _ in range(2):  # as `run --watch` does: each run reads the log again
        assert {status.table: status for status in service.run()} == first
    layout = service.settings.layout
    assert opened.count(str(layout.staging_path("dbo", "t"))) == 2
    assert str(layout.staging_path("dbo", "gap")) not in opened  # nothing staged yet
    assert str(layout.mirrored_path("dbo", "t")) not in opened


@pytest.mark.parametrize("change", ["new file", "mirrored folder deleted", "project edited"])
def test_anything_new_makes_the_run_build(mirrored, monkeypatch, change):
    zone, service, first = mirrored
    if change == "new file":
        zone.write("T", 2, [{"id": 1, "v": "b", M: 1}], SCHEMA)
    elif change == "mirrored folder deleted":
        shutil.rmtree(service.settings.layout.mirrored_path("dbo", "t"))
    else:
        path = service.settings.project_dir / "dbt_project.yml"
        path.write_text(path.read_text() + "\n# edited\n")
    calls = builds(service, monkeypatch)
    [t] = [status for status in service.run() if status.table == "t"]
    assert calls == ["build"] and t.status == "replicating", t.error
    expected = [{"id": 1, "v": "b" if change == "new file" else "a"}]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)


def test_a_table_left_out_of_a_build_keeps_its_last_status_and_is_not_built(
        mirrored, monkeypatch):
    """A run where one table got a file builds that table alone: another table, whose dbt
    tests failed last time, is neither built nor tested, and stays `degraded` with its error."""
    zone, service, first = mirrored
    zone.table("Tested", ["id"])
    zone.write("Tested", 1, [{"id": None, "v": "no key", M: 0}], SCHEMA)
    degraded = {status.table: status for status in service.run()}["tested"]
    assert degraded.status == "degraded" and "mirror_rows" in degraded.error
    nodes = built_nodes(service, monkeypatch)
    zone.write("T", 2, [{"id": 1, "v": "b", M: 1}], SCHEMA)
    again = {status.table: status for status in service.run()}
    assert again["tested"] == degraded
    assert again["t"].status == "replicating"
    built = {node.unique_id for node in nodes}
    assert "model.lakemirror.dbo__t" in built
    assert not [node for node in built if "dbo__tested" in node], built
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "b"}])


def test_a_users_model_on_a_left_out_tables_staging_source_still_builds(mirrored,
                                                                    monkeypatch):
    """Only the settled table's own mirror model leaves the build: a model of the user's that
    reads its staging source directly (and the mirror of a table that changed) is built."""
    zone, service, first = mirrored
    zone.table("Other", ["id"])
    zone.write("Other", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    service.run()
    user = service.settings.project_dir / "models" / "user_changes.sql"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("{{ config(materialized='table') }}\n"
                    "select count(*) as changes, max(o.id) as other_id\n"
                    "from {{ source('lakemirror_staging', 'dbo__t') }}\n"
                    "cross join {{ ref('dbo__other') }} as o\n")
    service.run()  # the edited project builds everything once
    zone.write("Other", 2, [{"id": 2, "v": "b", M: 0}], SCHEMA)
    nodes = built_nodes(service, monkeypatch)
    statuses = {status.table: status.status for status in service.run()}
    built = {node.unique_id for node in nodes}
    assert statuses["t"] == statuses["other"] == "replicating", statuses
    assert "model.lakemirror.user_changes" in built, built
    assert "model.lakemirror.dbo__other" in built and "model.lakemirror.dbo__t" not in built


def test_only_a_name_dbt_selection_spells_exactly_is_left_out():
    """dbt's selection has no quoting: a settled table whose model name holds a space, a
    comma, a newline or a dot is built (an empty batch) rather than written into a spec."""
    record = TableMonitor("dbo", "t", "replicating", last_sequence_staged=1,
                          last_sequence_applied=1, rows=1, files_pending=0, processed_rows=1,
                          processed_bytes=1, last_sync=None, error=None, error_class=None)
    names = [("dbo", "plain_1"), ("dbo", "two words"), ("dbo", "a,b"), ("dbo", "line\n"),
             ("dbo", "dot.ted"), ("dbo", "plus+1"), ("dbo", "ünicode")]
    previous = {key: record for key in names}
    assert set(left_out(frozenset(names), previous)) == {("dbo", "plain_1")}
