"""Delimited-text landing files: every format option, data type and error, and a round trip."""

import codecs
import datetime as dt
import gzip
import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any
from unittest import mock

import cramjam
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakemirror.errors import (
    ColumnError,
    LandingZoneError,
    MetadataError,
    RowMarkerError,
    UnreadableFileError,
    ValueParseError,
)
from lakemirror.landing import delimited, discover_tables
from lakemirror.landing.delimited import compression, lines, splitter, standins
from lakemirror.landing.delimited import (
    ColumnDefinition,
    DelimitedFormat,
    open_delimited,
    read_delimited,
)
from lakemirror.staging import Warehouse, ingest_table

TABLE = "dbo.t"


def write(folder: Path, content, name="data.csv", encoding="utf-8") -> Path:
    path = folder / name
    path.write_bytes(content.encode(encoding) if isinstance(content, str) else content)
    return path


def read(path: Path, fmt=DelimitedFormat(), columns=None) -> dict:
    return read_delimited(path, fmt, columns, table=TABLE).to_pydict()


def failure(path: Path, fmt=DelimitedFormat(), columns=None, kind=UnreadableFileError) -> str:
    with pytest.raises(LandingZoneError) as raised:
        read_delimited(path, fmt, columns, table=TABLE)
    error = raised.value
    assert isinstance(error, kind)
    assert error.table == TABLE and error.file == str(path) and error.hint
    return str(error)


def strings(*names: str) -> list[ColumnDefinition]:
    return [ColumnDefinition(name, "String") for name in names]


# -- separators, quoting and escaping -----------------------------------------------------------

@pytest.mark.parametrize("separator", [",", ";", "|", "\t"])
def test_column_separators(tmp_path, separator):
    path = write(tmp_path, f'a{separator}b\r\n1{separator}"x{separator}y"\r\n2{separator}z\r\n')
    fmt = DelimitedFormat(column_separator=separator)
    assert read(path, fmt) == {"a": ["1", "2"], "b": [f"x{separator}y", "z"]}


@pytest.mark.parametrize("row_separator", ["\r\n", "\n", "\r"])
def test_row_separators_with_every_newline_inside_quotes(tmp_path, row_separator):
    rows = ["a,b", '1,"x\r\ny\nz\rw"', '"2",""', "3,"]
    path = write(tmp_path, row_separator.join(rows) + row_separator)
    fmt = DelimitedFormat(row_separator=row_separator)
    assert read(path, fmt) == {"a": ["1", "2", "3"], "b": ["x\r\ny\nz\rw", "", None]}


@pytest.mark.parametrize(("row_separator", "content", "values"), [
    ("\r\n", "a,b\r\n1,x\ny\r\n2,p\rq\r\n", ["x\ny", "p\rq"]),
    ("\r\n", "a,b\r\n1,2\r", ["2\r"]),
    ("\n", "a,b\n1,x\r\n2,p\rq\n", ["x\r", "p\rq"]),
    ("\r", "a,b\r1,x\ny\r2,\nq\r", ["x\ny", "\nq"]),
])
def test_only_the_row_separator_ends_a_row(tmp_path, row_separator, content, values):
    path = write(tmp_path, content)
    assert read(path, DelimitedFormat(row_separator=row_separator))["b"] == values


@pytest.mark.parametrize(("row_separator", "content"), [
    ("\r\n", "a,b\n1,2\n"), ("\r\n", "\na,b\r\n1,2\r\n"), ("\n", "a,b\r\n1,2\r\n"),
    ("\r", "a,b\n1,2\n"), ("\n", "a,b\r1,2\r"),
])
def test_file_with_other_row_separator_is_rejected(tmp_path, row_separator, content):
    path = write(tmp_path, content)
    assert "RowSeparator" in failure(path, DelimitedFormat(row_separator=row_separator))


@pytest.mark.parametrize(("quote", "escape", "content", "values"), [
    ('"', '"', '"a""b",c', ['a"b', "c"]),
    ('"', "\\", '"a\\"b\\\\",c\\,d', ['a"b\\', "c,d"]),
    ('"', "/", '"a/"b//","c/d"', ['a"b/', "cd"]),
    ('"', "", '"a\\b","c\'d"', ["a\\b", "c'd"]),
    ('"', "", '"a""b",""""', ['a"b', '"']),
    ('"', "\\", '"a""b\\"c",d', ['a"b"c', "d"]),
    ("'", "\\", "'it\\'s','a,b'", ["it's", "a,b"]),
    ("'", '"', "'it\"'s','\"\"'", ["it's", '"']),
    ("'", "", "'a\"b',\"c\"", ['a"b', '"c"']),
    ("", "\\", "a\\,b,\"c\\\\", ["a,b", '"c\\']),
    ("", "/", "a/,b,c//d", ["a,b", "c/d"]),
    ("", '"', 'a",b,""', ["a,b", '"']),
    ("", "", "'a',\"b\\", ["'a'", '"b\\']),
])
def test_quote_and_escape_characters(tmp_path, quote, escape, content, values):
    path = write(tmp_path, f"x,y\r\n{content}\r\n")
    fmt = DelimitedFormat(quote_character=quote, escape_character=escape)
    table = read(path, fmt)
    assert [table["x"][0], table["y"][0]] == values


def test_escaped_line_breaks_in_unquoted_fields(tmp_path):
    path = write(tmp_path, "a,b\r\nx\\\ry\\\r\n,\\\n\r\n")
    assert read(path, DelimitedFormat(quote_character="")) == {"a": ["x\ry\r\n"], "b": ["\n"]}


# -- NullValue --------------------------------------------------------------------------------

def test_empty_unquoted_field_is_null_without_null_value(tmp_path):
    path = write(tmp_path, 'a,b\r\n,""\r\n"",\r\n')
    assert read(path) == {"a": [None, ""], "b": ["", None]}


