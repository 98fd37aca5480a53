"""The backend's imports: the standard library, numpy, harness.hal, flatbuffers and ai_edge_litert, and its own
modules; nothing else of the harness and nothing of the driver's numpy kernels. LiteRT itself is imported only
inside functions (importing the package must work without it)."""

from __future__ import annotations

import ast
import sys

from tests.test_architecture import ROOT, imported_modules

PACKAGE = ROOT / "driver_under_test" / "backends" / "litert"
ALLOWED_TOP = {"numpy", "flatbuffers", "ai_edge_litert"}
LAZY = {"ai_edge_litert", "flatbuffers"}


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in ALLOWED_TOP:
        return True
    if name == "harness.hal" or name.startswith("harness.hal."):
        return True
    # The backends package and its private modules shared by the translating backends (driver_under_test.backends._*)
    return name.startswith(("driver_under_test.backends.litert", "driver_under_test.backends._")) or (
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


def test_litert_is_imported_only_inside_functions() -> None:
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
