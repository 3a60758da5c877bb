"""The bench at a size beyond memory, tried small with lowered thresholds: the generator writes
a file a chunk at a time and still gives the same files for the same spec; the expected state
is computed and a final table verified a key bucket at a time, catching a wrong value, a
missing, unexpected or doubled key; contenders get hard-linked zone copies and their output is
removed once verified, but for the idle figure's contender."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakemirror.bench import generator, key_buckets
from lakemirror.bench.generator import GeneratedTable, generate_zone
from lakemirror.bench.key_buckets import ExpectedTable, expected_table, verify_in_buckets
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.runner import link_tree, run_bench
from lakemirror.bench.spec import BenchSpec
from lakemirror.contract import ROW_MARKER

BUCKETS = 6


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> GeneratedTable:
    [table] = generate_zone(tmp_path_factory.mktemp("zone"), BenchSpec.smoke())
    return table


@pytest.fixture(scope="module")
def whole(smoke: GeneratedTable) -> pa.Table:
    """The expected final table computed in memory, all at once."""
    return final_state(read_changes(smoke.files))


@pytest.fixture(scope="module")
def bucketed(smoke: GeneratedTable, tmp_path_factory: pytest.TempPathFactory) -> ExpectedTable:
    return expected_table(smoke.files, tmp_path_factory.mktemp("expected"), BUCKETS,
                          sample=10_000)  # every key's values compared


def test_chunked_files_are_the_same_for_the_same_spec(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    spec = BenchSpec.smoke()
    [whole_files] = generate_zone(tmp_path / "whole", spec)
    monkeypatch.setattr(generator, "CHUNK_ROWS", 700)
    first, again = ([table] for [table] in (generate_zone(tmp_path / name, spec)
                                             for name in ("first", "again")))
    for one, two in zip(first[0].files, again[0].files, strict=True):
        assert one.read_bytes() == two.read_bytes()
    assert pq.ParquetFile(first[0].files[0]).metadata.num_row_groups == 8  # 5,000 by 700
    for chunked, unchunked in zip(first[0].files, whole_files.files, strict=True):
        plan = ["id", ROW_MARKER]  # the same keys and markers, other values
        assert pq.read_table(chunked, columns=plan).equals(pq.read_table(unchunked,
                                                                         columns=plan))


def test_bucketed_expected_state_is_the_whole_one(whole: pa.Table, smoke: GeneratedTable,
                                                  bucketed: ExpectedTable,
                                                  tmp_path: Path) -> None:
    assert len(bucketed.buckets) == BUCKETS and bucketed.rows == whole.num_rows
    for number, bucket in enumerate(bucketed.buckets):
        keys = np.load(bucket.keys)
        assert len(keys) and (keys % BUCKETS == number).all()
        assert (np.diff(keys) > 0).all()
    together = pa.concat_tables(bucket.sample for bucket in bucketed.buckets)
    assert together.sort_by("id").equals(whole.sort_by("id"))
    sampled = expected_table(smoke.files, tmp_path, BUCKETS, sample=100)
    assert [bucket.sample.num_rows for bucket in sampled.buckets] == [100] * BUCKETS


def _set_value(table: pa.Table, key: int, name: str, value: Any) -> pa.Table:
    values = table[name].to_pylist()
    values[table["id"].to_pylist().index(key)] = value
    index = table.schema.get_field_index(name)
    return table.set_column(index, name, pa.array(values, type=table.schema.field(name).type))


def test_bucketed_verification_accepts_the_right_table(whole: pa.Table,
                                                       bucketed: ExpectedTable) -> None:
    actual = whole.append_column("_lm_position", pa.array(range(whole.num_rows)))
    result = verify_in_buckets(bucketed, actual.sort_by("id").to_reader(max_chunksize=500))
    assert result.ok, result.message
    assert result.compared_rows == whole.num_rows
    assert result.message.endswith("6 key buckets)")


@pytest.mark.parametrize(("plant", "message"), [
    (lambda table: _set_value(table, 5_001, "price", -1.0),
     r"key bucket 4 of 6: key 5001, column 'price': expected"),
    (lambda table: table.filter(pc.not_equal(table["id"], 4)), "key 4 is missing"),
    (lambda table: pa.concat_tables([table, _set_value(table.slice(0, 1), table["id"][0]
                                                       .as_py(), "id", -6)]),
     "key bucket 1 of 6: .*key -6 is not expected"),
    (lambda table: pa.concat_tables([table, table.slice(2, 1)]), "appears more than once"),
])
def test_bucketed_verification_finds_planted_difference(whole: pa.Table, bucketed: ExpectedTable,
                                                        plant: Any, message: str) -> None:
    result = verify_in_buckets(bucketed, plant(whole).to_reader(max_chunksize=500))
    assert not result.ok
    assert re.search(message, result.message), result.message


def test_zone_copies_are_hard_links_or_copies_across_devices(
        smoke: GeneratedTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    link_tree(smoke.folder, tmp_path / "linked")
    linked = tmp_path / "linked" / smoke.files[-1].name
    assert linked.stat().st_ino == smoke.files[-1].stat().st_ino

    def across_devices(source: str, target: str) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "link", across_devices)
    link_tree(smoke.folder, tmp_path / "copied")
    copied = tmp_path / "copied" / smoke.files[-1].name
    assert copied.stat().st_ino != smoke.files[-1].stat().st_ino
    assert copied.read_bytes() == smoke.files[-1].read_bytes()


def test_a_bucketed_bench_verifies_and_removes_outputs(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_buckets, "BUCKET_ROWS", 3_000)
    said: list[str] = []
    result = run_bench(BenchSpec.smoke(), tmp_path, ["delta-rs", "floor"], said.append)
    assert [(item.name, item.verified) for item in result.contenders] == [
        ("delta-rs", True), ("floor", True)]
    assert "dbo.bench1: expected state in 3 key bucket(s)" in said
    zone = sorted((tmp_path / "zone" / "LandingZone" / "Bench1").glob("*.parquet"))
    assert result.final_rows == {"dbo.bench1": final_state(read_changes(zone)).num_rows}
    for name in ("delta-rs", "floor"):
        assert sorted(path.name for path in (tmp_path / name).iterdir()) == [
            "stderr.log", "stdout.log", "usage.json"]
    assert not (tmp_path / "expected").exists()
