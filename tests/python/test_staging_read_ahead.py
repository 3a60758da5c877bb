"""Staging reads a file's batches on a thread of its own, a few ahead of the writing: items in
order and bounded ahead, the producer's errors raised in the consumer, the producer stopped and
joined however the consumer leaves, and a bad row in a later batch staging nothing."""

import threading
import time
from contextlib import nullcontext
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import lakemirror.landing.changes as changes_module
from lakemirror.errors import RowMarkerError
from lakemirror.landing import discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.read_ahead import read_ahead

SCHEMA = pa.schema([("id", pa.int64()), (ROW_MARKER, pa.int32())])


def producers():
    return [thread for thread in threading.enumerate() if thread.name == "lakemirror-read-ahead"]


def test_items_come_in_order_and_the_producer_runs_at_most_ahead():
    produced, taken, lags = [], [], []

    def source():
        for item in range(20):
            lags.append(len(produced) - len(taken))
            produced.append(item)
            yield item

    with read_ahead(source(), ahead=2) as items:
        for item in items:
            time.sleep(0.005)  # a slow consumer: an unbounded producer would run far ahead
            taken.append(item)
    assert taken == list(range(20))
    assert max(lags) <= 2  # one waiting, one being consumed: the third waits for room
    assert producers() == []


def test_a_producer_error_is_raised_in_the_consumer_after_the_items_before_it():
    def source():
        yield 1
        yield 2
        raise RowMarkerError("row 3 has __rowMarker__=9", table="dbo.t", file="f", hint="h")

    taken = []
    with pytest.raises(RowMarkerError, match="__rowMarker__=9") as raised:
        with read_ahead(source()) as items:
            taken.extend(items)
    assert taken == [1, 2] and raised.value.table == "dbo.t"
    assert producers() == []


@pytest.mark.parametrize("leave", ["break", "raise"])
def test_leaving_early_stops_the_producer_and_closes_its_source(leave):
    closed = threading.Event()

    def endless():
        try:
            item = 0
            while True:
                yield item
                item += 1
        finally:
            closed.set()

    with pytest.raises(OSError) if leave == "raise" else nullcontext():
        with read_ahead(endless()) as items:
            for item in items:
                if item == 3:
                    if leave == "raise":
                        raise OSError(28, "No space left on device")
                    break
    assert closed.is_set()
    assert producers() == []


def test_a_bad_marker_in_a_later_batch_stages_nothing_of_the_file(zone, tmp_path, monkeypatch):
    monkeypatch.setattr(changes_module, "BATCH_ROWS", 10)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": n, ROW_MARKER: 0} for n in range(5)], SCHEMA)
    rows = [{"id": n, ROW_MARKER: 9 if n == 25 else 1} for n in range(40)]  # the third batch
    bad = zone.write("T", 2, rows, SCHEMA)
    [table] = discover_tables(zone.root)
    warehouse = Warehouse(tmp_path / "warehouse")
    result = ingest_table(table, warehouse)
    assert result.status == "failed" and result.error_type == "RowMarkerError"
    assert "row 26 has __rowMarker__=9" in result.error and str(bad) in result.error
    assert result.staged_files == 1 and bad.exists()
    staging = DeltaTable(str(warehouse.staging_path("dbo", "t")))
    assert staging.to_pyarrow_table().num_rows == 5
    written = {path.name for path in Path(str(warehouse.staging_path("dbo", "t"))).glob("*.parquet")}
    assert written == {path.rsplit("/", 1)[-1] for path in staging.file_uris()}
    assert producers() == []
