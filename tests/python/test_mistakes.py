"""A user's mistake never costs data: a wrong or swapped folder is refused before anything is
written, drops are kept and can be restored, a mass drop needs confirming, and pointing a
warehouse back at its zone heals what a wrong run did. End to end through the CLI."""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import obstore
import pyarrow as pa

from lakemirror.delta.access import delta_table
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.storage.location import Location

from conftest import Zone, as_multiset, copy_project, mirrored_rows
from test_cli import run_cli
from test_hostile_zone import checksums

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FILES = [[{"id": i, "v": f"v{i}", M: 0} for i in range(1, 4)],
         [{"id": 1, "v": "one", M: 1}, {"id": 2, "v": None, M: 2}],
         [{"id": 4, "v": "four", M: 0}, {"id": 3, "v": "three", M: 4}]]
FOLDERS = {"Customers": ("dbo", "customers"), "Sales.schema/Orders": ("sales", "orders")}


@dataclass
class Mirror:
    zone: Zone
    warehouse: Location
    project: Path

    def run(self, *args, zone=None, warehouse=None, command="run", env=None):
        return run_cli(command, "--json", "--landing-zone", str(zone or self.zone.root),
                       "--warehouse", str(warehouse or self.warehouse),
                       "--project-dir", str(self.project), *args, env=env)

    def publish(self, folder, sequence):
        self.zone.write(folder, sequence, FILES[sequence - 1], SCHEMA)

    def assert_exact(self, folder, files=len(FILES)):
        schema, table = FOLDERS.get(folder, ("dbo", folder.lower()))
        assert mirrored_rows(self.warehouse, schema, table) == as_multiset(
            apply_changes(FILES[:files], ["id"])), folder

    def assert_continued(self, folder):
        """The mirrored table went on from its restored state: created once, then merged."""
        schema, table = FOLDERS.get(folder, ("dbo", folder.lower()))
        operations = [entry["operation"] for entry in
                      delta_table(self.warehouse / schema / table).history()]
        assert len([op for op in operations if "CREATE" in op]) == 1, operations
        assert operations[0] == "MERGE", operations

    def models(self):
        return sorted(path.name for path in (self.project / "models/mirror").rglob("*.sql"))

    def state(self):
        """Every file of the zone, the warehouse and the generated models."""
        return (checksums(self.zone.root), checksums(self.warehouse),
                checksums(self.project / "models"))


def statuses(result):
    return {f"{t['schema']}.{t['table']}": t["status"] for t in json.loads(result.stdout)["tables"]}


def mirror(tmp_path, folders=tuple(FOLDERS)):
    """A zone of `folders` with two files each (the first moves to _ProcessedFiles/),
    mirrored once."""
    setup = Mirror(Zone(tmp_path / "LandingZone"), tmp_path / "warehouse",
                   copy_project(tmp_path / "project"))
    for folder in folders:
        setup.zone.table(folder, ["id"])
        setup.publish(folder, 1)
        setup.publish(folder, 2)
    first = setup.run()
    assert first.exit_code == 0, first.output
    assert set(statuses(first).values()) == {"replicating"}
    return setup


def test_a_folder_inside_the_zone_is_refused_and_nothing_changes(tmp_path):
    setup = mirror(tmp_path)
    before, models = setup.state(), setup.models()
    wrong = setup.zone.root / "Sales.schema"
    for command, extra in (("run", ()), ("ingest", ()), ("run", ("--watch", "0.1"))):
        result = setup.run(*extra, zone=wrong, command=command)
        assert result.exit_code == 3, result.output
        assert f"mirrors the landing zone {setup.zone.root}" in result.output
        assert f"{wrong} is a folder inside the bound zone" in result.output
        assert "--rebind-landing-zone" in result.output
    assert setup.state() == before and setup.models() == models
    again = setup.run()  # the right zone still goes on exactly
    assert again.exit_code == 0 and set(statuses(again).values()) == {"replicating"}
    for folder in FOLDERS:
        setup.assert_exact(folder, 2)

    record = setup.warehouse / "_lakemirror/landing_zone.json"
    record.unlink()  # a warehouse an earlier version made is bound by its next run
    assert setup.run().exit_code == 0
    recorded = json.loads(record.read_text())
    assert recorded["landing_zone"]["given"] == str(setup.zone.root)
    assert set(recorded["tables"]) == {"dbo.customers", "sales.orders"}
    assert setup.run(zone=wrong).exit_code == 3


