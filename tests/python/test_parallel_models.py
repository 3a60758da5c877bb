"""Mirror models built four at a time on the embedded engine (LAKEMIRROR_THREADS=4): every
table equal to the reference model after each of several runs, every model's batches in the
shared log of mirror batches (their hooks commit to it at once), and no run outlasting its
engine timeout."""

from collections import Counter
from dataclasses import replace

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService

from conftest import as_multiset, mirrored_rows, on_dbt_events

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
TABLES = [f"Table{n}" for n in range(8)]
RUNS = 3
THREADS = 4
ENGINE_TIMEOUT = 600.0  # seconds: past it the run's watchdog stops the engine, failing the run


def _change_file(table: str, sequence: int) -> list[dict[str, object]]:
    """Inserts, updates, deletes and upserts over 30 keys, different in every file."""
    return [{"id": (i * 7 + sequence) % 30, "v": f"{table}-{sequence}-{i}",
             M: [0, 1, 2, 4][(i + sequence) % 4]} for i in range(60)]


@pytest.mark.slow
def test_tables_built_four_at_a_time_equal_the_reference_after_every_run(
        zone, service, monkeypatch):
    monkeypatch.setenv("LAKEMIRROR_THREADS", str(THREADS))
    threads: list[int] = []
    on_dbt_events(monkeypatch, lambda event: threads.append(event.data.num_threads)
                  if event.info.name == "ConcurrencyLine" else None)
    bounded = MirrorService(replace(service.settings, engine_timeout=ENGINE_TIMEOUT))
    files: dict[str, list[list[dict[str, object]]]] = {table: [] for table in TABLES}
    for table in TABLES:
        zone.table(table, ["id"])
    for sequence in range(1, RUNS + 1):
        for table in TABLES:
            files[table].append(_change_file(table, sequence))
            zone.write(table, sequence, files[table][-1], SCHEMA)
        statuses = bounded.run()
        assert [(status.table, status.status) for status in statuses] == [
            (table.lower(), "replicating") for table in TABLES], statuses
        for table in TABLES:
            expected = [{k: v for k, v in row.items() if k != M}
                        for row in apply_changes(files[table], ["id"])]
            assert mirrored_rows(service.settings.warehouse, "dbo", table.lower()) == \
                as_multiset(expected), (table, sequence)
    assert threads and set(threads) == {THREADS}, threads
    batches = DeltaTable(str(service.settings.warehouse / "_lakemirror" / "control"
                             / "mirror_batches")).to_pyarrow_table().to_pylist()
    applied = Counter(row["relation_name"].split(".")[-1].strip("`") for row in batches
                      if row["kind"] == "applied")
    assert applied == {table.lower(): RUNS for table in TABLES}, applied
