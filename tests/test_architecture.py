"""Guards on the package's shape: imports point down the layers of DESIGN.md, no module reaches into
another package's private names, every public name has one public home, and the top level is
DESIGN's public API plus the core data types.

The import graph is read from the source (AST), so a lazy import inside a function counts as much as
one at the top of a module. Imports under `if TYPE_CHECKING:` are annotations only and are not
layer edges.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tracegrade"
DESIGN = ROOT.parent / "shared" / "DESIGN.md"

# DESIGN.md's layers, bottom first. A module belongs to the layer of its first component under
# `tracegrade`, except a package's `_cli` module, which is the CLI surface of that package (layer 6).
# The small helper modules, placed by what they import and who needs them:
# - `_gc`, `_lazy`, `_hints`, `_yaml`, `_version`, `_redact`, `_text` (layer 1): utilities importing nothing
#   of tracegrade (GC pausing, PEP 562 lazy attributes, did-you-mean hints, YAML with line numbers, the
#   version, redaction by key glob for batch and the reports, recorded text made safe to print), used from
#   every layer.
# - `content` (layer 2): turns on content recording in Pydantic AI's instrumentation, i.e. it decides
#   what the telemetry holds; it imports nothing of tracegrade.
# - `telemetry` (layer 5): writes results back as OTel events; used by the receiver's online grading.
# - `demo`, `__main__` (layer 6): the CLI's demo and entry point.
# The top-level package `tracegrade` is the facade above every layer (it may import anything).
LAYERS: dict[int, str] = {
    1: "spans trajectory results errors _gc _lazy _hints _yaml _version _redact _text",
    2: "_sdk tree query content",
    # reading: the conventions, and the two ways spans arrive as trees read into trajectories
    # (`Capture.trajectory` runs `dialects.extract`; `ingest` splits a trace by its agent runs)
    3: "dialects capture ingest",
    4: "matching evaluators grading spec",
    5: "receiver batch telemetry",
    # `models`, `yaml_loader`, `runner`, `adapters`: pytest-agent-eval's module paths, re-exporting the
    # plugin's names without an `__all__` (their public home stays where they are defined)
    6: "reporting cli pytest_plugin bridges adapters models yaml_loader runner demo __main__",
}
FACADE = 7

# Known upward edges, each to be removed by the change named in its comment; an entry that no longer
# matches fails `test_allowlists_hold_only_live_violations`, so the list only shrinks.
UPWARD_ALLOWED: dict[tuple[str, str], str] = {}

# Known imports of another package's private names, each with the helper whose change removes it.
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {}

# Public modules whose `__all__` lists a name they import rather than define (a second public home).
# Each entry is (module, name) with the helper whose file it is.
REEXPORT_ALLOWED: dict[tuple[str, str], str] = {}

# The core data types, at the top level beside DESIGN's names.
CORE_TYPES = {"Capture", "Span", "Trajectory", "ToolCall", "ModelRequest", "AgentRun", "EvalResult", "TurnContext"}
# pytest-agent-eval 0.3.0's top-level names beyond DESIGN's (the drop-in is one import change);
# `Evaluator` is also in tracegrade.evaluators, as there.
PYTEST_AGENT_EVAL_TOP = {"JudgeConfig", "ToolCallArgsConfig", "Evaluator"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the module imported from (a submodule when `from pkg import submodule`)
    name: str | None  # the name imported, None for `import x` or a submodule
    typing_only: bool
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _typing_only_nodes(tree: ast.Module) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def _imports(module: str) -> list[Import]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = _typing_only_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "tracegrade":
                source = node.module or ""
            else:
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                target, name = (sub, None) if sub in MODULES else (source, alias.name)
                found.append(Import(module, target, name, id(node) in typing_only, node.lineno))
        elif isinstance(node, ast.Import):
            found += [
                Import(module, alias.name, None, id(node) in typing_only, node.lineno)
                for alias in node.names
                if alias.name.split(".")[0] == "tracegrade"
            ]
    return found


IMPORTS = [imp for module in MODULES for imp in _imports(module)]


def _layer(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts:
        return FACADE
    if parts[-1] == "_cli":
        return 6
    for layer, names in LAYERS.items():
        if parts[0] in names.split():
            return layer
    raise AssertionError(f"{module} is in no layer: add its top-level name to LAYERS (with the reason)")


def _upward_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, the later layer's top module) -> the import lines."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for imp in IMPORTS:
        if not imp.typing_only and _layer(imp.target) > _layer(imp.importer):
            top = ".".join(imp.target.split(".")[:2])
            edges[(imp.importer, top)].append(f"{MODULES[imp.importer].relative_to(ROOT)}:{imp.line}")
    return edges


def _private_reach() -> dict[tuple[str, str], str]:
    """(importer, module._name) -> line, for a private name imported from a module of another package.

    Modules of one package share their private names (a package is the unit of encapsulation); a
    package may import its own private submodules; anything in `tracegrade` may use the top-level
    private helpers (`_gc`, `_lazy`, ...), which are private to the distribution, not to a module.
    """
    found = {}
    for imp in IMPORTS:
        if imp.name is None or not imp.name.startswith("_") or imp.name.startswith("__"):
            continue
        importer_package = (
            imp.importer if MODULES[imp.importer].name == "__init__.py" else imp.importer.rpartition(".")[0]
        )
        target_package = (
            imp.target if MODULES.get(imp.target, Path()).name == "__init__.py" else imp.target.rpartition(".")[0]
        )
        if importer_package == target_package or importer_package.startswith(target_package + "."):
            continue
        found[(imp.importer, f"{imp.target}.{imp.name}")] = f"{MODULES[imp.importer].relative_to(ROOT)}:{imp.line}"
    return found


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_no_module_imports_from_a_later_layer() -> None:
    upward = {edge: lines for edge, lines in _upward_edges().items() if edge not in UPWARD_ALLOWED}
    assert not upward, "imports from a later layer (DESIGN.md, Layers):\n" + "\n".join(
        f"  {a} (layer {_layer(a)}) imports {b} (layer {_layer(b)}) at {', '.join(lines)}"
        for (a, b), lines in sorted(upward.items())
    )


def test_no_module_imports_private_names_of_another_package() -> None:
    reach = {edge: line for edge, line in _private_reach().items() if edge not in PRIVATE_ALLOWED}
    assert not reach, "private names imported across packages:\n" + "\n".join(
        f"  {line}: {a} imports {b}" for (a, b), line in sorted(reach.items())
    )


def _public_modules() -> list[str]:
    return [m for m in MODULES if not any(part.startswith("_") for part in m.split("."))]


@functools.cache
def _defined_names(module: str) -> set[str]:
    """Names a module binds itself (def, class, assignment), as opposed to importing them."""
    tree = ast.parse(MODULES[module].read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@functools.cache
def _public_homes() -> dict[str, list[tuple[str, object]]]:
    """Every name in a public module's `__all__` -> [(module, object)]."""
    homes: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for module in _public_modules():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:  # an optional dependency (an extra) is not installed
            if (e.name or "").startswith("tracegrade"):
                raise
            continue
        for name in getattr(mod, "__all__", ()):
            homes[name].append((module, getattr(mod, name)))
    return homes