def test_swapped_folders_are_refused_and_nothing_is_written_into_either(tmp_path):
    fresh = Mirror(Zone(tmp_path / "new/LandingZone"), tmp_path / "new/warehouse",
                   copy_project(tmp_path / "new/project"))
    fresh.zone.table("Customers", ["id"])
    fresh.zone.write("Customers", 1, FILES[0], SCHEMA)
    fresh.warehouse.mkdir()
    before = checksums(fresh.zone.root)
    swapped = fresh.run(zone=fresh.warehouse, warehouse=fresh.zone.root)
    assert swapped.exit_code == 3, swapped.output
    assert f"the warehouse {fresh.zone.root} looks like a landing zone" in swapped.output
    assert f"pass --landing-zone {fresh.zone.root} --warehouse {fresh.warehouse}" in (
        swapped.output)
    assert checksums(fresh.zone.root) == before and not list(fresh.warehouse.iterdir())

    setup = mirror(tmp_path)
    before = setup.state()
    swapped = setup.run(zone=setup.warehouse, warehouse=setup.zone.root)
    assert swapped.exit_code == 3, swapped.output
    assert f"the landing zone {setup.warehouse} is a lakemirror warehouse" in swapped.output
    assert f"pass --landing-zone {setup.zone.root} --warehouse {setup.warehouse}" in (
        swapped.output)
    assert setup.state() == before


def test_a_moved_zone_is_named_and_rebinding_follows_it(tmp_path):
    setup = mirror(tmp_path)
    moved = tmp_path / "elsewhere"
    shutil.move(setup.zone.root, moved)
    refused = setup.run(zone=moved)
    assert refused.exit_code == 3, refused.output
    assert "dbo.customers, sales.orders carry the same incarnation marks" in refused.output
    assert f"the zone moved from {setup.zone.root} to {moved}" in refused.output

    setup.zone = Zone(moved)
    setup.publish("Customers", 3)
    rebound = setup.run(env={"LAKEMIRROR_REBIND_LANDING_ZONE": "1"})
    assert rebound.exit_code == 0, rebound.output
    assert set(statuses(rebound).values()) == {"replicating"}
    setup.assert_exact("Customers")
    setup.assert_exact("Sales.schema/Orders", 2)
    assert setup.run().exit_code == 0  # bound to the new place now
    (tmp_path / "LandingZone").mkdir()
    assert setup.run(zone=tmp_path / "LandingZone").exit_code == 3


def test_a_deleted_folder_is_kept_and_restore_brings_it_back(tmp_path):
    setup = mirror(tmp_path)
    shutil.move(setup.zone.root / "Customers", tmp_path / "trash")
    dropped = setup.run()
    assert dropped.exit_code == 0, dropped.output
    [note] = [t["note"] for t in json.loads(dropped.stdout)["tables"] if t["status"] == "dropped"]
    assert "lakemirror restore dbo.customers" in note
    assert not (setup.warehouse / "dbo/customers").exists()
    assert "dbo__customers.sql" not in setup.models()
    [copy] = (setup.warehouse / "_lakemirror/dropped/dbo/customers").iterdir()
    assert (copy / "mirrored/_delta_log").is_dir() and (copy / "staging/_delta_log").is_dir()

    listed = run_cli("restore", "--warehouse", str(setup.warehouse))
    assert listed.exit_code == 0 and "dbo.customers" in listed.output
    unnamed = run_cli("restore", "../customers", "--warehouse", str(setup.warehouse))
    assert unnamed.exit_code == 2 and "is not a table name" in unnamed.output
    missing = run_cli("restore", "dbo.customers", "--warehouse", str(setup.warehouse))
    assert missing.exit_code == 3 and "has no folder for dbo.customers" in missing.output

    # The publisher goes on in a new folder (no mark, no _ProcessedFiles/): restore adopts it.
    setup.zone.table("Customers", ["id"])
    setup.publish("Customers", 3)
    restored = run_cli("restore", "dbo.customers", "--warehouse", str(setup.warehouse))
    assert restored.exit_code == 0, restored.output
    assert "restored dbo.customers" in restored.output
    live = run_cli("restore", "dbo.customers", "--warehouse", str(setup.warehouse))
    assert live.exit_code == 3 and "a live table of that name exists" in live.output

    after = setup.run()
    assert after.exit_code == 0, after.output
    assert statuses(after) == {"dbo.customers": "replicating", "sales.orders": "replicating"}
    assert "dbo__customers.sql" in setup.models()
    setup.assert_exact("Customers")
    setup.assert_continued("Customers")
    setup.assert_exact("Sales.schema/Orders", 2)


def test_a_mass_drop_is_refused_until_confirmed(tmp_path):
    setup = mirror(tmp_path, (*FOLDERS, "Extra"))
    shutil.rmtree(setup.zone.root / "Customers")
    shutil.rmtree(setup.zone.root / "Sales.schema")
    models = setup.models()
    refused = setup.run()
    assert refused.exit_code == 3, refused.output
    assert "would drop 2 of the 3 mirrored tables (dbo.customers, sales.orders)" in (
        refused.output)
    assert "--confirm-drops" in refused.output
    assert (setup.warehouse / "dbo/customers/_delta_log").is_dir() and setup.models() == models

    confirmed = setup.run("--confirm-drops")
    assert confirmed.exit_code == 0, confirmed.output
    assert statuses(confirmed) == {"dbo.customers": "dropped", "sales.orders": "dropped",
                                   "dbo.extra": "replicating"}
    assert {path.name for path in (setup.warehouse / "_lakemirror/dropped").iterdir()} == {
        "dbo", "sales"}
    purged = setup.run("--retention-days", "0")  # kept no longer than the retention
    assert purged.exit_code == 0, purged.output
    assert not list((setup.warehouse / "_lakemirror/dropped").iterdir())


