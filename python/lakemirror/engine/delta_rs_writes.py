"""The embedded engine's writes to a Delta table whose change data feed is on, done by
delta-rs: Sail (0.7.2) fails every commit to such a table, so it cannot write the feed.

lakemirror's macros write such a model's statements as requests (REQUEST_MARK, then JSON)
instead of SQL. The embedded engine's session (its owner's, made in engine.connect) runs a
request here: Sail computes the rows, as Arrow; delta-rs commits them, with the feed's change
files (a MERGE's deletes, inserts and update pre- and post-images); a metadata change is a
commit lakemirror writes itself (delta.metadata_commit). Every other statement goes to Sail.
A request is recognised only at the start of a statement (after dbt's query comment), where
no name or value from the landing zone can be: those are inside the request's JSON strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from lakemirror.environment import StorageSettings
from lakemirror.errors import DeltaCommitError

REQUEST_MARK = "-- lakemirror: write through delta-rs\n"
_QUERY_COMMENT = re.compile(r"\s*/\*.*?\*/\s*", re.DOTALL)  # dbt's, before every statement


def _result_schema() -> Any:
    """The schema of a request's result: no rows, made without a round trip to the engine."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([StructField("written", StringType())])


class DeltaRsWrites:
    """A session's `sql`, running the requests in its statements and passing on the rest.
    `storage`: the storage settings delta-rs reaches the warehouse with."""

    def __init__(self, session: Any, storage: StorageSettings) -> None:
        self.session = session
        self.engine_sql: Callable[..., Any] = session.sql
        self.storage = storage

    def __call__(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        request = written_request(query) if isinstance(query, str) else None
        if request is None:
            return self.engine_sql(query, *args, **kwargs)
        try:
            write(request, self.engine_sql, self.storage)
        except DeltaCommitError:
            raise
        except Exception as error:  # delta-rs's and Sail's own errors, named for the table
            raise DeltaCommitError(f"{request.get('table')}: {request.get('write')} through "
                                   f"delta-rs failed: {error}") from error
        return self.session.createDataFrame([], _result_schema())


def route_delta_rs_writes(session: Any, storage: StorageSettings) -> None:
    """Make `session` run lakemirror's write requests (once; a session kept for the next
    invocation takes that invocation's storage settings)."""
    if isinstance(session.sql, DeltaRsWrites):
        session.sql.storage = storage
        return
    session.sql = DeltaRsWrites(session, storage)


def written_request(statement: str) -> dict[str, Any] | None:
    """The request a statement carries, or None for SQL."""
    match = _QUERY_COMMENT.match(statement)
    body = statement[match.end():] if match else statement.lstrip()
    if not body.startswith(REQUEST_MARK):
        return None
    # The JSON value first; a query comment dbt appends (query-comment `append: true`) after.
    request, _ = json.JSONDecoder().raw_decode(body.removeprefix(REQUEST_MARK))
    return request if isinstance(request, dict) else None


def write(request: Mapping[str, Any], engine_sql: Callable[..., Any],
          storage: StorageSettings) -> None:
    """Do one request: 'merge' (a MERGE's source rows, condition and clauses), 'append' (rows),
    'metadata' (properties, features, columns added or made nullable)."""
    from lakemirror.delta.access import delta_table, write_delta
    from lakemirror.storage.location import parse_location

    where = parse_location(request["table"], storage=storage)
    kind = request["write"]
    if kind == "merge":
        rows = engine_sql(request["source"]).toArrow()
        merger = delta_table(where).merge(rows, request["on"], source_alias="source",
                                          target_alias="target")
        for clause in request["clauses"]:
            merger = _with_clause(merger, clause)
        merger.execute()
    elif kind == "append":
        write_delta(where, engine_sql(request["source"]).toArrow(), mode="append")
    elif kind == "metadata":
        _commit_metadata(where, request, engine_sql)
    else:
        raise DeltaCommitError(f"{request['table']}: unknown write request {kind!r}")


def _with_clause(merger: Any, clause: Mapping[str, Any]) -> Any:
    """The MERGE with one more clause: {'when': 'matched' | 'not_matched', 'then': 'delete' |
    'update' | 'insert', 'if': condition or None, 'set': {column: expression}}."""
    condition = clause.get("if")
    action = (clause["when"], clause["then"])
    if action == ("matched", "delete"):
        return merger.when_matched_delete(predicate=condition)
    if action == ("matched", "update"):
        return merger.when_matched_update(updates=clause["set"], predicate=condition)
    if action == ("not_matched", "insert"):
        return merger.when_not_matched_insert(updates=clause["set"], predicate=condition)
    raise DeltaCommitError(f"unknown MERGE clause {action!r}")


def _commit_metadata(where: Any, request: Mapping[str, Any],
                     engine_sql: Callable[..., Any]) -> None:
    """The metadata request as one commit; the columns of its `columns` query (typed, zero
    rows) are added, or made nullable when the table has them."""
    from deltalake import Schema

    from lakemirror.delta.metadata_commit import MetadataChange, commit_metadata

    added: tuple[Mapping[str, Any], ...] = ()
    if request.get("columns"):
        arrow_schema = engine_sql(request["columns"]).toArrow().schema
        added = tuple(json.loads(Schema.from_arrow(arrow_schema).to_json())["fields"])
    change = MetadataChange(set=request.get("set", {}), unset=request.get("unset", ()),
                            added=added, nullable=[field["name"] for field in added],
                            all_nullable=request.get("all_nullable", False))
    commit_metadata(where, change, operation=request.get("operation", "SET TBLPROPERTIES"))
