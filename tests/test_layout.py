"""The house's shape: no module of engine/ or bot/ imports one that imports it back (round any loop, counting imports
inside functions and under TYPE_CHECKING), and the engine never imports Discord."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules() -> dict[str, Path]:
    found = {}
    for top in ("engine", "bot"):
        for path in (ROOT / top).rglob("*.py"):
            found[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that `name` imports, wherever the import stands in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:  # a name imported from a module: the module
                target = target.rpartition(".")[0]
            # A package's __init__ runs before its modules: a module importing its own package is no edge back.
            if target and target != name and not name.startswith(target + "."):
                out.add(target)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return out


def test_no_module_imports_one_that_imports_it():
    known = modules()
    graph = {name: imported(name, path, known) for name, path in known.items()}
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle_through_a_type_checking_import(tmp_path):
    """The check above can fail: a circle closed only by a TYPE_CHECKING import (or one inside a function) counts."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from .b import thing\n")
    (tmp_path / "pkg" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import x\n")
    (tmp_path / "pkg" / "c.py").write_text("def f():\n    from . import a\n")
    known = {f"pkg.{n}": tmp_path / "pkg" / f"{n}.py" for n in "abc"} | {"pkg": tmp_path / "pkg" / "__init__.py"}
    graph = {name: imported(name, path, known) for name, path in known.items()}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_the_engine_never_imports_discord():
    known = modules()
    for name, path in known.items():
        if not name.startswith("engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n == "discord" or n.startswith("discord.") for n in names), f"{name} imports discord"


def test_every_folder_of_code_or_data_is_declared_so_pip_ships_it_without_a_warning():
    """setuptools warns (a box of asterisks at `pip install`) for a folder Python can import that `packages` does
    not name, and a data file no `package-data` pattern matches is left out of the wheel."""
    import fnmatch
    import tomllib

    root = Path(__file__).parent.parent
    tool = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages, data = set(tool["packages"]), tool["package-data"]
    assert all((root / p.replace(".", "/")).is_dir() for p in packages)  # nothing listed that is not there
    # Without package-dir naming the root, `pip install -e .` installs a meta path finder and prints setuptools'
    # "Editable installation" warning box (setuptools 84: editable_wheel._select_strategy).
    assert tool.get("package-dir") == {"": "."}
    for top in ("engine", "bot"):
        for folder in [root / top, *(p for p in (root / top).rglob("*") if p.is_dir() and p.name != "__pycache__")]:
            files = [f for f in folder.iterdir() if f.is_file() and f.suffix != ".pyc"]
            if not files:
                continue
            name = ".".join(folder.relative_to(root).parts)
            assert name in packages, f"{name} is not in [tool.setuptools] packages"
            for f in files:
                if f.suffix != ".py":
                    assert any(fnmatch.fnmatch(f.name, pattern) for pattern in data.get(name, [])), \
                        f"{f.relative_to(root)} matches no [tool.setuptools.package-data] pattern of {name}"
