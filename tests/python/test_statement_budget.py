"""A warm run sends a mirror model a handful of statements: its MERGE and the few around it
(the batch's columns, the bookkeeping), not the setup its invocation already did (control
tables created once, the relation registry read once when attached). A table with nothing new
in a run where another table changed is not built at all, nor tested. Counted from
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
    """Only the table that got a file is built: the others' models and tests send nothing."""
    zone, service = mirror_setup(tmp_path)
    service.settings = dataclasses.replace(service.settings, warm=True)
    for table in ("Changed", "Quiet", "Still"):
        zone.table(table, ["id"])
        zone.write(table, 1, [{"id": i, "v": "a", M: 0} for i in range(3)], SCHEMA)
    service.run()
    zone.write("Changed", 2, [{"id": 1, "v": "b", M: 1}], SCHEMA)
    sent = statements_per_node(monkeypatch)
    assert {(s.table, s.status) for s in service.run()} == {
        ("changed", "replicating"), ("quiet", "replicating"), ("still", "replicating")}
    per_node = Counter(node for node, _ in sent)
    shown = "\n".join(f"{node}: {sql[:160]}" for node, sql in sent)
    assert per_node["model.lakemirror.dbo__changed"] <= CHANGED_BUDGET, shown
    mirror_nodes = {node for node in per_node if "dbo__" in node}
    assert {node for node in mirror_nodes if "dbo__changed" not in node} == set(), shown
    assert "model.lakemirror.dbo__changed" in mirror_nodes
    assert len(mirror_nodes) == 2, mirror_nodes  # the model and its one test
    merges = Counter(node for node, sql in sent if sql.startswith("merge into"))
    assert merges == {"model.lakemirror.dbo__changed": 1}, merges
    tests = Counter(node.split(".")[2] for node, _ in sent if node.startswith("test."))
    assert tests == {"lakemirror_mirror_rows_dbo__changed": 1}, tests  # one statement
    created = Counter(found.group(1) for _, sql in sent if (found := re.match(
        r"create table if not exists _lakemirror_control\.(\w+)", sql)))
    assert set(created) == {"relations", "mirror_batches"}, created
    assert set(created.values()) == {1}, created  # once for the invocation, not per model
    recorded = [sql for _, sql in sent if sql.startswith("insert")
                and "'applied'" in sql]
    assert len(recorded) == 1 and "'dbo.changed'" in recorded[0], recorded


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
