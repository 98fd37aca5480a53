"""The two sides of a translation: the HAL operation a rule reads (Op) and the TFLite model it writes into.

A rule sees one `Op`: its HAL operands, constant values and scalar parameters, and, while translating, the
subgraph being built (`Op.input`, `Op.output`, `Op.temp`, `Op.const`, `Op.emit`). Support checks use the same
object without a builder, so `unsupported_reason` never needs LiteRT. Builtin operators, options and tensor types
are named by their schema names ("ADD", "AddOptions", "FLOAT32") and resolved when the flatbuffer is built.

A widened Op (`Op.wide`, for rules whose LiteRT kernels lack float16) shows the rule its TENSOR_FLOAT16 operands
as float32 ones: `in_type`, `spec` and `out_spec` say float32, `input` gives a float32 tensor (a constant converted
at translation time, any other input CAST), `output` a float32 temporary that `finish` CASTs into the float16
output. Every float16 value is exact in float32, and a float32 result rounded once to float16 is within the HAL's
float16 tolerance.
"""

from __future__ import annotations

import math
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
from driver_under_test.backends.litert import _flatbuffer as fb
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

# HAL operand type -> TFLite TensorType name.
TENSOR_TYPES: dict[int, str] = {
    T.TENSOR_FLOAT32: "FLOAT32",
    T.FLOAT32: "FLOAT32",
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
# HAL operand types no TFLite tensor can stand for, with the reason.
UNMAPPED_TYPES: dict[int, str] = {
    T.UINT32: "LiteRT's builtin kernels take no UINT32 operands",
    T.TENSOR_OEM_BYTE: "OEM operands have no TFLite counterpart",
    T.OEM: "OEM operands have no TFLite counterpart",
}
QUANT8 = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})


@dataclass(frozen=True)
class TensorSpec:
    """A TFLite tensor's type, shape (with -1 for unknown dimensions) and quantization."""

    type: str  # TensorType name
    shape: tuple[int, ...] | None  # None = unknown rank
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    quantized_dimension: int = 0

    def with_shape(self, shape: Sequence[int] | None) -> TensorSpec:
        """The same type and quantization with another shape."""
        return TensorSpec(
            self.type,
            None if shape is None else tuple(int(d) for d in shape),
            self.scales,
            self.zero_points,
            self.quantized_dimension,
        )

    def with_quant(self, scale: float, zero_point: int) -> TensorSpec:
        """The same type and shape, quantized per tensor with these parameters."""
        return TensorSpec(self.type, self.shape, (float(scale),), (int(zero_point),))

    def plain(self, type_name: str) -> TensorSpec:
        """Another type, same shape, no quantization."""
        return TensorSpec(type_name, self.shape)


def operand_spec(operand: Operand) -> TensorSpec:
    """The TFLite tensor that stands for a HAL operand (unknown dimensions as -1, unknown rank as None)."""
    type_name = TENSOR_TYPES[operand.type]
    if operand.type in SCALARS:
        shape: tuple[int, ...] | None = ()
    elif not operand.dimensions:
        shape = None
    else:
        shape = tuple(int(d) if d else -1 for d in operand.dimensions)
    if operand.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        params = operand.extra_params
        assert isinstance(params, SymmPerChannelQuantParams)
        scales = tuple(float(s) for s in params.scales)
        return TensorSpec(type_name, shape, scales, (0,) * len(scales), int(params.channel_dim))
    if operand.type in QUANTIZED or (operand.type == T.TENSOR_INT32 and operand.scale):
        return TensorSpec(type_name, shape, (float(operand.scale),), (int(operand.zero_point),))
    return TensorSpec(type_name, shape)


def unknown(shape: Sequence[int] | None) -> bool:
    """True when a shape has an unknown rank or dimension."""
    return shape is None or any(d < 0 for d in shape)


