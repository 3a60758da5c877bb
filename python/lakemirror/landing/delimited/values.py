"""Value conversion: a batch of strings typed by the contract's data types, column by column;
the first value a type rejects fails the table, naming its line."""

from __future__ import annotations

import binascii
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.delimited.format import ColumnDefinition, schema
from lakemirror.landing.delimited.lines import Done, line

_Converter = Callable[[pa.Array], pa.Array]
_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
_ZONE = "(Z|[+-][0-9]{2}(:?[0-9]{2})?)"
_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SEXTETS = np.zeros(256, np.uint32)
_SEXTETS[np.frombuffer(_BASE64_ALPHABET, np.uint8)] = np.arange(64)


def typed(strings: pa.RecordBatch, columns: list[ColumnDefinition], done: Done,
          errors: FileErrors) -> pa.RecordBatch:
    """The strings (the rows after `done`) typed as `columns` declare."""
    arrays = [_convert(strings, index, column, done, errors)
              for index, column in enumerate(columns)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema(columns))


def _convert(strings: pa.RecordBatch, index: int, column: ColumnDefinition, done: Done,
             errors: FileErrors) -> pa.Array:
    values = strings.column(index)
    null_value = errors.fmt.null_value
    if not column.nullable and values.null_count:
        row = pc.index(pc.is_null(values), True).as_py()
        raise errors.bad_value(column, line([strings.slice(0, row)], done, null_value), None)
    convert = _CONVERTERS[column.data_type]
    try:
        return convert(values)
    except pa.ArrowInvalid:
        row = _first_failure(values, convert)
        at = line([strings.slice(0, row)], done, null_value)
        raise errors.bad_value(column, at, values[row].as_py()) from None


def _first_failure(values: pa.Array, convert: _Converter) -> int:
    """Index of the first value `convert` rejects, given that it rejects the whole array."""
    good, bad = 0, len(values)  # a prefix of `good` values converts, of `bad` values fails
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            convert(values.slice(0, middle))
            good = middle
        except pa.ArrowInvalid:
            bad = middle
    return good


def _require(matches: pa.Array) -> None:
    """Reject the array unless every non-null value matched."""
    if not pc.all(matches, min_count=0).as_py():
        raise pa.ArrowInvalid("a value has the wrong form")


def _integers(arrow_type: pa.DataType) -> _Converter:
    def convert(values: pa.Array) -> pa.Array:
        integers = pc.cast(values, arrow_type)
        if pc.any(pc.starts_with(values, "0x", ignore_case=True)).as_py():
            raise pa.ArrowInvalid("pyarrow reads 0x1F as hexadecimal; the format does not")
        return integers
    return convert


def _cast(arrow_type: pa.DataType) -> _Converter:
    """A cast, where pyarrow's parsing is the format.

    Floats: 1.5, -2e3, nan, inf; dates: YYYY-MM-DD only; booleans: true, false, 1 or 0, any case.
    """
    def convert(values: pa.Array) -> pa.Array:
        return pc.cast(values, arrow_type)
    return convert


def _plain_timestamps(text: pa.Array) -> pa.Array | None:
    """The quick path: naive 'YYYY-MM-DD HH:MM:SS[.ffffff]' (or with T) only, else None.

    pyarrow also reads shorter forms (no seconds), which are under 19 characters long.
    """
    if (pc.min(pc.binary_length(text)).as_py() or 19) < 19:
        return None
    try:
        return pc.cast(text, pa.timestamp("us"))
    except pa.ArrowInvalid:
        return None


def _microseconds(values: pa.Array) -> pa.Array:
    """Cut fractions of a second after the sixth digit (SQL Server writes seven)."""
    return pc.replace_substring_regex(values, r"(\.[0-9]{6})[0-9]+", r"\1")


def _datetimes(values: pa.Array) -> pa.Array:
    """ISO 8601 date and time; with a zone offset (or Z) converted to UTC."""
    plain = _plain_timestamps(values)
    if plain is not None:
        return plain
    _require(pc.match_substring_regex(values, f"^{_DATE}[T ]{_TIME}{_ZONE}?$"))
    text = _microseconds(values)
    text = pc.if_else(pc.match_substring_regex(text, f"{_ZONE}$"), text,
                      pc.binary_join_element_wise(text, "Z", ""))
    return pc.cast(pc.cast(text, pa.timestamp("us", "UTC")), pa.timestamp("us"))


def _times(values: pa.Array) -> pa.Array:
    stamps = pc.binary_join_element_wise("1970-01-01 ", values, "")
    plain = _plain_timestamps(stamps)
    if plain is None:
        _require(pc.match_substring_regex(values, f"^{_TIME}$"))
        plain = pc.cast(_microseconds(stamps), pa.timestamp("us"))
    return pc.cast(plain, pa.time64("us"))


def _unchanged(values: pa.Array) -> pa.Array:
    return values


def _binaries(values: pa.Array) -> pa.Array:
    """Base64, or hexadecimal after 0x."""
    is_hex = pc.match_substring_regex(values, "^0[xX]")
    _require(pc.if_else(
        is_hex, pc.match_substring_regex(values, "^0[xX]([0-9A-Fa-f]{2})*$"),
        pc.match_substring_regex(
            values, "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")))
    is_hex = pc.fill_null(is_hex, False)
    text = pc.fill_null(values, "")
    decoded = pc.if_else(is_hex, _from_hex(pc.if_else(is_hex, text, "0x")),
                         _from_base64(pc.if_else(is_hex, "", text)))
    return pc.if_else(pc.is_null(values), pa.scalar(None, pa.binary()), decoded)


def _concatenated(values: pa.Array) -> tuple[np.ndarray, pa.Buffer]:
    """Each value's length, and all values as one buffer."""
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    whole = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
    return lengths, pc.binary_join(whole, "")[0].as_buffer()


def _binary_array(lengths: np.ndarray, data: object) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), len(lengths),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _from_hex(values: pa.Array) -> pa.Array:
    lengths, digits = _concatenated(pc.utf8_slice_codeunits(values, 2))
    return _binary_array(lengths // 2, binascii.a2b_hex(digits))


def _from_base64(values: pa.Array) -> pa.Array:
    """Decode valid padded base64, all values at once."""
    lengths, data = _concatenated(values)
    sextets = _SEXTETS[np.frombuffer(data, np.uint8)].reshape(-1, 4)
    words = (sextets[:, 0] << 18) | (sextets[:, 1] << 12) | (sextets[:, 2] << 6) | sextets[:, 3]
    octets = np.stack([words >> 16, words >> 8, words], axis=1).astype(np.uint8).ravel()
    padding = pc.count_substring(values, "=").to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths // 4 * 3)
    keep = np.ones(len(octets), bool)
    keep[ends[padding > 0] - 1] = False
    keep[ends[padding > 1] - 2] = False
    return _binary_array(lengths // 4 * 3 - padding, octets[keep])


_CONVERTERS: dict[str, _Converter] = {
    "Double": _cast(pa.float64()),
    "Single": _cast(pa.float32()),
    "Int16": _integers(pa.int16()),
    "Int32": _integers(pa.int32()),
    "Int64": _integers(pa.int64()),
    "DateTime": _datetimes,
    "IDate": _cast(pa.date32()),
    "ITime": _times,
    "String": _unchanged,
    "Boolean": _cast(pa.bool_()),
    "ByteArray": _binaries,
}
