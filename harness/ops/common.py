"""Numeric and declarative helpers shared by the operation catalogue.

Numerics: real values of stored operands, requantization, fused activations. Plain float64 arithmetic:
these are meant to be obviously correct, not fast.

Declarations: short names for operand types and HAL versions, Arg builders, reusable signature checks
(`Check` functions return human-readable violations), shape helpers and `define`, which registers an
OpSpec whose kernel runs with numpy floating-point warnings silenced.

Conventions every family module follows:
- Shape functions see operand dimensions, where 0 means "unknown dimension"; they return 0 for a
  dimension they cannot determine and an empty tuple for a tensor whose rank they cannot determine
  (a scalar output's shape is also the empty tuple; the operand type tells the two apart).
- Kernels receive stored-form inputs and return stored-form outputs with their actual shapes. A run-time
  argument error that the HAL says must make the execution fail (an index out of bounds, a dimension that
  is not 1 in SQUEEZE, ...) is raised as `ExecutionError`; an input whose result the HAL leaves
  unspecified (integer overflow or division by zero, ...) raises `UnspecifiedResult`.
- Generation hints are documented in harness/ops/HINTS.md.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from harness.hal import FusedActivation, Operand, OperandType, OperationType, SymmPerChannelQuantParams, numpy_dtype
from harness.ops.registry import Arg, KernelContext, OpSpec, ShapeContext, Signature, register

FLOAT_TYPES = frozenset(
    {OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT32, OperandType.FLOAT16}
)
QUANT_ASYMM_TYPES = frozenset(
    {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT16_ASYMM}
)
QUANT_SYMM_TYPES = frozenset(
    {OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL}
)
_QUANTIZED_TYPES = QUANT_ASYMM_TYPES | QUANT_SYMM_TYPES

# Short names used by the signature tables.
F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM
QS8 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
Q8_SYMM = OperandType.TENSOR_QUANT8_SYMM
Q8_PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
Q16_SYMM = OperandType.TENSOR_QUANT16_SYMM
Q16_ASYMM = OperandType.TENSOR_QUANT16_ASYMM
BOOL8 = OperandType.TENSOR_BOOL8
INT32 = OperandType.INT32
FLOAT32 = OperandType.FLOAT32
FLOAT16 = OperandType.FLOAT16
BOOL = OperandType.BOOL
SUBGRAPH = OperandType.SUBGRAPH

V1_0, V1_1, V1_2, V1_3 = "V1_0", "V1_1", "V1_2", "V1_3"
_VERSION_ORDER = (V1_0, V1_1, V1_2, V1_3)

# Rank limits as the HAL states them. "from 1" has no upper limit: generators should cap it themselves.
NO_RANK_LIMIT = 2**31 - 1
RANK_UP_TO_4 = (1, 4)
RANK_FROM_1 = (1, NO_RANK_LIMIT)
RANK_4 = (4, 4)
RANK_1 = (1, 1)
RANK_2 = (2, 2)

# Every operand type that can carry data between operations (IF/WHILE pass any of them through).
DATA_TYPES = tuple(
    t for t in OperandType if t not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
)

# The scalar type of a "same kind" scalar parameter (beta, alpha, pad value) for a float tensor type.
FLOAT_SCALAR_OF = {F32: FLOAT32, F16: FLOAT16}


class ExecutionError(ValueError):
    """A run-time argument error that the HAL says must make the execution fail."""


class InvalidParameter(ExecutionError):
    """A scalar parameter given at run time lies outside the values its operation defines: the input argument is
    invalid, so the execution fails with INVALID_ARGUMENT (not a general failure)."""


class UnspecifiedResult(Exception):
    """The HAL leaves the result of this execution unspecified (e.g. int32 overflow): it must not be judged."""


Check = Callable[[ShapeContext], list[str]]


# ----------------------------------------------------------------------------------------------- numerics


def is_float(operand: Operand) -> bool:
    """True for float32/float16 operands, scalar or tensor."""
    return operand.type in FLOAT_TYPES


def is_quantized(operand: Operand) -> bool:
    """True for any quantized tensor type."""
    return operand.type in _QUANTIZED_TYPES


_F32 = struct.Struct("<f")
_F64 = np.dtype(np.float64)


def hal_scale(scale: float) -> float:
    """A scale as the HAL holds it: a float32 (a decimal like 0.1 is not exactly one)."""
    try:
        # The same rounding as np.float32(scale) (a C cast), without creating a numpy scalar.
        return _F32.unpack(_F32.pack(scale))[0]
    except (OverflowError, struct.error):  # beyond float32, or not a plain number: as numpy converts it
        pass
    return float(np.float32(scale))


def to_real(value: np.ndarray, operand: Operand) -> np.ndarray:
    """The real (float64) values a stored tensor represents: dequantized when quantized (float32 kept as it is
    under the native-precision probe)."""
    data = np.asarray(value)
    if _NATIVE_FLOAT32.get() and data.dtype == np.float32:  # the flag first: outside the probe it is all it costs
        return data
    if isinstance(operand.extra_params, SymmPerChannelQuantParams):
        scales = np.asarray(operand.extra_params.scales, dtype=np.float32).astype(np.float64)
        shape = [1] * data.ndim
        shape[operand.extra_params.channel_dim] = -1
        return data.astype(np.float64) * scales.reshape(shape)
    if operand.type in _QUANTIZED_TYPES:
        return (data.astype(np.float64) - operand.zero_point) * hal_scale(operand.scale)
    return data.astype(np.float64)


def _storage(operand_type: int) -> np.dtype | None:
    try:
        return numpy_dtype(operand_type)
    except ValueError:
        return None


# Kernels store results per call: numpy_dtype builds a new dtype object and np.iinfo a new info object each time.
_DTYPES = {int(t): d for t in OperandType if (d := _storage(t)) is not None}
_TYPE_RANGES = {t: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for t, d in _DTYPES.items() if d.kind in "iu"}


def _dtype(operand_type: int) -> np.dtype:
    dtype = _DTYPES.get(operand_type)
    return dtype if dtype is not None else numpy_dtype(operand_type)


def type_range(operand_type: int) -> tuple[int, int]:
    """Inclusive integer range of an integer-stored operand type."""
    bounds = _TYPE_RANGES.get(operand_type)
    if bounds is not None:
        return bounds
    info = np.iinfo(numpy_dtype(operand_type))
    return int(info.min), int(info.max)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C's round())."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# The stability probe of the reference executor (run_model's perturbation) also nudges values about to be quantized:
# a real value on a rounding tie (avg(109, 110) = 109.5 steps) lands on either side of it by float64 noise, where a
# fixed-point implementation rounds the exact tie by its own convention. Under +nudge and -nudge such a value
# rounds both ways, which shows the case to be on an edge instead of charging the driver with a one-step difference.
_QUANTIZATION_NUDGE: ContextVar[float] = ContextVar("quantization_nudge", default=0.0)
# With a scattered nudge each value goes up or down by a fixed pattern instead: implementations resolve exact ties
# element by element (by their own convention, or by how their arithmetic lands near the tie), and a normalization
# of tied values (SOFTMAX over a row) cancels a nudge that moves them all the same way.
_NUDGE_SCATTERED: ContextVar[bool] = ContextVar("quantization_nudge_scattered", default=False)
_NUDGE_PATTERN_SEED = 20261127
# True while a `quiet` kernel runs: numpy's floating-point warnings are off, so the kernels and from_real calls it
# makes need no np.errstate of their own (entering one costs more than many a kernel's arithmetic).
_QUIET: ContextVar[bool] = ContextVar("quiet_kernel", default=False)
# The rounding-bias probe of the oracle (run_model's lean) adds this many quantization steps to every value about to
# be quantized: the reference then rounds as an implementation whose every intermediate result leans that far to
# one side would, which bounds the bias any correct rounding at that precision can produce.
_QUANTIZATION_LEAN: ContextVar[float] = ContextVar("quantization_lean", default=0.0)
# The native-precision probe of the oracle (run_model's native): float32 tensors enter the kernels as float32, so
# the arithmetic runs at the precision a float32 implementation has instead of float64.
_NATIVE_FLOAT32: ContextVar[bool] = ContextVar("native_float32", default=False)


@contextmanager
def quantization_nudge(relative: float, scattered: bool = False) -> Iterator[None]:
    """Within the block, from_real scales values by (1 + relative) just before rounding them to a quantized type
    (when `scattered`, by 1 + relative or 1 - relative, element by element, in a fixed pattern)."""
    token = _QUANTIZATION_NUDGE.set(relative)
    scatter_token = _NUDGE_SCATTERED.set(scattered)
    try:
        yield
    finally:
        _NUDGE_SCATTERED.reset(scatter_token)
        _QUANTIZATION_NUDGE.reset(token)


@functools.lru_cache(maxsize=64)
def scattered_signs(size: int) -> np.ndarray:
    """`size` signs, -1.0 or +1.0, the same for every call (a seeded draw): the stability probe's scattered nudges."""
    return np.random.default_rng(_NUDGE_PATTERN_SEED).choice(np.array([-1.0, 1.0]), size=size)


