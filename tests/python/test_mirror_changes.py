"""Downstream models that move with the mirror (docs/pages/building-on-mirrors.md): a model on
`lakemirror.mirror_changes(ref(...))` with incremental_strategy 'apply_changes' equals the same
SQL rebuilt over the whole mirror after every run of a randomized change stream, also when a
build fails midway and is retried, and after a --full-refresh; on both engines."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lakemirror.delta.access import delta_table
from lakemirror.run.build import build
from lakemirror.run.log import RunLog
from lakemirror.reference import ROW_MARKER as M
from lakemirror.maintenance import maintain_tables
from lakemirror.reference import apply_changes

from conftest import (ENGINES, as_multiset, deletion_vectors_added, mirror_setup, mirrored_rows,
                      track_presence)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.int64()),
                    ("country", pa.string()), (M, pa.int32())])
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
COUNTRIES = ["US", "DE", "FR", "XX"]  # XX has no region: the inner join drops it
# A projection, computed columns, a filter and a join with a dimension: once over the changes,
# once over the whole mirror.
SELECT = """
select
    c.id,
    upper(c.name) as shout,
    c.amount * 2 as doubled,
    r.region,
    {extra}
from {source} as c
inner join {{{{ ref('user_regions') }}}} as r on c.country = r.country_code
where c.amount >= 10
"""
MODELS = {
    "moving": "{{ config(materialized='incremental', incremental_strategy='apply_changes', "
              "unique_key='id') }}\n" + SELECT.format(
                  source="{{ lakemirror.mirror_changes(ref('dbo__customers')) }}",
                  extra="c._lm_change, c._lm_position"),
    "rebuilt": SELECT.format(source="{{ ref('dbo__customers') }}", extra="1 as one"),
}
FAILING_HOOK = "{{ config(post_hook='insert into no_such_table values (1)') }}\n"


def change_stream(seed: int, files: int, per_file: int) -> list[list[dict[str, object]]]:
    """Random changes to keys 1..10: inserts of absent keys (deleted keys again, too), updates,
    upserts and deletes of present and absent keys."""
    rng = random.Random(seed)
    present: set[int] = set()
    stream = []
    for _ in range(files):
        rows = []
        for _ in range(per_file):
            key = rng.randint(1, 10)
            marker = rng.choice([UPDATE, DELETE, UPSERT] if key in present
                                else [INSERT, INSERT, UPSERT, DELETE])
            rows.append({"id": key, "name": rng.choice("abcde"), "amount": rng.randint(0, 30),
                         "country": rng.choice(COUNTRIES), M: marker})
            track_presence(present, key, marker)
        stream.append(rows)
    return stream


def mirror_with_models(root, target="embedded"):
    """A landing zone with dbo.customers, and a service whose project holds MODELS and the
    dimension they join."""
    zone, service = mirror_setup(root, target)
    zone.table("Customers", ["id"])
    project = service.settings.project_dir
    (project / "models/user").mkdir(parents=True)
    for name, sql in MODELS.items():
        (project / f"models/user/{name}.sql").write_text(sql)
    (project / "models/user/user_regions.sql").write_text(
        "select * from values ('US', 'Americas'), ('DE', 'Europe'), ('FR', 'Europe') "
        "as regions (country_code, region)")
    return zone, service


def built(service, *arguments):
    """The models a dbt invocation (or, without arguments, a lakemirror run) failed."""
    if arguments:
        return [node for node in service.dbt(service.settings, *arguments) if node.failed]
    return [node for node in build(service.settings, RunLog(), service.dbt) if node.failed]


def model_rows(service, name):
    """A user model's rows, without lakemirror's columns and the rebuild's marker column."""
    rows = mirrored_rows(service.settings.warehouse, "analytics", name)
    return {tuple(item for item in row if item[0] not in ("_lm_change", "one")) for row in rows}


def assert_moving_equals_rebuilt(service):
    moving = mirrored_rows(service.settings.warehouse, "analytics", "moving")
    assert sum(moving.values()) == len(set(moving))  # one row per key
    assert model_rows(service, "moving") == model_rows(service, "rebuilt")


@pytest.mark.slow
@pytest.mark.parametrize("target", ENGINES)
def test_an_apply_changes_model_equals_its_rebuild_after_every_run(tmp_path, target):
    zone, service = mirror_with_models(tmp_path, target)
    stream = change_stream(seed=45, files=6, per_file=12)
    for sequence, rows in enumerate(stream[:-1], start=1):
        zone.write("Customers", sequence, rows, SCHEMA)
        service.run()
        assert mirrored_rows(service.settings.warehouse, "dbo", "customers") == as_multiset(
            apply_changes(stream[:sequence], ["id"]))
        if sequence == 3:  # fails after its MERGE, before its position is recorded
            moving = service.settings.project_dir / "models/user/moving.sql"
            moving.write_text(FAILING_HOOK + MODELS["moving"])
            assert [node.name for node in built(service)] == ["moving"]
            moving.write_text(MODELS["moving"])
            assert not built(service)  # takes the same changes again
        assert_moving_equals_rebuilt(service)
    assert not built(service, "run", "--full-refresh", "--select", "moving")
    assert_moving_equals_rebuilt(service)
    # Its table has deletion vectors, as the mirror's: a MERGE marks the rows it changes.
    assert deletion_vectors_added(service.settings.warehouse / "analytics" / "moving") > 0
    zone.write("Customers", len(stream), stream[-1], SCHEMA)  # and on from the full refresh
    service.run()
    assert_moving_equals_rebuilt(service)


