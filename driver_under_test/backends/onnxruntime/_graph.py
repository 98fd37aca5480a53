"""The two sides of a translation: the HAL operation a rule reads (Op) and the ONNX graph it writes into.

A rule sees one `Op`: its HAL operands, constant values and scalar parameters, and, while translating, the graph
being built. Tensors are named by strings. Two views of an input exist:

- `Op.input(i)`: the operand as it is stored (raw integers for quantized types), for rules that move data;
- `Op.x(i)`: its real value as float32 (a quantized operand through DequantizeLinear, a float16 one through Cast),
  for rules that compute. `Op.y(k)` is the float32 tensor a computing rule writes output k's real value into;
  `Op.finish` then stores it in the output's type (QuantizeLinear with the output's scale and zero point, or Cast
  to float16). Computing quantized operations in float between a DequantizeLinear and a QuantizeLinear is the
  QDQ form ONNX Runtime recognises: at the extended and all levels it fuses such groups into its integer kernels.

Support checks use the same object without a builder, so `unsupported_reason` never imports onnx. Node, attribute
and element type names are resolved only when the model is packed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from driver_under_test.backends import ConstantReader
from driver_under_test.backends._operation import (  # noqa: F401  (UnsupportedModel: the rules import it from here)
    QUANTIZED,
    SCALARS,
    HalOperation,
    UnsupportedModel,
)
from harness.hal import (
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    Subgraph,
    SymmPerChannelQuantParams,
)

T = OperandType
L = OperandLifeTime

# HAL operand type -> ONNX element type (TensorProto name).
ELEMENT_TYPES: dict[int, str] = {
    T.TENSOR_FLOAT32: "FLOAT",
    T.FLOAT32: "FLOAT",
    T.TENSOR_FLOAT16: "FLOAT16",
    T.FLOAT16: "FLOAT16",
    T.TENSOR_INT32: "INT32",
    T.INT32: "INT32",
    T.TENSOR_QUANT8_ASYMM: "UINT8",
    T.TENSOR_QUANT8_ASYMM_SIGNED: "INT8",
    T.TENSOR_QUANT8_SYMM: "INT8",
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: "INT8",
    T.TENSOR_QUANT16_SYMM: "INT16",
    T.TENSOR_QUANT16_ASYMM: "UINT16",
    T.TENSOR_BOOL8: "BOOL",
    T.BOOL: "BOOL",
}
# HAL operand types no ONNX tensor stands for here, with the reason.
UNMAPPED_TYPES: dict[int, str] = {
    T.UINT32: "no translated operation takes a UINT32 operand",
    T.TENSOR_OEM_BYTE: "OEM operands have no ONNX counterpart",
    T.OEM: "OEM operands have no ONNX counterpart",
}
HALF = frozenset({T.TENSOR_FLOAT16, T.FLOAT16})

# numpy dtype of each ONNX element type this backend writes.
DTYPES = {
    "FLOAT": np.dtype(np.float32),
    "FLOAT16": np.dtype(np.float16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "UINT8": np.dtype(np.uint8),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "UINT16": np.dtype(np.uint16),
    "BOOL": np.dtype(np.bool_),
}


def operand_shape(operand: Operand) -> list[int | None] | None:
    """An operand's ONNX shape: None for an unknown rank, None for each unknown dimension."""
    if operand.type in SCALARS:
        return []
    if not operand.dimensions:
        return None
    return [int(d) if d else None for d in operand.dimensions]