@contextmanager
def quantization_lean(steps: float) -> Iterator[None]:
    """Within the block, from_real adds `steps` quantization steps to values just before rounding them."""
    token = _QUANTIZATION_LEAN.set(steps)
    try:
        yield
    finally:
        _QUANTIZATION_LEAN.reset(token)


@contextmanager
def native_float32(on: bool) -> Iterator[None]:
    """Within the block (when `on`), to_real keeps float32 tensors in float32 instead of widening them."""
    token = _NATIVE_FLOAT32.set(on)
    try:
        yield
    finally:
        _NATIVE_FLOAT32.reset(token)


def probing_edges() -> int:
    """The sign of the stability probe running now (0 outside it): kernels whose result the HAL leaves open on an
    edge (e.g. which of equal extremes ARGMAX names) resolve the edge the other way under the probe."""
    nudge = _QUANTIZATION_NUDGE.get()
    return (nudge > 0) - (nudge < 0)


def from_real(real: np.ndarray, operand: Operand) -> np.ndarray:
    """Store real values in the operand's type: quantize (round, saturate) or cast."""
    dtype = _dtype(operand.type)
    if type(real) is not np.ndarray or real.dtype is not _F64:  # (asarray would return a float64 array as it is)
        real = np.asarray(real, dtype=np.float64)
    if _QUIET.get():  # inside a kernel: warnings are off already
        return _stored(real, operand, dtype)
    # Overflow to inf (float16) and NaN casts are the expected outcome here, not an error.
    with np.errstate(all="ignore"):
        return _stored(real, operand, dtype)


