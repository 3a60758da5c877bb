"""Downstream models that move with the mirror (docs/pages/building-on-mirrors.md): a model on
`lakemirror.mirror_changes(ref(...))` with incremental_strategy 'apply_changes' equals the same
SQL rebuilt over the whole mirror after every run of a randomized change stream, also when a
build fails midway and is retried, and after a --full-refresh."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.landing import sequence_file_name
from lakemirror.reference import ROW_MARKER as M
from lakemirror.reference import apply_changes

from conftest import as_multiset, copy_project, mirrored_rows

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.int64()),
                    ("country", pa.string()), (M, pa.int32())])
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
COUNTRIES = ["US", "DE", "FR", "XX"]  # XX is not in the seed: the inner join drops it
# A projection, computed columns, a filter and a join with a seed: once over the changes,
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
            if marker == DELETE:
                present.discard(key)
            else:
                present.add(key)
        stream.append(rows)
    return stream


def project_with_models(tmp_path):
    project = copy_project(tmp_path / "project")
    (project / "models/user").mkdir(parents=True)
    for name, sql in MODELS.items():
        (project / f"models/user/{name}.sql").write_text(sql)
    (project / "seeds/user_regions.csv").write_text(
        "country_code,region\nUS,Americas\nDE,Europe\nFR,Europe\n")
    (project / "seeds/_user_seeds.yml").write_text(
        "version: 2\nseeds:\n  - name: user_regions\n    config:\n      enabled: true\n")
    return project


def publish(zone, sequence, rows):
    folder = zone / "Customers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA),
                   folder / sequence_file_name(sequence))


def lakemirror_run(tmp_path, project, *options):
    result = CliRunner().invoke(cli, [
        "run", *options, "--landing-zone", str(tmp_path / "zone"),
        "--warehouse", str(tmp_path / "wh"), "--project-dir", str(project)])
    return result


def model_rows(tmp_path, name):
    """A user model's rows, without lakemirror's columns and the rebuild's marker column."""
    rows = mirrored_rows(tmp_path / "wh", "analytics", name)
    return {tuple(item for item in row if item[0] not in ("_lm_change", "one")) for row in rows}


def assert_moving_equals_rebuilt(tmp_path):
    moving = mirrored_rows(tmp_path / "wh", "analytics", "moving")
    assert sum(moving.values()) == len(set(moving))  # one row per key
    assert model_rows(tmp_path, "moving") == model_rows(tmp_path, "rebuilt")


@pytest.mark.slow
def test_an_apply_changes_model_equals_its_rebuild_after_every_run(tmp_path):
    project = project_with_models(tmp_path)
    stream = change_stream(seed=45, files=6, per_file=12)
    for sequence, rows in enumerate(stream, start=1):
        publish(tmp_path / "zone", sequence, rows)
        result = lakemirror_run(tmp_path, project)
        assert result.exit_code == 0, result.output
        assert mirrored_rows(tmp_path / "wh", "dbo", "customers") == as_multiset(
            apply_changes(stream[:sequence], ["id"]))
        assert_moving_equals_rebuilt(tmp_path)
