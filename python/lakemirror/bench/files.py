"""The numbered change files of one landing-zone table folder, in order."""

from __future__ import annotations

from pathlib import Path

from lakemirror.contract import is_sequence_number


def change_files(folder: Path) -> list[Path]:
    """`folder`'s `<20 digits>.parquet` files by sequence number; an error when there are none."""
    files = sorted(path for path in folder.glob("*.parquet")
                   if is_sequence_number(path.stem))
    if not files:
        raise FileNotFoundError(f"no numbered .parquet change files in {folder}")
    return files