def test_null_value_unquoted_only(tmp_path):
    path = write(tmp_path, 'a,b\r\nNULL,"NULL"\r\n,NULLS\r\n')
    assert read(path, DelimitedFormat(null_value="NULL")) == {
        "a": [None, ""], "b": ["NULL", "NULLS"]}


@pytest.mark.parametrize(("content", "values"), [
    ("\\N\r\nN\r\n\\\\N\r\n", [None, "N", "\\N"]), ("N\r\n", ["N"]),
])
def test_null_value_with_escape_character_is_compared_as_written(tmp_path, content, values):
    path = write(tmp_path, "a\r\n" + content)
    assert read(path, DelimitedFormat(null_value="\\N"))["a"] == values


def test_escaped_null_value_is_a_string(tmp_path):
    path = write(tmp_path, "a\r\nNULL\r\nN\\ULL\r\n\\NULL\r\n")
    fmt = DelimitedFormat(quote_character="", null_value="NULL")
    assert read(path, fmt)["a"] == [None, "NULL", "NULL"]


def test_null_value_holding_the_row_separators_other_character(tmp_path):
    fmt = DelimitedFormat(null_value="N\nA")
    path = write(tmp_path, "a,b\r\nN\nA,x\r\n")
    assert read(path, fmt) == {"a": [None], "b": ["x"]}
    path = write(tmp_path, "a,b\r\nN\nA,x\r\nbad,y\r\n")
    assert "line 4, column 'a'" in failure(path, fmt, [ColumnDefinition("a", "Int32"),
                                                       ColumnDefinition("b", "String")],
                                           kind=ValueParseError)


# -- encodings and compression --------------------------------------------------------------------

@pytest.mark.parametrize(("encoding", "codec", "value"), [
    ("utf-8", "utf-8", "é€𝄞"), ("UTF-8", "utf-8-sig", "é€"), ("utf-16", "utf-16", "é€𝄞"),
    ("ascii", "ascii", "e~"), ("windows-1252", "cp1252", "é€"), ("latin-1", "latin-1", "éÿ"),
    ("ISO-8859-1", "latin-1", "é"),
])
def test_encodings(tmp_path, encoding, codec, value):
    path = write(tmp_path, f'name,value\r\nplain,"{value}"\r\n', encoding=codec)
    assert read(path, DelimitedFormat(encoding=encoding)) == {"name": ["plain"], "value": [value]}


def test_utf8_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    assert read(write(tmp_path, codecs.BOM_UTF8 + b"a\r\n1\r\n")) == {"a": ["1"]}
    assert read(write(tmp_path, codecs.BOM_UTF8)) == {}


@pytest.mark.parametrize(("encoding", "content", "line"), [
    ("utf-8", b'a\r\n"x\r\ny"\r\n\xff\r\n', 4),
    ("ascii", "a\r\né\r\n".encode("latin-1"), 2),
    ("windows-1252", b"a\r\n\x81\r\n", 2),
    ("utf-16", "a\r\n".encode("utf-16") + b"\x00", 2),
])
def test_bytes_outside_the_encoding(tmp_path, encoding, content, line):
    message = failure(write(tmp_path, content), DelimitedFormat(encoding=encoding))
    assert f"line {line}:" in message and f"not valid {encoding}" in message


def test_unknown_encoding(tmp_path):
    path = write(tmp_path, "a\r\n")
    message = failure(path, DelimitedFormat(encoding="ebcdic-9"), kind=MetadataError)
    assert "'ebcdic-9'" in message


CONTENT = b'id,text\r\n1,"a\r\nb"\r\n2,c\r\n'


@pytest.mark.parametrize(("suffix", "compress"), [
    (".gz", gzip.compress),
    (".zst", lambda data: pa.Codec("zstd").compress(data, asbytes=True)),
    (".snappy", lambda data: bytes(cramjam.snappy.compress(data))),
])
def test_compression(tmp_path, suffix, compress):
    path = write(tmp_path, compress(CONTENT), name=f"data.csv{suffix}")
    assert read(path) == {"id": ["1", "2"], "text": ["a\r\nb", "c"]}


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".snappy"])
def test_corrupt_compressed_file(tmp_path, suffix):
    assert "decompress" in failure(write(tmp_path, CONTENT, name=f"data.csv{suffix}"))


def test_raw_snappy_is_not_the_framing_format(tmp_path):
    path = write(tmp_path, bytes(cramjam.snappy.compress_raw(CONTENT)), name="data.csv.snappy")
    assert "decompress" in failure(path)


# -- empty files and the header ---------------------------------------------------------------

def test_zero_byte_file_without_schema_is_an_empty_table(tmp_path):
    table = read_delimited(write(tmp_path, b""), DelimitedFormat(), None, table=TABLE)
    assert table.num_columns == 0 and table.num_rows == 0


def test_zero_byte_file_with_schema_has_the_declared_columns(tmp_path):
    columns = [ColumnDefinition("b", "Int32", nullable=False), ColumnDefinition("a", "IDate")]
    table = read_delimited(write(tmp_path, b""), DelimitedFormat(), columns, table=TABLE)
    assert table.schema == pa.schema([pa.field("b", pa.int32(), nullable=False),
                                      pa.field("a", pa.date32())])
    assert table.num_rows == 0


@pytest.mark.parametrize(("content", "row_separator"), [
    ("a,b", "\r\n"), ("a,b\r\n", "\r\n"), ("a,b\n", "\n"), ("a,b\r", "\r"),
])
def test_header_only_file(tmp_path, content, row_separator):
    path = write(tmp_path, content)
    fmt = DelimitedFormat(row_separator=row_separator)
    columns = [ColumnDefinition("a", "Int64"), ColumnDefinition("b", "Boolean")]
    table = read_delimited(path, fmt, columns, table=TABLE)
    assert table.schema.types == [pa.int64(), pa.bool_()] and table.num_rows == 0
    assert read(path, fmt) == {"a": [], "b": []}


