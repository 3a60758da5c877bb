"""`lakemirror bench`: generate a landing zone, run contenders, verify their final tables.

The names below are imported on first use, so that the command's options (`bench.cli`) load
without pyarrow, numpy or deltalake.
"""

from typing import TYPE_CHECKING

from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.bench.deltars_direct import run_deltars, run_deltars_batched
    from lakemirror.bench.floor import run_floor
    from lakemirror.bench.generator import GeneratedTable, generate_zone
    from lakemirror.bench.reference_state import final_state, read_changes
    from lakemirror.bench.spec import BenchSpec
    from lakemirror.bench.verification import Verification, verify

__getattr__ = lazy_exports(__name__, {
    "deltars_direct": ("run_deltars", "run_deltars_batched"),
    "floor": ("run_floor",),
    "generator": ("GeneratedTable", "generate_zone"),
    "reference_state": ("final_state", "read_changes"),
    "spec": ("BenchSpec",),
    "verification": ("Verification", "verify"),
})

__all__ = [
    "BenchSpec", "GeneratedTable", "Verification", "final_state", "generate_zone", "read_changes",
    "run_deltars", "run_deltars_batched", "run_floor", "verify",
]
