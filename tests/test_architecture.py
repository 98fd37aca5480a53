"""The layer rules of DESIGN.md, checked on the source: who may import whom."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module a source file imports (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join([*base, node.module] if node.module else base))
            else:
                names.add(node.module or "")
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


def test_the_checker_sees_a_forbidden_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards the guard: a planted bad import must be reported.
    fake = tmp_path / "driver_under_test"
    fake.mkdir()
    (fake / "bad.py").write_text("from harness.ops import registry\nfrom . import sibling\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("driver_under_test", lambda n: _top(n) != "harness" or n.startswith("harness.hal")) == [
        "driver_under_test/bad.py: harness.ops"
    ]