def test_header_names_are_kept_as_written(tmp_path):
    path = write(tmp_path, '" a ","b,c","É"\r\n1,2,3\r\n')
    assert list(read(path)) == [" a ", "b,c", "É"]


@pytest.mark.parametrize(("content", "words", "kind"), [
    ("a,b,a\r\n1,2,3\r\n", "['a'] more than once", ColumnError),
    ("a,,b\r\n1,2,3\r\n", "empty column name", ColumnError),
    ("\r\n1\r\n", "header row, is empty", UnreadableFileError),
    ('a,"b\r\nc"\r\n1,2\r\n', "header row (line 1)", UnreadableFileError),
    ('a,"b\nc"\r\n1,2\r\n', "line break", UnreadableFileError),
])
def test_bad_header(tmp_path, content, words, kind):
    assert words in failure(write(tmp_path, content), kind=kind)


def test_columns_must_match_the_schema_definition(tmp_path):
    path = write(tmp_path, "a,b,c\r\n1,2,3\r\n")
    message = failure(path, columns=strings("a", "b", "d"), kind=ColumnError)
    assert "missing ['d']" in message and "not declared ['c']" in message


@pytest.mark.parametrize(("columns", "words"), [
    ([ColumnDefinition("a", "Decimal")], "unknown type 'Decimal'"),
    (strings("a", "a"), "['a'] more than once"),
    (strings("a", "__rowMarker__"), "not a data column"),
])
def test_bad_schema_definition(tmp_path, columns, words):
    assert words in failure(write(tmp_path, "a\r\n1\r\n"), columns=columns, kind=MetadataError)


# -- __rowMarker__ -------------------------------------------------------------------------------

def test_row_marker_is_int32(tmp_path):
    path = write(tmp_path, "id,__rowMarker__\r\n1,0\r\n2,4\r\n")
    table = read_delimited(path, DelimitedFormat(), None, table=TABLE)
    assert table.schema == pa.schema([pa.field("id", pa.string()),
                                      pa.field("__rowMarker__", pa.int32(), nullable=False)])
    assert table.to_pydict() == {"id": ["1", "2"], "__rowMarker__": [0, 4]}
    typed = read(path, columns=[ColumnDefinition("id", "Int16")])
    assert typed == {"id": [1, 2], "__rowMarker__": [0, 4]}


@pytest.mark.parametrize(("value", "words"), [("1.0", "'1.0' is not a valid Int32"),
                                               ("", "NULL")])
def test_row_marker_must_be_an_integer(tmp_path, value, words):
    message = failure(write(tmp_path, f"id,__rowMarker__\r\n1,0\r\n2,{value}\r\n"),
                      kind=RowMarkerError)
    assert "line 3, column '__rowMarker__'" in message and words in message


def test_row_marker_must_be_last(tmp_path):
    assert "last column" in failure(write(tmp_path, "__rowMarker__,id\r\n0,1\r\n"),
                                    kind=RowMarkerError)


# -- data types ---------------------------------------------------------------------------------

