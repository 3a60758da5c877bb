"""One module owns the warehouse's storage: the code that reads, writes, lists, moves or locks
lakemirror's files in a warehouse asks `lakemirror.storage.warehouse` instead of calling POSIX
file APIs itself, so a warehouse at a URL needs a second implementation there and nowhere
else."""

import ast
import threading
from pathlib import Path

import pytest

import lakemirror
from lakemirror.storage.warehouse import LocalWarehouse

PACKAGE = Path(lakemirror.__file__).parent
# The warehouse side: whole modules, or (module, functions) where a module also touches the
# landing zone (through its own door) or the dbt project.
WAREHOUSE_SIDE = {
    "staging/dropped.py": None, "staging/lock.py": None, "staging/lifecycle.py": None,
    "staging/layout.py": None, "recovery.py": None, "idle.py": None, "maintenance.py": None,
    "delta/log.py": None, "delta/integrity.py": None,
    "binding.py": {"read_binding", "recorded_binding", "write_binding", "record_binding",
                   "looks_like_landing_zone"},
    "cli/inspect.py": {"table_logs"},
    "run/ingest.py": {"_control_damage"},
}
FILE_METHODS = {"exists", "is_dir", "is_file", "mkdir", "rename", "unlink", "rmdir", "iterdir",
                "glob", "rglob", "open", "read_text", "write_text", "read_bytes", "write_bytes",
                "touch", "stat", "scandir", "listdir", "makedirs", "rmtree", "flock"}
FILE_MODULES = {"shutil", "fcntl"}
OS_ALLOWED = {"environ"}


def posix_calls(tree: ast.AST) -> list[str]:
    """The file-system calls in `tree`: Path methods, os/shutil/fcntl functions, open()."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id == "open":
                found.append(f"open() at line {node.lineno}")
            if (isinstance(function, ast.Attribute) and function.attr in FILE_METHODS
                    and not _storage_call(function.value)):
                found.append(f".{function.attr}() at line {node.lineno}")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id in FILE_MODULES
                     or node.value.id == "os" and node.attr not in OS_ALLOWED)):
            found.append(f"{node.value.id}.{node.attr} at line {node.lineno}")
    return found


def _storage_call(value: ast.expr) -> bool:
    """Whether a method is called on the warehouse's storage (`storage.…`, `x.storage.…`), or
    is a module's function (counted as the module's attribute)."""
    return (isinstance(value, ast.Name) and value.id in {"storage", "os", *FILE_MODULES}
            or isinstance(value, ast.Attribute) and value.attr == "storage"
            or isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "warehouse_storage")


@pytest.mark.parametrize("module", sorted(WAREHOUSE_SIDE))
def test_the_warehouse_side_touches_files_only_through_its_storage(module):
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    functions = WAREHOUSE_SIDE[module]
    scopes = [tree] if functions is None else [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in functions]
    assert functions is None or {scope.name for scope in scopes} == functions, "renamed?"
    assert [call for scope in scopes for call in posix_calls(scope)] == [], module


def test_the_checker_sees_the_calls_it_forbids():
    code = ("import os, shutil\nos.replace(a, b)\nshutil.rmtree(p)\nroot.iterdir()\n"
            "(root / 'x').exists()\nopen(p)\nos.environ.get('X')\nlayout.storage.exists('k')\n"
            "warehouse_storage(root).move('a', 'b')\n")
    assert sorted(call.split(" at")[0] for call in posix_calls(ast.parse(code))) == [
        ".exists()", ".iterdir()", "open()", "os.replace", "shutil.rmtree"]


def test_keys_stay_inside_the_warehouse(tmp_path):
    storage = LocalWarehouse(tmp_path / "warehouse")
    storage.write_text("/_lakemirror//state.json", "{}")
    assert (tmp_path / "warehouse/_lakemirror/state.json").read_text() == "{}"
    assert storage.location("") == str(tmp_path / "warehouse")
    assert storage.folders("") == ["_lakemirror"] and storage.files("_lakemirror") == [
        "state.json"]


def test_a_lock_is_held_once_until_released(tmp_path):
    storage = LocalWarehouse(tmp_path)
    held = storage.try_lock("dbo.t")
    assert held is not None
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(storage.try_lock("dbo.t")))
    thread.start()
    thread.join()
    assert other == [None]
    held.release()
    again = storage.try_lock("dbo.t")
    assert again is not None
    again.release()
