"""The open-mirroring contract module: file naming, and that production takes the contract
from it, never from the reference model (a test oracle)."""

import ast

from lakemirror.contract import is_sequence_number, sequence_file_name
from lakemirror.landing import sequence_file_name as landing_sequence_file_name

from conftest import REPO


def test_change_files_are_named_with_twenty_digits():
    assert sequence_file_name(42) == "00000000000000000042.parquet"
    assert sequence_file_name(7, ".csv.gz") == "00000000000000000007.csv.gz"
    assert landing_sequence_file_name is sequence_file_name


def test_a_sequence_number_is_twenty_ascii_digits():
    assert is_sequence_number("0" * 19 + "1")
    assert not is_sequence_number("1" * 19)
    assert not is_sequence_number("1" * 21)
    assert not is_sequence_number("\uff11" * 20)  # fullwidth 1
    assert not is_sequence_number("1" * 19 + "a")


def test_no_package_module_imports_the_reference_model():
    importers = []
    for path in sorted((REPO / "python" / "lakemirror").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [])
            if any(name == "lakemirror.reference" for name in names):
                importers.append(str(path.relative_to(REPO)))
    assert importers == []