# DESIGN.md's "Public API" imports, kept here so the guard also runs where the design document is not
# beside the checkout (CI's clean clone); `test_the_copy_of_designs_public_api_is_current` keeps it in step.
DESIGN_API: list[tuple[str, list[str]]] = [
    ("tracegrade", ["capture", "grade", "agrade", "load_traces", "write_otlp_json", "trace_headers", "EvalResult",
                    "ToolCall", "NOT_RECORDED"]),
    ("tracegrade.evaluators", ["ToolCorrectness", "TrajectoryMatch", "ArgumentCorrectness", "MaxToolCalls",
                               "MaxModelRequests", "HasMatchingSpan", "ContainsEvaluator", "ToolCallEvaluator",
                               "ToolCallArgsEvaluator", "JudgeEvaluator", "ToolCallArgsJudgeEvaluator",
                               "TrajectoryJudge"]),
    ("tracegrade.tree", ["SpanTree", "SpanNode", "SpanQuery"]),
    ("tracegrade.receiver", ["OTLPReceiver"]),
    ("tracegrade.batch", ["grade_traces"]),
    ("tracegrade", ["Turn", "Expect", "AgentReply", "TurnContext", "Transcript", "TranscriptError",
                    "ContainsEvaluator", "ToolCallEvaluator", "ToolCallArgsEvaluator", "JudgeEvaluator",
                    "ToolCallArgsJudgeEvaluator"]),
]  # fmt: skip


def _parsed_design_imports() -> list[tuple[str, list[str]]]:
    if not DESIGN.is_file():
        pytest.skip(f"DESIGN.md not found at {DESIGN}")
    block = re.search(r"^## Public API.*?```python\n(.*?)```", DESIGN.read_text(), re.S | re.M)
    assert block, f"{DESIGN}: no python block under '## Public API'"
    return [
        (node.module or "", [alias.name for alias in node.names])
        for node in ast.parse(block.group(1)).body
        if isinstance(node, ast.ImportFrom)
    ]


def _design_imports() -> list[tuple[str, list[str]]]:
    return DESIGN_API


