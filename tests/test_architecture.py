"""The package lines of the design (see ../shared/STYLE.md and docs/architecture.md), checked on
the source: only the UI imports Streamlit, components never reach into the app's session nor a
store, readers never write a store, no module of viz_app imports another in a circle or one
above its floor (`FLOORS`), and the Workspace's facets are built bottom-up (`FACETS`).

Imports are read from the syntax tree (every `import`, at module level or inside a function), not
by importing the modules, so an import that runs only on some path still counts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parent.parent  # not from factories: nothing of orchviz is imported
PACKAGES = ("viz_app", "components")
STREAMLIT_ALLOWED = ("viz_app.ui", "components")


@dataclass(frozen=True)
class Import:
    """One import statement's target, as seen in a module."""

    module: str
    """The importing module (dotted name)."""
    target: str
    """The module imported: `from a.b import c` names a.b.c when c is a module, else a.b; a name
    taken from a package's face is followed to the module it comes from."""
    line: int
    written: str = ""
    """The module as the statement names it (`from written import ...`, `import written`)."""
    names: tuple[str, ...] = ()
    """The names a `from ... import` takes."""

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> dict[str, Path]:
    """Every module of the checked packages, by dotted name."""
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


MODULES = source_files()


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: anywhere in the module, functions included, but not
    under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _face_names(path: Path) -> dict[str, str]:
    """`viz_app.face.face_names`, loaded from its file (nothing of orchviz is imported): each
    name a lazy package face shows -> the module it comes from."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_orchviz_face", REPO / "viz_app" / "face.py")
    face = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(face)
    return face.face_names(path)


FACES = {name: _face_names(path) for name, path in MODULES.items()
         if path.name == "__init__.py" and "__getattr__, __dir__ = lazy(" in path.read_text()}
"""Each lazy package face (`viz_app.face`) -> its names -> the modules they come from."""


def imports_of(name: str, path: Path, known: Container[str] = MODULES,
               faces: dict[str, dict[str, str]] = FACES) -> list[Import]:
    """What one module imports, resolved to module names (relative imports included); `from a
    import b` names a.b when that is one of the `known` modules, and the module b comes from
    when a is a lazy face (whose own imports run only when a name is asked for)."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            found += [Import(name, alias.name, node.lineno, alias.name) for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        names = tuple(alias.name for alias in node.names)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            target = submodule if submodule in known else \
                faces.get(base, {}).get(alias.name, (base,))[0]
            found.append(Import(name, target, node.lineno, base, names))
    return found


IMPORTS = [i for name, path in MODULES.items() for i in imports_of(name, path)]


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_source_is_found():
    assert {"viz_app.workspace", "viz_app.ui.app", "viz_app.io.detect",
            "components.annotation"} <= set(MODULES)
    assert any(i.target == "viz_app.workspace" for i in IMPORTS)


def test_only_the_ui_and_components_import_streamlit():
    wrong = [str(i) for i in IMPORTS if within(i.target, "streamlit")
             and not any(within(i.module, allowed) for allowed in STREAMLIT_ALLOWED)]
    assert wrong == []


def test_components_never_import_the_apps_ui():
    wrong = [str(i) for i in IMPORTS if within(i.module, "components")
             and within(i.target, "viz_app.ui")]
    assert wrong == []


@pytest.mark.parametrize("forbidden", ["viz_app.store", "viz_app.workspace"])
def test_readers_never_write_a_store(forbidden):
    wrong = [str(i) for i in IMPORTS if within(i.module, "viz_app.io")
             and within(i.target, forbidden)]
    assert wrong == []


