"""Data never becomes code: names from the landing zone (keyColumns, ConditionalUpdateColumn,
the files' column names) reach the generated models, dbt's yml and the engine's SQL only as
quoted text. Hostile names mirror exactly, next to a healthy table, through dbt on the embedded
engine, compared with the reference model."""

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.codegen.quoting import sql_identifier
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset, mirrored_rows, owner_session

pytestmark = pytest.mark.slow

M = ROW_MARKER
SECRET = "s3cr3t-value-that-must-not-leak"
SECRET_KEY = '{{ env_var("LM_SECRET_PROBE") }}'
RAISE_KEY = '{{ exceptions.raise_compiler_error("boom") }}'
CONDITIONAL = "v`{{ version }}"
HOSTILE_COLUMNS = ["a`b", "{{ v }}", "{% if true %}", "it's \"q\"", "back\\slash", "é ü 😀",
                   "with space", "{#", "tab\there", "cr\rhere", "``"]
TABLES = {  # folder: (keyColumns, ConditionalUpdateColumn, other data columns)
    "Secret": ([SECRET_KEY], None, ["v"]),
    "Unparsable": (["note{#1", RAISE_KEY], None, ["v"]),
    "Quoted": (["a`b", "it's \"q\" \\ back"], None, ["v"]),
    "Lines": (["line\nbreak"], CONDITIONAL, ["v"]),
    "Columns": (["id"], None, HOSTILE_COLUMNS),
}


def write_table(zone, folder, keys, conditional, columns, files):
    """A table whose _metadata.json and files carry the names exactly (JSON-encoded)."""
    path = zone.root / folder
    path.mkdir(parents=True, exist_ok=True)
    metadata = {"keyColumns": keys} | (
        {"ConditionalUpdateColumn": conditional} if conditional else {})
    (path / "_metadata.json").write_text(json.dumps(metadata))
    names = list(dict.fromkeys([*keys, *filter(None, [conditional]), *columns]))
    schema = pa.schema([(name, pa.int64() if name in (conditional, "v") else pa.string())
                        for name in names] + [(M, pa.int32())])
    for sequence, rows in files.items():
        zone.write(folder, sequence, rows, schema)


def changes(keys, conditional, columns):
    """Two change files exercising insert, update, upsert, delete and a key change (and, with
    a conditional column, skipped stale updates), keyed by sequence number."""
    def row(key, marker, value, version=None):
        data = {name: f"{name[:3]}-{key}" for name in columns if name != "v"}
        data |= {name: key for name in keys} | ({"v": value} if "v" in columns else {})
        data |= {conditional: version} if conditional else {}
        return data | {M: marker}
    return {
        1: [row("k1", 0, 1, 5), row("k2", 0, 2, 5), row("k3", 4, 3, 5), row("k1", 0, 4, 6)],
        2: [row("k1", 1, 10, 4), row("k2", 1, 20, 7), row("k3", 2, None, 5), row("k4", 4, 40, 1),
            row("k2", 0, 21, 9), row("k5", 0, 50, None)],
    }


def expected_rows(keys, conditional, files):
    return as_multiset(apply_changes([rows for _, rows in sorted(files.items())], keys,
                                     conditional_column=conditional))


def files_holding(root: Path, text: str) -> list[Path]:
    return [path for path in root.rglob("*")
            if path.is_file() and text.encode() in path.read_bytes()]


