"""One module owns the warehouse's storage: the code that reads, writes, lists, moves or locks
lakemirror's files in a warehouse asks `lakemirror.storage.warehouse` instead of calling POSIX
file APIs itself, so a warehouse at a URL needs a second implementation there and nowhere
else. Every module is checked but those that touch something else (the zone, the project)."""

import ast
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import lakemirror
from lakemirror.errors import StorageError
from lakemirror.storage import parse_location
from lakemirror.storage.warehouse import LocalWarehouse, warehouse_storage

PACKAGE = Path(lakemirror.__file__).parent
# What may call file APIs itself, as it touches something other than the warehouse; every
# other module of the package is checked.
ELSEWHERE = {
    "storage/": "the storage layer itself",
    "landing/": "the landing zone, through its own door (landing/zone.py)",
    "codegen/": "the dbt project's generated models", "project/": "the dbt project",
    "parsed_projects.py": "the dbt project", "run/build.py": "the dbt project's models",
    "run/mirror_only.py": "a view of the dbt project, in lakemirror's home",
    "engine/": "the engine's state (LAKEMIRROR_HOME) and Delta's jars",
    "bench/": "the benchmark's own folders", "demo/": "the demo's folders",
    "generated_macros.py": "lakemirror's own dbt package, rendered by its developers",
    "proof/snapshot.py": "a source snapshot the user gives resync, read through the landing "
                         "zone's doors",
    "staging/parts.py": "a staging Delta table's data files, written by hand (Delta writes "
                        "go by location, not through the storage layer)",
}
FUNCTIONS_ELSEWHERE = {
    "binding.py": {"_refusal"},  # whether the bound landing zone's folder is still there
    "cli/main.py": {"demo"},  # the example dbt project
    "environment.py": {"_storage_options_file"},  # LAKEMIRROR_STORAGE_OPTIONS_FILE's file
    "run/settings.py": {"check_project"},  # the dbt project
}
FILE_METHODS = {"exists", "is_dir", "is_file", "mkdir", "rename", "unlink", "rmdir", "iterdir",
                "glob", "rglob", "open", "read_text", "write_text", "read_bytes", "write_bytes",
                "touch", "stat", "scandir", "listdir", "makedirs", "rmtree", "flock"}
FILE_MODULES = {"shutil", "fcntl"}
OS_ALLOWED = {"environ", "PathLike"}


def posix_calls(tree: ast.AST, skip: frozenset[str] = frozenset()) -> list[str]:
    """The file-system calls in `tree`, outside the functions named in `skip`: Path methods,
    os/shutil/fcntl functions, open()."""
    found = []
    nodes = [tree]
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.FunctionDef) and node.name in skip:
            continue
        nodes.extend(ast.iter_child_nodes(node))
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


CHECKED = sorted(name for name in (path.relative_to(PACKAGE).as_posix()
                                  for path in PACKAGE.rglob("*.py"))
                 if not name.startswith(tuple(ELSEWHERE)))


@pytest.mark.parametrize("module", CHECKED)
def test_the_warehouse_is_touched_only_through_its_storage(module):
    skip = frozenset(FUNCTIONS_ELSEWHERE.get(module, ()))
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    assert skip <= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert posix_calls(tree, skip) == [], module


def test_the_checked_modules_include_the_warehouse_side():
    assert {"binding.py", "recovery.py", "idle.py", "maintenance.py", "staging/dropped.py",
            "staging/lock.py", "staging/lifecycle.py", "staging/registry.py", "delta/log.py",
            "staging/warehouse_tables.py",
            "delta/integrity.py", "cli/inspect.py", "run/ingest.py"} <= set(CHECKED)


def test_the_checker_sees_the_calls_it_forbids():
    code = ("import os, shutil\nos.replace(a, b)\nshutil.rmtree(p)\nroot.iterdir()\n"
            "(root / 'x').exists()\nopen(p)\nos.environ.get('X')\nlayout.storage.exists('k')\n"
            "warehouse_storage(root).move('a', 'b')\n")
    assert sorted(call.split(" at")[0] for call in posix_calls(ast.parse(code))) == [
        ".exists()", ".iterdir()", "open()", "os.replace", "shutil.rmtree"]


