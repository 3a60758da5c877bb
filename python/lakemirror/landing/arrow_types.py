"""What staging stores for each Arrow type a landing file may hold, and the conversion to it.

Delta has fewer types than Arrow (docs/pages/landing-zone.md, "Parquet and Arrow types"):
every Arrow type maps to one Delta type holding the same values, inside structs, lists and maps
too. A column whose type has no Delta form, or a value the mapped type cannot hold, fails its
table with a ColumnError naming the column, the type, the file and the fix.

- unsigned integers → the next wider signed type (uint64 → decimal(20,0)); float16 → float.
- decimal32/64/256(p,s) → decimal(min(p,38),s); with p > 38 every value must fit 38 digits.
- timestamps → microseconds (finer digits dropped, so the instant rounds down); any zone → the
  same instant in UTC; naive ones stay naive (`timestamp_ntz`).
- time32/time64 → string `HH:MM:SS.ffffff` (Delta has no time of day; finer digits dropped).
- duration → bigint microseconds (finer digits dropped toward zero).
- date64 → date (the day the instant falls in); dictionaries → their values; large, view and
  fixed-size strings, binaries and lists → string, binary, array.
- extension arrow.uuid → its canonical string (`8-4-4-4-12` lowercase hex), arrow.json → its
  text, arrow.bool8 → boolean. Intervals, unions, run-end encoding and other extension types
  have no Delta form, nor (for delta-rs 1.6) a timestamp without zone inside a map.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.errors import ColumnError

MAX_DIGITS = 38  # Delta's (and Spark's) largest decimal precision
UUID, JSON, BOOL8 = "arrow.uuid", "arrow.json", "arrow.bool8"
_UNSIGNED = {8: pa.int16(), 16: pa.int32(), 32: pa.int64(), 64: pa.decimal128(20, 0)}
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_UUID_DIGITS = np.array([*range(0, 8), *range(9, 13), *range(14, 18), *range(19, 23),
                         *range(24, 36)])
_TO_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}
_LIST_KINDS = {pa.list_(pa.null()).id: pa.list_, pa.large_list(pa.null()).id: pa.large_list,
               pa.list_view(pa.null()).id: pa.list_view,
               pa.large_list_view(pa.null()).id: pa.large_list_view}
_FIX = ("publish the column as a type lakemirror maps (docs/pages/landing-zone.md, "
        "\"Parquet and Arrow types\")")


class _Unstageable(ValueError):
    """An Arrow type with no Delta form, or a value its Delta type cannot hold."""

    def __init__(self, problem: str, hint: str = _FIX) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint


def staged_field(field: pa.Field, *, table: str, file: str) -> pa.Field:
    """The column as staging stores it; a ColumnError when its type has no Delta form."""
    try:
        return field.with_type(delta_type(field.type))
    except _Unstageable as error:
        raise _column_error(field.name, field.type, error, table, file) from None


def to_delta(column: pa.Array, name: str, *, table: str, file: str) -> pa.Array:
    """The column's values in the type staging stores; a ColumnError naming the column when a
    value does not fit that type."""
    try:
        return _convert(column, delta_type(column.type))
    except _Unstageable as error:
        raise _column_error(name, column.type, error, table, file) from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise _column_error(name, column.type, _Unstageable(str(error)), table, file) from error


def delta_type(arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type staging stores for `arrow_type` (itself when Delta has it)."""
    if isinstance(arrow_type, pa.BaseExtensionType):
        return _extension_type(arrow_type)
    if pa.types.is_dictionary(arrow_type):
        return delta_type(arrow_type.value_type)
    if pa.types.is_unsigned_integer(arrow_type):
        return _UNSIGNED[arrow_type.bit_width]
    if pa.types.is_float16(arrow_type):
        return pa.float32()
    if pa.types.is_decimal(arrow_type):
        return _decimal_type(arrow_type)
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("us", tz=None if arrow_type.tz is None else "UTC")
    if pa.types.is_time(arrow_type) or _is_string(arrow_type):
        return pa.string()
    if pa.types.is_duration(arrow_type):
        return pa.int64()
    if pa.types.is_date(arrow_type):
        return pa.date32()
    if _is_binary(arrow_type):
        return pa.binary()
    if _is_list(arrow_type) or pa.types.is_map(arrow_type) or pa.types.is_struct(arrow_type):
        return _nested_delta_type(arrow_type)
    if (pa.types.is_null(arrow_type) or pa.types.is_boolean(arrow_type)
            or pa.types.is_signed_integer(arrow_type) or pa.types.is_floating(arrow_type)):
        return arrow_type
    raise _Unstageable(f"{arrow_type} has no Delta type")


