"""Whether two columns hold the same values, per row, in Arrow's kernels: NULL equals NULL, NaN
equals NaN, and nested values (structs, lists, maps) are equal when all their parts are."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def same_values(left: pa.Array | pa.ChunkedArray,
                right: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Per row whether `left` and `right` (of one type and length) hold the same value: a
    boolean array without NULLs."""
    left, right = _as_lists(_whole(left)), _as_lists(_whole(right))
    both_null = pc.and_(pc.is_null(left), pc.is_null(right))
    kind = left.type
    if pa.types.is_struct(kind):
        fields = [same_values(pc.struct_field(left, [index]), pc.struct_field(right, [index]))
                  for index in range(kind.num_fields)]
        present = pc.equal(pc.is_valid(left), pc.is_valid(right))
        return pc.and_(present, reduce(pc.and_, fields, pa.repeat(True, len(left))))
    if _is_list(kind):
        return pc.or_(both_null, _same_lists(left, right))
    same = pc.or_kleene(pc.equal(left, right), both_null)
    if pa.types.is_floating(kind):
        same = pc.or_kleene(same, pc.and_(pc.is_nan(left), pc.is_nan(right)))
    return pc.fill_null(same, False)


def _same_lists(left: pa.Array, right: pa.Array) -> pa.Array:
    """Per row whether two lists (or maps) are both present, as long, and equal item by item:
    the rows of equal length are compared as their flattened items."""
    comparable = pc.fill_null(pc.equal(pc.list_value_length(left),
                                       pc.list_value_length(right)), False)
    ours, theirs = left.filter(comparable), right.filter(comparable)
    items = same_values(pc.list_flatten(ours), pc.list_flatten(theirs))
    differing = pc.filter(pc.list_parent_indices(ours), pc.invert(items))
    equal = pc.invert(pc.is_in(pa.array(np.arange(len(ours), dtype=np.int64)),
                               value_set=pc.cast(differing, pa.int64())))
    return pc.replace_with_mask(pa.repeat(False, len(left)), comparable, equal)


def _is_list(kind: pa.DataType) -> bool:
    return any(check(kind) for check in (pa.types.is_list, pa.types.is_large_list,
                                         pa.types.is_fixed_size_list))


def _as_lists(values: pa.Array) -> pa.Array:
    """A map as the list of its entries (key, value), which the list kernels take."""
    kind = values.type
    if not pa.types.is_map(kind):
        return values
    entry = pa.struct([kind.key_field, kind.item_field])
    return values.cast(pa.list_(pa.field("entries", entry, nullable=False)))


def _whole(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