def test_keys_stay_inside_the_warehouse(tmp_path):
    storage = LocalWarehouse(tmp_path / "warehouse")
    storage.write_text("/_lakemirror//state.json", "{}")
    storage.write_text("/etc/passwd", "absolute")  # a leading '/' is the warehouse's root
    storage.write_text("..\\up.json", "backslash")  # a plain name on POSIX, not a separator
    assert (tmp_path / "warehouse/_lakemirror/state.json").read_text() == "{}"
    assert (tmp_path / "warehouse/etc/passwd").read_text() == "absolute"
    assert (tmp_path / "warehouse/..\\up.json").read_text() == "backslash"
    assert storage.location("") == str(tmp_path / "warehouse")
    assert storage.folders("") == ["_lakemirror", "etc"] and storage.files("_lakemirror") == [
        "state.json"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["warehouse"]


# Keys with a '.' or '..' segment: each would name a file outside the warehouse (or one file
# by a second key), so every call refuses them before touching anything.
ESCAPING_KEYS = ["..", "../escaped.json", "_lakemirror/../../escaped.json", "/../escaped.json",
                 "dbo/./t", "."]


def assert_refused(storage, key):
    for call in (storage.location, storage.exists, storage.is_folder, storage.folders,
                 storage.files, storage.read_bytes, storage.read_text, storage.remove,
                 lambda key: storage.write_text(key, "{}"),
                 lambda key: storage.move("_lakemirror", key),
                 lambda key: storage.move(key, "_lakemirror/moved")):
        with pytest.raises(StorageError, match="could reach outside the warehouse"):
            call(key)


@pytest.mark.parametrize("key", ESCAPING_KEYS)
def test_a_key_reaching_outside_a_local_warehouse_is_refused(tmp_path, key):
    storage = LocalWarehouse(tmp_path / "warehouse" / "dbo")
    storage.write_text("_lakemirror/state.json", "{}")
    assert_refused(storage, key)
    with pytest.raises(StorageError, match="could reach outside the warehouse"):
        storage.remove_empty("_lakemirror/empty", key)  # an object store's has nothing to do
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == [
        "warehouse", "warehouse/dbo", "warehouse/dbo/_lakemirror",
        "warehouse/dbo/_lakemirror/state.json"]


@pytest.mark.parametrize("key", ESCAPING_KEYS)
def test_a_key_reaching_outside_an_object_warehouse_is_refused(object_store_server, key):
    import obstore

    prefix = object_store_server.fresh_prefix("wh")
    storage = warehouse_storage(parse_location(object_store_server.url(f"{prefix}/dbo"),
                                               object_store_server.options))
    storage.write_text("_lakemirror/state.json", "{}")
    assert_refused(storage, key)
    keys = [str(meta["path"]) for chunk in obstore.list(object_store_server.store(prefix))
            for meta in chunk]
    assert keys == ["dbo/_lakemirror/state.json"]


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


def test_a_lock_taken_in_one_thread_is_released_from_another(tmp_path):
    storage = LocalWarehouse(tmp_path)
    held = storage.try_lock("dbo.t")
    thread = threading.Thread(target=held.release)
    thread.start()
    thread.join()
    again = storage.try_lock("dbo.t")
    assert again is not None
    again.release()


def test_a_run_opens_the_warehouses_storage_once(service, zone, monkeypatch):
    """Every phase of an ingest (binding, locks, integrity checks, registry, records) reaches
    the warehouse through the run's one storage handle: an object store's client, and its
    connections, are not rebuilt for each step or table."""
    opened: list[Path] = []
    original = LocalWarehouse.__init__

    def counted(self, root):
        opened.append(root)
        original(self, root)

    monkeypatch.setattr(LocalWarehouse, "__init__", counted)
    for name in ("A", "B", "C"):
        zone.table(name, ["id"])
        zone.write(name, 1, [{"id": 1}], pa.schema([("id", pa.int64())]))
    service.ingest_only()
    service.ingest_only()
    assert opened == [service.settings.warehouse]
