"""The layer rules of DESIGN.md, checked on the source: who may import whom."""

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


# What the oracle judges with: the HAL's types, the operation catalogue and the reference (and its own modules).
ORACLE_BUILDS_ON = ("harness.hal", "harness.ops", "harness.reference", "harness.oracle")


def test_the_oracle_knows_nothing_of_generation_cases_or_targets() -> None:
    def allowed(name: str) -> bool:
        # `from harness import ops` names the package itself, then the module it takes from it.
        if _top(name) != "harness" or name == "harness":
            return True
        return any(name == layer or name.startswith(layer + ".") for layer in ORACLE_BUILDS_ON)

    bad = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sources("harness/oracle")
        for name in sorted(imported_modules(path, with_names=True))
        if not allowed(name)
    ]
    assert bad == []


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
