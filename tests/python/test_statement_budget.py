"""A warm run sends a mirror model a handful of statements: its MERGE and the few around it
(the batch's columns, the bookkeeping), not the setup its invocation already did (control
tables created once, the relation registry read once when attached). A table with nothing new
in a run where another table changed records no batch. Counted from dbt's own SQL events, per
node, on the embedded engine (docs/pages/performance.md lists the statements)."""

import dataclasses
import re
from collections import Counter

import pyarrow as pa
import pytest

from lakemirror.reference import ROW_MARKER

from conftest import mirror_setup, on_dbt_events

pytestmark = pytest.mark.slow
M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
CHANGED_BUDGET = 13  # statements of a mirror model whose table got one change file
UNCHANGED_BUDGET = 10  # statements of a mirror model whose table got nothing new


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
    for node in ("model.lakemirror.dbo__changed", "model.lakemirror.dbo__quiet"):
        mine = [sql for name, sql in sent if name == node]
        assert sum("merge into" in sql for sql in mine) == 1, mine
    created = Counter(found.group(1) for _, sql in sent if (found := re.match(
        r"create table if not exists _lakemirror_control\.(\w+)", sql)))
    assert set(created) == {"relations", "mirror_batches"}, created
    assert set(created.values()) == {1}, created  # once for the invocation, not per model
    recorded = [sql for _, sql in sent if sql.startswith("insert")
                and "'applied'" in sql]
    assert len(recorded) == 1 and "'dbo.changed'" in recorded[0], recorded