def test_the_copy_of_designs_public_api_is_current() -> None:
    assert _parsed_design_imports() == DESIGN_API


def _design_duplicates() -> set[str]:
    """Names DESIGN lists under two import paths (the pytest-facing evaluators, top level and evaluators)."""
    paths: dict[str, set[str]] = defaultdict(set)
    for module, names in _design_imports():
        for name in names:
            paths[name].add(module)
    return {name for name, modules in paths.items() if len(modules) > 1}


def test_every_public_name_has_one_public_home() -> None:
    """A name is listed in `__all__` by at most one package, and by a plain module only where it is
    defined; the names DESIGN itself lists under two paths are the exception."""
    allowed_twice = _design_duplicates() | {"Evaluator"}
    problems = []
    for name, homes in sorted(_public_homes().items()):
        for obj in {id(obj): obj for _, obj in homes}.values():
            where = [module for module, o in homes if o is obj]
            packages = [m for m in where if MODULES[m].name == "__init__.py"]
            if len(packages) > 1 and name not in allowed_twice:
                problems.append(f"{name}: exported by the packages {', '.join(packages)}")
            for package in packages:
                # classes and functions know their module (a typing alias says "typing": not checked)
                defined_in = obj.__module__ if inspect.isclass(obj) or inspect.isfunction(obj) else None
                if package != "tracegrade" and defined_in is not None and not defined_in.startswith(package):
                    problems.append(f"{name}: {package} re-exports it from {defined_in}")
            for module in set(where) - set(packages):
                if name not in _defined_names(module) and (module, name) not in REEXPORT_ALLOWED:
                    problems.append(f"{name}: {module} lists it in __all__ but imports it")
    assert not problems, "names with more than one public home:\n  " + "\n  ".join(problems)


def test_top_level_is_designs_public_api_and_the_core_data_types() -> None:
    import tracegrade

    design_top = {name for module, names in _design_imports() if module == "tracegrade" for name in names}
    assert set(tracegrade.__all__) == design_top | CORE_TYPES | PYTEST_AGENT_EVAL_TOP
    assert len(tracegrade.__all__) == len(set(tracegrade.__all__))


def test_designs_imports_resolve_at_their_home() -> None:
    for module, names in _design_imports():
        mod = importlib.import_module(module)
        missing = [name for name in names if name not in getattr(mod, "__all__", ())]
        assert not missing, f"DESIGN imports {missing} from {module}, which does not list them in __all__"


def test_errors_live_in_tracegrade_errors() -> None:
    from tracegrade import errors

    for name, homes in _public_homes().items():
        for module, obj in homes:
            if isinstance(obj, type) and issubclass(obj, errors.TracegradeError) and module != "tracegrade":
                assert obj.__module__ == "tracegrade.errors", f"{module}.{name} is defined in {obj.__module__}"


def test_the_error_tree_drawn_in_the_errors_module_lists_every_error() -> None:
    from tracegrade import errors

    classes = {name for name in errors.__all__ if isinstance(getattr(errors, name), type)}
    drawn = set(re.findall(r"[├└]── (\w+)", errors.__doc__ or ""))
    assert drawn == classes - {"TracegradeError"}
    for name in drawn:
        assert issubclass(getattr(errors, name), errors.TracegradeError), name


def test_allowlists_hold_only_live_violations() -> None:
    """Each allowlist entry still matches a violation: fixing one means deleting its entry."""
    assert set(UPWARD_ALLOWED) <= set(_upward_edges())
    assert set(PRIVATE_ALLOWED) <= set(_private_reach())
    homes = _public_homes()
    for module, name in REEXPORT_ALLOWED:
        assert module in {m for m, _ in homes.get(name, [])} and name not in _defined_names(module), (module, name)


def test_the_graph_reader_sees_lazy_and_relative_imports() -> None:
    """The guard itself: an import inside a function, `from . import submodule`, and a typing-only
    import are each read as what they are."""
    by_importer = defaultdict(list)
    for imp in IMPORTS:
        by_importer[imp.importer].append(imp)
    # tracegrade/__init__ imports `.capture` eagerly and the others under TYPE_CHECKING
    top = by_importer["tracegrade"]
    assert any(i.target == "tracegrade.capture" and i.name == "capture" and not i.typing_only for i in top)
    assert any(i.target == "tracegrade.grading" and i.name == "grade" and i.typing_only for i in top)
    # dialects/__init__: `from . import genai, ...` is an import of the submodule
    assert any(i.target == "tracegrade.dialects.genai" and i.name is None for i in by_importer["tracegrade.dialects"])
    # record.py imports the writer inside a function, so that recording alone loads it
    assert any(i.target == "tracegrade.ingest._write" for i in by_importer["tracegrade.pytest_plugin.record"])
