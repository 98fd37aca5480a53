"""The TFLite format, run by LiteRT (`ai-edge-litert`): its adapter, and a TFLite model described in LiteRT's terms.

LiteRT's kernel sets, by the driver's names: optimized (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES), xnnpack
(BUILTIN: the optimized kernels with the XNNPACK delegate) and reference (BUILTIN_REF). LiteRT's schema is imported
only to describe a model; nothing here needs LiteRT to be installed until a model is run or described.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.engines.adapter import EngineAdapter, register_adapter

_SMALL_CONSTANT = 16  # constant tensors of at most this many elements are described with their values


@dataclass(frozen=True)
class TFLiteAdapter(EngineAdapter):
    """LiteRT running TFLite flatbuffers."""

    def describe_model(self, data: bytes) -> list[str]:
        """Per subgraph, its inputs and outputs and each operator with its tensors (type, shape, quantization,
        small constants' values), read from the flatbuffer with LiteRT's schema; [] without LiteRT."""
        try:
            schema = importlib.import_module("ai_edge_litert.schema_py_generated")
        except ImportError:
            return []
        try:
            model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
        except Exception as exc:  # a malformed file is described as such, not raised: it may be the bug
            return [f"(the flatbuffer cannot be read: {type(exc).__name__}: {exc})"]
        operators = _names(schema.BuiltinOperator)
        types = _names(schema.TensorType)
        codes = [_code_name(c, operators) for c in model.operatorCodes or []]
        lines = []
        for k, graph in enumerate(model.subgraphs or []):
            tensors = graph.tensors or []

            def tensor(index: int, graph_tensors: list = tensors) -> str:
                if index < 0:
                    return "(omitted)"
                return _tensor(index, graph_tensors[index], model.buffers or [], types)

            name = graph.name.decode() if isinstance(graph.name, bytes) else graph.name
            lines.append(f"subgraph {k}{f' ({name})' if name else ''}:")
            lines.append(f"  inputs: {', '.join(tensor(i) for i in _list(graph.inputs)) or 'none'}")
            lines.append(f"  outputs: {', '.join(tensor(i) for i in _list(graph.outputs)) or 'none'}")
            for n, op in enumerate(graph.operators or []):
                code = codes[op.opcodeIndex] if 0 <= op.opcodeIndex < len(codes) else f"opcode {op.opcodeIndex}"
                options = _options(op.builtinOptions)
                lines.append(f"  operator {n}: {code}{f' {options}' if options else ''}")
                lines.extend(f"    in  {tensor(i)}" for i in _list(op.inputs))
                lines.extend(f"    out {tensor(i)}" for i in _list(op.outputs))
        return lines


def _list(values: Any) -> list:
    """A field of LiteRT's object API (None, a list or a numpy array) as a list."""
    return [] if values is None else [int(v) for v in values]


def _names(enum_class: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum_class).items() if not k.startswith("_") and isinstance(v, int)}


def _code_name(code: Any, operators: dict[int, str]) -> str:
    builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
    name = operators.get(builtin, f"builtin {builtin}")
    if name == "CUSTOM" and code.customCode:
        custom = code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
        name = f"CUSTOM {custom}"
    return f"{name} (version {code.version})"


def _tensor(index: int, tensor: Any, buffers: list, types: dict[int, str]) -> str:
    shape = _list(tensor.shape)
    text = f"t{index} {types.get(tensor.type, tensor.type)} {shape}"
    signature = _list(tensor.shapeSignature)
    if signature and signature != shape:
        text += f" (signature {signature})"
    quantization = tensor.quantization
    if quantization is not None and quantization.scale is not None and len(quantization.scale):
        scales = [float(s) for s in quantization.scale]
        zero_points = [int(z) for z in quantization.zeroPoint] if quantization.zeroPoint is not None else []
        if len(scales) == 1:
            text += f" scale {scales[0]:.9g} zero point {zero_points[0] if zero_points else 0}"
        else:
            text += f" per-channel scales {[round(s, 9) for s in scales[:4]]}{'...' if len(scales) > 4 else ''}"
            text += f" (axis {quantization.quantizedDimension})"
    if tensor.isVariable:
        text += " variable"
    data = buffers[tensor.buffer].data if 0 < tensor.buffer < len(buffers) else None
    if data is not None and len(data):
        text += " constant" + _values(bytes(np.asarray(data, dtype=np.uint8)), tensor.type, types, shape)
    return text


_DTYPES = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "INT32": np.int32,
    "UINT8": np.uint8,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT64": np.int64,
    "BOOL": np.bool_,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
}


def _values(raw: bytes, type_code: int, types: dict[int, str], shape: list[int]) -> str:
    dtype = _DTYPES.get(types.get(type_code, ""))
    if dtype is None or len(raw) % np.dtype(dtype).itemsize:
        return f" ({len(raw)} bytes)"
    values = np.frombuffer(raw, dtype=dtype)
    if values.size > _SMALL_CONSTANT:
        return f" ({values.size} values)"
    return f" {values.tolist()}"


def _options(options: Any) -> str:
    """A builtin options table as `{field: value}`, without empty fields."""
    if options is None:
        return ""
    fields = {k: v for k, v in vars(options).items() if v is not None and not k.startswith("_")}
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(fields.items())) + "}" if fields else ""


LITERT = register_adapter(
    TFLiteAdapter(
        format="tflite",
        engine="LiteRT",
        package="ai-edge-litert",
        module="ai_edge_litert",
        file_name="model.tflite",
        kernel_sets=("optimized", "xnnpack", "reference"),
        script_part="_tflite_script.py",
        kernel_set_names={
            "optimized": "OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES: optimized kernels, no delegate",
            "xnnpack": "OpResolverType.BUILTIN: optimized kernels with the XNNPACK delegate",
            "reference": "OpResolverType.BUILTIN_REF: reference kernels",
        },
    )
)
