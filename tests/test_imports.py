"""The shape of the package: its layers (:data:`LAYERS`: a module imports only its own layer
and those below), no import cycles among Sleuth's modules, no overlong modules.

The import graph is read from the source (the AST of every module under ``src/sleuth``),
not from ``sys.modules``: every ``import`` and ``from ... import`` counts, also those inside
functions and under ``if TYPE_CHECKING:``, since a cycle hidden in a function is still a
cycle of the design. ``from sleuth.x import name`` is an edge to ``sleuth.x``, and to
``sleuth.x.name`` too when that is a module. The implicit import of a module's parent
packages is not an edge (every submodule would otherwise depend on its package's
``__init__``); inside Sleuth, modules import ``from sleuth.x import name``, never
``from sleuth import x``.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "sleuth"
MAX_LINES = 600
REASON = re.compile(r"\bLong because\b")  # the sentence of its docstring that says why

Edge = tuple[str, str]  # (importing module, imported module)

# The layers, bottom first: each a list of modules or packages (a package holds its
# submodules; ``sleuth`` itself, the package's ``__init__``, holds nothing but itself).
# docs/architecture.md describes them; the longest prefix places a module, and a module
# no entry places fails test_every_module_has_a_layer.
LAYERS: list[tuple[str, list[str]]] = [
    ("core", ["sleuth._version", "sleuth.errors", "sleuth.configs", "sleuth.settings",
              "sleuth.types", "sleuth.data", "sleuth.plugins"]),
    ("text", ["sleuth.text"]),
    ("prompts", ["sleuth.prompts"]),
    ("llm", ["sleuth.llm"]),
    ("ingest", ["sleuth.ingest", "sleuth.embed"]),
    ("store", ["sleuth.store"]),
    ("graph", ["sleuth.graph"]),
    ("index", ["sleuth.index"]),
    ("retrieval", ["sleuth.retrieval"]),
    ("tools", ["sleuth.tools"]),
    # packs for one kind of corpus, registered by plugin: above the tools, below the agent
    ("packs", ["sleuth.facts", "sleuth.statements", "sleuth.writing"]),
    ("agent", ["sleuth.agent"]),
    ("eval", ["sleuth.eval"]),
    ("service", ["sleuth.service"]),
    ("server", ["sleuth.server"]),
    ("api", ["sleuth.api", "sleuth"]),
    ("cli", ["sleuth.cli", "sleuth.__main__"]),
    ("testing", ["sleuth.testing"]),
]


def modules(root: Path = SRC) -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(module of the package, line) for each import in the module ``name``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                yield target, node.lineno


def import_graph(root: Path = SRC) -> tuple[dict[str, set[str]], dict[Edge, list[str]]]:
    """The import graph (module → modules it imports) and where each edge is written."""
    found = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in found}
    where: dict[Edge, list[str]] = {}
    for name, path in found.items():
        for target, line in sorted(imported(name, path, set(found)), key=lambda t: t[1]):
            graph[name].add(target)
            where.setdefault((name, target), []).append(
                f"{path.relative_to(root.parent)}:{line}")
    return graph, where


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (each a cycle or a
    knot of cycles), iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def cycle_through(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One shortest cycle through the component's first module, as a path back to it."""
    start, members = component[0], set(component)
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if child not in came:
                came[child] = node
                queue.append(child)
    raise AssertionError(f"{component} is not strongly connected")


def describe(graph: dict[str, set[str]], where: dict[Edge, list[str]],
             component: list[str]) -> str:
    path = cycle_through(graph, component)
    steps = [f"    {a} -> {b}  ({', '.join(where[(a, b)])})" for a, b in pairwise(path)]
    return "\n".join([f"  {len(component)} modules: {', '.join(component)}", *steps])


def overlong(root: Path = SRC) -> list[str]:
    """Modules over ``MAX_LINES`` lines whose docstring does not say why."""
    out = []
    for name, path in modules(root).items():
        text = path.read_text("utf-8")
        lines = text.count("\n") + (not text.endswith("\n"))
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_LINES and not REASON.search(docstring):
            out.append(f"  {name} ({path.relative_to(root.parent)}): {lines} lines")
    return out


