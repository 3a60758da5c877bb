"""Table features a Delta table uses must be listed in its protocol, or Delta Lake on Spark
refuses to read it (DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH). delta-rs (deltalake 1.6)
writes a table-features protocol (writer 7) for a timestamp_ntz column and lists only
timestampNtz, while a NOT NULL column (staging's `_lm_position`) also needs `invariants` there.
lakemirror's own delta-rs tables (staging, control) get the missing features added here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from deltalake import CommitProperties, DeltaTable, TableFeatures

from lakemirror.delta.bookkeeping import bookkeeping_keys
from lakemirror.delta.features import FEATURES_BY_NAME

# The features Delta Lake 4.0 derives from a table's properties (features.FEATURES names the
# property and its value), as delta-rs can add them.
_FROM_PROPERTIES = {
    "appendOnly": TableFeatures.AppendOnly,
    "changeDataFeed": TableFeatures.ChangeDataFeed,
    "deletionVectors": TableFeatures.DeletionVectors,
}


def unlisted_features(table: DeltaTable) -> list[str]:
    """Features the table's schema and properties use that its table-features protocol does
    not list (legacy protocols, writer < 7, imply theirs)."""
    return [name for name, _ in _unlisted(table)]


def listed_features(table: DeltaTable) -> tuple[str, ...]:
    """The table features the table's protocol lists, reader's and writer's, sorted."""
    protocol = table.protocol()
    return tuple(sorted({*(protocol.reader_features or ()), *(protocol.writer_features or ())}))


def list_used_features(table: DeltaTable) -> list[str]:
    """Add the features the table uses but does not list, in one commit that carries
    lakemirror's bookkeeping on (see delta.bookkeeping). Returns the features added; no
    commit when none."""
    missing = _unlisted(table)
    if not missing:
        return []
    table.alter.add_feature([feature for _, feature in missing],
                            allow_protocol_versions_increase=True,
                            commit_properties=CommitProperties(
                                custom_metadata=bookkeeping_keys(table)))
    return [name for name, _ in missing]


def _unlisted(table: DeltaTable) -> list[tuple[str, TableFeatures]]:
    protocol = table.protocol()
    if protocol.min_writer_version < 7:
        return []
    listed = set(listed_features(table))
    used = dict(_used_features(json.loads(table.schema().to_json()),
                               table.metadata().configuration))
    return [(name, feature) for name, feature in used.items() if name not in listed]


def _used_features(schema: Mapping[str, Any], configuration: Mapping[str, str]
                   ) -> Iterator[tuple[str, TableFeatures]]:
    fields = list(_fields(schema))
    if any(not nullable for _, nullable in fields):
        yield "invariants", TableFeatures.Invariants
    if any(name == "timestamp_ntz" for name, _ in fields):
        yield "timestampNtz", TableFeatures.TimestampWithoutTimezone
    for name, feature in _FROM_PROPERTIES.items():
        if _turned_on(name, configuration):
            yield name, feature
    if any(key.startswith("delta.constraints.") for key in configuration):
        yield "checkConstraints", TableFeatures.CheckConstraints
    if configuration.get("delta.columnMapping.mode", "none").lower() != "none":
        yield "columnMapping", TableFeatures.ColumnMapping


def _turned_on(name: str, configuration: Mapping[str, str]) -> bool:
    """Whether the table's properties set feature `name`'s enabling property to its value."""
    feature = FEATURES_BY_NAME[name]
    return (feature.property is not None
            and configuration.get(feature.property, "").lower() == feature.property_value)


def _fields(node: Any, nullable: bool = True, *, counted: bool = True
            ) -> Iterator[tuple[str, bool]]:
    """(type name, nullable) of every type in a schema. NOT NULL counts as Delta's invariants
    count it: on struct fields, through structs only (not inside arrays or maps)."""
    nullable = nullable or not counted
    if isinstance(node, str):
        yield node, nullable
        return
    kind = node.get("type")
    if kind == "struct":
        for field in node["fields"]:
            yield from _fields(field["type"], field.get("nullable", True), counted=counted)
    elif kind == "array":
        yield from _fields(node["elementType"], counted=False)
    elif kind == "map":
        yield from _fields(node["keyType"], counted=False)
        yield from _fields(node["valueType"], counted=False)
    yield str(kind), nullable
