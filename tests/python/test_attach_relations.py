"""The warehouse's registered relations attached to a new engine session (the embedded engine
keeps its catalog in memory): once per dbt invocation, whatever the number of schemas dbt
lists, and each view after the views its model reads."""

import re
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from conftest import mirror_setup, on_dbt_events

pytestmark = pytest.mark.slow

MODELS = {
    "base.sql": "select 1 as id\n",
    "elsewhere.sql": "{{ config(schema='elsewhere') }}\nselect 2 as id\n",
    # Names the view v_long in its SQL without reading it.
    "v.sql": "{{ config(materialized='view') }}\n"
             "select id, 'see analytics.v_long' as note from {{ ref('base') }}\n",
    "v_long.sql": "{{ config(materialized='view') }}\nselect id from {{ ref('v') }}\n",
}
SCHEMAS = ("analytics", "elsewhere")  # the schemas dbt lists: those of MODELS


def built_project(tmp_path):
    """A service whose project's models (two schemas, a view on a view) are built once."""
    _, service = mirror_setup(tmp_path)
    mine = service.settings.project_dir / "models" / "mine"
    mine.mkdir(parents=True)
    for name, sql in MODELS.items():
        (mine / name).write_text(sql)
    assert not [node.message for node in service.dbt(service.settings, "run", "--select", "mine")
                if node.failed]
    return service


def attach_statements(monkeypatch):
    """The registry's relations attached by dbt from now on, one name per statement."""
    statements: list[str] = []
    on_dbt_events(monkeypatch, lambda event: statements.append(
        " ".join(str(event.data.sql).lower().split())) if event.info.name == "SQLQuery" else None)
    return lambda: [found.group(1) for sql in statements if (found := re.search(
        r"create (?:table|view) if not exists (`[^`]+`\.`[^`]+`)", sql))]


@pytest.mark.parametrize("threads", [1, 2])
def test_relations_are_attached_once_per_invocation_or_at_most_once_per_listed_schema(
        tmp_path, monkeypatch, threads):
    """One thread: once. Two: dbt lists the two schemas side by side, and a listing that
    starts before the other one has attached attaches too (no lock in jinja): at most once
    per listed schema."""
    monkeypatch.setenv("LAKEMIRROR_THREADS", str(threads))
    service = built_project(tmp_path)
    attached = attach_statements(monkeypatch)
    results = service.dbt(service.settings, "run", "--select", "mine")
    assert not [node.message for node in results if node.failed]
    names = attached()
    assert max(Counter(names).values()) <= (1 if threads == 1 else len(SCHEMAS))
    assert {"`analytics`.`v`", "`analytics`.`v_long`", "`analytics`.`base`",
            "`elsewhere`.`elsewhere`"} <= set(names)


def test_a_view_is_attached_after_the_view_it_reads_whatever_other_names_its_sql_holds(
        tmp_path):
    """v's SQL names v_long (a string), v_long reads v, and the registry lists v_long first:
    ordering by the names in the SQL waits for each other and then creates v_long first."""
    service = built_project(tmp_path)
    registry = str(service.settings.warehouse / "_lakemirror" / "control" / "relations")
    rows = DeltaTable(registry).to_pyarrow_table()
    first = pc.equal(rows["table_name"], "v_long")
    write_deltalake(registry, pa.concat_tables([rows.filter(first),
                                                rows.filter(pc.invert(first))]),
                    mode="overwrite")
    results = service.dbt(service.settings, "run", "--select", "v_long")
    assert [node.status for node in results] == ["success"], [node.message for node in results]