def holds(member: str, module: str) -> bool:
    """Whether the entry ``member`` of :data:`LAYERS` holds ``module``: itself, or a
    submodule of it, but the package's own name holds only its ``__init__``."""
    return module == member or (member != PACKAGE and module.startswith(member + "."))


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of the layer holding ``module`` (longest prefix)."""
    best: tuple[int, int] | None = None
    for number, (_, members) in enumerate(LAYERS):
        for member in members:
            if holds(member, module) and (best is None or len(member) > best[1]):
                best = (number, len(member))
    return None if best is None else best[0]


def unplaced(names: list[str]) -> list[str]:
    """The module names no layer of :data:`LAYERS` holds."""
    return [name for name in names if layer_of(name) is None]


def upward(graph: dict[str, set[str]], where: dict[Edge, list[str]]) -> list[str]:
    """Every import of a module in a higher layer, where it is written."""
    out = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = layer_of(module), layer_of(target)
            if low is not None and high is not None and high > low:
                out.append(f"  {module} ({LAYERS[low][0]}) imports {target} "
                           f"({LAYERS[high][0]}): {', '.join(where[(module, target)])}")
    return out


def test_every_module_has_a_layer() -> None:
    missing = unplaced(list(modules()))
    assert not missing, f"modules in no layer of LAYERS: {missing}"


def test_a_module_of_no_layer_is_found() -> None:
    """The package's own name places only its ``__init__``: a new package that no entry
    names is unplaced (the test above can fail), and the packs sit below the agent."""
    assert unplaced(["sleuth", "sleuth.api", "sleuth.nowhere", "sleuth.nowhere.deep",
                     "sleuth.agent.checks.base"]) == ["sleuth.nowhere", "sleuth.nowhere.deep"]
    names = [name for name, _ in LAYERS]
    assert layer_of("sleuth.statements.metric") == names.index("packs") < names.index("agent")
    assert layer_of("sleuth.facts.kin") == names.index("packs") > names.index("tools")


def test_no_module_imports_a_higher_layer() -> None:
    graph, where = import_graph()
    found = upward(graph, where)
    assert not found, "imports from a lower layer up to a higher one:\n" + "\n".join(found)


def test_nothing_below_the_command_line_imports_click() -> None:
    below = [name for name, path in modules().items() if layer_of(name) is not None
             and LAYERS[layer_of(name) or 0][0] not in ("cli", "testing")
             and any(line.strip().startswith(("import click", "from click"))
                     for line in path.read_text("utf-8").splitlines())]
    assert not below, f"click imported below sleuth.cli: {below}"


# modules that are a process's own main program: their output is that process's log
PROGRAMS = {"sleuth.llm.daemon"}


def test_the_library_never_prints() -> None:
    printing = [name for name, path in modules().items()
                if LAYERS[layer_of(name) or 0][0] not in ("cli", "testing")
                and name not in PROGRAMS
                and any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "print"
                        for node in ast.walk(ast.parse(path.read_text("utf-8"))))]
    assert not printing, f"print() below sleuth.cli: {printing}"


def test_no_import_cycles() -> None:
    graph, where = import_graph()
    cycles = [describe(graph, where, c) for c in strongly_connected(graph)]
    assert not cycles, "import cycles in src/sleuth (each knot, with one cycle through " \
        "it):\n" + "\n".join(cycles)


def test_the_query_text_helpers_import_nothing_of_sleuth_but_the_lexicon() -> None:
    graph, _ = import_graph()
    assert graph["sleuth.text.lexicon"] == set()
    assert graph["sleuth.text.querytext"] == {"sleuth.text.lexicon"}
    assert "sleuth.text.querytext" in graph["sleuth.retrieval"]


def test_modules_are_short_or_say_why() -> None:
    long = overlong()
    assert not long, f"modules over {MAX_LINES} lines without a 'Long because ...' " \
        "sentence in their docstring:\n" + "\n".join(long)


# -- the checks themselves, on small packages written here --------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_cycles_are_found_through_functions_type_checking_and_submodule_names(
        tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from sleuth.b import thing\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n",
        "c.py": "from sleuth.pkg import d\n",
        "pkg/__init__.py": "",
        "pkg/d.py": "from ..a import f\n",
        "e.py": "import sleuth.a\n",  # imports into the cycle, is not part of it
    })
    graph, where = import_graph(root)
    assert graph["sleuth.pkg.d"] == {"sleuth.a"} and graph["sleuth.e"] == {"sleuth.a"}
    assert graph["sleuth.c"] == {"sleuth.pkg", "sleuth.pkg.d"}
    components = strongly_connected(graph)
    assert components == [["sleuth.a", "sleuth.b", "sleuth.c", "sleuth.pkg.d"]]
    assert cycle_through(graph, components[0]) == [
        "sleuth.a", "sleuth.b", "sleuth.c", "sleuth.pkg.d", "sleuth.a"]
    assert "sleuth/a.py:2" in describe(graph, where, components[0])


def test_a_package_without_cycles_passes(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "from sleuth.a import f\n",  # the package re-exports: not a cycle
        "a.py": "import os\nfrom sleuth.b import g\n\ndef f():\n    import sleuth.b\n",
        "b.py": "def g():\n    pass\n",
    })
    assert strongly_connected(import_graph(root)[0]) == []


def test_long_modules_need_a_reason(tmp_path: Path) -> None:
    body = "x = 1\n" * MAX_LINES
    root = _package(tmp_path, {
        "__init__.py": "",
        "short.py": '"""Short."""\n' + "x = 1\n" * (MAX_LINES - 1),
        "silent.py": '"""A module."""\n' + body,
        "reasoned.py": '"""A module.\n\nLong because one state machine; split, it would '
                       'pass its state around."""\n' + body,
    })
    assert [line.split()[0] for line in overlong(root)] == ["sleuth.silent"]
