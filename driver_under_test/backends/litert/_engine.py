"""LiteRT itself, imported only when a translation or a run asks for it: the schema, the interpreter, the version.

Importing the backend package costs nothing and works without LiteRT installed; the first call that needs the
engine imports it (about a quarter of a second) or raises LiteRTMissing with the install command.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from enum import StrEnum
from types import ModuleType
from typing import Any

INSTALL_HINT = "pip install 'nnfuzz[litert]'"
DISTRIBUTION = "ai-edge-litert"


class LiteRTMissing(ImportError):
    """LiteRT (the ai-edge-litert distribution) is not installed."""


class KernelSet(StrEnum):
    """The three kernel sets of LiteRT, chosen by the interpreter's op resolver type."""

    OPTIMIZED = "optimized"  # OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES (the default)
    XNNPACK = "xnnpack"  # OpResolverType.BUILTIN (optimized kernels + the XNNPACK delegate)
    REFERENCE = "reference"  # OpResolverType.BUILTIN_REF


_RESOLVER_NAMES = {
    KernelSet.OPTIMIZED: "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    KernelSet.XNNPACK: "BUILTIN",
    KernelSet.REFERENCE: "BUILTIN_REF",
}


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        message = f"the LiteRT backend needs {DISTRIBUTION} ({exc}); install it with: {INSTALL_HINT}"
        raise LiteRTMissing(message) from exc


def schema() -> ModuleType:
    """The TFLite flatbuffer schema with its object API (ai_edge_litert.schema_py_generated)."""
    return _import("ai_edge_litert.schema_py_generated")


def flatbuffers() -> ModuleType:
    """The flatbuffers runtime LiteRT's schema is generated for."""
    return _import("flatbuffers")


def flexbuffers() -> ModuleType:
    """The flexbuffers encoder of the flatbuffers runtime (custom operators' options)."""
    return _import("flatbuffers.flexbuffers")


def interpreter_module() -> ModuleType:
    """ai_edge_litert.interpreter (Interpreter, OpResolverType)."""
    return _import("ai_edge_litert.interpreter")


def make_interpreter(flatbuffer: bytes, kernel_set: KernelSet, threads: int) -> Any:
    """A new LiteRT Interpreter over `flatbuffer` with the op resolver of `kernel_set` (tensors not allocated)."""
    module = interpreter_module()
    resolver = getattr(module.OpResolverType, _RESOLVER_NAMES[KernelSet(kernel_set)])
    return module.Interpreter(model_content=flatbuffer, experimental_op_resolver_type=resolver, num_threads=threads)


def engine_version() -> str:
    """The engine's name and version, e.g. "ai-edge-litert 2.3.0" (LiteRTMissing without it)."""
    try:
        return f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        module = _import("ai_edge_litert")
        return f"{DISTRIBUTION} {getattr(module, '__version__', 'unknown')}"
