"""The layer rules of ARCHITECTURE.md, checked on the source: who may import whom."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names)


def imported_modules(path: Path, *, with_names: bool = False) -> set[str]:
    """Absolute names of every module a source file imports (relative imports resolved).

    With `with_names`, `from m import x` also gives `m.x`, which names a module when x is a submodule of m.
    """
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            if with_names:
                names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def sources(package: str) -> list[Path]:
    """Python files of a package folder."""
    return sorted((ROOT / package).rglob("*.py"))


def violations(package: str, allowed: callable) -> list[str]:
    """`file: module` for every import of the package's files that `allowed` refuses."""
    return [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sources(package)
        for name in sorted(imported_modules(path))
        if not allowed(name)
    ]


def _top(name: str) -> str:
    return name.split(".")[0]


def test_driver_reaches_nothing_of_the_harness_but_hal() -> None:
    bad = violations(
        "driver_under_test",
        lambda n: _top(n) != "harness" or n == "harness.hal" or n.startswith("harness.hal."),
    )
    assert bad == []


def test_hal_depends_on_numpy_and_the_standard_library_only() -> None:
    bad = violations(
        "harness/hal",
        lambda n: _top(n) in STDLIB or _top(n) == "numpy" or n == "harness.hal" or n.startswith("harness.hal."),
    )
    assert bad == []


@pytest.mark.parametrize("package", ["harness/ops", "harness/reference", "harness/oracle"])
def test_oracle_shares_no_code_with_the_driver(package: str) -> None:
    assert violations(package, lambda n: _top(n) != "driver_under_test") == []


# The harness's layers, bottom up (ARCHITECTURE.md): a unit imports only units of lower layers (and itself). Units
# of one layer are independent of each other.
LAYERS: list[tuple[str, ...]] = [
    ("harness.hal",),
    ("harness.ops",),
    ("harness.reference",),
    ("harness.oracle", "harness.case"),
    ("harness.gen", "harness.paths", "harness.drivers", "harness.reduce", "harness.engines"),
    ("harness.strategies", "harness.targets", "harness.conformance"),
    ("harness.runner",),
    ("harness.campaign", "harness.evaluate", "harness.mutants", "harness.bench"),
    ("harness.cli",),
]
LAYER_OF = {unit: k for k, units in enumerate(LAYERS) for unit in units}


def unit_of(name: str) -> str | None:
    """The harness unit (package or loose module) a module name belongs to; None outside the harness."""
    parts = name.split(".")
    if parts[0] != "harness" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def layer_violations() -> list[str]:
    """`file: module` for every import of a harness unit that is not below the importing file's unit."""
    bad = []
    for path in sources("harness"):
        own = unit_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name in sorted(imported_modules(path, with_names=True)):
            other = unit_of(name)
            if own is None or other is None or other == own or other not in LAYER_OF:
                continue
            if own not in LAYER_OF or LAYER_OF[other] >= LAYER_OF[own]:
                bad.append(f"{path.relative_to(ROOT)}: {name}")
    return bad


