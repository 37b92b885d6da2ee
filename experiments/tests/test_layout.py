"""The experiments annex's layout: every module imports on its own, no module imports itself
through others (directly or lazily inside a function), and no source file is over 800 lines."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import paam_experiments

ROOT = Path(paam_experiments.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    """Every module of the annex by its dotted name, packages by their __init__.py."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the annex's modules it imports anywhere in its source (at the top or inside a
    function), ``from pkg import name`` counted as the submodule where ``name`` is one."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``, each as the path that closes it."""
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_module_of_the_annex_imports_itself_through_others():
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


@pytest.mark.parametrize("module", sorted(_modules()))
def test_every_module_imports_on_its_own(module):
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_every_module_is_found_by_the_package_walk():
    walked = {m.name for m in pkgutil.walk_packages(paam_experiments.__path__,
                                                    "paam_experiments.")}
    assert walked | {"paam_experiments"} == set(_modules())
    importlib.import_module("paam_experiments.cli")


def test_no_source_file_is_over_800_lines():
    long = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 800}
    assert long == {}
