"""Reader profiles (Delta clients and versions) and whether each can still read or write a table,
and the default reader set that decides whether new mirrored tables get deletion vectors.

OSS Delta, Databricks, Fabric, DuckDB and Trino profiles follow the vendors' feature tables
(each profile cites its page); delta-rs and Sail were measured: a table whose log lists one
feature, then a read and an append with the installed deltalake 1.6.6 and pysail 0.7.2 (and a
read with polars 2.1.0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from lakemirror.delta.features import (
    Protocol,
    legacy_reader_features,
    legacy_writer_features,
)
from lakemirror.errors import ConfigError

DELTA_VERSIONS = "https://docs.delta.io/3.2.1/versioning.html"
DATABRICKS_VERSIONS = "https://docs.databricks.com/delta/feature-compatibility.html"


@dataclass(frozen=True)
class ReaderProfile:
    """A client: the highest protocol versions it accepts and the features it reads / writes."""

    name: str
    description: str
    max_reader_version: int
    max_writer_version: int
    readable: frozenset[str]
    writable: frozenset[str]
    source: str
    change_feed: str = ""  # how it reads a table's change data feed; empty: it cannot


@dataclass(frozen=True)
class Verdict:
    """Why a profile cannot read or write a table (empty reasons: it can)."""

    profile: str
    cannot_read: tuple[str, ...]
    cannot_write: tuple[str, ...]


def judge(profile: ReaderProfile, protocol: Protocol) -> Verdict:
    """The features (or protocol versions) that stop `profile` reading and writing the table."""
    return Verdict(
        profile.name,
        _blockers(protocol.features_to_read(), profile.readable, "reader",
                  protocol.min_reader_version, profile.max_reader_version),
        _blockers(protocol.features_to_write(), profile.writable, "writer",
                  protocol.min_writer_version, profile.max_writer_version))


def _blockers(needed: frozenset[str], supported: frozenset[str], side: str, version: int,
              max_version: int) -> tuple[str, ...]:
    reasons = sorted(needed - supported)
    if version > max_version:
        reasons.append(f"protocol {side} version {version} (supports up to {max_version})")
    return tuple(reasons)


def _legacy(name: str, description: str, reader: int, writer: int, source: str, *,
            without: Iterable[str] = (), change_feed: str = "") -> ReaderProfile:
    """A client of the legacy versions: it knows what its versions imply, minus `without`."""
    return ReaderProfile(name, description, reader, writer, legacy_reader_features(reader),
                         legacy_writer_features(writer) - set(without), source, change_feed)


def _adds(base: ReaderProfile, name: str, description: str, source: str, *,
          read: Iterable[str] = (), write: Iterable[str] = ()) -> ReaderProfile:
    """A later release of `base` that reads and writes table features (reader 3 / writer 7)."""
    return replace(base, name=name, description=description, max_reader_version=3,
                   max_writer_version=7, readable=base.readable | set(read),
                   writable=base.writable | set(write), source=source)


# Delta Lake on Spark (2.0 and later) and Databricks read a table's change data feed.
SPARK_FEED = "table_changes('schema.table', start_version), or the readChangeFeed read option"

# OSS Delta Lake (Spark). Feature → first version from DELTA_VERSIONS: generated columns 1.0,
# column mapping 1.2, change data feed 2.0, deletion vectors + table features 2.3 (DV writes 2.4,
# release notes), timestampNtz 2.4, v2Checkpoint + domainMetadata 3.0, clustering 3.1, row
# tracking 3.2, identity columns + in-commit timestamps 3.3, typeWidening/variantType 4.0.
DELTA_1_0 = _legacy("delta-1.0", "Delta Lake 1.0 (Spark 3.1)", 1, 4, DELTA_VERSIONS,
                    without={"changeDataFeed"})
DELTA_1_2 = _legacy("delta-1.2", "Delta Lake 1.2 (Spark 3.2)", 2, 5, DELTA_VERSIONS,
                    without={"changeDataFeed"})
DELTA_2_0 = _legacy("delta-2.0", "Delta Lake 2.0 (Spark 3.2)", 2, 6, DELTA_VERSIONS,
                    without={"identityColumns"}, change_feed=SPARK_FEED)
DELTA_2_2 = replace(DELTA_2_0, name="delta-2.2", description="Delta Lake 2.2 (Spark 3.3)")
DELTA_2_3 = _adds(DELTA_2_2, "delta-2.3", "Delta Lake 2.3 (Spark 3.3): reads deletion vectors",
                  DELTA_VERSIONS, read={"deletionVectors"})
DELTA_2_4 = _adds(DELTA_2_3, "delta-2.4", "Delta Lake 2.4 (Spark 3.4)",
                  "https://github.com/delta-io/delta/releases/tag/v2.4.0",
                  read={"timestampNtz"}, write={"deletionVectors", "timestampNtz"})
DELTA_3_0 = _adds(DELTA_2_4, "delta-3.0", "Delta Lake 3.0 (Spark 3.5)", DELTA_VERSIONS,
                  read={"v2Checkpoint"}, write={"v2Checkpoint", "domainMetadata"})
DELTA_3_2 = _adds(DELTA_3_0, "delta-3.2", "Delta Lake 3.2 (Spark 3.5)",
                  "https://github.com/delta-io/delta/releases/tag/v3.2.0",
                  read={"vacuumProtocolCheck"},
                  write={"clustering", "rowTracking", "vacuumProtocolCheck"})
DELTA_4_0 = _adds(DELTA_3_2, "delta-4.0", "Delta Lake 4.0 (Spark 4.0)",
                  "https://github.com/delta-io/delta/releases/tag/v4.0.0",
                  read={"typeWidening", "variantType"},
                  write={"typeWidening", "variantType", "identityColumns", "inCommitTimestamp",
                         "checkpointProtection"})

# Databricks Runtime LTS, from DATABRICKS_VERSIONS ("requires Databricks Runtime version or
# later"): column mapping + identity 10.4, table features + deletion vectors 12.2, timestampNtz
# + liquid clustering + v2 checkpoints 13.3, row tracking 14.1, variant 15.3; type widening
# (GA name typeWidening), collations and checkpointProtection need 16.x.
DBR_10_4 = _legacy("dbr-10.4", "Databricks Runtime 10.4 LTS", 2, 6, DATABRICKS_VERSIONS,
                   change_feed=SPARK_FEED)
DBR_12_2 = _adds(DBR_10_4, "dbr-12.2", "Databricks Runtime 12.2 LTS", DATABRICKS_VERSIONS,
                 read={"deletionVectors"}, write={"deletionVectors"})
DBR_13_3 = _adds(DBR_12_2, "dbr-13.3", "Databricks Runtime 13.3 LTS", DATABRICKS_VERSIONS,
                 read={"timestampNtz", "v2Checkpoint"},
                 write={"timestampNtz", "v2Checkpoint", "clustering", "domainMetadata"})
DBR_14_3 = _adds(DBR_13_3, "dbr-14.3", "Databricks Runtime 14.3 LTS", DATABRICKS_VERSIONS,
                 read={"vacuumProtocolCheck"}, write={"rowTracking", "vacuumProtocolCheck"})
DBR_15_4 = _adds(DBR_14_3, "dbr-15.4", "Databricks Runtime 15.4 LTS", DATABRICKS_VERSIONS,
                 read={"variantType"}, write={"variantType", "inCommitTimestamp"})

# Measured (see the module docstring). delta-rs reads through DataFusion (QueryBuilder);
# its pyarrow readers (`to_pyarrow_table`, `to_pyarrow_dataset`, and tools built on them) are
# stricter: no columnMapping, deletionVectors or v2Checkpoint (DeltaProtocolError).
DELTA_RS = ReaderProfile(
    "delta-rs", "delta-rs (deltalake) 1.x through its SQL engine: QueryBuilder, "
    "lakemirror.read_table", 3, 7,
    frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint",
               "variantType"}),
    frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
               "generatedColumns", "columnMapping", "deletionVectors", "timestampNtz",
               "v2Checkpoint", "variantType"}),
    "measured with deltalake 1.6.6; https://delta-io.github.io/delta-rs/",
    "DeltaTable.load_cdf(starting_version=...)")
DELTA_RS_PYARROW = replace(
    DELTA_RS, name="delta-rs-pyarrow",
    description="delta-rs (deltalake) 1.x's pyarrow readers: DeltaTable.to_pyarrow_table, "
    "to_pyarrow_dataset, to_pandas, and tools built on them",
    readable=DELTA_RS.readable - {"columnMapping", "deletionVectors", "v2Checkpoint"})
# polars' own Delta reader (read_delta, scan_delta) applies deletion vectors itself and
# refuses column mapping and v2 checkpoints (measured as above with polars 2.1.0); polars
# writes (write_delta) through delta-rs.
POLARS = replace(
    DELTA_RS, name="polars", description="polars 2.1 and later: read_delta, scan_delta",
    readable=frozenset({"deletionVectors", "timestampNtz"}), change_feed="",
    source="measured with polars 2.1.0; https://docs.pola.rs/api/python/stable/reference/"
           "api/polars.scan_delta.html")

# Other readers, from their vendors' feature tables; only what they document reading counts.
FABRIC = replace(
    DELTA_3_2, name="fabric",
    description="Microsoft Fabric (Spark runtime 1.3, SQL analytics endpoint, Direct Lake)",
    readable=frozenset({"columnMapping", "deletionVectors"}),
    source="https://learn.microsoft.com/fabric/fundamentals/delta-lake-interoperability",
    change_feed="its Spark runtime: " + SPARK_FEED)
DUCKDB = ReaderProfile(
    "duckdb", "DuckDB's delta extension (delta_scan, on Delta Kernel): reads, blind inserts",
    3, 7,
    frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint"}),
    frozenset({"appendOnly", "invariants"}),
    "https://duckdb.org/docs/extensions/delta.html")
TRINO = ReaderProfile(
    "trino", "Trino's Delta Lake connector", 3, 7,
    frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint"}),
    frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
               "columnMapping", "timestampNtz"}),
    "https://trino.io/docs/current/connector/delta-lake.html#delta-lake-table-features",
    "the table function system.table_changes(schema, table, since_version)")
# Sail accepted reads of every feature above and refused appends to tables listing
# changeDataFeed, domainMetadata, rowTracking, clustering, collations-preview,
# checkpointProtection. An accepted append does not prove it honours a writer feature. It
# refuses every write to a table whose change data feed is on, has no table_changes, and
# ignores the readChangeFeed option (it returns the table's current rows).
SAIL_0_7 = ReaderProfile(
    "sail-0.7", "Sail 0.7 (pysail 0.7.2), lakemirror's embedded engine", 3, 7,
    frozenset({"columnMapping", "deletionVectors", "timestampNtz", "typeWidening",
               "v2Checkpoint", "vacuumProtocolCheck", "variantType"}),
    frozenset({"appendOnly", "invariants", "checkConstraints", "generatedColumns",
               "identityColumns", "columnMapping", "deletionVectors", "timestampNtz",
               "typeWidening", "v2Checkpoint", "vacuumProtocolCheck", "variantType",
               "inCommitTimestamp"}),
    "measured with pysail 0.7.2; https://docs.lakesail.com/sail/latest/")

PROFILES: dict[str, ReaderProfile] = {profile.name: profile for profile in (
    DELTA_1_0, DELTA_1_2, DELTA_2_0, DELTA_2_2, DELTA_2_3, DELTA_2_4, DELTA_3_0, DELTA_3_2,
    DELTA_4_0, DBR_10_4, DBR_12_2, DBR_13_3, DBR_14_3, DBR_15_4, FABRIC, DUCKDB, TRINO, DELTA_RS,
    DELTA_RS_PYARROW, POLARS, SAIL_0_7)}

# The readers of today that lakemirror's defaults must keep reading the tables: Delta Lake on
# Spark 3.x/4.x, Databricks Runtime 14.3 LTS and later, Fabric, DuckDB, Trino, delta-rs 1.x
# through its SQL engine. The dbt var / model config `lakemirror_readers`, and doctor's
# --readers (env LAKEMIRROR_READERS), replace it; macros/delta/delta_reader_profiles.sql is
# rendered from it (lakemirror.generated_macros).
DEFAULT_READERS = ("delta-3.0", "delta-4.0", "dbr-14.3", "fabric", "duckdb", "trino", "delta-rs")

DELETION_VECTORS = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))


def deletion_vector_blockers(profiles: Iterable[ReaderProfile]) -> tuple[str, ...]:
    """The profiles that cannot read a table with deletion vectors: while any is in the reader
    set, new mirrored tables stay copy-on-write."""
    return tuple(profile.name for profile in profiles
                 if judge(profile, DELETION_VECTORS).cannot_read)


def profiles_named(names: str) -> list[ReaderProfile]:
    """The profiles in a comma-separated list such as `delta-2.2,dbr-12.2,delta-rs`."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in PROFILES]
    if unknown or not wanted:
        raise ConfigError(f"unknown reader profile {', '.join(unknown) or '(none given)'}",
                          hint=f"use names from: {', '.join(PROFILES)}")
    return [PROFILES[name] for name in dict.fromkeys(wanted)]
