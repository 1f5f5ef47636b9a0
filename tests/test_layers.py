"""Imports only go down the layers, and no module imports itself back through others.

The layers are the ones ``hudi_cdc/ARCHITECTURE.md`` describes (GUIDE.md's twelve, as they fit the code). A module's layer is
that of the longest prefix below that names it. Every import of a ``hudi_cdc`` or
``payloads`` module counts, wherever it sits: at the top, inside a function, or
under ``TYPE_CHECKING``. Type-only imports are held to the same rule: a type a lower
layer needs from a higher one is a piece that sits too high, and a loop hidden
from the interpreter is still a loop for the reader.

Importing ``a.b.c`` counts as an import of ``a.b.c`` only; the package
``__init__`` modules Python runs on the way are modules of their own, checked for
their own imports (``hudi_cdc``'s ``__init__`` is the public API, the top layer).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hudi_cdc", "payloads")

LAYERS: dict[str, int] = {
    # 1 ground
    "hudi_cdc._version": 1,
    "hudi_cdc.errors": 1,
    "hudi_cdc._jvm": 1,
    "hudi_cdc._py4j_names": 1,
    "hudi_cdc.console": 1,
    # 2 the JVM and the session
    "hudi_cdc.jars": 2,
    "hudi_cdc.jvm_archive": 2,
    "hudi_cdc.spark": 2,
    # 3 settings and policies
    "hudi_cdc.settings": 3,
    "hudi_cdc.config": 3,
    "hudi_cdc.policy": 3,
    "payloads": 3,
    # 4 pure data
    "hudi_cdc.envelope": 4,
    # 5 the sink
    "hudi_cdc.sink": 5,
    # 6 upstream of the table: the source database, its connector, the comparison
    "hudi_cdc.upstream": 6,
    # 7 sources
    "hudi_cdc.sources": 7,
    # 8 checks
    "hudi_cdc.checks": 8,
    # 9 one table's round
    "hudi_cdc.pipeline": 9,
    "hudi_cdc.small_plan": 9,
    # 10 many tables
    "hudi_cdc.service": 10,
    # 11 operator commands
    "hudi_cdc.ops": 11,
    # 12 shells
    "hudi_cdc.settings_doc": 12,
    "hudi_cdc": 12,
}


def layer_of(module: str) -> int:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(f"{module} has no layer: add its prefix to LAYERS (and to ARCHITECTURE.md)")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(module: str, source: str, known: set[str], *, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of a known module in ``source``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if sub in known else base))
    return [(line, name) for line, name in found if name in known]


def graph() -> dict[str, list[tuple[int, str]]]:
    found = modules()
    return {
        name: imports(name, path.read_text(), set(found), is_package=path.name == "__init__.py")
        for name, path in found.items()
    }


def upward(edges: dict[str, list[tuple[int, str]]]) -> list[str]:
    return [
        f"{module}:{line} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in edges.items()
        for line, target in targets
        if layer_of(target) > layer_of(module)
    ]


def cycles(edges: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), and modules importing themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for _, target in edges.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or any(t == node for _, t in edges.get(node, [])):
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_imports_only_go_down() -> None:
    problems = upward(graph())
    assert not problems, "imports that point up the layers:\n" + "\n".join(problems)


def test_no_import_loops() -> None:
    loops = cycles(graph())
    assert not loops, "modules that import each other:\n" + "\n".join(" <-> ".join(group) for group in loops)


def test_check_areas_stand_on_the_kit_alone() -> None:
    # One area's check reaching into another's would make the areas a tangle again; what two share goes to the kit.
    problems = [
        f"{module}:{line} imports {target}"
        for module, targets in graph().items()
        if module.startswith("hudi_cdc.checks.") and module != "hudi_cdc.checks.validate"
        for line, target in targets
        if target.startswith("hudi_cdc.checks") and target != "hudi_cdc.checks.kit"
    ]
    assert not problems, "check modules that import another area (or the orchestrator):\n" + "\n".join(problems)


def test_the_checker_catches_what_it_forbids() -> None:
    known = {"hudi_cdc.errors", "hudi_cdc.pipeline", "hudi_cdc.sources.kafka", "hudi_cdc.sources.files"}
    late = "def f():\n    if True:\n        from hudi_cdc.pipeline import ingest_once\n"
    found = imports("hudi_cdc.errors", late, known)
    assert found == [(3, "hudi_cdc.pipeline")]
    assert upward({"hudi_cdc.errors": found}) == ["hudi_cdc.errors:3 (layer 1) imports hudi_cdc.pipeline (layer 9)"]
    relative = imports("hudi_cdc.sources.kafka", "from . import files\nfrom .files import x\n", known)
    assert relative == [(1, "hudi_cdc.sources.files"), (2, "hudi_cdc.sources.files")]
    loop = {
        "hudi_cdc.sources.kafka": [(1, "hudi_cdc.sources.files")],
        "hudi_cdc.sources.files": [(9, "hudi_cdc.sources.kafka")],
    }
    assert upward(loop) == []  # the same layer is allowed ...
    assert cycles(loop) == [["hudi_cdc.sources.files", "hudi_cdc.sources.kafka"]]  # ... but not a loop
    assert cycles({"hudi_cdc.errors": [(1, "hudi_cdc.errors")]}) == [["hudi_cdc.errors"]]
