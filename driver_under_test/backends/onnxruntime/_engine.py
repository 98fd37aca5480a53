"""ONNX Runtime and the onnx package, imported only when a translation or a run asks for them.

Importing the backend package costs nothing and works without either installed; the first call that needs one
imports it or raises OnnxRuntimeMissing with the install command.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from enum import StrEnum
from types import ModuleType
from typing import Any

INSTALL_HINT = "pip install 'nnfuzz[onnxruntime]'"
DISTRIBUTION = "onnxruntime"

# The ONNX opset every translation declares: the newest whose operators this backend uses with the semantics it
# relies on (QuantizeLinear/DequantizeLinear over 16-bit types, Split's num_outputs, reduction axes as inputs).
OPSET = 21
IR_VERSION = 10  # the IR version that goes with opset 21


class OnnxRuntimeMissing(ImportError):
    """ONNX Runtime (the onnxruntime distribution) or the onnx package is not installed."""


class OptLevel(StrEnum):
    """ONNX Runtime's graph optimization levels: the backend's kernel sets (which rewrites run before kernels)."""

    DISABLED = "disabled"  # ORT_DISABLE_ALL: the translated graph as it is, one kernel per node
    BASIC = "basic"  # ORT_ENABLE_BASIC: constant folding, redundant node elimination
    EXTENDED = "extended"  # ORT_ENABLE_EXTENDED: node fusions, QDQ groups into quantized kernels
    ALL = "all"  # ORT_ENABLE_ALL: also layout transformations (ONNX Runtime's own default)


_LEVEL_NAMES = {
    OptLevel.DISABLED: "ORT_DISABLE_ALL",
    OptLevel.BASIC: "ORT_ENABLE_BASIC",
    OptLevel.EXTENDED: "ORT_ENABLE_EXTENDED",
    OptLevel.ALL: "ORT_ENABLE_ALL",
}


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        message = f"the ONNX Runtime backend needs {name} ({exc}); install it with: {INSTALL_HINT}"
        raise OnnxRuntimeMissing(message) from exc


def onnx() -> ModuleType:
    """The onnx package (helper, TensorProto, numpy_helper)."""
    module = _import("onnx")
    _import("onnx.helper")
    _import("onnx.numpy_helper")
    return module


def runtime() -> ModuleType:
    """The onnxruntime package."""
    return _import("onnxruntime")


def make_session(model: bytes, level: OptLevel, threads: int) -> Any:
    """A new InferenceSession over a serialized ONNX model on the CPU provider at this optimization level."""
    ort = runtime()
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVEL_NAMES[OptLevel(level)])
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Sessions log warnings about the models they optimize (e.g. unused initializers); they are not failures.
    options.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def engine_version() -> str:
    """The engine's name and version, e.g. "onnxruntime 1.30.0" (OnnxRuntimeMissing without it)."""
    try:
        return f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        module = runtime()
        return f"{DISTRIBUTION} {getattr(module, '__version__', 'unknown')}"
