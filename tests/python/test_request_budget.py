"""Catching up a backlog costs object-store requests linear in the files, and few of them:
`lakemirror ingest` of one table whose 4, 8 or 16 change files (20 rows each) wait, the zone and
the warehouse both on moto's S3 behind a proxy that logs every request (fault_proxy.py). Each
further file costs at most PER_FILE requests, in the zone and the warehouse alike the cost of
8 further files is twice that of 4, each landed file is read once and moved once, and the
stores lakemirror opens (each a client with its own connections) do not grow with the files.

Files are ready at once (LAKEMIRROR_SETTLE_SECONDS=0: a file that landed within the settle
window is also read for its Parquet footer) and leases outlast the run (a lease's heartbeat is
a request every third of its duration), so the counts do not depend on timing."""

import json
import re
from collections import Counter
from dataclasses import dataclass

import obstore
import obstore.store
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakemirror.contract import sequence_file_name
from lakemirror.reference import ROW_MARKER

from conftest import copy_project
from fault_proxy import fault_proxy
from test_cli import run_cli

PER_FILE = 20  # requests for each further file, zone and warehouse together
SIZES = (4, 8, 16)
SLACK = 8  # requests by which 8 further files may miss twice the cost of 4
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


@dataclass
class Cost:
    """What one `lakemirror ingest` over a backlog cost."""

    zone: int  # requests on the zone's prefix
    warehouse: int  # requests on the warehouse's prefix
    stores: int  # obstore stores opened
    landed: Counter[str]  # requests that name a change file where it landed
    moved: Counter[str]  # requests that name a change file in _ProcessedFiles/
    folder_checks: int  # HEADs of T/_ProcessedFiles itself (no object may stand there)

    @property
    def total(self) -> int:
        return self.zone + self.warehouse


@pytest.fixture
def logged(s3_server, monkeypatch):
    """moto's S3 reached through a proxy that logs each request; obstore's S3 stores counted
    as they are opened."""
    with fault_proxy(s3_server.endpoint) as proxy:
        monkeypatch.setenv("LAKEMIRROR_STORAGE_OPTIONS", json.dumps(
            {**s3_server.options, "endpoint": proxy.endpoint}))
        monkeypatch.setenv("LAKEMIRROR_SETTLE_SECONDS", "0")
        monkeypatch.setenv("LAKEMIRROR_LEASE_SECONDS", "600")
        opened: list[object] = []
        real = obstore.store.S3Store

        def counted(*args, **kwargs):
            opened.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(obstore.store, "S3Store", counted)
        yield s3_server, proxy, opened


def ingest_backlog(logged, tmp_path, files: int) -> Cost:
    """Land `files` change files of one table and ingest them all in one run."""
    server, proxy, opened = logged
    zone, warehouse = server.fresh_prefix("zone"), server.fresh_prefix("warehouse")
    landing = server.store(zone)  # straight to moto: the publisher's requests are not counted
    obstore.put(landing, "T/_metadata.json", b'{"keyColumns": ["id"]}')
    for sequence in range(1, files + 1):
        rows = [{"id": sequence * 100 + row, "v": f"v{row}", ROW_MARKER: 0} for row in range(20)]
        data = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), data)
        obstore.put(landing, f"T/{sequence_file_name(sequence)}", data.getvalue().to_pybytes())
    logged_before, opened_before = len(proxy.requests()), len(opened)
    result = run_cli("ingest", "--json", "--landing-zone", server.url(zone), "--warehouse",
                     server.url(warehouse), "--project-dir",
                     str(copy_project(tmp_path / f"project-{files}")))
    assert result.exit_code == 0, result.output
    [table] = json.loads(result.stdout)["tables"]
    assert (table["status"], table["last_sequence"]) == ("replicating", files), table
    logged_requests = proxy.requests()[logged_before:]
    requests = [path for _, path in logged_requests]
    names = re.compile(rf"{zone}(/|%2F)T(/|%2F)(_ProcessedFiles(/|%2F))?(\d{{20}}\.parquet)")
    named = [match for path in requests if (match := names.search(path))]
    return Cost(zone=sum(zone in path for path in requests),
                warehouse=sum(warehouse in path for path in requests),
                stores=len(opened) - opened_before,
                landed=Counter(match[5] for match in named if not match[3]),
                moved=Counter(match[5] for match in named if match[3]),
                folder_checks=sum(method == "HEAD" and path.rstrip("/").endswith(
                    f"{zone}/T/_ProcessedFiles") for method, path in logged_requests))


def test_a_backlog_costs_requests_linear_in_its_files(logged, tmp_path):
    costs = {files: ingest_backlog(logged, tmp_path, files) for files in SIZES}
    shown = {files: (cost.zone, cost.warehouse, cost.stores, cost.folder_checks)
             for files, cost in costs.items()}
    small, middle, large = (costs[files] for files in SIZES)
    further = SIZES[2] - SIZES[1]
    assert (large.total - middle.total) / further <= PER_FILE, shown
    for part in ("zone", "warehouse"):
        first = getattr(middle, part) - getattr(small, part)
        second = getattr(large, part) - getattr(middle, part)
        assert abs(second - 2 * first) <= SLACK, (part, shown)
    for cost, files in zip(costs.values(), SIZES):
        assert set(cost.landed.values()) == {1}, cost.landed  # read once, nothing else
        assert len(cost.landed) == files
        assert set(cost.moved.values()) == {1}, cost.moved  # each copied once, newest stays
        assert len(cost.moved) == files - 1
    assert small.stores == large.stores, shown  # none opened per file
    assert small.folder_checks == large.folder_checks, shown  # checked once a run, not per file