class Op(HalOperation):
    """One HAL operation as a rule sees it; with a SubgraphBuilder attached it also writes TFLite operators."""

    def __init__(
        self,
        model: Model,
        subgraph: int,
        graph: Subgraph,
        operation: Operation,
        constants: ConstantReader,
        builder: SubgraphBuilder | None = None,
    ) -> None:
        super().__init__(model, subgraph, graph, operation, constants)
        self.builder = builder
        self._widened: dict[int, int] = {}  # input position -> its float32 tensor
        self._narrowed: dict[int, int] = {}  # output position -> the float32 temporary CAST into it by finish()

    def spec(self, i: int) -> TensorSpec:
        """The TensorSpec of input i (float32 for a float16 one when widened)."""
        operand = self.operand(i)
        assert operand is not None
        return self._widen(operand_spec(operand))

    def out_spec(self, k: int = 0) -> TensorSpec:
        """The TensorSpec of output k (float32 for a float16 one when widened)."""
        return self._widen(operand_spec(self.out(k)))

    def _widen(self, spec: TensorSpec) -> TensorSpec:
        return spec.plain("FLOAT32") if self.wide and spec.type == "FLOAT16" else spec

    # ---- writing TFLite (translation only) ----

    @property
    def b(self) -> SubgraphBuilder:
        """The subgraph being built (only while translating)."""
        assert self.builder is not None, "a support check must not build"
        return self.builder

    def input(self, i: int) -> int:
        """The tensor of input i (-1 when the input is omitted; float32 for a float16 tensor when widened)."""
        operand = self.operand(i)
        if operand is None:
            return -1
        if self.wide and operand.type == T.TENSOR_FLOAT16:
            return self.float32_input(i)
        return self.b.hal_tensor(self.operation.inputs[i])

    def float32_input(self, i: int) -> int:
        """Input i (a float16 tensor) as a float32 tensor: a constant converted at translation time, or a CAST."""
        found = self._widened.get(i)
        if found is None:
            spec = operand_spec(self.graph.operands[self.operation.inputs[i]]).plain("FLOAT32")
            if self.is_const(i):
                found = self.const(self.value(i).astype(np.float32), spec)
            else:
                found = self.temp(spec)
                self.emit("CAST", [self.b.hal_tensor(self.operation.inputs[i])], [found])
            self._widened[i] = found
        return found

    def output(self, k: int = 0, like: int | None = None, shape: Sequence[int] | None = None) -> int:
        """The tensor of output k (when widened, a float32 temporary for a float16 output); `like` names an input
        whose dimensions, or `shape` the dimensions the rule knows, fill in the output's unknown ones (for kernels
        that keep the declared output shape in some cases)."""
        index = self.operation.outputs[k]
        dims = None
        hint = list(shape) if shape is not None else self.dims(like) if like is not None and self.has(like) else None
        if hint is not None:
            declared = self.out(k).dimensions
            if hint and (not declared or len(declared) == len(hint)):
                dims = [d or h for d, h in zip(declared or [0] * len(hint), hint)]
        if not (self.wide and self.out(k).type == T.TENSOR_FLOAT16):
            return self.b.hal_tensor(index, dims)
        found = self._narrowed.get(k)
        if found is None:
            spec = self.out_spec(k)
            if dims is not None:
                spec = spec.with_shape([d if d else -1 for d in dims])
            found = self._narrowed[k] = self.temp(spec)
        return found

    def result(self, k: int, tensor: int) -> None:
        """Make output k hold `tensor`'s value (of the output's type, or float32 for a float16 output when
        widened): the same tensor, or a CAST of it."""
        index = self.operation.outputs[k]
        if self.wide and self.out(k).type == T.TENSOR_FLOAT16:
            self.emit("CAST", [tensor], [self.b.hal_tensor(index)])
        else:
            self.b.bind(index, tensor)

    def finish(self) -> None:
        """After the rule: CAST the float32 temporaries of a widened Op into their float16 outputs."""
        for k, temp in self._narrowed.items():
            self.emit("CAST", [temp], [self.b.hal_tensor(self.operation.outputs[k])])

    def temp(self, spec: TensorSpec) -> int:
        """A new intermediate tensor."""
        return self.b.temp(spec)

    def variable(self, spec: TensorSpec) -> int:
        """A new variable tensor, for the state of a stateful kernel."""
        return self.b.variable(spec)

    def const(self, value: np.ndarray | Sequence[Any], spec: TensorSpec | None = None) -> int:
        """A new constant tensor holding `value` (int32 for a list of ints unless `spec` says otherwise)."""
        return self.b.const(value, spec)

    def emit(
        self,
        builtin: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: str | None = None,
        intermediates: Sequence[int] = (),
        **fields,
    ):
        """Append one TFLite builtin operator; `options` names its options table, `fields` set its members;
        `intermediates` are tensors whose quantization parameterizes the kernel (the integer LSTM's)."""
        self.b.operator(builtin, inputs, outputs, options, fields, intermediates)

    def emit_custom(self, name: str, inputs: Sequence[int], outputs: Sequence[int], options: dict[str, Any]) -> None:
        """Append one custom operator (registered by LiteRT's resolvers under `name`) with its options map."""
        self.b.custom_operator(name, inputs, outputs, options)