def _nested_delta_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type staging stores for a list, map or struct: its members' staged types."""
    if _is_list(arrow_type):
        value = arrow_type.value_field
        return pa.list_(value.with_type(delta_type(value.type)))
    if pa.types.is_struct(arrow_type):
        return pa.struct([field.with_type(delta_type(field.type)) for field in arrow_type])
    key, item = arrow_type.key_field, arrow_type.item_field
    staged = pa.map_(key.with_type(delta_type(key.type)),
                     item.with_type(delta_type(item.type)), keys_sorted=arrow_type.keys_sorted)
    if _holds_naive_timestamp(staged):
        raise _Unstageable(
            "a timestamp without time zone inside a map cannot be staged (delta-rs 1.6 "
            "does not give the table the timestampNtz feature it needs)",
            "publish the timestamps inside the map with a time zone (UTC), or outside a map")
    return staged


def _holds_naive_timestamp(arrow_type: pa.DataType) -> bool:
    """Whether a staged type is or holds a timestamp without time zone."""
    if pa.types.is_timestamp(arrow_type):
        return arrow_type.tz is None
    return any(_holds_naive_timestamp(arrow_type.field(index).type)
               for index in range(arrow_type.num_fields))


def _extension_type(arrow_type: pa.BaseExtensionType) -> pa.DataType:
    if arrow_type.extension_name in (UUID, JSON):
        return pa.string()
    if arrow_type.extension_name == BOOL8:
        return pa.bool_()
    raise _Unstageable(f"the extension type {arrow_type.extension_name} has no Delta type",
                      f"publish its storage type ({arrow_type.storage_type}) instead")


def _decimal_type(arrow_type: pa.DataType) -> pa.DataType:
    precision, scale = min(arrow_type.precision, MAX_DIGITS), arrow_type.scale
    if not 0 <= scale <= precision:
        raise _Unstageable(
            f"{arrow_type} has no Delta type: a Delta decimal(p,s) has 0 ≤ s ≤ p ≤ {MAX_DIGITS}",
            f"publish it with a scale from 0 to {MAX_DIGITS}, or as a string")
    return pa.decimal128(precision, scale)


def _is_string(arrow_type: pa.DataType) -> bool:
    return _is(arrow_type, pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)


def _is_binary(arrow_type: pa.DataType) -> bool:
    return _is(arrow_type, pa.types.is_binary, pa.types.is_large_binary,
               pa.types.is_binary_view, pa.types.is_fixed_size_binary)


def _is_list(arrow_type: pa.DataType) -> bool:
    return _is(arrow_type, pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list,
               pa.types.is_list_view, pa.types.is_large_list_view)


def _is(arrow_type: pa.DataType, *kinds: Callable[[pa.DataType], bool]) -> bool:
    return any(kind(arrow_type) for kind in kinds)


def _convert(array: pa.Array, target: pa.DataType) -> pa.Array:
    """`array` in `target` (its delta_type), by Arrow's cast where that is the rule."""
    source = array.type
    if source == target:
        return array
    if _cast_is_the_rule(source):
        return pc.cast(array, target)
    if isinstance(source, pa.BaseExtensionType):
        return (_uuid_strings(array.storage) if source.extension_name == UUID
                else pc.cast(array.storage, target))
    if pa.types.is_dictionary(source):
        return _convert(array.dictionary_decode(), target)
    if pa.types.is_timestamp(source):
        return _timestamps(array, target)
    if pa.types.is_time(source):
        return pc.cast(pc.cast(array, pa.time64("us"), safe=False), pa.string())
    if pa.types.is_date64(source):
        return pc.cast(pc.cast(array, pa.timestamp("ms")), pa.date32())
    if pa.types.is_duration(source):
        return _microseconds(array)
    if pa.types.is_decimal(source):
        return _decimals(array, target)
    if pa.types.is_struct(source):
        children = [_convert(array.field(index), field.type) for index, field in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target),
                                          mask=array.is_null() if array.null_count else None)
    return _lists(array, target)


def _lists(array: pa.Array, target: pa.DataType) -> pa.Array:
    """A list or map with its values converted. They are converted whole, under the list's own
    buffers, before any list kernel runs: Arrow cannot flatten nested extension values under
    a NULL list."""
    source = array.type
    if pa.types.is_map(source):
        values = _convert(array.values, pa.struct([target.key_field, target.item_field]))
        return _with_values(array, target, values)
    values = _convert(array.values, target.value_type)
    value_field = source.value_field.with_type(values.type)
    kind = (pa.list_(value_field, source.list_size) if pa.types.is_fixed_size_list(source)
            else _LIST_KINDS[source.id](value_field))
    converted = _with_values(array, kind, values)
    if pa.types.is_list(source):
        return converted
    lengths = pc.cast(pc.fill_null(pc.list_value_length(converted), 0), pa.int32())
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum_checked(lengths)])
    return pa.ListArray.from_arrays(offsets, pc.list_flatten(converted), type=target,
                                    mask=array.is_null() if array.null_count else None)