UTC = dt.timezone.utc
TYPES = [
    ("Double", [("3.5", 3.5), ("-2e3", -2000.0), ("inf", math.inf), ("1E-2", 0.01)], "1.2.3"),
    ("Single", [("0.5", 0.5), ("1e3", 1000.0), ("-0", 0.0)], "one"),
    ("Int16", [("-32768", -32768), ("32767", 32767), ("007", 7)], "32768"),
    ("Int32", [("-1", -1), ("2147483647", 2147483647)], "0x1F"),
    ("Int64", [("9223372036854775807", 2**63 - 1), ("-5", -5)], "1.0"),
    ("DateTime", [
        ("2025-06-17 14:30:00", dt.datetime(2025, 6, 17, 14, 30)),
        ("2025-06-17T14:30:00.123456", dt.datetime(2025, 6, 17, 14, 30, 0, 123456)),
        ("2025-06-17 14:30:00.1234567", dt.datetime(2025, 6, 17, 14, 30, 0, 123456)),
        ("9999-12-31 23:59:59.999999", dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
        ("2025-06-17 14:30:00Z", dt.datetime(2025, 6, 17, 14, 30)),
        ("2025-06-17 14:30:00+02:00", dt.datetime(2025, 6, 17, 12, 30)),
        ("2025-06-17T14:30:00.5-0530", dt.datetime(2025, 6, 17, 20, 0, 0, 500000)),
    ], "2025-02-30 00:00:00"),
    ("IDate", [("2025-06-17", dt.date(2025, 6, 17)), ("0001-01-01", dt.date(1, 1, 1))],
     "2025-6-17"),
    ("ITime", [("14:30:00", dt.time(14, 30)), ("00:00:00.000001", dt.time(0, 0, 0, 1)),
               ("23:59:59.9999999", dt.time(23, 59, 59, 999999))], "24:00:00"),
    ("String", [(" a ", " a "), ("ü", "ü")], None),
    ("Boolean", [("true", True), ("FALSE", False), ("True", True), ("1", True), ("0", False)],
     "yes"),
    ("ByteArray", [("AQID", b"\x01\x02\x03"), ("AQ==", b"\x01"), ("AQI=", b"\x01\x02"),
                   ('""', b""), ("0x0a0B", b"\n\x0b"), ("0X", b"")], "0x123"),
]


@pytest.mark.parametrize(("data_type", "accepted", "rejected"), TYPES)
def test_data_type_accepted_forms(tmp_path, data_type, accepted, rejected):
    content = "v\r\n" + "".join(f"{text}\r\n" for text, _ in accepted) + "\r\n"
    table = read_delimited(write(tmp_path, content), DelimitedFormat(),
                           [ColumnDefinition("v", data_type)], table=TABLE)
    assert table.schema.types == [delimited.DATA_TYPES[data_type]]
    assert table.column("v").to_pylist() == [value for _, value in accepted] + [None]


@pytest.mark.parametrize(("data_type", "accepted", "rejected"),
                         [case for case in TYPES if case[2] is not None])
def test_data_type_rejected_value_names_file_line_and_column(tmp_path, data_type, accepted,
                                                             rejected):
    good = accepted[0][0]
    path = write(tmp_path, f'k,v\r\n1,{good}\r\n2,"{good}"\r\n3,{rejected}\r\n')
    message = failure(path, columns=[ColumnDefinition("k", "Int32"),
                                     ColumnDefinition("v", data_type)], kind=ValueParseError)
    assert str(path) in message
    assert f"line 4, column 'v': {rejected!r} is not a valid {data_type}" in message


@pytest.mark.parametrize(("data_type", "rejected"), [
    ("Double", " 1"), ("Int32", "+1"), ("Int32", "-0x1"), ("DateTime", "2025-06-17"),
    ("DateTime", "2025-06-17 14:30"), ("DateTime", "17/06/2025 14:30:00"),
    ("DateTime", "2025-06-17 14:30:00 +01:00"), ("IDate", "2025-06-17 00:00:00"),
    ("ITime", "14:30"), ("ITime", "2025-06-17 14:30:00"), ("Boolean", "t"), ("ByteArray", "AQI"),
    ("ByteArray", "0x0g"), ("ByteArray", "AQ=A"), ("ByteArray", "A==="),
])
def test_more_rejected_values(tmp_path, data_type, rejected):
    message = failure(write(tmp_path, f"v\r\n{rejected}\r\n"),
                      columns=[ColumnDefinition("v", data_type)], kind=ValueParseError)
    assert f"line 2, column 'v': {rejected!r} is not a valid {data_type}" in message


def test_mixed_byte_array_forms_and_nulls(tmp_path):
    path = write(tmp_path, 'v\r\n0xff\r\n\r\nAAEC\r\n""\r\n0x\r\n/w==\r\n')
    assert read(path, columns=[ColumnDefinition("v", "ByteArray")])["v"] == [
        b"\xff", None, b"\x00\x01\x02", b"", b"", b"\xff"]


@pytest.mark.parametrize("data_type", list(delimited.DATA_TYPES))
def test_column_of_nulls_only(tmp_path, data_type):
    table = read_delimited(write(tmp_path, "v\r\n\r\n\r\n"), DelimitedFormat(),
                           [ColumnDefinition("v", data_type)], table=TABLE)
    assert table.column("v").to_pylist() == [None, None]


def test_long_value_is_truncated_in_the_message(tmp_path):
    message = failure(write(tmp_path, "v\r\n" + "9" * 80 + "\r\n"),
                      columns=[ColumnDefinition("v", "Int64")], kind=ValueParseError)
    assert repr("9" * 50 + "...") in message and "9" * 51 not in message


def test_null_in_non_nullable_column(tmp_path):
    path = write(tmp_path, 'a,b\r\n1,"x\ny"\r\n2,\r\n')
    message = failure(path, columns=[ColumnDefinition("a", "Int32"),
                                     ColumnDefinition("b", "String", nullable=False)],
                      kind=ValueParseError)
    assert "line 4, column 'b': NULL" in message


def test_line_numbers_count_line_breaks_inside_quoted_values(tmp_path):
    path = write(tmp_path, 'a,b\r\n1,"x\r\ny"\r\n2,"p\nq\rr"\r\n"3","\r\n"\r\nbad,z\r\n')
    message = failure(path, columns=[ColumnDefinition("a", "Int32"),
                                     ColumnDefinition("b", "String")], kind=ValueParseError)
    assert "line 9, column 'a'" in message


def test_line_numbers_across_many_blocks(tmp_path):
    rows = "".join(f'{i},"{i}\n{i}"\r\n' for i in range(2000))
    path = write(tmp_path, f"a,b\r\n{rows}x,y\r\n")
    with mock.patch.object(splitter, "BLOCK_SIZE", 1024):
        message = failure(path, columns=[ColumnDefinition("a", "Int64"),
                                         ColumnDefinition("b", "String")], kind=ValueParseError)
    assert "line 4002, column 'a': 'x'" in message


# -- malformed rows -----------------------------------------------------------------------------

@pytest.mark.parametrize(("row", "fields"), [("2,x,y", 3), ("2", 1), ("", 1), ("\r\n", 1)])
def test_wrong_field_count(tmp_path, row, fields):
    path = write(tmp_path, f'a,b\r\n1,"p\r\nq"\r\n{row}\r\n3,z\r\n')
    message = failure(path)
    assert f"line 4: 2 fields expected, as in the header, but {fields} found" in message


@pytest.mark.parametrize(("null_value", "empty"), [(None, None), ("NULL", "")])
def test_empty_line_is_a_row_of_one_empty_field(tmp_path, null_value, empty):
    path = write(tmp_path, 'a\r\n1\r\n\r\n"\r\n\r\n"\r\n\r\n')
    assert read(path, DelimitedFormat(null_value=null_value)) == {
        "a": ["1", empty, "\r\n\r\n", empty]}


def test_empty_line_after_an_escaped_row_separator(tmp_path):
    path = write(tmp_path, "a,b\n1,x\\\n\n\n2,y\n")
    message = failure(path, DelimitedFormat(row_separator="\n", quote_character=""))
    assert "line 4: 2 fields expected, as in the header, but 1 found" in message


def test_empty_fields_are_not_empty_lines(tmp_path):
    path = write(tmp_path, 'a,b\r\n,\r\n"",""\r\n1,"\r\n\r\n\r\n"\r\n')
    assert read(path) == {"a": [None, "", "1"], "b": [None, "", "\r\n\r\n\r\n"]}


@pytest.mark.parametrize("content", ['a,b\r\n1,x\r\n2,"y\r\n', 'a,b\r\n1,x\r\n"2,y',
                                     'a,b\r\n1,x\r\n2,"y\\"'])
def test_unclosed_quote(tmp_path, content):
    assert "line 3: a quoted field is still open" in failure(write(tmp_path, content))


def test_file_ending_with_an_escape_character(tmp_path):
    assert "escape character" in failure(write(tmp_path, "a,b\r\n1,x\\"))


def test_row_longer_than_a_block(tmp_path):
    value = "v" * 5000 + "\r\n" + "w" * 5000
    path = write(tmp_path, f'a,b\r\n1,"{value}"\r\n2,x\r\n')
    with mock.patch.object(splitter, "BLOCK_SIZE", 1024):
        assert read(path) == {"a": ["1", "2"], "b": [value, "x"]}


def test_quoted_crlf_across_a_block_boundary(tmp_path):
    """pyarrow alone drops the LF here (apache/arrow#51368)."""
    path = write(tmp_path, "a\r\n" + "x" * 57 + '\r\n"\r\n"\r\n')
    with mock.patch.object(splitter, "BLOCK_SIZE", 64):
        assert read(path)["a"] == ["x" * 57, "\r\n"]


def test_private_use_characters_in_the_data_survive(tmp_path):
    path = write(tmp_path, "a\n\ue000\ue001\r\n\ue002\n")
    assert read(path, DelimitedFormat(row_separator="\n")) == {"a": ["\ue000\ue001\r", "\ue002"]}


@pytest.mark.parametrize(("option", "fmt"), [
    ("ColumnSeparator", DelimitedFormat(column_separator=":")),
    ("RowSeparator", DelimitedFormat(row_separator="\n\r")),
    ("QuoteCharacter", DelimitedFormat(quote_character="`")),
    ("EscapeCharacter", DelimitedFormat(escape_character="#")),
    ("FirstRowAsHeader", DelimitedFormat(first_row_as_header=False)),
])
def test_invalid_format_options(tmp_path, option, fmt):
    assert option in failure(write(tmp_path, "a\r\n1\r\n"), fmt, kind=MetadataError)


# -- round trip of random tables -------------------------------------------------------------------

PIECES = [",", ";", "|", "\t", '"', "'", "\\", "/", "\r", "\n", "\r\n", "\n\n", "\r\r", '""',
          "\\\\", " ", "", "é", "€", "𝄞", "\ue000", "\ue001", "NULL", "\\N", "N/A", "0x"]
FORMATS = st.builds(
    DelimitedFormat,
    column_separator=st.sampled_from([",", ";", "|", "\t"]),
    row_separator=st.sampled_from(["\r\n", "\n", "\r"]),
    quote_character=st.sampled_from(['"', "'", ""]),
    escape_character=st.sampled_from(["\\", "/", '"', ""]),
    null_value=st.sampled_from([None, "", "NULL", "\\N", "N/A"]),
    encoding=st.sampled_from(["utf-8", "utf-16"]),
)
ONE_TMP_PATH = [HealthCheck.function_scoped_fixture]  # each example overwrites the same file
VALUES = st.lists(st.sampled_from(PIECES) | st.text(max_size=2), max_size=5).map("".join)
NAMES = st.lists(st.sampled_from(["a", "b", " ", ",", ";", "|", "\t", '"', "'", "é"]), max_size=3)


class Writer:
    """A small delimited-text writer, independent of the reader under test."""

    def __init__(self, fmt: DelimitedFormat, quote_all: bool) -> None:
        self.fmt = fmt
        self.quote_all = quote_all
        self.quote = fmt.quote_character
        self.escape = "" if fmt.escape_character == fmt.quote_character else fmt.escape_character
        self.null = fmt.null_value or ""
        self.specials = {fmt.column_separator, "\r", "\n", self.quote, self.escape} - {""}

    def writable(self, value: str) -> str:
        """The value, changed where this format cannot express it."""
        if not self.quote and not self.escape:
            value = re.sub("[\r\n]", "n", value.replace(self.fmt.column_separator, "s"))
        if not self.quote and value == self.null == "":
            value = "e"
        if not self.quote and not self.escape and value == self.null:
            value += "!"
        return value

    def field(self, value: str | None) -> str:
        if value is None:
            return self.null
        if self.quote and (self.quote_all or value == self.null
                           or any(char in value for char in self.specials)):
            inner = value.replace(self.escape, 2 * self.escape) if self.escape else value
            inner = inner.replace(self.quote, (self.escape or self.quote) + self.quote)
            return self.quote + inner + self.quote
        if self.escape:
            value = "".join(self.escape + char if char in self.specials else char
                            for char in value)
            if value == self.null:
                value = self.escape + value
        return value

    def row(self, values) -> str:
        return self.fmt.column_separator.join(self.field(value) for value in values)


@st.composite
def tables(draw):
    fmt = draw(FORMATS)
    writer = Writer(fmt, draw(st.booleans()))
    width = draw(st.integers(1, 4))
    names = [writer.writable(f"c{index}" + "".join(draw(NAMES))) for index in range(width)]
    cells = st.none() | VALUES.map(writer.writable)
    rows = draw(st.lists(st.lists(cells, min_size=width, max_size=width), max_size=6))
    return fmt, writer, names, rows


def render(writer: Writer, names, rows, trailing: bool, bom: bool) -> tuple[bytes, list[int]]:
    """The file's bytes, and the line on which each row starts."""
    separator = writer.fmt.row_separator
    lines = [writer.row(names)] + [writer.row(row) for row in rows]
    text = separator.join(lines)
    if trailing or (rows and lines[-1] == ""):
        text += separator
    starts, offset = [], len(lines[0]) + len(separator)
    for line in lines[1:]:
        starts.append(1 + len(re.findall(r"\r\n|\r|\n", text[:offset])))
        offset += len(line) + len(separator)
    encoding = "utf-8-sig" if bom and writer.fmt.encoding == "utf-8" else writer.fmt.encoding
    return text.encode(encoding), starts


@settings(max_examples=200, deadline=None, suppress_health_check=ONE_TMP_PATH)
@given(table=tables(), trailing=st.booleans(), bom=st.booleans(),
       block_size=st.sampled_from([splitter.BLOCK_SIZE, 64]))
def test_random_tables_survive_a_round_trip(tmp_path, table, trailing, bom, block_size):
    fmt, writer, names, rows = table
    content, _ = render(writer, names, rows, trailing, bom)
    path = write(tmp_path, content)
    with mock.patch.object(splitter, "BLOCK_SIZE", block_size):
        result = read(path, fmt)
    assert result == {name: [row[index] for row in rows] for index, name in enumerate(names)}


def bad_value_file(tmp_path, table, data) -> tuple[Path, DelimitedFormat, list[ColumnDefinition],
                                                  str]:
    """A random table's file with 'bad' in its Int32 column on one row, and the words that must
    name that row's line."""
    fmt, writer, names, rows = table
    if not writer.quote:  # an escaped CR next to an LF is one line break for an editor
        rows = [[value if value is None else writer.writable(value.replace("\r", ""))
                 for value in row] for row in rows]
    rows = [[*row, str(index)] for index, row in enumerate(rows)] or [[None] * len(names) + ["0"]]
    bad = data.draw(st.integers(0, len(rows) - 1))
    rows[bad][-1] = "bad"
    content, starts = render(writer, [*names, "n"], rows, trailing=True, bom=False)
    return (write(tmp_path, content), fmt, [*strings(*names), ColumnDefinition("n", "Int32")],
            f"line {starts[bad]}, column 'n': 'bad' is not a valid Int32")


@settings(max_examples=60, deadline=None, suppress_health_check=ONE_TMP_PATH)
@given(table=tables(), data=st.data())
def test_random_bad_value_is_reported_on_its_line(tmp_path, table, data):
    path, fmt, columns, words = bad_value_file(tmp_path, table, data)
    assert words in failure(path, fmt, columns, kind=ValueParseError)


# -- streaming: pieces, blocks and re-reads ----------------------------------------------------

@contextmanager
def tiny(chunk: int, block: int = 16) -> Iterator[None]:
    """Decode and adjust `chunk` bytes at a time, and parse blocks of `block` bytes."""
    with mock.patch.object(compression, "TEXT_CHUNK", chunk), \
            mock.patch.object(splitter, "BLOCK_SIZE", block):
        yield


PIECES_CASES = [  # every cut between two bytes is a cut between two pieces when chunk is 1
    ("crlf in and around quotes", 'a,b\r\n1,"x\r\ny\nz\rw"\r\n"2",""\r\n3,\r\n', DelimitedFormat(),
     {"a": ["1", "2", "3"], "b": ["x\r\ny\nz\rw", "", None]}),
    ("quotes spanning pieces", 'a,b\r\n"p,q\r\n""r""",s\r\n', DelimitedFormat(),
     {"a": ['p,q\r\n"r"'], "b": ["s"]}),
    ("multi-byte characters", 'a,b\r\né€,"𝄞\r\né"\r\n', DelimitedFormat(),
     {"a": ["é€"], "b": ["𝄞\r\né"]}),
    ("utf-16 surrogate pairs", 'a,b\r\n𝄞é,"𝄞\r\n𝄞"\r\n'.encode("utf-16"),
     DelimitedFormat(encoding="utf-16"), {"a": ["𝄞é"], "b": ["𝄞\r\n𝄞"]}),
    ("escape characters at every position",
     "a,b\r\nx\\,y,\\\\\r\n\\N,N\\\\\\N\r\nz\\\r\n,\\\n\r\n",
     DelimitedFormat(quote_character="", null_value="\\N"),
     {"a": ["x,y", None, "z\r\n"], "b": ["\\", "N\\N", "\n"]}),
    ("empty lines", "a\n1\n\n\n2\n", DelimitedFormat(row_separator="\n"),
     {"a": ["1", None, None, "2"]}),
    ("row separators inside quotes", 'a,b\r\n1,"\r\n\r\n\r\n"\r\n,\r\n', DelimitedFormat(),
     {"a": ["1", None], "b": ["\r\n\r\n\r\n", None]}),
    ("cr rows, lf in values", "a,b\r1,x\ny\r2,\nq\r", DelimitedFormat(row_separator="\r"),
     {"a": ["1", "2"], "b": ["x\ny", "\nq"]}),
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
@pytest.mark.parametrize(("case", "content", "fmt", "values"), PIECES_CASES,
                         ids=[case[0] for case in PIECES_CASES])
def test_text_read_in_tiny_pieces_reads_the_same(tmp_path, chunk, case, content, fmt, values):
    path = write(tmp_path, content)
    assert read(path, fmt) == values
    with tiny(chunk):
        assert read(path, fmt) == values


ERRORS_IN_PIECES = [
    ('a,b\r\n1,"x\r\ny"\r\n2,"p\nq\rr"\r\n"3","\r\n"\r\nbad,z\r\n',
     [ColumnDefinition("a", "Int32"), ColumnDefinition("b", "String")], ValueParseError,
     "line 9, column 'a': 'bad' is not a valid Int32"),
    ('a,b\r\n1,"p\r\nq"\r\n2,x,y\r\n3,z\r\n', None, UnreadableFileError,
     "line 4: 2 fields expected, as in the header, but 3 found: '2,x,y'"),
    ('a,b\r\n1,x\r\n2,"y\r\n', None, UnreadableFileError,
     "line 3: a quoted field is still open at the end of the file"),
    (b'a\r\n"x\r\ny"\r\n\xff\r\n', None, UnreadableFileError,
     "line 4: bytes b'\\xff' at offset 11 are not valid utf-8"),
    (b"a\r\n\xc3\xa9\r\n\xe2\x82\r\n", None, UnreadableFileError,
     "line 3: bytes b'\\xe2\\x82' at offset 7 are not valid utf-8"),
    ("a\r\nx\\", None, UnreadableFileError, "the file ends with an escape character"),
    ('a,b\r\n1,"\r\n\r\n"\r\n\r\n\r\n3,4\r\n', None, UnreadableFileError,
     "line 5: 2 fields expected, as in the header, but 1 found: ''"),
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
@pytest.mark.parametrize(("content", "columns", "kind", "words"), ERRORS_IN_PIECES)
def test_errors_read_in_tiny_pieces_name_the_same_line(tmp_path, chunk, content, columns, kind,
                                                       words):
    path = write(tmp_path, content)
    assert words in failure(path, columns=columns, kind=kind)
    with tiny(chunk):
        assert words in failure(path, columns=columns, kind=kind)


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_undecodable_utf16_read_in_tiny_pieces(tmp_path, chunk):
    path = write(tmp_path, "a\r\n𝄞\r\n".encode("utf-16") + b"\x00")
    with tiny(chunk):
        message = failure(path, DelimitedFormat(encoding="utf-16"))
    assert "line 3: bytes b'\\x00' at offset 16 are not valid utf-16" in message


def test_utf16_without_byte_order_mark_reads_in_machine_order(tmp_path):
    content = "a\r\né𝄞\r\n".encode("utf-16-le" if sys.byteorder == "little" else "utf-16-be")
    with tiny(1):
        assert read(write(tmp_path, content), DelimitedFormat(encoding="utf-16")) == {
            "a": ["é𝄞"]}


def streamed(path: Path, fmt=DelimitedFormat(), columns=None, *,
             during: Callable[[list[pa.RecordBatch]], None] = lambda got: None,
             max_rows: int | None = None) -> list[pa.RecordBatch]:
    """The batches of the file, calling `during` before each is taken."""
    got: list[pa.RecordBatch] = []
    for batch in open_delimited(path, fmt, columns, table=TABLE).batches(max_rows=max_rows):
        during(got)
        got.append(batch)
    return got


def test_rows_stream_in_batches_before_a_late_error(tmp_path):
    path = write(tmp_path, "a\r\n" + "".join(f"{i}\r\n" for i in range(3000)) + "x\r\n")
    got: list[pa.RecordBatch] = []
    with tiny(1 << 20, 1024), pytest.raises(ValueParseError, match="line 3002, column 'a'"):
        streamed(path, columns=[ColumnDefinition("a", "Int32")], during=got.extend,
                 max_rows=100)
    assert got and max(batch.num_rows for batch in got) <= 100


def test_a_stand_in_character_late_in_the_file_makes_a_re_read_that_skips_rows_handed_on(
        tmp_path):
    rows = [(str(i), f"{i}\n") for i in range(5000)] + [("5000", "\ue000\ue001\ue002\ue003\n")]
    path = write(tmp_path, "a,b\r\n" + "".join(f'{a},"{b}"\r\n' for a, b in rows))
    scanned = splitter.Splitter.scanned_swaps
    handed_on: list[int] = []  # rows handed on when the text was scanned for stand-ins
    taken = [0]

    def scan(reader: splitter.Splitter) -> standins.Swaps:
        handed_on.append(taken[0])
        return scanned(reader)

    def during(got: list[pa.RecordBatch]) -> None:
        taken[0] = sum(batch.num_rows for batch in got)

    with tiny(1024, 256), mock.patch.object(splitter.Splitter, "scanned_swaps", scan):
        got = streamed(path, during=during)
    assert len(handed_on) == 1 and handed_on[0] > 0
    assert pa.Table.from_batches(got).to_pydict() == {"a": [a for a, _ in rows],
                                                      "b": [b for _, b in rows]}


def test_re_reads_skip_the_rows_already_handed_on(tmp_path):
    """A row longer than a block late in the file, then a stand-in character."""
    rows = [(str(i), "x\ny") for i in range(3000)] + [("3000", "long\n" * 400)] + [
        (str(i), "z") for i in range(3001, 30000)] + [("30000", "\ue000\ue001\ue002")]
    path = write(tmp_path, "a,b\r\n" + "".join(f'{a},"{b}"\r\n' for a, b in rows))
    attempt = splitter.Splitter._attempt
    attempts: list[tuple[int, int]] = []  # block size, rows handed on before

    def spied(reader, parse, block_size, done):
        attempts.append((block_size, done.rows))
        return attempt(reader, parse, block_size, done)

    with tiny(1024, 256), mock.patch.object(splitter.Splitter, "_attempt", spied):
        got = streamed(path)
    assert attempts[0] == (256, 0) and attempts[-1][0] > 256
    assert any(0 < rows < 3000 for _, rows in attempts)  # the long row, after rows went on
    assert attempts[-1][1] > 3000  # the stand-in, after the long row went on
    assert pa.Table.from_batches(got).to_pydict() == {"a": [a for a, _ in rows],
                                                      "b": [b for _, b in rows]}


def test_the_header_row_may_be_longer_than_a_block(tmp_path):
    names = [f"column_{i}" for i in range(40)]
    path = write(tmp_path, ",".join(names) + "\r\n" + ",".join(map(str, range(40))) + "\r\n")
    with tiny(7, 64):
        assert read(path) == {name: [str(i)] for i, name in enumerate(names)}


@pytest.mark.parametrize(("name", "limit", "words"), [
    ("data.csv", 20, "holds more than 20 bytes, the most"),
    ("data.csv.gz", 20, "holds more than 20 bytes once decompressed"),
])
def test_max_text_bytes_still_caps_a_file(tmp_path, name, limit, words):
    content = b"a\r\n" + b"1\r\n" * 20
    path = write(tmp_path, gzip.compress(content) if name.endswith(".gz") else content, name)
    with tiny(4), pytest.raises(UnreadableFileError) as raised:
        list(open_delimited(path, DelimitedFormat(), None, table=TABLE,
                            max_text_bytes=limit).batches())
    message = str(raised.value)
    assert words in message and delimited.MAX_TEXT_BYTES in message


@settings(max_examples=100, deadline=None, suppress_health_check=ONE_TMP_PATH)
@given(table=tables(), trailing=st.booleans(), bom=st.booleans(),
       chunk=st.sampled_from([1, 2, 3, 5, 8]), block=st.sampled_from([16, 64]))
def test_random_tables_read_alike_in_tiny_pieces_and_blocks(tmp_path, table, trailing, bom,
                                                             chunk, block):
    fmt, writer, names, rows = table
    content, _ = render(writer, names, rows, trailing, bom)
    path = write(tmp_path, content)
    with tiny(chunk, block):
        result = read(path, fmt)
    assert result == {name: [row[index] for row in rows] for index, name in enumerate(names)}


@settings(max_examples=60, deadline=None, suppress_health_check=ONE_TMP_PATH)
@given(table=tables(), data=st.data(), chunk=st.sampled_from([1, 3, 8]))
def test_random_bad_value_in_tiny_pieces_is_reported_on_its_line(tmp_path, table, data, chunk):
    path, fmt, columns, words = bad_value_file(tmp_path, table, data)
    with tiny(chunk, 16):
        assert words in failure(path, fmt, columns, kind=ValueParseError)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.none() | st.text(alphabet="ab\r\n", max_size=6), max_size=8),
       start=st.integers(0, 3))
def test_line_breaks_in_a_column_are_counted_as_value_by_value(values, start):
    column = pa.array(values, pa.string()).slice(min(start, len(values)))
    expected = sum(len(re.findall(r"\r\n|\r|\n", value or "")) for value in column.to_pylist())
    assert lines.breaks(column) == expected


# -- streaming into staging --------------------------------------------------------------------

CSV_METADATA = {"keyColumns": ["id"], "FileFormat": "CSV", "SchemaDefinition": {"Columns": [
    {"Name": "id", "DataType": "Int64", "IsNullable": False},
    {"Name": "note", "DataType": "String"}, {"Name": "amount", "DataType": "Double"},
    {"Name": "day", "DataType": "IDate"}]}}


def csv_table(zone: Path, rows: Iterator[bytes]) -> Path:
    """A CSV table folder in `zone` whose first change file holds a header and `rows`."""
    folder = zone / "Csv"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps(CSV_METADATA))
    path = folder / "00000000000000000001.csv"
    with path.open("wb") as file:
        file.write(b"id,note,amount,day,__rowMarker__\r\n")
        file.writelines(rows)
    return path