def test_pointing_back_after_a_wrong_rebind_heals_every_table(tmp_path):
    setup = mirror(tmp_path)
    wrong = setup.run(zone=setup.zone.root / "Sales.schema",
                      env={"LAKEMIRROR_REBIND_LANDING_ZONE": "1", "LAKEMIRROR_CONFIRM_DROPS": "1"})
    assert statuses(wrong)["dbo.customers"] == "dropped", wrong.output
    assert statuses(wrong)["sales.orders"] == "dropped"
    for folder in FOLDERS:
        setup.publish(folder, 3)

    back = setup.run(env={"LAKEMIRROR_REBIND_LANDING_ZONE": "1"})
    assert back.exit_code == 0, back.output
    assert {name: status for name, status in statuses(back).items()
            if name != "dbo.orders"} == {"dbo.customers": "replicating",
                                         "sales.orders": "replicating"}
    for folder in FOLDERS:
        setup.assert_exact(folder)
        setup.assert_continued(folder)
    assert {"dbo__customers.sql", "sales__orders.sql"} <= set(setup.models())


def test_a_warehouse_url_lakemirror_cannot_use_is_refused_and_no_local_folder_is_made(
        tmp_path, monkeypatch):
    """`s3://lake/wh` taken for a relative path used to mirror into a folder `s3:` of the
    current directory with exit code 0: a URL of no store lakemirror knows, or one folded into
    a path, is refused by every command, by option or variable."""
    fresh = Mirror(Zone(tmp_path / "LandingZone"), tmp_path / "warehouse",
                   copy_project(tmp_path / "project"))
    fresh.zone.table("Customers", ["id"])
    fresh.publish("Customers", 1)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*")), checksums(tmp_path)
    url, sas = "s3:/lake/wh", "https://example.com/lake/wh"
    by_option = [fresh.run(warehouse=url), fresh.run(warehouse=url, command="ingest"),
                 fresh.run(warehouse="hdfs://lake/wh")] + [
        run_cli(*command, "--warehouse", url) for command in (
            ("status",), ("maintain",), ("restore",), ("restore", "dbo.customers"),
            ("inspect",), ("doctor", "--readers", "delta-rs"))]
    by_variable = [run_cli("run", "--landing-zone", str(fresh.zone.root), "--project-dir",
                           str(fresh.project), env={"LAKEMIRROR_WAREHOUSE": url}),
                   run_cli("status", env={"LAKEMIRROR_WAREHOUSE": f"{sas}?sv=1&sig=SECRET"})]
    for result in by_option + by_variable:
        assert result.exit_code == 2, result.output
        assert "SECRET" not in result.output
        assert "nothing was written" in result.output and "--warehouse" in result.output
    assert (sorted(tmp_path.rglob("*")), checksums(tmp_path)) == before


def test_swapped_urls_are_refused_and_nothing_is_written_into_either(tmp_path, monkeypatch,
                                                                    s3_server):
    """The swap check holds when both are URLs: a warehouse URL whose table folders hold a
    landing zone's files is refused before a byte is written to either prefix."""
    from zone_kinds import Published

    monkeypatch.setenv("LAKEMIRROR_STORAGE_OPTIONS", json.dumps(dict(s3_server.options)))
    published = Published(Zone(tmp_path / "LandingZone"), s3_server)
    published.zone.table("Customers", ["id"])
    published.zone.write("Customers", 1, FILES[0], SCHEMA)
    published.publish()
    empty_prefix = s3_server.fresh_prefix()
    zone_url, empty_url = s3_server.url(published.prefix), s3_server.url(empty_prefix)
    keys = lambda: sorted(meta["path"] for prefix in (published.prefix, empty_prefix)
                          for batch in obstore.list(s3_server.store(prefix)) for meta in batch)
    before = keys()
    setup = Mirror(published.zone, zone_url, copy_project(tmp_path / "project"))
    swapped = setup.run(zone=empty_url, warehouse=zone_url)
    assert swapped.exit_code == 3, swapped.output
    assert f"the warehouse {zone_url} looks like a landing zone" in swapped.output
    assert f"pass --landing-zone {zone_url} --warehouse {empty_url}" in swapped.output
    assert keys() == before


def test_a_bad_schema_suffix_is_refused_before_anything_is_staged(tmp_path):
    fresh = Mirror(Zone(tmp_path / "LandingZone"), tmp_path / "warehouse",
                   copy_project(tmp_path / "project"))
    fresh.zone.table("Customers", ["id"])
    fresh.publish("Customers", 1)
    before = checksums(fresh.zone.root)
    refused = fresh.run(env={"LAKEMIRROR_SCHEMA_SUFFIX": "-Sales"})
    assert refused.exit_code == 2, refused.output
    assert "LAKEMIRROR_SCHEMA_SUFFIX is '-Sales', which cannot end a schema's name" in (
        refused.output)
    assert "_sales" in refused.output
    assert checksums(fresh.zone.root) == before and not fresh.warehouse.exists()