def import_graph(package: str = "viz_app") -> nx.DiGraph:
    """Module -> module it imports, among the package's modules (each edge keeps its lines)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(m for m in MODULES if within(m, package))
    for i in IMPORTS:
        if within(i.module, package) and i.target in graph and i.target != i.module:
            graph.add_edge(i.module, i.target)
            graph.edges[i.module, i.target].setdefault("lines", []).append(i.line)
    return graph


def test_no_module_of_viz_app_imports_another_in_a_circle():
    graph = import_graph()
    assert graph.number_of_edges() > 50  # the graph is really there
    cycles = [" -> ".join(c + [c[0]]) for c in nx.simple_cycles(graph)]
    assert cycles == []


def test_the_cycle_check_sees_a_cycle_made_of_function_level_imports(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("def f():\n    from viz_app import second\n")
    second.write_text("from viz_app.first import f\n")
    known = {*MODULES, "viz_app.first", "viz_app.second"}
    found = imports_of("viz_app.first", first, known) + imports_of("viz_app.second", second, known)
    graph = nx.DiGraph((i.module, i.target) for i in found)
    assert list(nx.simple_cycles(graph)) in ([["viz_app.first", "viz_app.second"]],
                                             [["viz_app.second", "viz_app.first"]])


def test_the_domain_imports_without_streamlit():
    probe = ("import sys, viz_app, viz_app.workspace\n"
             "print(sorted(m for m in sys.modules if m == 'streamlit' "
             "or m.startswith('streamlit.')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_page_script_holds_a_bare_string_that_streamlit_would_print():
    # Streamlit's "magic" writes every bare expression of a page script to the page, so a
    # docstring under a constant shows up as a paragraph; only the module docstring is exempt.
    scripts = [*(REPO / "viz_app" / "ui" / "app_pages").glob("*.py"), REPO / "viz_app/ui/app.py"]
    printed = [f"{path.name}:{node.lineno}" for path in scripts
               for node in ast.parse(path.read_text("utf-8")).body[1:]
               if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
               and isinstance(node.value.value, str)]
    assert printed == []


FACED = ("viz_app.store", "viz_app.labels", "viz_app.suggest", "viz_app.export", "viz_app.charts")
"""Packages with a face: callers outside them import from the package, never a module of it."""
NOT_YET_ON_FACES: tuple[str, ...] = ()
"""Packages whose modules still import other packages' modules (none now)."""


def test_callers_import_a_package_from_its_face():
    wrong = [str(i) for i in IMPORTS for package in FACED
             if within(i.written, package) and i.written != package
             and not within(i.module, package)
             and not any(within(i.module, m) for m in NOT_YET_ON_FACES)]
    assert wrong == []


def test_the_faces_are_lazy_and_every_name_of_theirs_is_found():
    import importlib

    assert set(FACED) <= set(FACES)
    for face, names in FACES.items():
        package = importlib.import_module(face)
        missing = [n for n in names if not hasattr(package, n)]
        assert missing == [], face
        assert set(names) <= set(dir(package))


def test_no_face_shows_a_name_that_is_one_of_its_packages_modules():
    """Importing the module would set the package's attribute to it, hiding the name."""
    wrong = [f"{face}.{name}" for face, names in FACES.items() for name in names
             if f"{face}.{name}" in MODULES]
    assert wrong == []


def test_no_module_imports_the_face_of_its_own_package():
    """A room takes a sibling from the sibling's module: through its own lazy face the import
    would be hidden from the cycle check and run half-way through the face's first use."""
    wrong = [str(i) for i in IMPORTS for face in FACES
             if i.written == face and within(i.module, face) and i.module != face
             and any(f"{face}.{name}" not in MODULES for name in i.names)]
    assert wrong == []


def test_components_never_import_a_store():
    """A view piece is handed domain objects and calls the Workspace's facets; it reads no
    table and holds no store."""
    wrong = [str(i) for i in IMPORTS if within(i.module, "components")
             and within(i.target, "viz_app.store")]
    assert wrong == []


def test_the_labels_panels_navigation_is_pure():
    """components.navigation (which target N, P and S lead to) imports no Streamlit and no
    other view piece: it is unit-tested as plain functions."""
    wrong = [str(i) for i in IMPORTS if i.module == "components.navigation"
             and (within(i.target, "streamlit") or within(i.target, "components"))]
    assert wrong == [] and "components.navigation" in MODULES


