"""The command-line types of the places lakemirror reads and writes: a folder, or a URL in
object storage, checked before any work."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from lakemirror.environment import Settings, StorageSettings, read_settings
from lakemirror.errors import ConfigError

if TYPE_CHECKING:
    from lakemirror.storage import ObjectLocation

PATH = click.Path(path_type=Path, file_okay=False)


class LocationType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.3 on
    """A folder (checked as PATH) or an object-store URL, parsed and its store opened once, so
    a bad URL or storage option fails before any work, naming the option."""

    name = "path|url"

    def parse(self, value: str, storage: StorageSettings) -> Path | ObjectLocation:
        from lakemirror.storage import parse_location

        return parse_location(value, storage=storage)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Path | ObjectLocation:
        from lakemirror.storage import ObjectLocation, open_store

        if isinstance(value, (Path, ObjectLocation)):
            return value
        try:
            location = self.parse(value, _storage_settings(ctx))
            if isinstance(location, Path):
                return cast(Path, PATH.convert(value, param, ctx))  # path_type=Path
            open_store(location)
        except ConfigError as error:
            self.fail(str(error), param, ctx)
        return location


def _storage_settings(ctx: click.Context | None) -> StorageSettings:
    """The storage settings the `lakemirror` command read when it started (its root context's
    `Settings`), or the environment's when the type is used outside it."""
    settings = ctx.find_root().obj if ctx is not None else None
    return (settings if isinstance(settings, Settings) else read_settings()).storage


LOCATION = LocationType()


class WarehouseType(LocationType):
    """A warehouse: a folder, or a URL in object storage; a URL lakemirror cannot use is
    refused before anything is written, never taken for a relative path."""

    def parse(self, value: str, storage: StorageSettings) -> Path | ObjectLocation:
        from lakemirror.storage.warehouse import warehouse_location

        return warehouse_location(value, storage=storage)


WAREHOUSE = WarehouseType()
