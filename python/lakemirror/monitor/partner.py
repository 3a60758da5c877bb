"""The publisher's `_partnerEvents.json`: validated when a run reads the zone, recorded in the
warehouse, shown by `lakemirror status`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path, PurePath
from typing import Any

import pyarrow as pa

from lakemirror.delta.access import write_delta
from lakemirror.errors import LandingZoneError
from lakemirror.landing.zone import LandingZone, as_door
from lakemirror.landing.zone_door import ZoneDoor, parse_json
from lakemirror.monitor.records import read_rows
from lakemirror.staging.layout import Warehouse

PARTNER_EVENTS_FILE = "_partnerEvents.json"


@dataclass(frozen=True)
class PartnerInfo:
    """What `_partnerEvents.json` says about the publisher."""

    partner_name: str
    source_type: str | None
    source_version: str | None
    additional_information: str | None = None  # sourceInfo.additionalInformation, as JSON


PARTNER_SCHEMA = pa.schema([("partner_name", pa.string()), ("source_type", pa.string()),
                            ("source_version", pa.string()),
                            ("additional_information", pa.string())])


def read_partner(warehouse: Warehouse) -> PartnerInfo | None:
    rows = read_rows(warehouse.control_path("partner"))
    return PartnerInfo(**rows[0]) if rows else None


def record_partner_events(zone: PurePath | ZoneDoor, warehouse: Warehouse) -> PartnerInfo | None:
    """Validate the zone's `_partnerEvents.json` and record it; None when there is none."""
    door = as_door(zone)
    info = parse_partner_events(door.root / PARTNER_EVENTS_FILE, door)
    if info is not None and read_partner(warehouse) != info:
        write_delta(warehouse.control_path("partner"),
                        pa.Table.from_pylist([asdict(info)], schema=PARTNER_SCHEMA),
                        mode="overwrite", schema_mode="overwrite")
    return info


def parse_partner_events(path: PurePath, door: ZoneDoor | None = None) -> PartnerInfo | None:
    """What `_partnerEvents.json` at the zone root (`path`) says; None when there is none. It
    is read through the zone's door: a link, FIFO or oversized file is an error, not read.
    As the SDKs write it: keys in any case, versions as strings or numbers, and any
    `additionalInformation` (kept as JSON)."""
    def error(message: str) -> LandingZoneError:
        return LandingZoneError(f"{PARTNER_EVENTS_FILE}: {message}", file=str(path),
                                hint='write {"partnerName": "...", "sourceInfo": '
                                     '{"sourceType": "...", "sourceVersion": "..."}}')
    data = (door or LandingZone(Path(path.parent))).read_control(path)
    if data is None:
        return None
    try:
        document = parse_json(data)
    except ValueError as failure:
        raise error(str(failure)) from failure
    document = _lower_keys(document)
    if not isinstance(document.get("partnername"), str):
        raise error("partnerName (a string) is required")
    source = _lower_keys(document.get("sourceinfo", {}))
    if not isinstance(source, dict):
        raise error("sourceInfo must be an object")
    scalars = {}
    for name in ("sourceType", "sourceVersion"):
        value = source.get(name.lower())
        if value is not None and (not isinstance(value, (str, int, float))
                                  or isinstance(value, bool)):
            raise error(f"sourceInfo.{name} must be a string or a number")
        scalars[name] = None if value is None else str(value)
    extra = source.get("additionalinformation")
    return PartnerInfo(document["partnername"], scalars["sourceType"], scalars["sourceVersion"],
                       None if extra is None else json.dumps(extra, sort_keys=True))


def _lower_keys(document: Any) -> Any:
    """An object's keys in lower case (other values as they are)."""
    return ({str(key).lower(): value for key, value in document.items()}
            if isinstance(document, dict) else document)