def test_the_ui_and_the_cli_read_filters_through_the_query_module():
    """The filter language is viz_app.query: a page or a verb never takes it from a store."""
    language = {"Condition", "FIELDS", "NUMBER_FIELDS", "FilterError", "parse_condition",
                "IndexField", "field_kind"}
    wrong = [str(i) for i in IMPORTS
             if (within(i.module, "viz_app.ui") or within(i.module, "viz_app.cli"))
             and within(i.written, "viz_app.store") and language & set(i.names)]
    assert wrong == []
    assert any(i.target == "viz_app.query" for i in IMPORTS if within(i.module, "viz_app.ui"))


def _facet_classes() -> set[str]:
    """The classes of the Workspace's facets, as its door builds them (`self.x = Facet(...)`),
    and the ground they stand on."""
    door = ast.parse((REPO / "viz_app" / "workspace" / "door.py").read_text("utf-8"))
    return {"Ground"} | {node.value.func.id for node in ast.walk(door)
                         if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                         and isinstance(node.value.func, ast.Name)
                         and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                 and t.value.id == "self" for t in node.targets)}


def _store_classes() -> set[str]:
    return {node.name for path in (REPO / "viz_app" / "store").rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(node, ast.ClassDef) and node.name.endswith("Store")}


HANDED_DEBT: dict[str, str] = {}
"""Components still handed the Workspace itself, each named with its way out."""


