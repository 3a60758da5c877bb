"""`lakemirror bench`: generate a landing zone, run contenders, verify their final tables."""

from lakemirror.bench.deltars_direct import run_deltars
from lakemirror.bench.floor import run_floor
from lakemirror.bench.generator import GeneratedTable, generate_zone
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verify import Verification, verify

__all__ = [
    "BenchSpec", "GeneratedTable", "Verification", "final_state", "generate_zone", "read_changes",
    "run_deltars", "run_floor", "verify",
]