@pytest.mark.slow
def test_compaction_keeps_a_recent_models_changes_and_folds_an_old_ones(tmp_path):
    assert_compaction_waits_for_recent_models_only(*mirror_with_models(tmp_path))


def assert_compaction_waits_for_recent_models_only(zone, service):
    """Staging compaction keeps the changes a model built within the hold has not read yet;
    once its last build is older, they are folded and the model fails with the way out, then
    equals its rebuild after a --full-refresh."""
    stream = change_stream(seed=3, files=4, per_file=12)
    zone.write("Customers", 1, stream[0], SCHEMA)
    service.run()
    for sequence in (2, 3):  # the mirror moves on, the model is not built
        zone.write("Customers", sequence, stream[sequence - 1], SCHEMA)
        service.run(["dbo.customers"])
    [kept] = maintain_tables(service.settings.layout, ["dbo.customers"])
    assert not built(service, "run", "--select", "moving", "rebuilt")
    assert_moving_equals_rebuilt(service)

    watermarks = service.settings.warehouse / "_lakemirror/control/change_watermarks"
    delta_table(watermarks).update({"recorded_at": "'2000-01-01 00:00:00'"})  # built long ago
    zone.write("Customers", 4, stream[3], SCHEMA)
    service.run(["dbo.customers"])
    [folded] = maintain_tables(service.settings.layout, ["dbo.customers"])
    assert folded.staged_rows_folded > kept.staged_rows_folded
    [failed] = built(service, "run", "--select", "moving")
    assert "cannot take the changes of dbo.customers since its last build: staging compaction" \
        in failed.message and "dbt run --full-refresh --select moving" in failed.message
    assert not built(service, "run", "--full-refresh", "--select", "moving", "rebuilt")
    assert_moving_equals_rebuilt(service)


def test_a_delete_the_conditional_update_column_skips_keeps_the_models_row(tmp_path):
    """With a ConditionalUpdateColumn a delete may not take effect: its key keeps an older row
    in the mirror, and in the model."""
    zone, service = mirror_with_models(tmp_path)
    (zone.root / "Customers/_metadata.json").write_text(
        '{"keyColumns": ["id"], "ConditionalUpdateColumn": "amount"}')
    zone.write("Customers", 1, [
        {"id": 1, "name": "a", "amount": 20, "country": "US", M: INSERT},
        {"id": 2, "name": "b", "amount": 15, "country": "DE", M: INSERT}], SCHEMA)
    service.run()
    zone.write("Customers", 2, [  # id 1's delete is below its high-water mark: skipped
        {"id": 1, "name": None, "amount": 10, "country": None, M: DELETE},
        {"id": 2, "name": None, "amount": 30, "country": None, M: DELETE}], SCHEMA)
    service.run()
    assert model_rows(service, "moving") == {(("doubled", 40), ("id", 1), ("region", "Americas"),
                                              ("shout", "A"))}
    assert_moving_equals_rebuilt(service)


def test_a_wrong_unique_key_or_a_missing_staging_log_is_refused(tmp_path):
    zone, service = mirror_with_models(tmp_path)
    zone.write("Customers", 1, change_stream(seed=1, files=1, per_file=5)[0], SCHEMA)
    service.run()
    moving = service.settings.project_dir / "models/user/moving.sql"
    moving.write_text(MODELS["moving"].replace("unique_key='id'", "unique_key='shout'"))
    [failed] = built(service, "run", "--select", "moving")
    assert "unique_key [\"shout\"] must be the keys of dbo.customers, [\"id\"]" in failed.message

    # Staging's commits cleaned up behind its checkpoint: whether compaction folded the changes
    # since the model's build is unknown.
    moving.write_text(MODELS["moving"])
    log = service.settings.warehouse / "_lakemirror/staging/dbo/customers/_delta_log"
    assert list(log.glob("*.checkpoint.parquet"))
    for commit in log.glob("*.json"):
        commit.unlink()
    [failed] = built(service, "run", "--select", "moving")
    assert f"no commit is left in the Delta log of its staging table at {log}" in failed.message
    assert "dbt run --full-refresh --select moving" in failed.message
