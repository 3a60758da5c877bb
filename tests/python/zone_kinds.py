"""A landing zone for tests, written on disk with conftest's `Zone` helper and published where
lakemirror reads it: on disk it is mirrored where it is (`local`); on an object-store server
(tests/python/object_servers.py) each file is uploaded once under a fresh prefix, and objects
then stay as lakemirror leaves them. Tests parametrized over KINDS thus check that a zone in
object storage mirrors exactly what the same zone on disk mirrors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import obstore
import pytest

from conftest import Zone, copy_project
from lakemirror.landing.zone import open_zone
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.service import MirrorService, RunSettings
from lakemirror.status import TableStatus
from lakemirror.storage import ObjectLocation, parse_location
from lakemirror.environment import STORAGE_OPTIONS as OPTIONS_VARIABLE

KINDS = ["local", "azurite", "s3"]
# The suite's budget: an end-to-end test (a dbt run per step) runs on disk and one server,
# the servers shared out between such tests, so each is exercised by half of them.
WITH_AZURITE = ["local", "azurite"]
WITH_S3 = ["local", "s3"]


class Published:
    """A zone written on disk and published where lakemirror reads it."""

    def __init__(self, zone: Zone, server: Any | None) -> None:
        self.zone, self.server = zone, server
        self.prefix = server.fresh_prefix() if server else ""
        self.store = server.store(self.prefix) if server else None
        self.sent: dict[Path, tuple[int, int]] = {}  # size and time of each file uploaded
        zone.root.mkdir(parents=True, exist_ok=True)

    @property
    def location(self) -> Path | ObjectLocation:
        """Where lakemirror reads the zone: its folder, or its prefix's URL and options."""
        if self.server is None:
            return self.zone.root
        location = parse_location(self.server.url(self.prefix), self.server.options)
        assert isinstance(location, ObjectLocation)
        return location

    @property
    def environment(self) -> dict[str, str]:
        """What a lakemirror process needs in its environment to read the zone."""
        if self.server is None:
            return {}
        return {OPTIONS_VARIABLE: json.dumps(dict(self.server.options))}

    @property
    def door(self) -> ZoneDoor:
        return open_zone(self.location)

    def service(self, root: Path, **options: Any) -> MirrorService:
        """A service mirroring the zone into `root`/warehouse with a fresh project copy,
        publishing the zone before each run."""
        service = PublishingService(RunSettings.given(
            self.location, root / "warehouse", copy_project(root / "project"), quiet=True,
            **options))
        service.published = self
        return service

    def publish(self) -> None:
        """Upload each file written or rewritten on disk since the last call, oldest first
        (objects stay as lakemirror leaves them: moved files are not uploaded again)."""
        if self.store is None:
            return
        files = [path for path in self.zone.root.rglob("*") if path.is_file()]
        for path in sorted(files, key=lambda path: (path.stat().st_mtime_ns, path)):
            stamp = (path.stat().st_size, path.stat().st_mtime_ns)
            if self.sent.get(path) != stamp:
                obstore.put(self.store, path.relative_to(self.zone.root).as_posix(),
                            path.read_bytes())
                self.sent[path] = stamp

    def put(self, key: str, data: bytes) -> None:
        """Write one file or object as a publisher would, now."""
        if self.store is None:
            target = self.zone.root / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        else:
            obstore.put(self.store, key, data)

    def names(self, folder: str) -> list[str]:
        """The names of the files in a folder of the zone (none when it has none)."""
        door = self.door
        path = door.root / folder
        if door.entry(path) is None:
            return []
        return [entry.name for entry in door.entries(path) if entry.kind == "file"]


class PublishingService(MirrorService):
    """A service that publishes its test zone's new files before each run."""

    published: Published

    def run(self, tables: Any = ()) -> list[TableStatus]:
        self.published.publish()
        return super().run(tables)


@pytest.fixture
def published_zone(request: pytest.FixtureRequest, zone: Zone) -> Published:
    """The test's zone on disk, or on the server its `kind` parameter names."""
    kind = getattr(request, "param", "local")
    server = None if kind == "local" else request.getfixturevalue(f"{kind}_server")
    return Published(zone, server)