def _stored(real: np.ndarray, operand: Operand, dtype: np.dtype) -> np.ndarray:
    # x.clip(lo, hi) is what np.clip(x, lo, hi) dispatches to.
    if operand.type in _QUANTIZED_TYPES:
        lo, hi = type_range(operand.type)
        scaled = real / hal_scale(operand.scale)
        nudge = _QUANTIZATION_NUDGE.get()
        if nudge:
            if _NUDGE_SCATTERED.get() and scaled.size:
                scaled = scaled * (1.0 + nudge * scattered_signs(scaled.size).reshape(scaled.shape))
            else:
                scaled = scaled * (1.0 + nudge)
        lean = _QUANTIZATION_LEAN.get()
        if lean:
            scaled = scaled + lean
        # round_half_away(scaled) in three passes instead of five: x + copysign(0.5, x) is -(|x| + 0.5) for a
        # negative x (rounding is symmetric), so its truncation is sign(x) * floor(|x| + 0.5). Only the sign of a
        # zero can differ, which the integer cast below does not see.
        q = np.trunc(scaled + np.copysign(0.5, scaled)) + operand.zero_point
        return q.clip(lo, hi).astype(dtype)
    if dtype.kind in "iu":
        lo, hi = type_range(operand.type)
        return np.trunc(real).clip(lo, hi).astype(dtype)
    if dtype.kind == "b":
        return real.astype(bool)
    return real.astype(dtype)


