"""The package's house rules, read from its imports with `ast`: no module imports another in a
circle, and no package imports one on a higher layer of LAYERS. Imports at module level, inside
functions and for type checkers only all count: each is a dependency a reader must follow."""

import ast
import textwrap
from collections.abc import Mapping, Set
from pathlib import Path

import lakemirror

PACKAGE = Path(lakemirror.__file__).parent

# The layers, lowest first (farm-studio's floors). A module may import the modules of its own
# unit (its package, or itself for a top-level module) and those of units on lower layers;
# the units of one layer do not import each other.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    "contract",  # the open-mirroring contract's names
    "compiled_templates",  # dbt's jinja, compiled once per process
    "naming lazy_exports reference node_result conflicts parsed_projects dbt_vars",
    "errors",
    "environment",
    "storage",
    "landing",
    "delta",
    "staging",
    "engine",
    "codegen project",
    "dbt_runner table_scope status binding recovery generated_macros",
    "table_outcome monitor",
    "proof",  # verify and resync's staging: above what they read, below maintenance
    "reading",  # lakemirror.read_table: a warehouse's tables, for users
    "idle maintenance",
    "run",
    "service",
    "watch demo lakemirror",  # lakemirror: the package's own __init__, its Python API
    "bench",
    "cli",
))

Graph = Mapping[str, Set[str]]


def module_name(package: Path, path: Path) -> str:
    """`lakemirror.landing.zone` for `<package>/landing/zone.py`; a package's `__init__.py`
    is the package."""
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports (`from a import b`
    names the module `a.b` when there is one, else `a`)."""
    paths = {module_name(package, path): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in paths
                            else node.module for alias in node.names}
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def unit(module: str) -> str:
    """The package (`landing`) or top-level module (`errors`) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def circles(graph: Graph) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (Tarjan's strongly
    connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def upward_imports(graph: Graph, layers: tuple[frozenset[str], ...]) -> list[str]:
    """The imports of a unit on the same or a higher layer than the importer's (other than
    its own unit), and the units no layer holds."""
    layer_of = {name: depth for depth, layer in enumerate(layers) for name in layer}
    wrong = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            source_unit, target_unit = unit(module), unit(target)
            if source_unit == target_unit:
                continue
            if source_unit not in layer_of or target_unit not in layer_of:
                wrong.append(f"{module} -> {target}: give {source_unit} and {target_unit} a layer")
            elif layer_of[target_unit] >= layer_of[source_unit]:
                wrong.append(f"{module} -> {target}: {target_unit} is not below {source_unit}")
    return wrong


GRAPH = import_graph(PACKAGE)


def test_no_module_imports_in_a_circle() -> None:
    assert circles(GRAPH) == []


def test_no_unit_imports_upward_or_sideways() -> None:
    assert upward_imports(GRAPH, LAYERS) == []


def test_every_layer_names_units_of_the_package() -> None:
    units = {unit(module) for module in GRAPH}
    assert frozenset().union(*LAYERS) == units


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A package `lakemirror` under `root` with the given modules (path: source)."""
    package = root / "lakemirror"
    for name, source in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return package


def test_the_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    package = write_package(tmp_path, {
        "__init__.py": "",
        "errors.py": "import os\n",
        "storage/__init__.py": "",
        "storage/location.py": "from lakemirror.errors import ConfigError\n",
        "landing/__init__.py": "",
        "landing/zone.py": """\
            from typing import TYPE_CHECKING
            from lakemirror.storage import location
            if TYPE_CHECKING:
                from lakemirror.landing.door import Door
            def open_zone():
                import lakemirror.errors
            """,
        "landing/door.py": "from lakemirror.landing import zone as zone_module\n",
    })
    assert import_graph(package) == {
        "lakemirror": set(), "lakemirror.errors": set(), "lakemirror.storage": set(),
        "lakemirror.storage.location": {"lakemirror.errors"}, "lakemirror.landing": set(),
        "lakemirror.landing.zone": {"lakemirror.storage.location", "lakemirror.landing.door",
                                    "lakemirror.errors"},
        "lakemirror.landing.door": {"lakemirror.landing.zone"},
    }


def test_the_checks_find_a_circle_and_an_upward_import() -> None:
    graph = {
        "lakemirror.storage.warehouse": {"lakemirror.landing.zone"},  # up
        "lakemirror.landing.zone": {"lakemirror.landing.door", "lakemirror.storage.warehouse"},
        "lakemirror.landing.door": {"lakemirror.landing.zone"},  # a circle inside a package
        "lakemirror.delta.log": {"lakemirror.codegen.models"},  # sideways
        "lakemirror.codegen.models": {"lakemirror.engine.spark"},
        "lakemirror.engine.spark": set(),
    }
    layers = (frozenset({"storage"}), frozenset({"landing"}),
              frozenset({"codegen", "engine"}), frozenset({"delta"}))
    assert circles(graph) == [["lakemirror.landing.door", "lakemirror.landing.zone",
                               "lakemirror.storage.warehouse"]]
    assert upward_imports(graph, layers) == [
        "lakemirror.codegen.models -> lakemirror.engine.spark: engine is not below codegen",
        "lakemirror.storage.warehouse -> lakemirror.landing.zone: landing is not below storage",
    ]
    assert upward_imports(graph, layers[:2]) == [
        "lakemirror.codegen.models -> lakemirror.engine.spark: give codegen and engine a layer",
        "lakemirror.delta.log -> lakemirror.codegen.models: give delta and codegen a layer",
        "lakemirror.storage.warehouse -> lakemirror.landing.zone: landing is not below storage",
    ]
