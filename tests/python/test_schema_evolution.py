"""Schema evolution and table lifecycle end to end: landing zone → staging → dbt `mirror` →
mirrored Delta table on the embedded engine, compared with the reference model."""

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.staging.evolution import delta_type_name

from conftest import as_multiset, mirror_setup, mirrored_rows

pytestmark = pytest.mark.slow

M = ROW_MARKER


def schema(*fields):
    return pa.schema([*fields, (M, pa.int32())])


def data_rows(rows):
    return [{name: value for name, value in row.items() if name != M} for row in rows]


def mirrored_types(warehouse, schema_name, table):
    arrow = pa.schema(DeltaTable(str(warehouse / schema_name / table)).schema().to_arrow())
    return {field.name: delta_type_name(field.type) for field in arrow}


def by_table(statuses):
    return {status.table: status for status in statuses}


def publish(zone, folder, files, first_sequence=1):
    for sequence, (rows, file_schema) in enumerate(files, first_sequence):
        zone.write(folder, sequence, rows, file_schema)


# Three files of a table keyed by id: columns added, missing and widened.
EVOLVING_FILES = [
    ([{"id": 1, "a": 1, "s": "x", M: 0}, {"id": 2, "a": 2, "s": "y", M: 0}],
     schema(("id", pa.int64()), ("a", pa.int32()), ("s", pa.string()))),
    # a widens to long, s goes missing (the update of 1 reads NULL there), f is new
    ([{"id": 1, "a": 3_000_000_000, "f": 1.5, M: 1}, {"id": 3, "a": 3, "f": 2.5, M: 0}],
     schema(("id", pa.int64()), ("a", pa.int64()), ("f", pa.float32()))),
    # a narrower again (cast up), s is back, f widens to double
    ([{"id": 2, "a": 4, "s": "z", "f": 1e300, M: 4}, {"id": 4, "a": 5, "s": "w", M: 0}],
     schema(("id", pa.int64()), ("a", pa.int32()), ("s", pa.string()), ("f", pa.float64()))),
]


def test_added_missing_and_widened_columns_flow_into_the_mirror(zone, service):
    zone.table("T", ["id"])
    files = EVOLVING_FILES
    for sequence, (rows, file_schema) in enumerate(files, 1):
        zone.write("T", sequence, rows, file_schema)
        [status] = service.run()
        assert status.status == "replicating", status.error
    expected = apply_changes([rows for rows, _ in files], ["id"])
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data_rows(expected))
    types = mirrored_types(service.settings.warehouse, "dbo", "t")
    assert (types["a"], types["f"], types["s"]) == ("long", "double", "string")


def test_type_change_fails_one_table_while_two_others_keep_replicating(zone, service):
    base = schema(("id", pa.int64()), ("v", pa.int64()))
    for folder in ("A", "B", "C"):
        zone.table(folder, ["id"])
        zone.write(folder, 1, [{"id": 1, "v": 1, M: 0}, {"id": 2, "v": 2, M: 0}], base)
    assert {s.status for s in service.run()} == {"replicating"}

    zone.write("A", 2, [{"id": 1, "v": "one", M: 1}], schema(("id", pa.int64()), ("v", pa.string())))
    b_file = [{"id": 1, "v": 10, "note": "new column", M: 1}, {"id": 3, "v": 3, "note": "n", M: 0}]
    zone.write("B", 2, b_file, schema(("id", pa.int64()), ("v", pa.int64()), ("note", pa.string())))
    c_file = [{"id": 2, "v": None, M: 2}, {"id": 4, "v": 4, M: 4}]
    zone.write("C", 2, c_file, base)
    statuses = by_table(service.run())

    assert statuses["a"].status == "failed"
    assert "column 'v' changed type from long to string" in statuses["a"].error
    assert "00000000000000000002.parquet" in statuses["a"].error
    assert mirrored_rows(service.settings.warehouse, "dbo", "a") == as_multiset(
        [{"id": 1, "v": 1}, {"id": 2, "v": 2}])
    first = [{"id": 1, "v": 1, M: 0}, {"id": 2, "v": 2, M: 0}]
    for table, second in (("b", b_file), ("c", c_file)):
        assert statuses[table].status == "replicating", statuses[table].error
        expected = apply_changes([first, second], ["id"])
        assert (mirrored_rows(service.settings.warehouse, "dbo", table)
                == as_multiset(data_rows(expected)))

    # The failed table recovers by recreating its folder, with the new type.
    shutil.rmtree(zone.root / "A")
    zone.table("A", ["id"])
    text = schema(("id", pa.int64()), ("v", pa.string()))
    zone.write("A", 1, [{"id": 7, "v": "seven", M: 0}], text)
    statuses = by_table(service.run())
    assert statuses["a"].status == "replicating", statuses["a"].error
    assert (mirrored_rows(service.settings.warehouse, "dbo", "a")
            == as_multiset([{"id": 7, "v": "seven"}]))
    zone.write("A", 2, [{"id": 7, "v": "SEVEN", M: 1}, {"id": 8, "v": "eight", M: 0}], text)
    assert by_table(service.run())["a"].status == "replicating"
    assert mirrored_rows(service.settings.warehouse, "dbo", "a") == as_multiset(
        [{"id": 7, "v": "SEVEN"}, {"id": 8, "v": "eight"}])


