"""A Delta metadata commit lakemirror writes itself: properties set or unset, table features
added, columns added or made nullable, as the table's next log entry.

delta-rs 1.6 lists the variantType reader feature in every table-features protocol it writes
(measured: `alter.set_table_properties` on a table with deletion vectors), and most readers
of the default set (Delta Lake 3.x, Fabric, DuckDB, Trino) refuse such a table. This commit
changes the protocol only as Delta's own ALTER TABLE would: a `delta.feature.<name>` key, a
`delta.min*Version` key or a property that turns a feature on adds just that feature. The log
entry is put only if absent (a conditional put on object storage), so a commit that lost the
race to another writer is made again on the version after it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakemirror.delta.access import delta_table
from lakemirror.delta.features import (
    FEATURES,
    FEATURES_BY_NAME,
    TABLE_FEATURES_READER_VERSION,
    TABLE_FEATURES_WRITER_VERSION,
    legacy_reader_features,
    legacy_writer_features,
)
from lakemirror.errors import DeltaCommitError
from lakemirror.storage.location import Location

_ATTEMPTS = 10  # commits lost to other writers before giving up
_FEATURE_KEY = "delta.feature."
_VERSION_KEYS = ("delta.minReaderVersion", "delta.minWriterVersion")


@dataclass(frozen=True)
class MetadataChange:
    """What one commit changes: `set` and `unset` as ALTER TABLE SET / UNSET TBLPROPERTIES
    (feature and protocol-version keys included), `added` Delta schema fields (JSON form) to
    append, `nullable` column names whose NOT NULL goes, or every column with `all_nullable`."""

    set: Mapping[str, str] = field(default_factory=dict)
    unset: Collection[str] = ()
    added: tuple[Mapping[str, Any], ...] = ()
    nullable: Collection[str] = ()
    all_nullable: bool = False


def commit_metadata(where: Location, change: MetadataChange, *, operation: str) -> int | None:
    """Commit `change` to the table at `where`; its new version, or None when nothing would
    change (no commit is made)."""
    from lakemirror.storage.warehouse import warehouse_storage

    storage = warehouse_storage(where)
    for _ in range(_ATTEMPTS):
        table = delta_table(where)
        actions = _changed_actions(table, change)
        if not actions:
            return None
        version = table.version() + 1
        info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": operation,
                               "operationParameters": {}, "isBlindAppend": False,
                               "engineInfo": "lakemirror"}}
        entry = "".join(json.dumps(action) + "\n" for action in [info, *actions])
        if storage.create_bytes(f"_delta_log/{version:020d}.json", entry.encode()):
            return version
    raise DeltaCommitError(f"{where}: {_ATTEMPTS} other commits came first; run again")


def _changed_actions(table: Any, change: MetadataChange) -> list[dict[str, Any]]:
    """The protocol and metaData actions that make `change` on `table`, those that change."""
    metadata = table.metadata()
    configuration = {key: value for key, value in metadata.configuration.items()
                     if key not in change.unset}
    configuration.update({key: value for key, value in change.set.items()
                          if not key.startswith(_FEATURE_KEY) and key not in _VERSION_KEYS})
    old_protocol = _protocol_action(table.protocol())
    protocol = _protocol_with(old_protocol, change.set, configuration)
    old_schema = json.loads(table.schema().to_json())
    schema = _schema_with(old_schema, change)
    actions: list[dict[str, Any]] = []
    if protocol != old_protocol:
        actions.append({"protocol": protocol})
    if configuration != metadata.configuration or schema != old_schema:
        if "delta.columnMapping.mode" in configuration and change.added:
            raise DeltaCommitError("adding columns to a table with column mapping is not "
                                      "supported here")
        actions.append({"metaData": {
            "id": metadata.id, "name": metadata.name, "description": metadata.description,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema), "partitionColumns": metadata.partition_columns,
            "configuration": configuration, "createdTime": metadata.created_time}})
    return actions


def _protocol_action(protocol: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"minReaderVersion": protocol.min_reader_version,
                              "minWriterVersion": protocol.min_writer_version}
    if protocol.min_reader_version >= TABLE_FEATURES_READER_VERSION:
        action["readerFeatures"] = sorted(protocol.reader_features or ())
    if protocol.min_writer_version >= TABLE_FEATURES_WRITER_VERSION:
        action["writerFeatures"] = sorted(protocol.writer_features or ())
    return action


def _protocol_with(protocol: dict[str, Any], keys: Mapping[str, str],
                   configuration: Mapping[str, str]) -> dict[str, Any]:
    """`protocol` with what `keys` ask (features, versions) and the features the
    `configuration`'s properties turn on; a legacy protocol stays legacy unless a feature or
    version needs table features, and then lists the features its versions implied."""
    wanted = {key.removeprefix(_FEATURE_KEY) for key in keys if key.startswith(_FEATURE_KEY)}
    wanted |= {feature.name for feature in FEATURES if feature.property is not None
               and configuration.get(feature.property, "").lower() == feature.property_value}
    unknown = sorted(wanted - FEATURES_BY_NAME.keys())
    if unknown:
        raise DeltaCommitError(f"unknown Delta table feature {unknown[0]!r}")
    features = [FEATURES_BY_NAME[name] for name in sorted(wanted)]
    reader, writer = protocol["minReaderVersion"], protocol["minWriterVersion"]
    new_reader = max([reader, int(keys.get("delta.minReaderVersion", 0))]
                     + [feature.min_reader_version for feature in features])
    new_writer = max([writer, int(keys.get("delta.minWriterVersion", 0))]
                     + [feature.min_writer_version for feature in features])
    result: dict[str, Any] = {"minReaderVersion": new_reader, "minWriterVersion": new_writer}
    if new_writer >= TABLE_FEATURES_WRITER_VERSION:
        implied = (set(protocol.get("writerFeatures", ()))
                   if writer >= TABLE_FEATURES_WRITER_VERSION else legacy_writer_features(writer))
        result["writerFeatures"] = sorted({*implied, *wanted})
    if new_reader >= TABLE_FEATURES_READER_VERSION:
        implied = (set(protocol.get("readerFeatures", ()))
                   if reader >= TABLE_FEATURES_READER_VERSION else legacy_reader_features(reader))
        result["readerFeatures"] = sorted({*implied, *(feature.name for feature in features
                                                       if feature.kind == "reader-writer")})
    return result


def _schema_with(schema: dict[str, Any], change: MetadataChange) -> dict[str, Any]:
    known = {field["name"].lower() for field in schema["fields"]}
    nullable = {name.lower() for name in change.nullable}
    fields = [{**field, "nullable": True}
              if change.all_nullable or field["name"].lower() in nullable else field
              for field in schema["fields"]]
    fields += [{**field, "nullable": True} for field in change.added
               if field["name"].lower() not in known]
    return {**schema, "fields": fields}
