"""The backend's imports: the standard library, numpy, harness.hal, onnx and onnxruntime, its own modules and the
driver's error type (an execution stopped at its time limit reports its status); nothing else of the harness and
nothing of the driver's numpy kernels. The engine is imported only inside
functions (importing the package must work without it)."""

from __future__ import annotations

import ast
import sys

from tests.test_architecture import ROOT, imported_modules

PACKAGE = ROOT / "driver_under_test" / "backends" / "onnxruntime"
LAZY = {"onnx", "onnxruntime"}


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in LAZY or top == "numpy":
        return True
    if name == "harness.hal" or name.startswith("harness.hal.") or name == "driver_under_test.errors":
        return True
    # The backends package and its private modules shared by the translating backends (driver_under_test.backends._*)
    return name.startswith(("driver_under_test.backends.onnxruntime", "driver_under_test.backends._")) or (
        name == "driver_under_test.backends"
    )


def test_the_backend_imports_only_what_it_may() -> None:
    bad = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in sorted(imported_modules(path))
        if not _allowed(name)
    ]
    assert bad == []


def test_the_engine_is_imported_only_inside_functions() -> None:
    top_level = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            top_level += [f"{path.name}: {n}" for n in names if n.split(".")[0] in LAZY]
    assert top_level == []