def test_case_clash_and_missing_required_column_fail_while_a_null_typed_column_evolves(
        zone, service):
    base = schema(("id", pa.int64()), ("v", pa.string()))
    required = pa.schema([("id", pa.int64()), pa.field("v", pa.string(), nullable=False),
                          (M, pa.int32())])
    untyped = schema(("id", pa.int64()), ("v", pa.string()), ("n", pa.null()))
    for folder, first in (("Clash", base), ("Required", required), ("Untyped", untyped)):
        zone.table(folder, ["id"])
        zone.write(folder, 1, [{"id": 1, "v": "a", M: 0}], first)
    assert {s.status for s in service.run()} == {"replicating"}
    zone.write("Clash", 2, [{"id": 2, "V": "b", M: 0}], schema(("id", pa.int64()), ("V", pa.string())))
    zone.write("Required", 2, [{"id": 2, M: 0}], schema(("id", pa.int64())))
    zone.write("Untyped", 2, [{"id": 1, "v": "b", "n": 7, M: 1}],
               schema(("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())))
    statuses = by_table(service.run())
    assert statuses["clash"].status == "failed"
    assert "'V' differs only by case from the staged column 'v'" in statuses["clash"].error
    assert statuses["required"].status == "failed"
    assert "'v' is declared non-nullable but is missing" in statuses["required"].error
    assert statuses["untyped"].status == "replicating", statuses["untyped"].error
    assert mirrored_rows(service.settings.warehouse, "dbo", "untyped") == as_multiset(
        [{"id": 1, "v": "b", "n": 7}])


def test_column_names_with_spaces_and_punctuation_end_to_end(zone, service):
    names = ["first name", "a,b;c", "x.y", "Größe", "c=d", "(p)"]
    zone.table("Odd", ["first name"])
    fields = [(name, pa.string()) for name in names]
    first = [{**{name: f"{name}-1" for name in names}, "first name": "k1", M: 0},
             {**{name: f"{name}-2" for name in names}, "first name": "k2", M: 0}]
    zone.write("Odd", 1, first, schema(*fields))
    service.run()
    second = [{"first name": "k1", "new col (2)": 5, M: 1},
              {"first name": "k2", "new col (2)": None, M: 2}]
    zone.write("Odd", 2, second, schema(("first name", pa.string()), ("new col (2)", pa.int64())))
    [status] = service.run()
    assert status.status == "replicating", status.error
    expected = apply_changes([first, second], ["first name"])
    assert (mirrored_rows(service.settings.warehouse, "dbo", "odd")
            == as_multiset(data_rows(expected)))


def test_deleted_folders_drop_table_staging_and_model_but_keep_an_edited_model(zone, service):
    base = schema(("id", pa.int64()), ("v", pa.int64()))
    for folder in ("A", "B", "C"):
        zone.table(folder, ["id"])
        zone.write(folder, 1, [{"id": 1, "v": 1, M: 0}], base)
    service.run()
    models = service.settings.project_dir / "models/mirror/dbo"
    edited = models / "dbo__b.sql"
    edited.write_text(edited.read_text() + "-- my change\n")
    shutil.rmtree(zone.root / "A")
    shutil.rmtree(zone.root / "B")
    zone.write("C", 2, [{"id": 2, "v": 2, M: 0}], base)

    # 2 of 3 tables: more than a run drops unconfirmed
    service.settings = replace(service.settings, confirm_drops=True)
    statuses = by_table(service.run())
    assert statuses["a"].status == "dropped" and "dbo__b.sql" not in statuses["a"].note
    assert "`lakemirror restore dbo.a` brings it back" in statuses["a"].note
    assert statuses["b"].status == "dropped" and "dbo__b.sql" in statuses["b"].note
    assert statuses["c"].status == "replicating" and statuses["c"].rows == 2
    warehouse = service.settings.warehouse
    for table in ("a", "b"):
        assert not (warehouse / "dbo" / table).exists()
        assert not (warehouse / "_lakemirror/staging/dbo" / table).exists()
    assert sorted(str(path.relative_to(models)) for path in models.rglob("*.*")) == [
        "dbo__b.sql", "dbo__b.yml", "dbo__c.sql", "dbo__c.yml",
        "history/dbo__c__history.sql", "history/dbo__c__history.yml"]
    assert "enabled: false" in (models / "dbo__b.yml").read_text()
    registry = DeltaTable(str(warehouse / "_lakemirror/control/relations")).to_pyarrow_table()
    assert not {"a", "b", "dbo__a", "dbo__b"} & set(registry["table_name"].to_pylist())

    zone.write("C", 3, [{"id": 1, "v": 9, M: 1}], base)  # the project still builds
    assert [s.status for s in service.run()] == ["replicating"]
    assert mirrored_rows(warehouse, "dbo", "c") == as_multiset([{"id": 1, "v": 9}, {"id": 2, "v": 2}])


def test_recreated_folder_is_rebuilt_from_its_new_files_only_and_rename_is_drop_plus_create(
        zone, service):
    base = schema(("id", pa.int64()), ("v", pa.int64()))
    zone.table("Old", ["id"])
    publish(zone, "Old", [([{"id": i, "v": i, M: 0} for i in range(5)], base),
                          ([{"id": 1, "v": 10, M: 1}], base), ([{"id": 2, "v": 20, M: 1}], base)])
    service.run()

    shutil.rmtree(zone.root / "Old")  # recreated, with other keys and columns
    zone.table("Old", ["v"])
    new_files = [[{"v": 100, "w": "a", M: 0}, {"v": 200, "w": "b", M: 0}]]
    zone.write("Old", 1, new_files[0], schema(("v", pa.int64()), ("w", pa.string())))
    assert [s.status for s in service.run()] == ["replicating"]
    assert mirrored_rows(service.settings.warehouse, "dbo", "old") == as_multiset(data_rows(
        apply_changes(new_files, ["v"])))
    new_files.append([{"v": 100, "w": "A", M: 1}])
    zone.write("Old", 2, new_files[1], schema(("v", pa.int64()), ("w", pa.string())))
    service.run()
    assert mirrored_rows(service.settings.warehouse, "dbo", "old") == as_multiset(data_rows(
        apply_changes(new_files, ["v"])))

    shutil.rmtree(zone.root / "Old")  # renamed: the publisher starts a folder under the new name
    zone.table("New", ["v"])
    zone.write("New", 1, [{"v": 1, "w": "x", M: 0}], schema(("v", pa.int64()), ("w", pa.string())))
    statuses = by_table(service.run())
    assert (statuses["old"].status, statuses["new"].status) == ("dropped", "replicating")
    assert not (service.settings.warehouse / "dbo/old").exists()
    assert (mirrored_rows(service.settings.warehouse, "dbo", "new")
            == as_multiset([{"v": 1, "w": "x"}]))


OPTIONAL = ("v", "w")
file_columns = st.tuples(st.sets(st.sampled_from(OPTIONAL)), st.sampled_from([pa.int32(), pa.int64()]))


@st.composite
def evolving_file(draw):
    columns, v_type = draw(file_columns)
    fields = [("a", pa.int64()), ("b", pa.string())]
    fields += [(name, v_type if name == "v" else pa.string()) for name in OPTIONAL if name in columns]
    values = {"v": st.integers(-5, 5), "w": st.sampled_from(["p", "q", None])}
    row = st.fixed_dictionaries({
        "a": st.integers(0, 2), "b": st.sampled_from(["x", "y"]), M: st.sampled_from([0, 1, 2, 4]),
        **{name: values[name] for name in OPTIONAL if name in columns}})
    return draw(st.lists(row, min_size=1, max_size=6)), schema(*fields)


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(files=st.lists(evolving_file(), min_size=2, max_size=4), split=st.integers(1, 3))
def test_random_change_streams_with_column_additions_and_removals_match_reference(files, split):
    with tempfile.TemporaryDirectory() as directory:
        zone, service = mirror_setup(Path(directory))
        zone.table("T", ["a", "b"])
        for sequence, (rows, file_schema) in enumerate(files, 1):
            zone.write("T", sequence, rows, file_schema)
            if sequence in (split, len(files)):
                [status] = service.run()
                assert status.status == "replicating", status.error
        expected = apply_changes([rows for rows, _ in files], ["a", "b"])
        assert (mirrored_rows(service.settings.warehouse, "dbo", "t")
                == as_multiset(data_rows(expected)))
