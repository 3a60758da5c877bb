"""What `lakemirror bench` generates: table size, change files, operation mix, repeats."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

Op = Literal["insert", "update", "delete", "upsert"]
OPS: tuple[Op, ...] = get_args(Op)
DEFAULT_OP_MIX: Mapping[Op, float] = MappingProxyType(
    {"update": 0.4, "insert": 0.2, "delete": 0.2, "upsert": 0.2})


@dataclass(frozen=True)
class BenchSpec:
    """A generated landing zone: `tables` tables of `table_rows` rows in file 1, then `files`
    change files of `changes_per_file` rows each.

    `op_mix` gives each operation's share of a change file (shares sum to 1); `repeat_share` is
    the share of a file's changes that hit a key already changed earlier in the same file.
    """

    seed: int = 7
    table_rows: int = 1_000_000
    files: int = 10
    changes_per_file: int = 100_000
    op_mix: Mapping[Op, float] = field(default_factory=lambda: DEFAULT_OP_MIX)
    repeat_share: float = 0.1
    tables: int = 1

    def __post_init__(self) -> None:
        _check_int("seed", self.seed, 0)
        _check_int("table_rows", self.table_rows, 1)
        _check_int("files", self.files, 0)
        _check_int("changes_per_file", self.changes_per_file, 1)
        _check_int("tables", self.tables, 1)
        object.__setattr__(self, "op_mix", MappingProxyType(_checked_mix(self.op_mix)))
        share = self.repeat_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
            raise ValueError(f"repeat_share must be in [0, 1), got {self.repeat_share!r}")
        self._check_enough_keys()

    def _check_enough_keys(self) -> None:
        """Every file must find enough live keys for its updates, deletes and upserts, even
        after earlier files deleted keys."""
        if self.files == 0:
            return
        per_file = {op: math.ceil(self.changes_per_file * self.op_mix[op]) for op in OPS}
        needed = per_file["update"] + per_file["delete"] + per_file["upsert"]
        fewest = self.table_rows - max(self.files - 1, 0) * per_file["delete"]
        if needed > fewest:
            raise ValueError(
                f"the op mix needs up to {needed} live keys per file, but deletes can leave "
                f"only {fewest} of table_rows={self.table_rows}; raise table_rows or lower "
                f"changes_per_file, files or the delete share")

    @classmethod
    def smoke(cls, *, seed: int = 7) -> BenchSpec:
        """A small spec for tests and a quick sanity run: 5,000 rows, 3 files of 1,000."""
        return cls(seed=seed, table_rows=5_000, files=3, changes_per_file=1_000)


def _check_int(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _checked_mix(mix: Mapping[Op, float] | Mapping[str, float]) -> dict[Op, float]:
    """The op mix with every operation present (missing ones 0), or a ValueError."""
    unknown = sorted(set(mix) - set(OPS))
    if unknown:
        raise ValueError(f"op_mix has unknown operations {unknown}; allowed: {list(OPS)}")
    checked: dict[Op, float] = {op: mix.get(op, 0.0) for op in OPS}
    bad = {op: share for op, share in checked.items()
           if isinstance(share, bool) or not isinstance(share, (int, float))
           or not 0 <= share <= 1}
    if bad:
        raise ValueError(f"op_mix shares must be numbers in [0, 1], got {bad}")
    if not math.isclose(sum(checked.values()), 1.0, abs_tol=1e-9):
        raise ValueError(f"op_mix shares must sum to 1, got {sum(checked.values())!r}")
    return checked