def _handed(name: str, path: Path) -> Iterator[tuple[int, str, str, set[str]]]:
    """(line, function, parameter, the names its annotation says) of every parameter of every
    function of a module."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                said = ast.unparse(argument.annotation) if argument.annotation else "None"
                names = {n.id for n in ast.walk(ast.parse(said)) if isinstance(n, ast.Name)} | \
                        {n.value for n in ast.walk(ast.parse(said))
                         if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                yield node.lineno, node.name, f"{argument.arg}: {said}", names


def test_components_are_never_handed_a_facet_nor_a_store():
    """Domain objects in, the reviewer's choice out: no function of a component takes a facet
    of the Workspace (`ws.bookmarks`, ...), a table's store or (but for `HANDED_DEBT`) the
    Workspace itself, and none imports a facet's module; the page calls the facet with what
    the component returns."""
    forbidden = _facet_classes() | _store_classes()
    assert {"Bookmarks", "Campaigns", "Library", "BookmarkStore"} <= forbidden
    wrong = [str(i) for i in IMPORTS if within(i.module, "components")
             and within(i.written, "viz_app.workspace") and i.written != "viz_app.workspace"]
    for name, path in MODULES.items():
        if not within(name, "components"):
            continue
        refused = forbidden if name in HANDED_DEBT else forbidden | {"Workspace"}
        wrong += [f"{name}:{line} {function}({said})"
                  for line, function, said, names in _handed(name, path) if names & refused]
    assert wrong == []


def test_every_component_named_as_handed_the_workspace_still_is():
    # a debt paid is taken off the list, so the list never hides a new component of the kind
    assert all(any("Workspace" in names for *_, names in _handed(name, MODULES[name]))
               for name in HANDED_DEBT)


FLOORS: list[tuple[str, ...]] = [
    ("viz_app.errors", "viz_app.text", "viz_app.settings", "viz_app.model", "viz_app.face",
     "viz_app.query", "viz_app.search", "viz_app.sampling", "viz_app.version"),
    ("viz_app.analysis", "viz_app.synth", "viz_app.planted"),
    ("viz_app.io", "viz_app"),
    ("viz_app.labels", "viz_app.summary", "viz_app.listing", "viz_app.case_study",
     "viz_app.charts"),
    ("viz_app.store",),
    ("viz_app.suggest", "viz_app.branch"),
    ("viz_app.export", "viz_app.reward", "viz_app.comparison", "viz_app.training"),
    ("viz_app.workspace",),
    ("viz_app.cli", "viz_app.ui", "viz_app.__main__"),
]
"""The floors of viz_app, lowest first (docs/architecture.md draws them): the trace, the filter
language, how a package shows its face and the version; what a trace means; readers; judgement, pure (labels,
charts); every table (store); producers of suggested answers and branches; exports, reward
models and a run's training view; the Workspace; the CLI and the app. A module imports modules
of its own floor or below, never one above (`viz_app` alone is the package face, which names the
version and the readers' entry points)."""

UPWARD_DEBT: set[tuple[str, str]] = set()
"""Arrows that still run up, each named with its way out, so none is added unseen (none now:
the reward models' store keeps plain rows, which `viz_app.reward.stored` reads)."""


def floor_of(name: str) -> int | None:
    """The floor of a module: that of the longest package of `FLOORS` it is in."""
    found = [(len(package), level) for level, packages in enumerate(FLOORS)
             for package in packages if within(name, package) and (package != "viz_app"
                                                                      or name == "viz_app")]
    return max(found)[1] if found else None


def test_every_module_of_viz_app_has_a_floor():
    assert [m for m in MODULES if within(m, "viz_app") and floor_of(m) is None] == []


def test_no_module_of_viz_app_imports_one_above_its_floor():
    wrong = [f"{i} (floor {floor_of(i.module)} imports floor {floor_of(i.target)})"
             for i in IMPORTS if within(i.module, "viz_app") and within(i.target, "viz_app")
             and i.target in MODULES and floor_of(i.target) > floor_of(i.module)
             and (i.module, i.target) not in UPWARD_DEBT]
    assert wrong == []


def test_every_named_upward_arrow_still_exists():
    # a debt paid is taken off the list, so the list never hides a new arrow of the same pair
    found = {(i.module, i.target) for i in IMPORTS}
    assert UPWARD_DEBT <= found


def test_the_floor_check_sees_a_store_that_imports_a_producer():
    assert floor_of("viz_app.store.learned") < floor_of("viz_app.suggest.learned")
    assert floor_of("viz_app.workspace.library") > floor_of("viz_app.store.index")


FACETS = ["ground", "answers", "library", "labelling", "campaigns", "disputes", "suggestions",
          "bookmarks", "branches", "exports", "rewards", "door"]
"""The modules of viz_app/workspace/, bottom-up: each imports only those before it (the door
puts them together; the package face re-exports their public names)."""


def test_the_workspaces_facets_never_import_one_above_them():
    modules = {m.rpartition(".")[2] for m in MODULES if m.startswith("viz_app.workspace.")}
    assert modules == set(FACETS)
    wrong = [str(i) for i in IMPORTS if i.module.startswith("viz_app.workspace.")
             and i.target.startswith("viz_app.workspace.")
             and FACETS.index(i.target.rpartition(".")[2])
             >= FACETS.index(i.module.rpartition(".")[2])]
    assert wrong == []


LONGEST = 800
"""Lines a source file may hold before its docstring must say why it is longer."""
REASON = "Longer than 800 lines because"
"""How that written reason begins, in the module's docstring."""
LONG_DEBT: dict[str, str] = {}
"""Files still longer, each named with its way out, so none grows unseen past the line."""


def long_files() -> dict[str, int]:
    """Every source file outside tests (and their fixtures) longer than `LONGEST` lines."""
    found = {}
    for path in sorted(REPO.rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith(("tests/", ".")) or "/fixtures/" in relative:
            continue
        lines = len(path.read_text("utf-8").splitlines())
        if lines > LONGEST:
            found[relative] = lines
    return found


def test_no_file_is_over_800_lines_without_a_written_reason():
    unexplained = []
    for relative, lines in long_files().items():
        doc = ast.get_docstring(ast.parse((REPO / relative).read_text("utf-8"))) or ""
        if REASON not in doc and relative not in LONG_DEBT:
            unexplained.append(f"{relative}: {lines} lines")
    assert unexplained == []


def test_every_named_long_file_is_still_long():
    # a file split is taken off the list, so the list never hides a new long file
    assert set(LONG_DEBT) <= set(long_files())
