"""No module-level mutable state outside a run's own objects (issue 40): a module-level name bound
to a mutable container, a registry or a lock is shared by every service of the process, so two
runs would see each other. Read with `ast` from every module of the package; the few kept are
in ALLOWED, each with why. UPPER_CASE names (and dunders such as `__all__`) are constants when
nothing in the package mutates them."""

import ast
import re
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import lakemirror

PACKAGE = Path(lakemirror.__file__).parent

ALLOWED: dict[tuple[str, str], str] = {
    ("dbt_runner.py", "_one_invocation_at_a_time"):
        "dbt keeps its flags, adapters and invocation context process-wide: one invocation at "
        "a time",
    ("dbt_runner.py", "_warm_warehouse"):
        "whose engine sessions a warm invocation kept: pyspark's sessions, which every dbt "
        "invocation of the process takes in turn, are process-wide",
    ("run/dbt.py", "_child_engines"):
        "an engine is a child process on a port, shared by the process's runs with its storage "
        "settings; a warehouse's catalog lives in its own Connect session",
    ("run/dbt.py", "_starting"): "guards _child_engines",
    ("parsed_projects.py", "_parsed"):
        "dbt's parse, keyed by all it reads (project, target, vars) so that runs "
        "on two warehouses never share an entry, each step one dict operation (safe under "
        "threads): a cache of dbt's, as process-wide as dbt's own state",
    ("storage/secrets.py", "_known"):
        "a credential any run of the process read stays out of everything the process writes "
        "(one stderr, one log): hiding another run's secret too is the safe side",
    ("engine/connect.py", "_clients"):
        "pyspark's Spark Connect sessions and the release threads joined at exit are "
        "process-wide, and so are the clients whose retries lakemirror bounds",
    ("engine/connect.py", "_exit_hook"): "the interpreter's exit hook is registered once",
    ("engine/connect.py", "_clients_lock"): "guards _clients and _exit_hook",
}

CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
# Calls that make a container, a registry or a lock (by their name, whatever the module).
MUTABLE_CALLS = frozenset(
    "dict list set bytearray defaultdict OrderedDict Counter deque ChainMap WeakSet "
    "WeakValueDictionary WeakKeyDictionary Lock RLock Condition Semaphore BoundedSemaphore "
    "Event local ContextVar".split())
MUTATORS = frozenset(
    "append add update pop popitem clear setdefault extend insert remove discard".split())
CACHES = frozenset({"cache", "lru_cache"})  # functools' decorators: one cache per process
CONSTANT_NAME = re.compile(r"_?[A-Z][A-Z0-9_]*|__\w+__")


def makes_mutable(value: ast.expr) -> bool:
    """Whether an expression evaluates to a new mutable container, registry or lock."""
    if isinstance(value, CONTAINERS):
        return True
    if isinstance(value, ast.BinOp):  # {**a} | b, [*a] + b
        return makes_mutable(value.left) or makes_mutable(value.right)
    if isinstance(value, ast.Call):
        function = value.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
        return name in MUTABLE_CALLS
    return False