def test_every_harness_unit_has_a_layer() -> None:
    units = {unit_of(".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in sources("harness")}
    assert sorted(u for u in units if u not in LAYER_OF and u != "harness.__init__") == []


def test_the_harness_imports_only_down_its_layers() -> None:
    assert layer_violations() == []


def test_the_layer_checker_sees_an_import_up_or_across(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards the guard: imports upward and across one layer are reported, downward and inside a unit are not.
    for folder in ("oracle", "case", "gen"):
        (tmp_path / "harness" / folder).mkdir(parents=True)
    (tmp_path / "harness" / "oracle" / "up.py").write_text("from harness.gen import generate_model\n")
    (tmp_path / "harness" / "oracle" / "across.py").write_text("from harness import case\n")
    (tmp_path / "harness" / "gen" / "down.py").write_text("import harness.hal\nfrom harness.gen import source\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert layer_violations() == [
        "harness/oracle/across.py: harness.case",
        "harness/oracle/up.py: harness.gen",
        "harness/oracle/up.py: harness.gen.generate_model",
    ]


def target_modules(folder: Path) -> set[str]:
    """Names of the modules of harness/targets that register a target (the others are shared infrastructure)."""
    names = set()
    for path in folder.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "register_target":
                names.add(path.stem)
    return names


def sibling_target_imports(folder: Path) -> list[str]:
    """`file: module` for every import, by a target module, of another target module."""
    targets = target_modules(folder)
    bad = set()
    for path in sorted(folder.glob("*.py")):
        if path.stem not in targets:
            continue
        for name in imported_modules(path, with_names=True):
            parts = name.split(".")
            if parts[:2] == ["harness", "targets"] and len(parts) > 2 and parts[2] in targets - {path.stem}:
                bad.add(f"{path.name}: harness.targets.{parts[2]}")
    return sorted(bad)


def test_no_target_imports_another_target() -> None:
    folder = ROOT / "harness" / "targets"
    assert len(target_modules(folder)) >= 7
    assert sibling_target_imports(folder) == []


def test_the_target_checker_sees_a_target_importing_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "harness" / "targets"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("from harness.targets.b import helper\nTARGET = register_target(A())\n")
    (folder / "b.py").write_text("from harness.targets.shared import x\nTARGET = register_target(B())\n")
    (folder / "shared.py").write_text("x = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert target_modules(folder) == {"a", "b"}
    assert sibling_target_imports(folder) == ["a.py: harness.targets.b"]


def test_the_checker_sees_a_forbidden_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards the guard: a planted bad import must be reported.
    fake = tmp_path / "driver_under_test"
    fake.mkdir()
    (fake / "bad.py").write_text("from harness.ops import registry\nfrom . import sibling\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("driver_under_test", lambda n: _top(n) != "harness" or n.startswith("harness.hal")) == [
        "driver_under_test/bad.py: harness.ops"
    ]


PRODUCTION = ["harness", "driver_under_test", "fuzz", "benchmarks"]


def _owner_of_private_module(name: str, importer: Path) -> Path | None:
    """The folder of the package holding the private module an import names (last dotted part `_x`, not `__x`),
    or None when the name is no private module of this tree (the standard library's, a dependency's, or a name
    defined in a module)."""
    parts = name.split(".")
    if not parts[-1].startswith("_") or parts[-1].startswith("__"):
        return None
    # A name without dots is a script's neighbour: the fuzz scripts import `_common` from their own folder.
    module = (importer.parent if len(parts) == 1 else ROOT).joinpath(*parts)
    if module.with_suffix(".py").is_file() or (module / "__init__.py").is_file():
        return module.parent
    return None


def private_imports(package: str) -> list[str]:
    """`file: module` for every import, by a file of the package folder, of a private module from outside the
    package holding it (a private module may be imported anywhere inside its package, sub-packages included)."""
    return [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sources(package)
        for name in sorted(imported_modules(path, with_names=True))
        if (owner := _owner_of_private_module(name, path)) is not None and not path.is_relative_to(owner)
    ]


@pytest.mark.parametrize("package", PRODUCTION)
def test_no_module_imports_the_private_modules_of_another_package(package: str) -> None:
    """A package's private modules (a leading underscore, like harness.gen.model._graph) are imported only by files
    inside that package; every other package uses the names its __init__ exports. Production code only: a test
    may import the private modules of the package it tests."""
    assert private_imports(package) == []


def test_the_checker_sees_a_private_module_imported_from_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guards the guard: every form of import of another package's private module (or private package) must be
    # reported, and what a package's own modules and sub-packages import of it must not.
    gen = tmp_path / "harness" / "gen"
    (gen / "model" / "recipes").mkdir(parents=True)
    (gen / "_kit").mkdir()
    (tmp_path / "harness" / "targets").mkdir()
    files = {
        "gen/_kit/__init__.py": "",
        "gen/model/_graph.py": "from harness.gen._kit import x\n",
        "gen/model/__init__.py": "from harness.gen.model._graph import Gen\nfrom . import _graph\n",
        "gen/model/recipes/_nn.py": "from harness.gen.model._graph import Gen\nfrom .. import _graph\n",
        "targets/fine.py": "from _thread import get_ident\nfrom harness.gen.model import Gen\n",
        "targets/import_module.py": "import harness.gen.model._graph\n",
        "targets/from_module.py": "from harness.gen.model._graph import Gen\n",
        "targets/from_package.py": "from harness.gen.model import Gen, _graph\n",
        "targets/private_package.py": "from harness.gen import _kit\n",
    }
    for name, text in files.items():
        (tmp_path / "harness" / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert private_imports("harness") == [
        "harness/targets/from_module.py: harness.gen.model._graph",
        "harness/targets/from_package.py: harness.gen.model._graph",
        "harness/targets/import_module.py: harness.gen.model._graph",
        "harness/targets/private_package.py: harness.gen._kit",
    ]