class Op(HalOperation):
    """One HAL operation as a rule sees it; with a GraphBuilder attached it also writes ONNX nodes."""

    def __init__(
        self,
        model: Model,
        subgraph: int,
        graph: Subgraph,
        operation: Operation,
        constants: ConstantReader,
        builder: GraphBuilder | None = None,
    ) -> None:
        super().__init__(model, subgraph, graph, operation, constants)
        self.builder = builder
        self._reals: dict[int, str] = {}  # input position -> its float32 real value
        self._pending: dict[int, str] = {}  # output position -> the float32 tensor finish() stores into it

    def quantized(self, i: int = 0) -> bool:
        """True when input i has a quantized type."""
        return self.in_type(i) in QUANTIZED

    # ---- writing ONNX (translation only) ----

    @property
    def b(self) -> GraphBuilder:
        """The graph being built (only while translating)."""
        assert self.builder is not None, "a support check must not build"
        return self.builder

    def input(self, i: int) -> str:
        """The tensor of input i as stored ("" when the input is omitted)."""
        if not self.has(i):
            return ""
        return self.b.hal_tensor(self.operation.inputs[i])

    def output(self, k: int = 0) -> str:
        """The tensor of output k as stored."""
        return self.b.hal_tensor(self.operation.outputs[k])

    def x(self, i: int) -> str:
        """Input i's real value as float32 (dequantized or widened; float32 and other types as they are)."""
        found = self._reals.get(i)
        if found is None:
            operand = self.operand(i)
            assert operand is not None, f"{self.name}: input {i} absent"
            found = self.real_of(self.input(i), operand)
            self._reals[i] = found
        return found

    def real_of(self, tensor: str, operand: Operand) -> str:
        """`tensor` (stored as `operand` stores its values) as float32 real values."""
        if operand.type in QUANTIZED:
            scale, zero_point, axis = quant_params(operand)
            attrs = {} if axis is None else {"axis": axis}
            return self.node("DequantizeLinear", [tensor, self.const(scale), self.const(zero_point)], **attrs)
        if operand.type in HALF:
            return self.node("Cast", [tensor], to="FLOAT")
        return tensor

    def y(self, k: int = 0) -> str:
        """The float32 tensor a computing rule writes output k's real value into (output k itself when it is
        float32, int32 or boolean)."""
        operand = self.out(k)
        if operand.type not in QUANTIZED and operand.type not in HALF:
            return self.output(k)
        found = self._pending.get(k)
        if found is None:
            found = self._pending[k] = self.b.fresh("real")
        return found

    def store(self, tensor: str, operand: Operand, target: str) -> None:
        """Write float32 real values `tensor` into `target`, stored as `operand` stores its values."""
        if operand.type in QUANTIZED:
            scale, zero_point, axis = quant_params(operand)
            attrs = {} if axis is None else {"axis": axis}
            self.node("QuantizeLinear", [tensor, self.const(scale), self.const(zero_point)], [target], **attrs)
        elif operand.type in HALF:
            self.node("Cast", [tensor], [target], to="FLOAT16")
        else:
            self.node("Identity", [tensor], [target])

    def finish(self) -> None:
        """After the rule: store the real values written to y(k) into their outputs."""
        for k, tensor in self._pending.items():
            self.store(tensor, self.out(k), self.output(k))

    def const(self, value: Any, dtype: Any = None) -> str:
        """A new initializer holding `value` (int64 for Python ints unless `dtype` says otherwise)."""
        array = np.asarray(value, dtype=dtype)
        if dtype is None and isinstance(value, int | list | tuple) and array.dtype.kind == "i":
            array = array.astype(np.int64)
        return self.b.const(array)

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 initializer (shapes, axes, pads)."""
        return self.b.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str] | int = 1, **attrs: Any) -> Any:
        """Append one node; `outputs` names its outputs or says how many fresh ones to make. Returns the output
        name (one output) or the list of names."""
        if isinstance(outputs, int):
            names = [self.b.fresh(op_type.lower()) for _ in range(outputs)]
        else:
            names = list(outputs)
        self.b.nodes.append((op_type, list(inputs), names, attrs))
        return names[0] if len(names) == 1 else names


def quant_params(operand: Operand) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(scale, zero point, axis) of a quantized operand for QuantizeLinear/DequantizeLinear (axis None: per
    tensor); the zero point in the operand's storage type."""
    dtype = DTYPES[ELEMENT_TYPES[operand.type]]
    if operand.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        params = operand.extra_params
        assert isinstance(params, SymmPerChannelQuantParams)
        scales = np.asarray(params.scales, dtype=np.float32)
        return scales, np.zeros(len(scales), dtype=dtype), int(params.channel_dim)
    return np.asarray(operand.scale, dtype=np.float32), np.asarray(operand.zero_point, dtype=dtype), None


class GraphBuilder:
    """The ONNX graph built from one HAL subgraph: nodes, initializers, inputs and outputs (as plain Python values).

    Main's builder is the root; a referenced subgraph is built by a child (`child`): into its own node list when
    it becomes an ONNX If branch or Loop body, or into its parent's when it is inlined. Every builder of one
    translation shares the root's initializers (outer-scope values, visible inside nested graphs) and tensor
    name counter, so that names stay unique across the nested graphs, as ONNX requires."""

    def __init__(
        self, graph: Subgraph, constants: ConstantReader, subgraph: int = 0, parent: GraphBuilder | None = None
    ) -> None:
        self.graph = graph
        self.constants = constants
        self.subgraph = subgraph
        self.root: GraphBuilder = self if parent is None else parent.root
        self.nodes: list[tuple[str, list[str], list[str], dict[str, Any]]] = []
        self.initializers: dict[str, np.ndarray] = {} if parent is None else parent.root.initializers
        self._hal: dict[int, str] = {}
        self._count = 0

    def child(self, graph: Subgraph, subgraph: int, inline: bool = False) -> GraphBuilder:
        """A builder for referenced subgraph number `subgraph` (k + 1 for Model.referenced[k]): a nested graph of
        its own, or (`inline`) writing its nodes among this builder's."""
        built = GraphBuilder(graph, self.constants, subgraph, self)
        if inline:
            built.nodes = self.nodes
        return built

    def bind(self, index: int, name: str) -> None:
        """Let HAL operand `index` of this builder's subgraph be the existing tensor `name`."""
        self._hal[index] = name

    def fresh(self, prefix: str) -> str:
        """A new tensor name."""
        self.root._count += 1
        return f"{prefix}_{self.root._count}"

    def hal_tensor(self, index: int) -> str:
        """The tensor of HAL operand `index` (a constant becomes an initializer when first used)."""
        found = self._hal.get(index)
        if found is not None:
            return found
        operand = self.graph.operands[index]
        # Main's operands keep their HAL numbers; a referenced subgraph may be built more than once.
        name = f"operand{index}" if self.subgraph == 0 else self.fresh(f"g{self.subgraph}_operand{index}")
        if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            value = np.asarray(self.constants(self.subgraph, index))
            dtype = DTYPES[ELEMENT_TYPES[operand.type]]
            # A HAL boolean is any non-zero byte.
            self.initializers[name] = (value != 0) if dtype == np.bool_ else value.astype(dtype)
        self._hal[index] = name
        return name

    def const(self, array: np.ndarray) -> str:
        """A new initializer."""
        name = self.fresh("const")
        self.initializers[name] = array
        return name


@dataclass(frozen=True)
class Body:
    """A nested ONNX graph (an If branch, a Loop body) as a node attribute: its builder and its inputs and
    outputs as (tensor name, HAL operand) pairs; the operand gives the element type (the shape is left open, as
    loop-carried values may change shape between iterations). An input without an operand is a Loop's boolean
    condition or int64 iteration number, named by its ONNX element type."""

    builder: GraphBuilder
    inputs: tuple[tuple[str, Operand | str], ...]
    outputs: tuple[tuple[str, Operand | str], ...]