def module_bindings(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """The names a module binds at its top level (inside `if` and `try` blocks too, not in
    functions or classes) with the value each is bound to."""
    def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
        for statement in body:
            yield statement
            if isinstance(statement, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(statement, block, []):
                        yield from statements(part.body if isinstance(part, ast.excepthandler)
                                              else [part])

    for statement in statements(tree.body):
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            pairs = [(statement.target, statement.value)]
        elif isinstance(statement, ast.Assign):
            pairs = [(target, statement.value) for target in statement.targets]
        else:
            continue
        while pairs:
            target, value = pairs.pop()
            if isinstance(target, ast.Name):
                yield target.id, value
            elif (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                  and len(target.elts) == len(value.elts)):
                pairs += zip(target.elts, value.elts)


def mutated_names(tree: ast.Module) -> set[str]:
    """The names a module mutates in place anywhere: `NAME[...] = ...`, `del NAME[...]`,
    `NAME[...] += ...`, `NAME.append(...)` and the like (`module.NAME` counts as NAME)."""
    def name_of(node: ast.expr) -> str | None:
        return (node.id if isinstance(node, ast.Name)
                else node.attr if isinstance(node, ast.Attribute) else None)

    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(name_of(node.value))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in MUTATORS):
            found.add(name_of(node.func.value))
    return {name for name in found if name is not None}


def state_without_containers(tree: ast.Module) -> Iterator[str]:
    """Names holding state a container check misses: module-level names that a function
    rebinds (`global`), and functions whose results a functools cache keeps."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            yield from node.names
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                if getattr(called, "id", getattr(called, "attr", None)) in CACHES:
                    yield node.name


def mutable_state(sources: Mapping[str, str]) -> list[tuple[str, str]]:
    """(module path, name) of each module-level binding to a mutable container, registry or
    lock in `sources` (path: source), but a constant one (UPPER_CASE or a dunder) that no
    module of `sources` mutates; and of each state kept without one (`global`, a cache)."""
    trees = {path: ast.parse(source) for path, source in sources.items()}
    mutated = set().union(*map(mutated_names, trees.values()))
    return sorted({(path, name) for path, tree in trees.items()
                   for name, value in module_bindings(tree)
                   if makes_mutable(value)
                   and (not CONSTANT_NAME.fullmatch(name) or name in mutated)}
                  | {(path, name) for path, tree in trees.items()
                     for name in state_without_containers(tree)})


def package_sources(package: Path) -> dict[str, str]:
    return {path.relative_to(package).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(package.rglob("*.py"))}


FOUND = mutable_state(package_sources(PACKAGE))


def test_no_module_keeps_mutable_state_but_the_allowed() -> None:
    assert [found for found in FOUND if found not in ALLOWED] == [], (
        "move this state onto the object a run owns (MirrorService, RunSettings), or say in "
        "ALLOWED why it is process-wide")


def test_every_allowed_state_still_exists() -> None:
    assert [allowed for allowed in ALLOWED if allowed not in FOUND] == [], (
        "gone: take it out of ALLOWED")


def dedented(sources: Mapping[str, str]) -> dict[str, str]:
    return {path: textwrap.dedent(source) for path, source in sources.items()}


def test_the_check_finds_every_kind_of_mutable_binding() -> None:
    source = """\
        import threading, weakref
        from collections import defaultdict
        cache = {}
        _seen: set[str] = set()
        _by_key = {key: [] for key in "ab"}
        _lock = threading.RLock()
        _clients = weakref.WeakSet()
        _groups = defaultdict(list)
        _merged = {**cache} | {"a": 1}
        first, _stack = 1, []
        if True:
            _late = []
        try:
            import yaml
        except ImportError:
            _missing = [None]
        def run():
            local = {}  # a function's own: not module state
        class Room:
            kept = {}  # a class attribute: not a module-level name
        """
    assert mutable_state(dedented({"m.py": source})) == [
        ("m.py", name) for name in sorted(["cache", "_seen", "_by_key", "_lock", "_clients",
                                           "_groups", "_merged", "_stack", "_late",
                                           "_missing"])]


def test_the_check_finds_state_kept_without_a_container() -> None:
    source = """\
        import functools
        from functools import lru_cache
        _engine = None
        def start():
            global _engine
            _engine = object()
        @functools.cache
        def settings():
            return {}
        @lru_cache(maxsize=4)
        def parsed(path):
            return path
        def plain(path):
            return path
        """
    assert mutable_state(dedented({"m.py": source})) == [
        ("m.py", "_engine"), ("m.py", "parsed"), ("m.py", "settings")]


def test_a_constant_is_one_no_module_mutates() -> None:
    sources = dedented({
        "a.py": """\
            KINDS = {"csv": 1}
            NAMES = ["x"]
            LIMITS = {"rows": 1}
            _SEEN = set()
            __all__ = ["KINDS"]
            LABEL = "text"
            PARTS = ("a", "b")
            FROZEN = frozenset({"a"})
            """,
        "b.py": """\
            from a import LIMITS, NAMES, _SEEN
            import a
            def grow(value):
                NAMES.append(value)
                a.LIMITS["files"] = 2
                _SEEN.add(value)
                local = {}
                local["x"] = KINDS["csv"]
            """,
    })
    assert mutable_state(sources) == [("a.py", "LIMITS"), ("a.py", "NAMES"), ("a.py", "_SEEN")]