class SubgraphBuilder:
    """The TFLite subgraph built from one HAL subgraph: tensors, operators, inputs and outputs."""

    def __init__(self, model: ModelBuilder, hal_index: int, graph: Subgraph) -> None:
        self.model = model
        self.hal_index = hal_index
        self.graph = graph
        self.tensors: list[Any] = []
        self.operators: list[Any] = []
        self._hal: dict[int, int] = {}
        self.translation: Any = None  # the Translation building this subgraph (control flow reaches the others)

    def add(self, spec: TensorSpec, name: str, buffer: int = 0, variable: bool = False) -> int:
        """A new tensor (a variable one: persistent across invocations, written in place by stateful kernels);
        its index."""
        s = self.model.schema
        if spec.shape is None:
            shape: list[int] = []
            signature = None
        else:
            shape = [d if d >= 0 else 1 for d in spec.shape]
            signature = list(spec.shape) if any(d < 0 for d in spec.shape) else None
        quantization = None
        if spec.scales:
            quantization = fb.fields(
                s,
                "QuantizationParameters",
                [
                    ("Scale", [float(x) for x in spec.scales], fb.VECTOR + "f"),
                    ("ZeroPoint", [int(z) for z in spec.zero_points], fb.VECTOR + "q"),
                    ("QuantizedDimension", spec.quantized_dimension, None),
                ],
            )
        tensor = fb.fields(
            s,
            "Tensor",
            [
                ("Shape", shape, fb.VECTOR + "i"),
                ("Type", _tensor_type(s, spec.type), None),
                ("Buffer", buffer, None),
                ("Name", name, fb.STRING),
                ("Quantization", quantization, fb.TABLE),
                ("IsVariable", variable, None),
                ("ShapeSignature", signature, fb.VECTOR + "i"),
                ("HasRank", spec.shape is not None, None),
            ],
        )
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def hal_tensor(self, index: int, dims: Sequence[int] | None = None) -> int:
        """The tensor of HAL operand `index` (made on first use; constants get their buffer); `dims` replace the
        operand's declared dimensions (0 = unknown) when it is made."""
        found = self._hal.get(index)
        if found is not None:
            return found
        operand = self.graph.operands[index]
        if operand.lifetime == L.NO_VALUE:
            return -1
        spec = operand_spec(operand)
        if dims is not None:
            spec = spec.with_shape([d if d else -1 for d in dims])
        buffer = 0
        if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            value = np.asarray(self.model.constants(self.hal_index, index))
            buffer = self.model.buffer(_storage_bytes(value, spec))
        tensor = self.add(spec, f"operand{index}", buffer)
        self._hal[index] = tensor
        return tensor

    def bind(self, index: int, tensor: int) -> None:
        """Make HAL operand `index` stand for an existing tensor (an alias: no operator needed)."""
        assert index not in self._hal
        self._hal[index] = tensor

    def temp(self, spec: TensorSpec) -> int:
        """A new intermediate tensor."""
        return self.add(spec, f"t{len(self.tensors)}")

    def variable(self, spec: TensorSpec) -> int:
        """A new variable tensor (no buffer: LiteRT allows no initial value; an operator writes it)."""
        return self.add(spec, f"v{len(self.tensors)}", variable=True)

    def const(self, value: np.ndarray | Sequence[Any], spec: TensorSpec | None = None) -> int:
        """A new constant tensor."""
        array = np.asarray(value)
        if spec is None:
            if array.dtype.kind in "iu":
                spec = TensorSpec("INT32", array.shape)
            elif array.dtype.kind == "b":
                spec = TensorSpec("BOOL", array.shape)
            elif array.dtype == np.float16:
                spec = TensorSpec("FLOAT16", array.shape)
            else:
                spec = TensorSpec("FLOAT32", array.shape)
        else:
            spec = spec.with_shape(array.shape)
        return self.add(spec, f"c{len(self.tensors)}", self.model.buffer(_storage_bytes(array, spec)))

    def operator(
        self,
        builtin: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: str | None,
        fields: dict[str, Any],
        intermediates: Sequence[int] = (),
    ) -> None:
        """Append one builtin operator."""
        s = self.model.schema
        values: list[tuple[str, Any, str | None]] = [
            ("OpcodeIndex", self.model.opcode(builtin), None),
            ("Inputs", [int(i) for i in inputs], fb.VECTOR + "i"),
            ("Outputs", [int(o) for o in outputs], fb.VECTOR + "i"),
        ]
        if intermediates:
            values.append(("Intermediates", [int(i) for i in intermediates], fb.VECTOR + "i"))
        if options is not None:
            values.append(("BuiltinOptionsType", getattr(s.BuiltinOptions, options), None))
            values.append(("BuiltinOptions", fb.recorded(getattr(s, options + "T")(**fields)), fb.TABLE))
        else:
            assert not fields, f"{builtin}: fields without an options table"
        self.operators.append(fb.fields(s, "Operator", values))

    def custom_operator(
        self, name: str, inputs: Sequence[int], outputs: Sequence[int], options: dict[str, Any]
    ) -> None:
        """Append one custom operator; its options are a flexbuffer map."""
        from driver_under_test.backends.litert._engine import flexbuffers

        s = self.model.schema
        values: list[tuple[str, Any, str | None]] = [
            ("OpcodeIndex", self.model.opcode(CUSTOM + name), None),
            ("Inputs", [int(i) for i in inputs], fb.VECTOR + "i"),
            ("Outputs", [int(o) for o in outputs], fb.VECTOR + "i"),
            ("CustomOptions", bytes(flexbuffers().Dumps(options)), fb.VECTOR + "B"),
            ("CustomOptionsFormat", s.CustomOptionsFormat.FLEXBUFFERS, None),
        ]
        self.operators.append(fb.fields(s, "Operator", values))

    def finish(self, inputs: Sequence[int], outputs: Sequence[int], name: str) -> fb.Table:
        """The SubGraph table."""
        return fb.fields(
            self.model.schema,
            "SubGraph",
            [
                ("Tensors", self.tensors, fb.TABLES),
                ("Inputs", [int(i) for i in inputs], fb.VECTOR + "i"),
                ("Outputs", [int(o) for o in outputs], fb.VECTOR + "i"),
                ("Operators", self.operators, fb.TABLES),
                ("Name", name, fb.STRING),
            ],
        )


