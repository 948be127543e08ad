"""The import layers, checked from the source: app/ -> engine/ -> kernels/, never upward, and no
import cycle between modules of the three packages.

Every module's imports are read with ast (function-level and TYPE_CHECKING imports included: a
lazy import is still a dependency), so the check needs none of the packages importable. The
checks are shown able to fail on planted graphs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "engine", "kernels")
# What each layer may not import, by the top name of the import (third-party names included).
FORBIDDEN = {"kernels": ("engine", "app"), "engine": ("app", "textual")}

Graph = dict[str, set[str]]
# The last commit with the three circles closed (main before they were opened).
BEFORE = "e9879cdce039be4a560f49fee77979f9999fdd5b"


def module_files(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module of the three packages: dotted name -> (file, is a package's __init__)."""
    mods: dict[str, tuple[Path, bool]] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (path, is_pkg)
    return mods


def imported_names(tree: ast.AST, module: str, is_pkg: bool) -> set[str]:
    """The absolute dotted names a module's import statements name, anywhere in its body
    (``from a.b import c`` gives ``a.b.c``: c may be a module or a name, resolved later)."""
    package = module if is_pkg else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base_parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.update(f"{base}.{a.name}" if a.name != "*" else base for a in node.names)
    return names


def _resolve(name: str, mods: dict[str, tuple[Path, bool]]) -> str | None:
    """The module of ours that an imported name lands in (its longest known prefix), if any:
    ``engine.watchers.Watch`` lands in engine.watchers, ``engine.cluster.hosts`` in that module."""
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def build_graph(root: Path = ROOT) -> tuple[Graph, dict[str, set[str]]]:
    """(module -> our modules it imports, module -> every dotted name it imports)."""
    mods = module_files(root)
    graph: Graph = {}
    raw: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        names = imported_names(ast.parse(path.read_text(), str(path)), name, is_pkg)
        raw[name] = names
        graph[name] = {t for t in (_resolve(n, mods) for n in names) if t is not None} - {name}
    return graph, raw


def layer_violations(raw: dict[str, set[str]]) -> list[str]:
    """'module imports name' for each import that runs up the layers (or into textual from the
    engine)."""
    bad = []
    for module, names in sorted(raw.items()):
        forbidden = FORBIDDEN.get(module.partition(".")[0], ())
        for n in sorted(names):
            if n.partition(".")[0] in forbidden:
                bad.append(f"{module} imports {n}")
    return bad


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles: each strongly connected set of more than one module (or a module
    importing itself), sorted (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1 or v in graph.get(v, ()):
                    found.append(sorted(scc))
    return sorted(found)


@pytest.fixture(scope="module")
def graph_and_raw() -> tuple[Graph, dict[str, set[str]]]:
    return build_graph()


def test_the_graph_sees_every_package_and_lazy_imports(graph_and_raw) -> None:
    graph, raw = graph_and_raw
    for pkg in PACKAGES:
        assert sum(m.startswith(pkg + ".") for m in graph) > 5, pkg
    # function-level imports are read: app.main opens the console lazily
    assert "app.console" in graph["app.main"]
    # TYPE_CHECKING imports are read: engine.watchers names the exporter's types only there
    assert "engine.exporter" in graph["engine.watchers"]
    # a name imported from a module is an edge to that module
    assert "kernels.backend" in graph["kernels.bench"]
    assert "engine.watchers.Watch" in raw["engine.verbs.runner"]
    assert "engine.watchers" in graph["engine.verbs.runner"]


def test_no_import_runs_up_the_layers(graph_and_raw) -> None:
    _, raw = graph_and_raw
    assert layer_violations(raw) == []


def test_no_import_cycle_in_app_engine_kernels(graph_and_raw) -> None:
    graph, _ = graph_and_raw
    assert cycles(graph) == []


@pytest.mark.parametrize(("a", "b"), [
    ("app.main", "app.live_source"), ("app.main", "app.serve"),
    ("app.cluster_source", "app.screens.hosts"),
    ("engine.exporter", "engine.watchers"), ("kernels.bench", "kernels.cuda.bench"),
])
def test_the_three_circles_stay_open(graph_and_raw, a: str, b: str) -> None:
    graph, _ = graph_and_raw
    assert not (_reaches(graph, a, b) and _reaches(graph, b, a))


def _reaches(graph: Graph, src: str, dst: str) -> bool:
    seen, todo = {src}, [src]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w == dst:
                return True
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return False


# ---- the checks can fail ----------------------------------------------------------------------

def test_a_planted_cycle_is_found(graph_and_raw) -> None:
    graph = {m: set(t) for m, t in graph_and_raw[0].items()}
    graph["engine.watchers"].add("engine.exporter")
    graph["engine.exporter"].add("engine.watchers")  # the circle that was
    graph["app.state"].add("app.main")  # a long one: main reaches state through the console
    found = cycles(graph)
    assert ["engine.exporter", "engine.watchers"] in found
    long = [c for c in found if "app.state" in c]
    assert len(long) == 1 and "app.main" in long[0] and len(long[0]) > 2
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_a_planted_upward_import_is_found(graph_and_raw) -> None:
    raw = {m: set(n) for m, n in graph_and_raw[1].items()}
    raw["kernels.backend"].add("engine.config")
    raw["engine.exporter"].add("textual.app")
    raw["engine.stream.fold"].add("app.state")
    raw["app.state"].add("kernels.backend")  # downward across two layers: allowed
    assert layer_violations(raw) == [
        "engine.exporter imports textual.app",
        "engine.stream.fold imports app.state",
        "kernels.backend imports engine.config",
    ]


def test_the_circles_that_were_are_found(tmp_path: Path) -> None:
    """The check on the tree as it was before the circles were opened: all three found."""
    import subprocess

    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE, *PACKAGES],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        pytest.skip(f"no git history here ({archive.stderr.decode().strip()[:80]})")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    graph, _ = build_graph(old)
    found = cycles(graph)
    assert ["engine.exporter", "engine.watchers"] in found
    assert ["kernels.bench", "kernels.cuda.bench"] in found
    assert any({"app.main", "app.live_source", "app.cluster_source", "app.screens.hosts"} <= set(c)
               for c in found)


def test_a_planted_source_tree_is_read(tmp_path: Path) -> None:
    """The graph from files on disk: a function-level relative import up a layer, a cycle
    through ``from pkg import module``."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "kernels" / "sub").mkdir()
    (tmp_path / "kernels" / "sub" / "__init__.py").write_text("")
    (tmp_path / "kernels" / "sub" / "a.py").write_text(
        "def f():\n    from ..b import x\n    import engine.y\n    return x\n")
    (tmp_path / "kernels" / "b.py").write_text("from kernels.sub import a\nx = 1\n")
    (tmp_path / "engine" / "y.py").write_text("import os\n")
    (tmp_path / "app" / "z.py").write_text("from engine import y\n")
    graph, raw = build_graph(tmp_path)
    assert graph["kernels.sub.a"] == {"kernels.b", "engine.y"}
    assert graph["app.z"] == {"engine.y"}
    assert cycles(graph) == [["kernels.b", "kernels.sub.a"]]
    assert layer_violations(raw) == ["kernels.sub.a imports engine.y"]