def requantize(value: np.ndarray, src: Operand, dst: Operand) -> np.ndarray:
    """Re-express stored values of `src` in the type and quantization of `dst`."""
    if src.type == dst.type and src.scale == dst.scale and src.zero_point == dst.zero_point:
        return np.asarray(value, dtype=_dtype(dst.type))
    return from_real(to_real(value, src), dst)


def activation_bounds(code: int) -> tuple[float, float]:
    """Real-valued clamp range of a fused activation code."""
    try:
        return _ACTIVATION_BOUNDS[code]
    except (KeyError, TypeError):
        pass
    return _ACTIVATION_BOUNDS[FusedActivation(code)]  # ValueError for a code that is not an activation


_ACTIVATION_BOUNDS = {
    FusedActivation.NONE: (-np.inf, np.inf),
    FusedActivation.RELU: (0.0, np.inf),
    FusedActivation.RELU1: (-1.0, 1.0),
    FusedActivation.RELU6: (0.0, 6.0),
}


def apply_activation(real: np.ndarray, code: int) -> np.ndarray:
    """Apply a fused activation to real values."""
    lo, hi = activation_bounds(code)
    # x.clip is what np.clip dispatches to for an array.
    return real.clip(lo, hi) if isinstance(real, np.ndarray) else np.clip(real, lo, hi)


def output_dtype(ctx: KernelContext, k: int = 0) -> np.dtype:
    """Stored numpy dtype of output k."""
    return _dtype(ctx.output_operands[k].type)


def real_input(ctx: KernelContext, i: int) -> np.ndarray:
    """Real (float64) values of input i."""
    return to_real(ctx.inputs[i], ctx.input_operands[i])


def store(ctx: KernelContext, real: np.ndarray, k: int = 0) -> np.ndarray:
    """Real values stored in the type of output k."""
    return from_real(real, ctx.output_operands[k])


def exact_int32(values: np.ndarray) -> np.ndarray:
    """Exact integer results as TENSOR_INT32 data; UnspecifiedResult if any does not fit in int32."""
    values = np.asarray(values, dtype=np.int64)
    lo, hi = type_range(OperandType.TENSOR_INT32)
    if values.size and (values.min() < lo or values.max() > hi):
        raise UnspecifiedResult("int32 overflow")
    return values.astype(np.int32)


def int_list(value: np.ndarray | None) -> list[int] | None:
    """A stored integer tensor as a flat list of Python ints (None stays None)."""
    if value is None:
        return None
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


# ----------------------------------------------------------------------------------------------- shapes


