"""The landing zone in object storage (`lakemirror bench --landing-zone URL`): the bench's
generated zone is published under a new prefix of URL, then listed and read through lakemirror's
door (objects listed per second, MB read per second), mirrored by `lakemirror run` in a cold
process, and run idle: seconds and the object-store requests of each idle run (counted by
wrapping obstore's calls in that process). The prefix is deleted afterwards."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lakemirror.bench.contenders import private_project
from lakemirror.bench.idle_run import json_problem
from lakemirror.errors import ConfigError

# A `lakemirror` process that counts its obstore calls into the file named by its first
# argument (the zone's door calls obstore through the module, so every request is counted).
COUNTING = """
import atexit, json, sys, obstore
counts, path = {}, sys.argv.pop(1)
def counted(name, real):
    def call(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)
    return call
for name in ("list", "list_with_delimiter", "get", "head", "put", "copy", "delete",
             "open_reader"):
    setattr(obstore, name, counted(name, getattr(obstore, name)))
atexit.register(lambda: open(path, "w").write(json.dumps(counts)))
from lakemirror.cli.main import cli
cli(prog_name="lakemirror")
"""


@dataclass(frozen=True)
class ZoneFigure:
    """What the bench measured on a landing zone in object storage."""

    url: str  # the prefix the zone was published under
    tables: int
    objects: int  # objects listed in the table folders
    listing_seconds: float
    listing_objects_per_second: float
    files_read: int
    read_mb: float
    read_mb_per_second: float
    mirror_seconds: float  # the first `lakemirror run`, cold
    idle_seconds: tuple[float, ...]
    idle_requests: tuple[int, ...]  # object-store requests of each idle run
    complete: bool
    message: str

    def text(self) -> str:
        idle = statistics.median(self.idle_seconds) if self.idle_seconds else 0.0
        return (f"landing zone {self.url}: listed {self.objects} objects of {self.tables} "
                f"table(s) at {self.listing_objects_per_second:,.0f} objects/s; read "
                f"{self.files_read} files ({self.read_mb:.2f} MB) at "
                f"{self.read_mb_per_second:.1f} MB/s; first run {self.mirror_seconds:.2f} s; "
                f"idle run median {idle:.2f} s, requests {list(self.idle_requests)}; "
                f"{self.message}")


def measure_zone(url: str, zone: Path, workdir: Path, expected: Mapping[str, tuple[int, int]],
                 idle_runs: int, progress: Callable[[str], None]) -> ZoneFigure:
    """Publish the local `zone` under a new prefix of `url`, measure it (see the module), and
    delete the prefix; `expected` gives each table's (last file, rows) after the run."""
    import obstore

    from lakemirror.environment import read_settings
    from lakemirror.landing import discover_tables
    from lakemirror.landing.zone import open_zone
    from lakemirror.storage import ObjectLocation, open_store, parse_location

    prefix_url = f"{url.rstrip('/')}/bench-{time.strftime('%Y%m%dT%H%M%S')}"
    location = parse_location(prefix_url, storage=read_settings().storage)
    if not isinstance(location, ObjectLocation):
        raise ConfigError(f"--landing-zone {url} is not an object-store URL",
                          hint="pass an az://, abfss://, https://, s3:// or gs:// URL")
    store = open_store(location)
    progress(f"landing zone: publish {zone} to {location.url}")
    try:
        for path in sorted(zone.rglob("*")):
            if path.is_file():
                obstore.put(store, path.relative_to(zone).as_posix(), path.read_bytes())
        door = open_zone(location)
        started = time.perf_counter()
        tables = discover_tables(door)
        listings = [door.entries(table.folder) for table in tables]
        listing_seconds = time.perf_counter() - started
        files = [entry for listing in listings for entry in listing
                 if entry.kind == "file" and not entry.name.startswith("_")]
        started = time.perf_counter()
        read = 0
        for entry in files:
            with door.open(entry.path) as opened:
                read += len(opened.read())
        read_seconds = time.perf_counter() - started
        objects = sum(len(listing) for listing in listings)
        progress(f"landing zone: listed {objects} objects in {listing_seconds:.2f} s, read "
                 f"{read / 1e6:.2f} MB in {read_seconds:.2f} s")
        return _runs(location.url, workdir, expected, idle_runs, progress, ZoneFigure(
            location.url, len(tables), objects, listing_seconds, objects / listing_seconds,
            len(files), read / 1e6, read / 1e6 / read_seconds, 0.0, (), (), False, ""))
    finally:
        keys = [meta["path"] for batch in obstore.list(store) for meta in batch]
        for key in keys:
            obstore.delete(store, key)


def _runs(url: str, workdir: Path, expected: Mapping[str, tuple[int, int]], idle_runs: int,
          progress: Callable[[str], None], figure: ZoneFigure) -> ZoneFigure:
    """`figure` with the first run's seconds, and each idle run's seconds and requests."""
    project = private_project(workdir / "project")
    counts = workdir / "requests.json"
    command = [sys.executable, "-c", COUNTING, str(counts), "run", "--json",
               "--landing-zone", url, "--warehouse", str(workdir / "warehouse"),
               "--project-dir", str(project)]
    seconds: list[float] = []
    requests: list[int] = []
    message = "not run"
    for run in range(idle_runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        message = json_problem(done.returncode, done.stdout, done.stderr, expected)
        if message:
            break
        requests.append(sum(_counts(counts).values()))
        progress(f"landing zone: {'idle ' if run else 'first '}run {seconds[-1]:.2f} s, "
                 f"{requests[-1]} requests")
    return replace(figure, mirror_seconds=seconds[0], idle_seconds=tuple(seconds[1:]),
                   idle_requests=tuple(requests[1:]), complete=not message,
                   message=message or f"--json complete: {len(expected)} table(s) replicating")


def _counts(path: Path) -> dict[str, Any]:
    try:
        counted = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return counted if isinstance(counted, dict) else {}
