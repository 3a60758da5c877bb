"""How a change file's columns evolve a staging table's schema.

New columns are added (older rows read NULL); a column missing from a file stays and reads NULL
for that file's rows, unless it is declared non-nullable. A type may only widen, losslessly, as
Delta's schema evolution widens (byte → short → int → long, float → double, NULL type → any,
decimal(p,s) to the decimal holding both sides' digits before and after the point); any other
type change, and a name that differs from a known column only by case, is a `SchemaChangeError`
for the table. As in Delta's schema evolution, integers never become decimals or doubles on
their own. A date is not widened to a timestamp either: to a timestamp with a zone it is not
exact (whose midnight?), and to timestamp_ntz (exact: its midnight) it would give the mirrored
table the timestampNtz feature, which older Delta readers cannot read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from deltalake import Schema

from lakemirror.errors import ColumnError, SchemaChangeError
from lakemirror.landing.arrow_types import MAX_DIGITS

NULL_TYPE = "void"
WIDENING_CHAINS = (("byte", "short", "integer", "long"), ("float", "double"))
WIDENINGS = ("byte→short→integer→long, float→double, decimal to more digits before or after "
             "the point")


@dataclass(frozen=True)
class SchemaPlan:
    """How to stage one file: the staging schema after it, and whether staging must be rewritten
    because a column widened (Delta cannot widen a type in place without the typeWidening
    feature, which delta-rs does not write)."""

    schema: pa.Schema
    incoming: pa.Schema
    widened: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    @property
    def append_schema(self) -> pa.Schema:
        """The staging schema with the file's own Arrow types where they mean the same Delta
        type (so an append casts only what must change)."""
        return pa.schema([
            field.with_type(self.incoming.field(field.name).type)
            if field.name in self.incoming.names
            and delta_type_name(self.incoming.field(field.name).type)
            == delta_type_name(field.type) else field
            for field in self.schema])


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """The batch in `schema`: columns cast to their type, columns it lacks as NULL. Timestamps
    are cut to the unit Delta stores (microseconds), as a plain Delta write does."""
    arrays = []
    for field in schema:
        if field.name not in batch.schema.names:
            arrays.append(pa.nulls(len(batch), field.type))
            continue
        column = batch.column(field.name)
        arrays.append(column if column.type == field.type else
                      column.cast(field.type, safe=not pa.types.is_timestamp(field.type)))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def plan_schema(staged: pa.Schema | None, incoming: pa.Schema, *,
                table: str, file: str) -> SchemaPlan:
    """The plan for staging a file with schema `incoming` into a table with schema `staged`."""
    where = {"table": table, "file": file}
    _check_names(incoming, where)
    typed = pa.schema([field for field in incoming if delta_type_name(field.type) != NULL_TYPE])
    if staged is None:
        return SchemaPlan(typed, incoming)
    known = {field.name.lower(): field.name for field in staged}
    fields = {field.name: field for field in staged}
    widened = []
    for field in incoming:
        if field.name not in fields:
            if field.name.lower() in known:
                raise SchemaChangeError(
                    f"column {field.name!r} differs only by case from the staged column "
                    f"{known[field.name.lower()]!r}; Delta treats them as one column",
                    hint=f"publish it as {known[field.name.lower()]!r}, or recreate the "
                         "table folder", **where)
            continue
        old, new = delta_type_name(fields[field.name].type), delta_type_name(field.type)
        if old == new or new == NULL_TYPE:
            continue
        union = _union_type(fields[field.name].type, field.type, column=field.name, where=where)
        if delta_type_name(union) != old:
            fields[field.name] = fields[field.name].with_type(union)
            widened.append(field.name)
    for name, field in fields.items():
        if name not in incoming.names and not field.nullable:
            raise SchemaChangeError(
                f"column {name!r} is declared non-nullable but is missing from the file",
                hint="write the column into every file, or recreate the table folder", **where)
    added = [field for field in typed if field.name not in fields]
    return SchemaPlan(pa.schema([*fields.values(), *added]), incoming, tuple(widened),
                      tuple(field.name for field in added))


def delta_type_name(arrow_type: pa.DataType) -> str:
    """An Arrow type as Delta names it (`long`, `array<long>`), without nullability;
    nanosecond timestamps are stored as microseconds, so they compare equal."""
    delta_type = Schema.from_arrow(pa.schema([pa.field("c", arrow_type)])).fields[0].type
    return _describe(json.loads(delta_type.to_json())).replace("_nanos", "")


def _union_type(staged: pa.DataType, incoming: pa.DataType, *, column: str,
                where: dict[str, str]) -> pa.DataType:
    """The narrowest type that holds every value of both types exactly, when Delta widens both
    to it (a staged column of NULL type takes any type); else a SchemaChangeError."""
    old, new = delta_type_name(staged), delta_type_name(incoming)
    if old == NULL_TYPE or _widens(old, new):
        return incoming
    if _widens(new, old):
        return staged
    change = f"column {column!r} changed type from {old} to {new}"
    fix = "publish the earlier type, or recreate the table folder to start over with the new type"
    if not (pa.types.is_decimal(staged) and pa.types.is_decimal(incoming)):
        raise SchemaChangeError(f"{change}; only widening ({WIDENINGS}) is applied", hint=fix,
                                **where)
    scale = max(staged.scale, incoming.scale)
    digits = scale + max(staged.precision - staged.scale, incoming.precision - incoming.scale)
    if digits > MAX_DIGITS:
        raise SchemaChangeError(
            f"{change}; holding both takes decimal({digits},{scale}), more than the "
            f"{MAX_DIGITS} digits of Delta's widest decimal", hint=fix, **where)
    return pa.decimal128(digits, scale)


def _widens(narrow: str, wide: str) -> bool:
    return any(narrow in chain and wide in chain and chain.index(narrow) < chain.index(wide)
               for chain in WIDENING_CHAINS)


def _check_names(incoming: pa.Schema, where: dict[str, str]) -> None:
    seen: dict[str, str] = {}
    for name in incoming.names:
        if problem := _unlistable(name):
            raise ColumnError(f"column name {name!r} {problem}",
                              hint="rename the column in the source", **where)
        if name.lower() in seen:
            raise ColumnError(
                f"columns {seen[name.lower()]!r} and {name!r} differ only by case; Delta treats "
                "them as one column", hint="rename one of them in the source", **where)
        seen[name.lower()] = name


def _unlistable(name: str) -> str | None:
    """Why no engine can carry the column name, if so. Any other name works: generated code
    quotes it. A NUL ends the name in the Delta log (delta-rs cuts it there), and dbt-spark
    reads an empty name, or one starting with '#', as the end of a table's column list."""
    if "\x00" in name:
        return "holds a NUL character, which ends a name in the Delta log"
    if not name or name.startswith("#"):
        return ("is empty or starts with '#', which dbt-spark reads as the end of a table's "
                "column list")
    return None


def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if spec["type"] == "array":
        return f"array<{_describe(spec['elementType'])}>"
    if spec["type"] == "map":
        return f"map<{_describe(spec['keyType'])},{_describe(spec['valueType'])}>"
    fields = ",".join(f"{field['name']}:{_describe(field['type'])}" for field in spec["fields"])
    return f"struct<{fields}>"
