"""Delta tables by location, a local folder or a place in object storage: delta-rs gets the
location's storage options with every call, so a warehouse at a URL is read and written with
its own credentials (never the process environment's alone)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakemirror.storage.location import Location, ObjectLocation
from lakemirror.storage.missing_bucket import is_missing_bucket, missing_bucket_error

if TYPE_CHECKING:
    from deltalake import DeltaTable

Where = Location | str  # a str is a local path, as older callers give it


def storage_options(where: Where) -> dict[str, str] | None:
    """delta-rs's storage options for `where`; None for a local folder."""
    if not isinstance(where, ObjectLocation):
        return None
    from lakemirror.storage.engine_settings import delta_storage_options

    return delta_storage_options(where)


def delta_table(where: Where, **arguments: Any) -> DeltaTable:
    """The Delta table at `where` (`arguments`: DeltaTable's, such as version)."""
    from deltalake import DeltaTable

    with _missing_bucket(where):
        return DeltaTable(str(where), storage_options=storage_options(where), **arguments)


def is_delta_table(where: Where) -> bool:
    from deltalake import DeltaTable

    with _missing_bucket(where):
        return DeltaTable.is_deltatable(str(where), storage_options=storage_options(where))


@contextmanager
def _missing_bucket(where: Where) -> Iterator[None]:
    """delta-rs's error for a warehouse whose bucket or container does not exist, as the
    configuration error it is."""
    try:
        yield
    except OSError as error:
        if isinstance(where, ObjectLocation) and is_missing_bucket(error):
            raise missing_bucket_error(where.url, "warehouse") from None
        raise


def write_delta(where: Where | DeltaTable, data: Any, **arguments: Any) -> None:
    """write_deltalake at `where` (or into an open table)."""
    from deltalake import write_deltalake

    if isinstance(where, (Path, ObjectLocation, str)):
        write_deltalake(str(where), data, storage_options=storage_options(where), **arguments)
    else:
        write_deltalake(where, data, **arguments)
