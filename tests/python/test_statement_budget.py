"""A warm run sends a mirror model a handful of statements: its MERGE and the few around it
(the batch's columns, the bookkeeping), not the setup its invocation already did (control
tables created once, the relation registry read once when attached). A table with nothing new
in a run where another table changed is neither claimed, MERGEd nor recorded. Counted from
dbt's own SQL events, per node, on the embedded engine (docs/pages/performance.md lists the
statements)."""

import dataclasses
import re
from collections import Counter

import pyarrow as pa
import pytest

from lakemirror.reference import ROW_MARKER

from conftest import as_multiset, mirror_setup, mirrored_rows, on_dbt_events

pytestmark = pytest.mark.slow
M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
CHANGED_BUDGET = 11  # statements of a mirror model whose table got one change file (the
# invocation's first model: 2 of them create the log of mirror batches)
UNCHANGED_BUDGET = 2  # its temporary view, and a statement saying there is nothing to apply


def statements_per_node(monkeypatch):
    """dbt's statements from now on, per node id (invocation-wide ones under '-')."""
    sent: list[tuple[str, str]] = []

    def collect(event):
        if event.info.name == "SQLQuery":
            node = event.data.node_info.unique_id if event.data.node_info else ""
            sql = re.sub(r"^/\*.*?\*/", "", str(event.data.sql), flags=re.DOTALL)
            sent.append((node or "-", " ".join(sql.lower().split())))
    on_dbt_events(monkeypatch, collect)
    return sent


def test_a_warm_batch_sends_a_handful_of_statements_per_mirror_model(tmp_path, monkeypatch):
    zone, service = mirror_setup(tmp_path)
    service.settings = dataclasses.replace(service.settings, warm=True)
    for table in ("Changed", "Quiet"):
        zone.table(table, ["id"])
        zone.write(table, 1, [{"id": i, "v": "a", M: 0} for i in range(3)], SCHEMA)
    service.run()
    zone.write("Changed", 2, [{"id": 1, "v": "b", M: 1}], SCHEMA)
    sent = statements_per_node(monkeypatch)
    assert {(s.table, s.status) for s in service.run()} == {
        ("changed", "replicating"), ("quiet", "replicating")}
    per_node = Counter(node for node, _ in sent)
    changed = per_node["model.lakemirror.dbo__changed"]
    quiet = per_node["model.lakemirror.dbo__quiet"]
    shown = "\n".join(f"{node}: {sql[:160]}" for node, sql in sent)
    assert changed <= CHANGED_BUDGET, shown
    assert quiet <= UNCHANGED_BUDGET, shown
    merges = Counter(node for node, sql in sent if sql.startswith("merge into"))
    assert merges == {"model.lakemirror.dbo__changed": 1}, merges
    tests = Counter(node.split(".")[2] for node, _ in sent if node.startswith("test."))
    assert tests == {"lakemirror_mirror_rows_dbo__changed": 1,  # one test, one statement
                     "lakemirror_mirror_rows_dbo__quiet": 1}, tests
    created = Counter(found.group(1) for _, sql in sent if (found := re.match(
        r"create table if not exists _lakemirror_control\.(\w+)", sql)))
    assert set(created) == {"relations", "mirror_batches"}, created
    assert set(created.values()) == {1}, created  # once for the invocation, not per model
    recorded = [sql for _, sql in sent if sql.startswith("insert")
                and "'applied'" in sql]
    assert len(recorded) == 1 and "'dbo.changed'" in recorded[0], recorded


def test_a_table_said_quiet_wrongly_is_applied_by_the_next_run(tmp_path, monkeypatch):
    """Should a run name a table with a batch waiting among the quiet ones, that run applies
    and records nothing for it, and the next run applies the batch once."""
    from lakemirror import service as service_module

    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "a", M: 0}], SCHEMA)
    service.run()
    zone.write("T", 2, [{"id": 1, "v": "b", M: 1}, {"id": 3, "v": "c", M: 0}], SCHEMA)
    real = service_module.quiet_relations
    monkeypatch.setattr(service_module, "quiet_relations",
                        lambda *args: {"lakemirror_quiet_relations": ["dbo.t"]})
    service.run()
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "a"}, {"id": 2, "v": "a"}])
    monkeypatch.setattr(service_module, "quiet_relations", real)
    [status] = service.run()
    assert status.status == "replicating"
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "b"}, {"id": 2, "v": "a"}, {"id": 3, "v": "c"}])


def test_an_edited_mirror_model_merges_the_columns_its_own_sql_selects(tmp_path):
    """The strategy takes the batch's columns from the staging columns the generated body read
    only while the model's SQL is that body: an edited model that leaves a column out of its
    batch MERGEs the columns it selects (the staging's would name one its batch lacks)."""
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "a", M: 0}], SCHEMA)
    service.run()
    model = service.settings.project_dir / "models" / "mirror" / "dbo" / "dbo__t.sql"
    body = "lakemirror.staged_changes(source('lakemirror_staging', 'dbo__t'))"
    model.write_text(model.read_text().replace(
        "{{ " + body + " }}",
        "{% if is_incremental() %}select id, __rowMarker__, _lm_position from ({{ " + body
        + " }}) as changes{% else %}{{ " + body + " }}{% endif %}"))
    zone.write("T", 2, [{"id": 3, "v": "c", M: 0}], SCHEMA)
    [status] = service.run()
    assert status.status == "replicating", status.error
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "v": "a"}, {"id": 2, "v": "a"}, {"id": 3, "v": None}])