def _tensor_type(schema: Any, name: str) -> int:
    return getattr(schema.TensorType, name)


# numpy dtype a TFLite tensor type stores its elements in.
STORAGE = {
    "FLOAT32": np.dtype("<f4"),
    "FLOAT16": np.dtype("<f2"),
    "INT32": np.dtype("<i4"),
    "UINT8": np.dtype("u1"),
    "INT8": np.dtype("i1"),
    "INT16": np.dtype("<i2"),
    "UINT16": np.dtype("<u2"),
    "BOOL": np.dtype("u1"),
    "INT64": np.dtype("<i8"),
}


def _storage_bytes(value: np.ndarray, spec: TensorSpec) -> bytes:
    if spec.type == "BOOL":
        # A HAL boolean is any non-zero byte; TFLite's is 0 or 1.
        return (np.asarray(value) != 0).astype(np.uint8).tobytes()
    return np.ascontiguousarray(value, dtype=STORAGE[spec.type]).tobytes()


# Operator code versions other than 1: LiteRT's resolvers register BROADCAST_TO from version 2 (version 1 was the
# TensorFlow op run by the Flex delegate). Kernels do not read the version otherwise.
OPCODE_VERSIONS = {"BROADCAST_TO": 2}
CUSTOM = "CUSTOM:"  # operator code key prefix of custom operators (then their name)