def normalize_axis(axis: int, rank: int) -> int:
    """Axis in [-rank, rank) mapped to [0, rank); ExecutionError outside that range."""
    if not -rank <= axis < rank:
        raise ExecutionError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def broadcast_dims(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """NumPy-style broadcast of two operand shapes where 0 means unknown; ValueError if incompatible."""
    a, b = tuple(a), tuple(b)
    if a == b:  # the usual case: every dimension is kept as it is
        return a
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x == 0 or y == 0:  # one side unknown: it must be 1 or equal to the other
            out.append(max(x, y))
        else:
            raise ValueError(f"dimensions {x} and {y} are not broadcast-compatible")
    return tuple(out)


def known_rank(shape: Sequence[int] | None) -> bool:
    """True when a shape's rank is known (tensors with empty dimensions have unknown rank)."""
    return shape is not None and len(shape) > 0


def same_shape(ctx: ShapeContext, i: int = 0) -> list[tuple[int, ...]]:
    """Shape function: one output shaped like input i."""
    shape = ctx.shapes[i]
    return [tuple(shape) if shape is not None else ()]


def broadcast_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Shape function: one output shaped like the broadcast of inputs 0 and 1."""
    a, b = ctx.shapes[0], ctx.shapes[1]
    if not known_rank(a) or not known_rank(b):
        return [()]
    return [broadcast_dims(a, b)]


def constant_ints(ctx: ShapeContext, i: int) -> list[int] | None:
    """Constant integer tensor input i as a list, or None if it is absent or not constant."""
    if i >= len(ctx.values):
        return None
    return int_list(ctx.values[i])


# ----------------------------------------------------------------------------------------------- declarations


def tensor(name: str, t: OperandType, rank: tuple[int, int] | None = RANK_UP_TO_4, **kw: Any) -> Arg:
    """A tensor position of one type."""
    return Arg(name, (t,), rank=rank, **kw)


def scalar(name: str, t: OperandType, **kw: Any) -> Arg:
    """A scalar position of one type."""
    return Arg(name, (t,), **kw)


def later(*versions: str) -> str:
    """The latest of several HAL versions."""
    return max(versions, key=_VERSION_ORDER.index)


def checks(*fns: Check | None) -> Check | None:
    """Combine checks into one that reports every violation (None entries are skipped)."""
    active = [f for f in fns if f is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]

    def combined(ctx: ShapeContext) -> list[str]:
        out: list[str] = []
        for f in active:
            out.extend(f(ctx))
        return out

    return combined


def _scalar_value(ctx: ShapeContext, i: int) -> Any:
    return ctx.scalar(i) if i < len(ctx.values) else None


def _same_float32(a: float, b: float) -> bool:
    return bool(np.float32(a) == np.float32(b))


def same_quant_as_input(inp: int = 0, out: int = 0) -> Check:
    """Check: a quantized output has the scale and zero point of input `inp`."""

    def check(ctx: ShapeContext) -> list[str]:
        src, dst = ctx.operands[inp], ctx.outputs[out]
        if src is None or not is_quantized(dst):
            return []
        if not _same_float32(src.scale, dst.scale) or src.zero_point != dst.zero_point:
            return [
                f"output {out} scale/zeroPoint ({dst.scale}, {dst.zero_point}) must equal input {inp}'s "
                f"({src.scale}, {src.zero_point})"
            ]
        return []

    return check


def fixed_output_quant(scale: float, zero_point: int, out: int = 0) -> Check:
    """Check: output `out` has exactly this scale and zero point."""

    def check(ctx: ShapeContext) -> list[str]:
        dst = ctx.outputs[out]
        if not _same_float32(dst.scale, scale) or dst.zero_point != zero_point:
            return [
                f"output {out} scale/zeroPoint must be ({scale}, {zero_point}), got ({dst.scale}, {dst.zero_point})"
            ]
        return []

    return check


def scalar_in(i: int, allowed: Iterable[Any], what: str = "value") -> Check:
    """Check: constant scalar input i (when known) is one of `allowed`."""
    allowed = tuple(allowed)

    def check(ctx: ShapeContext) -> list[str]:
        v = _scalar_value(ctx, i)
        if v is not None and v not in allowed:
            return [f"input {i} ({what}) must be one of {list(allowed)}, got {v}"]
        return []

    return check


def scalar_at_least(i: int, lo: float, what: str = "value", strict: bool = False) -> Check:
    """Check: constant scalar input i (when known) is >= lo (> lo if strict)."""

    def check(ctx: ShapeContext) -> list[str]:
        v = _scalar_value(ctx, i)
        if v is not None and (v <= lo if strict else v < lo):
            return [f"input {i} ({what}) must be {'>' if strict else '>='} {lo}, got {v}"]
        return []

    return check


def fused_activation(i: int, none_only: bool = False) -> Check:
    """Check: input i is a FusedActivationFunc code (only NONE when `none_only`)."""
    allowed = (0,) if none_only else tuple(int(a) for a in FusedActivation)
    return scalar_in(i, allowed, "fused activation")


def broadcastable(a: int = 0, b: int = 1) -> Check:
    """Check: inputs a and b have broadcast-compatible shapes."""

    def check(ctx: ShapeContext) -> list[str]:
        sa, sb = ctx.shapes[a], ctx.shapes[b]
        if not known_rank(sa) or not known_rank(sb):
            return []
        try:
            broadcast_dims(sa, sb)
        except ValueError as e:
            return [f"inputs {a} and {b}: {e}"]
        return []

    return check


def shapes_equal(*indices: int) -> Check:
    """Check: the listed inputs have the same (known) dimensions."""

    def check(ctx: ShapeContext) -> list[str]:
        shapes = [ctx.shapes[i] for i in indices if known_rank(ctx.shapes[i])]
        for s in shapes[1:]:
            merged = _merge(shapes[0], s)
            if merged is None:
                return [f"inputs {list(indices)} must have the same shape, got {shapes}"]
        return []

    return check


def axis_in_range(i: int, tensor_input: int = 0, extra: int = 0) -> Check:
    """Check: constant axis input i lies in [-(n+extra), n+extra) for the rank n of `tensor_input`."""

    def check(ctx: ShapeContext) -> list[str]:
        v, shape = _scalar_value(ctx, i), ctx.shapes[tensor_input]
        if v is None or not known_rank(shape):
            return []
        n = len(shape) + extra
        if not -n <= v < n:
            return [f"input {i} (axis) must be in [{-n}, {n}), got {v}"]
        return []

    return check


def _merge(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return tuple(out)


class QuietKernels:
    """Within the block, numpy floating-point warnings are off, so `quiet` kernels and from_real enter no
    np.errstate of their own (a caller running many kernels pays for one instead of one per kernel)."""

    __slots__ = ("_errstate", "_token")

    def __enter__(self) -> None:
        self._errstate = np.errstate(all="ignore")
        self._errstate.__enter__()
        self._token = _QUIET.set(True)

    def __exit__(self, *exc: object) -> None:
        _QUIET.reset(self._token)
        self._errstate.__exit__(*exc)


def quiet(fn: Callable[[KernelContext], list[np.ndarray]]) -> Callable[[KernelContext], list[np.ndarray]]:
    """Run a kernel with numpy floating-point warnings silenced (inf/NaN results are legitimate outputs)."""

    @functools.wraps(fn)
    def wrapper(ctx: KernelContext) -> list[np.ndarray]:
        if _QUIET.get():
            return fn(ctx)
        with QuietKernels():
            return fn(ctx)

    wrapper.silences_warnings = True  # type: ignore[attr-defined]
    return wrapper


def silences_warnings(kernel: Callable[..., object]) -> bool:
    """True for a kernel wrapped by `quiet` (callers need no np.errstate of their own around it)."""
    return getattr(kernel, "silences_warnings", False) is True


def define(
    op: OperationType,
    family: str,
    signatures: list[Signature],
    shape: Callable[[ShapeContext], list[tuple[int, ...]]] | None = None,
    kernel: Callable[[KernelContext], list[np.ndarray]] | None = None,
    hints: dict[str, Any] | None = None,
) -> OpSpec:
    """Register an operation; its kernel runs with floating-point warnings silenced."""
    return register(
        OpSpec(
            op=op,
            family=family,
            signatures=signatures,
            shape=shape,
            kernel=quiet(kernel) if kernel is not None else None,
            hints=hints or {},
        )
    )


def signature_accepts(sig: Signature, input_types: Sequence[int | None], output_types: Sequence[int]) -> bool:
    """True if operand types (None = omitted optional input) fit a signature's positions and counts."""
    return _fits(sig.inputs, list(input_types), sig.required_inputs, optional_ok=True) and _fits(
        sig.outputs, list(output_types), len(sig.outputs), optional_ok=False
    )


def _fits(args: Sequence[Arg], types: list[int | None], required: int, optional_ok: bool) -> bool:
    repeated = [k for k, a in enumerate(args) if a.repeated]
    if repeated:
        # Expand the single repeated position to absorb the extra operands.
        k = repeated[0]
        extra = len(types) - len(args)
        if extra < 0 and not (extra == -1 and k == len(args) - 1 and required <= k):
            return False
        # A trailing repeated position past the required inputs may also be left out altogether.
        args = list(args[:k]) + [args[k]] * (extra + 1) + list(args[k + 1 :])
        required = min(required, len(args))
    if not required <= len(types) <= len(args):
        return False
    for arg, t in zip(args, types):
        if t is None:
            if not (optional_ok and arg.optional):
                return False
        elif t not in arg.types:
            return False
    return True