def test_hostile_names_mirror_exactly_next_to_a_healthy_table_and_drop_cleanly(
        zone, service, monkeypatch):
    monkeypatch.setenv("LM_SECRET_PROBE", SECRET)
    zone.table("Healthy", ["id"])
    healthy = pa.schema([("id", pa.string()), ("v", pa.int64()), (M, pa.int32())])
    healthy_files = {1: [{"id": "a", "v": 1, M: 0}, {"id": "b", "v": 2, M: 0}],
                     2: [{"id": "a", "v": 3, M: 1}, {"id": "b", "v": None, M: 2}]}
    table_files = {folder: changes(keys, conditional, columns)
                   for folder, (keys, conditional, columns) in TABLES.items()}
    table_files["Quoted"][2].append({"a`b": None, "it's \"q\" \\ back": "k9", "v": 9, M: 0})
    for sequence in (1, 2):
        zone.write("Healthy", sequence, healthy_files[sequence], healthy)
        for folder, (keys, conditional, columns) in TABLES.items():
            write_table(zone, folder, keys, conditional, columns,
                        {sequence: table_files[folder][sequence]})
        statuses = {status.table: status for status in service.run()}
        assert {name: status.status for name, status in statuses.items()} == dict.fromkeys(
            [*map(str.lower, TABLES), "healthy"], "replicating") | (
            {"quoted": "degraded"} if sequence == 2 else {}), statuses
    # The NULL key fails the model's test (it ran, and found the row).
    assert "lakemirror_mirror_rows_dbo__quoted (fail" in statuses["quoted"].error

    for folder, (keys, conditional, _) in TABLES.items():
        assert mirrored_rows(service.settings.warehouse, "dbo", folder.lower()) == expected_rows(
            keys, conditional, table_files[folder]), folder
    assert mirrored_rows(service.settings.warehouse, "dbo", "healthy") == expected_rows(
        ["id"], None, healthy_files)
    assert files_holding(service.settings.project_dir, SECRET) == []

    # Keys reach dbt exactly: the config and the yml columns hold the names, untouched.
    manifest = json.loads((service.settings.project_dir / "target/manifest.json").read_text())
    for folder, (keys, conditional, _) in TABLES.items():
        node = manifest["nodes"][f"model.lakemirror.dbo__{folder.lower()}"]
        assert node["config"]["unique_key"] == keys
        assert node["config"].get("conditional_update_column") == conditional
        assert list(node["columns"]) == [*keys, "_lm_position"]
    # Each model's test ran on its keys: passed, or failed on the NULL key (it did not error).
    results = json.loads((service.settings.project_dir / "target/run_results.json").read_text())
    model_tests = {result["unique_id"].split(".")[2]: (result["status"], result["failures"])
                   for result in results["results"] if result["unique_id"].startswith("test.")}
    assert model_tests == {f"lakemirror_mirror_rows_dbo__{folder.lower()}": ("pass", 0)
                           for folder in [*TABLES, "Healthy"]} | {
        "lakemirror_mirror_rows_dbo__quoted": ("fail", 1)}

    # Deleting the hostile folders drops their tables; the healthy table stays.
    for folder in TABLES:
        for path in sorted((zone.root / folder).iterdir()):
            path.unlink()
        (zone.root / folder).rmdir()
    zone.write("Healthy", 3, [{"id": "c", "v": 5, M: 0}], healthy)
    # all tables but one: more than a run drops unconfirmed
    service.settings = replace(service.settings, confirm_drops=True)
    statuses = {status.table: status.status for status in service.run()}
    assert statuses == dict.fromkeys(map(str.lower, TABLES), "dropped") | {
        "healthy": "replicating"}
    assert sorted(path.name for path in (service.settings.warehouse / "dbo").iterdir()) == [
        "healthy"]
    models = service.settings.project_dir / "models/mirror/dbo"
    assert sorted(str(path.relative_to(models)) for path in models.rglob("*.*")) == [
        "dbo__healthy.sql", "dbo__healthy.yml",
        "history/dbo__healthy__history.sql", "history/dbo__healthy__history.yml"]
    assert mirrored_rows(service.settings.warehouse, "dbo", "healthy") == as_multiset(
        [{"id": "a", "v": 3}, {"id": "c", "v": 5}])


def test_a_thousand_column_table_mirrors_on_the_embedded_engine(zone, service):
    names = [f"c{index}" for index in range(1000)]
    zone.table("Wide", ["c0"])
    schema = pa.schema([(name, pa.int64()) for name in names] + [(M, pa.int32())])
    rows = [{name: key * 10_000 + index for index, name in enumerate(names)} | {"c0": key, M: 0}
            for key in range(3)]
    rows.append({name: 7 for name in names} | {"c0": 1, M: 4})
    zone.write("Wide", 1, rows, schema)
    [status] = service.run()
    assert status.status == "replicating", status.error
    assert mirrored_rows(service.settings.warehouse, "dbo", "wide") == as_multiset(
        apply_changes([rows], ["c0"]))
    mirrored = DeltaTable(str(service.settings.warehouse / "dbo" / "wide")).schema().to_arrow()
    assert mirrored.names[:1000] == names


def test_the_engine_takes_any_name_quoted_by_sql_identifier(tmp_path):
    """Sail reads a doubled backtick inside a quoted identifier as one backtick, in a Delta
    table's columns, a select and a MERGE."""

    names = ["id", *HOSTILE_COLUMNS, "line\nbreak", SECRET_KEY, "note{#1"]
    columns = ", ".join(f"{sql_identifier(name)} string" for name in names)
    spark = owner_session()
    try:
        table = sql_identifier(f"quoting_{tmp_path.name}")
        spark.sql(f"create table {table} ({columns}) using delta "
                  f"location '{tmp_path / 'quoting'}'").collect()
        values = ", ".join(f"'{index}' as {sql_identifier(name)}"
                           for index, name in enumerate(names))
        quoted = [sql_identifier(name) for name in names]
        spark.sql(f"merge into {table} as target using (select {values}) as source "
                  f"on target.`id` = source.`id` when not matched then insert "
                  f"({', '.join(quoted)}) values ({', '.join('source.' + q for q in quoted)})").collect()
        [row] = spark.sql(f"select {', '.join(quoted)} from {table}").collect()
        assert row.asDict() == {name: str(index) for index, name in enumerate(names)}
    finally:
        spark.stop()