def _with_values(array: pa.Array, arrow_type: pa.DataType, values: pa.Array) -> pa.Array:
    """`array` (a list or map) of type `arrow_type`, holding `values` instead of its own."""
    return pa.Array.from_buffers(arrow_type, len(array), array.buffers()[:arrow_type.num_buffers],
                                 offset=array.offset, children=[values])


def _cast_is_the_rule(source: pa.DataType) -> bool:
    """Whether Arrow's own cast to the delta_type gives exactly the documented values."""
    if isinstance(source, pa.BaseExtensionType):
        return False
    if pa.types.is_dictionary(source):
        return _cast_is_the_rule(source.value_type)
    if pa.types.is_timestamp(source):
        return str(source.unit) != "ns"  # seconds and milliseconds widen exactly (or fail)
    if pa.types.is_decimal(source):
        return int(source.precision) <= MAX_DIGITS
    if pa.types.is_time(source) or pa.types.is_duration(source) or pa.types.is_date64(source):
        return False
    if pa.types.is_map(source):
        return _cast_is_the_rule(source.key_type) and _cast_is_the_rule(source.item_type)
    if pa.types.is_struct(source):
        return all(_cast_is_the_rule(field.type) for field in source)
    if _is(source, pa.types.is_list_view, pa.types.is_large_list_view):
        return False  # Arrow's cast of a sliced list view is wrong (pyarrow 26)
    if _is_list(source):
        return _cast_is_the_rule(source.value_type)
    return True


def _timestamps(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Nanoseconds rounded down to the microsecond (toward the earlier instant), counted in
    microseconds so that the earliest nanosecond timestamps do not overflow."""
    nanos = pc.cast(array, pa.int64())
    toward_zero = pc.divide(nanos, 1_000)
    above = pc.cast(pc.greater(pc.multiply(toward_zero, 1_000), nanos), pa.int64())
    return pc.cast(pc.subtract(toward_zero, above), target)


def _microseconds(array: pa.Array) -> pa.Array:
    """A duration as whole microseconds: coarser units multiplied (an overflow fails),
    nanoseconds divided, truncated toward zero."""
    counts = pc.cast(array, pa.int64())
    if array.type.unit == "ns":
        return pc.divide(counts, 1_000)
    try:
        return pc.multiply_checked(counts, _TO_MICROS[array.type.unit])
    except pa.ArrowInvalid:
        too_long = pc.greater(pc.abs(counts), (2**63 - 1) // _TO_MICROS[array.type.unit])
        value = counts[pc.index(too_long, True).as_py()].as_py()
        raise _Unstageable(
            f"the duration {value} {array.type.unit} is more microseconds than a bigint holds",
            "publish durations of at most ±292,000 years") from None


def _decimals(array: pa.Array, target: pa.DataType) -> pa.Array:
    """A decimal wider than 38 digits, once every value is known to fit in 38."""
    limit = pa.scalar(Decimal(10) ** (MAX_DIGITS - target.scale), array.type)
    too_long = pc.fill_null(pc.greater_equal(pc.abs(array), limit), False)
    if pc.any(too_long).as_py():
        value = array[pc.index(too_long, True).as_py()].as_py()
        raise _Unstageable(
            f"the value {value} has more than {MAX_DIGITS} digits, the most a Delta decimal holds",
            f"publish values of at most {MAX_DIGITS} digits, at most "
            f"{MAX_DIGITS - target.scale} of them before the point, or publish it as a string")
    return pc.cast(array, target)


def _uuid_strings(storage: pa.Array) -> pa.Array:
    """16-byte UUIDs as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase."""
    count = len(storage)
    raw = np.frombuffer(storage.buffers()[1], np.uint8, count * 16, storage.offset * 16) \
        if count else np.empty(0, np.uint8)
    raw = raw.reshape(count, 16)
    text = np.full((count, 36), ord("-"), np.uint8)
    text[:, _UUID_DIGITS[0::2]] = _HEX[raw >> 4]
    text[:, _UUID_DIGITS[1::2]] = _HEX[raw & 15]
    offsets = pa.array(np.arange(0, 36 * (count + 1), 36, dtype=np.int32))
    strings = pa.StringArray.from_buffers(count, offsets.buffers()[1], pa.py_buffer(text))
    return pc.if_else(storage.is_null(), pa.scalar(None, pa.string()), strings)


def _column_error(name: str, arrow_type: pa.DataType, error: _Unstageable, table: str,
                  file: str) -> ColumnError:
    return ColumnError(f"column {name!r} of type {arrow_type} cannot be staged: {error.problem}",
                       table=table, file=file, hint=error.hint)
