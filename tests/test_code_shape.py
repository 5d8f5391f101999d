"""The shape of the product code a newcomer must read: no import circle between product modules and no function
longer than 80 lines (docs/ARCHITECTURE.md, "Layers"; docs/development.md).

The import graph is built from the source with ``ast``: every ``import`` and ``from ... import`` of a product module
(``core``, ``easl_plugin``, ``tui``), at module level or inside a function, relative ones resolved, ``from package
import name`` counted as an import of the submodule ``name`` when there is one; a package's ``__init__`` is a module
like the others. A circle is a strongly connected component of two or more modules (Tarjan's algorithm).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "easl_plugin", "tui", "label_config")
MAX_FUNCTION_LINES = 80


def product_modules() -> dict[str, Path]:
    """Module name -> source file of every product module."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("easl_toolkit", *(parts[:-1] if parts[-1] == "__init__" else parts)))
            modules[name] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules that module ``name`` (file ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more nodes (Tarjan 1972), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
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
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_between_product_modules() -> None:
    modules = product_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert sum(len(v) for v in graph.values()) > 100  # the graph was read
    assert circles(graph) == []


def test_no_product_function_is_longer_than_80_lines() -> None:
    long = []
    for name, path in product_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


#: Where a method may be named: the models themselves and the studies, which compare methods by name.
KIND_ALLOWED = ("core/models/", "core/simulate/", "tui/commands/simulate")
#: The flags by which callers once asked which kind of model they held.
KIND_FLAGS = {"refits", "order_dependent", "needs_whole_hit", "refit_on_change", "needs_annotator"}


def kind_branches(path: Path) -> list[str]:
    """The places in ``path`` that ask which kind of model they hold: a kind flag read, or a method's name compared
    (``x.method == "aware"``, ``method in ("ra", "da")``)."""
    from easl_toolkit.core.models import METHODS

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in KIND_FLAGS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = [c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)]
            if any(isinstance(v, str) and v in METHODS for v in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_kind_finder_finds_flags_and_compared_method_names(tmp_path: Path) -> None:
    probe = ROOT / "tests" / "_kind_probe.py"
    probe.write_text('if model.refits or hyper.method == "aware" or m in ("ra", "da"):\n    pass\nx = "da"\n')
    try:
        assert len(kind_branches(probe)) == 3
    finally:
        probe.unlink()


def test_no_product_module_outside_the_models_asks_which_kind_of_model_it_holds() -> None:
    asked = [
        place
        for path in product_modules().values()
        if not str(path.relative_to(ROOT)).startswith(KIND_ALLOWED)
        for place in kind_branches(path)
    ]
    assert not asked, "ask the model instead (core/models/base.py, Model):\n" + "\n".join(asked)


MAX_PARAMETERS = 8
#: Functions that still take more than :data:`MAX_PARAMETERS` parameters, by module and name; each is to be given an
#: options object as its module is next reworked (STYLE, "One options object"); remove an entry when it is done.
MANY_PARAMETERS = {
    "easl_toolkit.core.campaign.design.choose_iteration",
    "easl_toolkit.core.campaign.estimators.bootstrap_intervals",
    "easl_toolkit.core.store.observations._append",
}


def parameter_counts(path: Path) -> dict[str, int]:
    """Name -> number of parameters of every function of ``path`` (positional, keyword-only, ``*args`` and
    ``**kwargs`` each count one; a method's ``self`` or ``cls`` does not)."""
    counts = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            if names and names[0] in ("self", "cls"):
                names = names[1:]
            counts[node.name] = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return counts


def test_the_parameter_counter_counts_keyword_only_and_star_arguments_but_not_self(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f(a, /, b, *c, d, **e):\n    pass\nclass K:\n    def m(self, a, *, b):\n        pass\n")
    assert parameter_counts(probe) == {"f": 5, "m": 2}


def test_no_product_function_takes_more_than_8_parameters() -> None:
    many = {
        f"{name}.{function}"
        for name, path in product_modules().items()
        for function, n in parameter_counts(path).items()
        if n > MAX_PARAMETERS
    }
    assert many - MANY_PARAMETERS == set(), "group related parameters into a frozen dataclass (core/metrics/options.py)"
    assert MANY_PARAMETERS - many == set(), "these take 8 parameters or fewer now: remove them from MANY_PARAMETERS"