def test_a_file_failing_after_rows_went_to_staging_stages_none_of_them(tmp_path):
    rows = (b'%d,"line\nbreak",%d.5,2025-06-17,0\r\n' % (i, i) for i in range(20_000))
    csv_table(tmp_path / "zone", chain(rows, [b"20000,x,lots,2025-06-17,0\r\n"]))
    [table] = discover_tables(tmp_path / "zone")
    warehouse = Warehouse(tmp_path / "wh")
    typed: list[int] = []
    original = splitter.Splitter._typed

    def spied(*args: Any) -> pa.RecordBatch:
        typed.append(1)
        return original(*args)

    with mock.patch.object(splitter, "BLOCK_SIZE", 4096), \
            mock.patch.object(splitter.Splitter, "_typed", spied):
        failed = ingest_table(table, warehouse)
    assert len(typed) > 10  # batches went to the staging writer before the bad row was met
    assert (failed.status, failed.error_type) == ("failed", "ValueParseError")
    assert "line 40002, column 'amount': 'lots' is not a valid Double" in failed.error
    assert not DeltaTable.is_deltatable(str(warehouse.staging_path("dbo", "csv")))


MEMORY_CHECK = """
import json, resource, sys
from pathlib import Path
import deltalake, pyarrow.csv  # imported before the idle figure, as staging has them
from lakemirror.landing import discover_tables
from lakemirror.staging import Warehouse, ingest_table
idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
[table] = discover_tables(Path(sys.argv[1]))
result = ingest_table(table, Warehouse(Path(sys.argv[2])))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"status": result.status, "error": result.error, "rows": result.staged_rows,
                  "above_idle": (peak - idle) * 1024}))
"""


def test_staging_a_csv_twice_the_memory_bound_stays_under_it(tmp_path):
    """Reading the file whole takes its size for the text alone, and several times that to
    parse it; streaming it takes the same few hundred megabytes whatever its size."""
    size, bound = 768 << 20, 384 << 20
    block = b"".join(b'%d,"a note, with a comma\nand a line break",%d.25,2025-06-%02d,0\r\n'
                     % (i, i, 1 + i % 28) for i in range(16_000))
    copies = size // len(block)
    zone, warehouse = tmp_path / "zone", tmp_path / "wh"
    try:
        csv_table(zone, (block for _ in range(copies)))
        finished = subprocess.run([sys.executable, "-c", MEMORY_CHECK, str(zone), str(warehouse)],
                                  capture_output=True, text=True, check=True, timeout=600)
        result = json.loads(finished.stdout)
        assert (result["status"], result["error"]) == ("replicating", None)
        assert result["rows"] == 16_000 * copies
        assert result["above_idle"] < bound, result
    finally:
        shutil.rmtree(zone, ignore_errors=True)
        shutil.rmtree(warehouse, ignore_errors=True)
