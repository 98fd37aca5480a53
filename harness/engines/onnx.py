"""The ONNX format, run by ONNX Runtime (`onnxruntime`): its adapter, and an ONNX model described in ONNX's terms.

ONNX Runtime's kernel sets, by the driver's names, are its graph optimization levels: all (ORT_ENABLE_ALL, ONNX
Runtime's default), extended (ORT_ENABLE_EXTENDED: fusions, QDQ groups into quantized kernels), basic
(ORT_ENABLE_BASIC: constant folding) and disabled (ORT_DISABLE_ALL: one kernel per node, which tells a rewrite's bug
from a kernel's). The onnx package is imported only to describe a model; nothing here needs ONNX Runtime or onnx to
be installed until a model is run or described.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.engines.adapter import EngineAdapter, register_adapter

_SMALL_CONSTANT = 16  # initializers of at most this many elements are described with their values


@dataclass(frozen=True)
class OnnxAdapter(EngineAdapter):
    """ONNX Runtime running ONNX models."""

    def describe_model(self, data: bytes) -> list[str]:
        """The opsets, the graph's inputs and outputs and each node with its attributes and tensors (type, shape,
        small initializers' values), read with the onnx package; [] without it."""
        try:
            onnx = importlib.import_module("onnx")
            numpy_helper = importlib.import_module("onnx.numpy_helper")
            helper = importlib.import_module("onnx.helper")
        except ImportError:
            return []
        try:
            model = onnx.load_model_from_string(data)
        except Exception as exc:  # a malformed file is described as such, not raised: it may be the bug
            return [f"(the model cannot be read: {type(exc).__name__}: {exc})"]
        graph = model.graph
        opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
        lines = [f"ONNX IR version {model.ir_version}, opsets: {opsets or 'none'}"]
        initializers = {t.name: t for t in graph.initializer}
        values = {v.name: v for v in (*graph.input, *graph.output, *graph.value_info)}

        def tensor(name: str) -> str:
            if not name:
                return "(omitted)"
            if name in initializers:
                return _initializer(name, initializers[name], numpy_helper, helper)
            if name in values:
                return f"{name} {_value_type(values[name], helper)}"
            return name

        lines.append(f"inputs: {', '.join(tensor(v.name) for v in graph.input) or 'none'}")
        lines.append(f"outputs: {', '.join(tensor(v.name) for v in graph.output) or 'none'}")
        for n, node in enumerate(graph.node):
            domain = f"{node.domain}." if node.domain else ""
            attributes = _attributes(node, helper)
            lines.append(f"node {n}: {domain}{node.op_type}{f' {attributes}' if attributes else ''}")
            lines.extend(f"  in  {tensor(name)}" for name in node.input)
            lines.extend(f"  out {tensor(name)}" for name in node.output)
        return lines


def _value_type(value: Any, helper: Any) -> str:
    """A graph value's element type and shape ("FLOAT [2, 3]"; "?" for a dimension without a value)."""
    tensor_type = value.type.tensor_type
    element = helper.tensor_dtype_to_string(tensor_type.elem_type).removeprefix("TensorProto.")
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
    return f"{element} {dims}"


def _initializer(name: str, tensor: Any, numpy_helper: Any, helper: Any) -> str:
    element = helper.tensor_dtype_to_string(tensor.data_type).removeprefix("TensorProto.")
    text = f"{name} {element} {list(tensor.dims)} constant"
    try:
        array = numpy_helper.to_array(tensor)
    except Exception:  # an element type numpy cannot hold: described without its values
        return text
    if array.size > _SMALL_CONSTANT:
        return f"{text} ({array.size} values)"
    return f"{text} {np.asarray(array).reshape(-1).tolist()}"


def _attributes(node: Any, helper: Any) -> str:
    """A node's attributes as `{name: value}` (tensors and graphs by their kind only)."""
    if not node.attribute:
        return ""
    parts = []
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        elif not isinstance(value, int | float | str | list):
            value = f"<{type(value).__name__}>"
        parts.append(f"{attribute.name}: {value}")
    return "{" + ", ".join(parts) + "}"


ONNX_RUNTIME = register_adapter(
    OnnxAdapter(
        format="onnx",
        engine="ONNX Runtime",
        package="onnxruntime",
        module="onnxruntime",
        file_name="model.onnx",
        kernel_sets=("all", "extended", "basic", "disabled"),
        script_part="_onnx_script.py",
        kernel_set_names={
            "all": "GraphOptimizationLevel.ORT_ENABLE_ALL: every graph rewrite, layout transformations included",
            "extended": "GraphOptimizationLevel.ORT_ENABLE_EXTENDED: node fusions, QDQ groups into quantized kernels",
            "basic": "GraphOptimizationLevel.ORT_ENABLE_BASIC: constant folding, redundant node elimination",
            "disabled": "GraphOptimizationLevel.ORT_DISABLE_ALL: the graph as it is, one kernel per node",
        },
    )
)
