"""The Delta table features lakemirror knows, and the features a table's protocol implies.

The dbt macros' catalog (macros/delta/delta_feature_catalog.sql) is rendered from FEATURES by
lakemirror.generated_macros.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FeatureKind = Literal["reader-writer", "writer"]


@dataclass(frozen=True)
class TableFeature:
    """One table feature: what it blocks, the lowest protocol supporting it, how it is enabled."""

    name: str
    kind: FeatureKind
    min_reader_version: int
    min_writer_version: int
    property: str | None = None
    property_value: str | None = None
    droppable: bool = False


FEATURES: tuple[TableFeature, ...] = (
    TableFeature("appendOnly", "writer", 1, 2, "delta.appendOnly", "true"),
    TableFeature("invariants", "writer", 1, 2),
    TableFeature("checkConstraints", "writer", 1, 3, droppable=True),
    TableFeature("changeDataFeed", "writer", 1, 4, "delta.enableChangeDataFeed", "true"),
    TableFeature("generatedColumns", "writer", 1, 4),
    TableFeature("columnMapping", "reader-writer", 2, 5, "delta.columnMapping.mode", "name",
                 droppable=True),
    TableFeature("identityColumns", "writer", 1, 6),
    TableFeature("deletionVectors", "reader-writer", 3, 7, "delta.enableDeletionVectors", "true",
                 droppable=True),
    TableFeature("timestampNtz", "reader-writer", 3, 7),
    TableFeature("typeWidening", "reader-writer", 3, 7, "delta.enableTypeWidening", "true",
                 droppable=True),
    TableFeature("v2Checkpoint", "reader-writer", 3, 7, "delta.checkpointPolicy", "v2",
                 droppable=True),
    TableFeature("domainMetadata", "writer", 1, 7),
    TableFeature("rowTracking", "writer", 1, 7, "delta.enableRowTracking", "true"),
    TableFeature("vacuumProtocolCheck", "reader-writer", 3, 7, droppable=True),
    TableFeature("variantType", "reader-writer", 3, 7),
    TableFeature("inCommitTimestamp", "writer", 1, 7, "delta.enableInCommitTimestamps", "true",
                 droppable=True),
    TableFeature("clustering", "writer", 1, 7),
    TableFeature("collations-preview", "writer", 1, 7, droppable=True),
    TableFeature("checkpointProtection", "writer", 1, 7, droppable=True),
)

FEATURES_BY_NAME: dict[str, TableFeature] = {feature.name: feature for feature in FEATURES}

TABLE_FEATURES_READER_VERSION = 3
TABLE_FEATURES_WRITER_VERSION = 7


@dataclass(frozen=True)
class Protocol:
    """A table's protocol action: versions, and the listed features for reader 3 / writer 7."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] = ()
    writer_features: tuple[str, ...] = ()

    def features_to_read(self) -> frozenset[str]:
        """Features a client must support to read the table."""
        if self.min_reader_version >= TABLE_FEATURES_READER_VERSION:
            return frozenset(self.reader_features)
        return legacy_reader_features(self.min_reader_version)

    def features_to_write(self) -> frozenset[str]:
        """Features a client must support to write the table (reader-writer ones included)."""
        if self.min_writer_version >= TABLE_FEATURES_WRITER_VERSION:
            return frozenset(self.writer_features)
        return legacy_writer_features(self.min_writer_version)


def legacy_reader_features(version: int) -> frozenset[str]:
    """Features a legacy reader version implies (2 → columnMapping)."""
    return frozenset(feature.name for feature in FEATURES if feature.kind == "reader-writer"
                     and feature.min_reader_version <= min(version, 2))


def legacy_writer_features(version: int) -> frozenset[str]:
    """Features a legacy writer version implies, cumulatively (2 → appendOnly, invariants; ...)."""
    return frozenset(feature.name for feature in FEATURES
                     if feature.min_writer_version <= min(version, 6))