class ModelBuilder:
    """The TFLite model being built: operator codes, buffers and subgraphs (subgraph 0 is main)."""

    def __init__(self, schema: Any, model: Model, constants: ConstantReader) -> None:
        self.schema = schema
        self.hal = model
        self.constants = constants
        self.buffers: list[bytes] = [b""]  # buffer 0: the empty buffer tensors without data point to
        self._opcodes: dict[str, int] = {}
        self.subgraphs: list[Any] = []

    def opcode(self, builtin: str) -> int:
        """The index of a builtin's operator code, or of a custom operator's (CUSTOM + its name), added on first
        use."""
        index = self._opcodes.get(builtin)
        if index is None:
            index = self._opcodes[builtin] = len(self._opcodes)
        return index

    def buffer(self, data: bytes) -> int:
        """A new buffer holding `data`; its index."""
        self.buffers.append(data)
        return len(self.buffers) - 1

    def reserve(self) -> int:
        """A subgraph slot to fill later (a control-flow operator needs the index of a subgraph not yet built)."""
        self.subgraphs.append(None)
        return len(self.subgraphs) - 1

    def pack(self) -> bytes:
        """The finished flatbuffer (file identifier TFL3)."""
        s = self.schema
        codes = []
        for name in self._opcodes:  # insertion order = index order
            custom = None
            if name.startswith(CUSTOM):
                custom = name[len(CUSTOM) :]
                name = "CUSTOM"
            code = getattr(s.BuiltinOperator, name)
            # Readers before the 32-bit builtin_code field read the deprecated byte; codes >= 127 put the
            # placeholder there.
            deprecated = min(code, s.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
            codes.append(
                fb.fields(
                    s,
                    "OperatorCode",
                    [
                        ("DeprecatedBuiltinCode", deprecated, None),
                        ("CustomCode", custom, fb.STRING),
                        ("Version", OPCODE_VERSIONS.get(name, 1), None),
                        ("BuiltinCode", code, None),
                    ],
                )
            )
        # Buffer data starts on a 16-byte boundary: kernels read constants in place.
        buffers = [fb.fields(s, "Buffer", [("Data", data or None, fb.ALIGNED16)]) for data in self.buffers]
        model = fb.fields(
            s,
            "Model",
            [
                ("Version", 3, None),
                ("OperatorCodes", codes, fb.TABLES),
                ("Subgraphs", list(self.subgraphs), fb.TABLES),
                ("Description", "nnfuzz HAL model", fb.STRING),
                ("Buffers", buffers, fb.TABLES),
            ],
        )
        return fb.write_file(model, b"TFL3")


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of a / b for positive b."""
    return -(-a // b)


def prod(values: Sequence[int]) -> int:
    """Product of a sequence of ints."""
    return math.prod(values)
