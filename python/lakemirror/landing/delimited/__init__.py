"""Read a delimited-text landing file (CSV and its kin) as Arrow batches, typed by its
SchemaDefinition.

pyarrow.csv parses every field as a string; pyarrow.compute types whole columns. Where
pyarrow.csv does not follow the declared format exactly, the text is adjusted first: a CR or LF
that is not part of the row separator, and an escaped character of NullValue, are swapped for
unused private-use characters (and back in the values); a sentinel row after the last one shows
a quote left open; empty lines are marked where pyarrow would read them as rows of empty
fields; and no block of text ends between a CR and an LF (apache/arrow#51368).

The file streams, so memory does not grow with its size, only with its longest row: it is
decompressed, decoded and adjusted a piece at a time (cut where no adjustment spans the cut),
parsed a block at a time, and typed a batch at a time. The private-use characters are chosen
before the text is seen; should the file hold one of them, it is read again with characters it
does not hold. A row too long for the blocks is read again with larger blocks. Such a re-read
skips the rows already handed on. A file with several problems fails on the first met in this
order (the header first, then the rows as they come), so not always on the one a whole-file
reading would name; a file with one problem fails with the same message either way.

LAKEMIRROR_MAX_TEXT_BYTES (default 2 GiB) still caps a file's decompressed size, no longer for
memory but as a guard: a small .gz can unpack to terabytes (a decompression bomb) that would
otherwise be staged for hours, and a file that is one endless row is held whole.

One module per concern: `format` (the options of _metadata.json and the contract's data types),
`header` (the checks made before any row), `compression` and `encoding` (the bytes, decompressed
and decoded to UTF-8), `standins` (the text adjusted for pyarrow.csv), `blocks` (that text as
pyarrow.csv reads it), `splitter` (the rows, split and typed, and their re-reads), `lines` (line
numbers), `values` (the data types' conversion), `errors` (every message) and `reader` (opening
a file).
"""

from lakemirror.landing.delimited.compression import COMPRESSION_SUFFIXES
from lakemirror.landing.delimited.format import DATA_TYPES, ColumnDefinition, DelimitedFormat
from lakemirror.landing.delimited.reader import DelimitedText, open_delimited, read_delimited
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES, MAX_TEXT_BYTES

__all__ = [
    "COMPRESSION_SUFFIXES", "DATA_TYPES", "DEFAULT_MAX_TEXT_BYTES", "MAX_TEXT_BYTES",
    "ColumnDefinition", "DelimitedFormat", "DelimitedText", "open_delimited",
    "read_delimited",
]
