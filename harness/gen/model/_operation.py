"""OpDraw: drawing one operation of a subgraph against a catalogue signature.

A recipe (harness/gen/model/recipes) calls `data`, `const`, `param` and `omit` for the positions it cares about;
`finish` fills the rest from the catalogue's hints, creates the outputs, runs the signature's check and the
reference kernel on the actual values, and commits the operation. Anything that does not work out raises
OpRejected, and the caller draws the slot again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.gen.model import _values as V
from harness.gen.model._graph import CONSTANT_LIFETIMES, READABLE_LIFETIMES, Gen, GenOperand, Graph, OpRejected
from harness.gen.model._params import OMIT, param_value
from harness.gen.model._values import draw_shape
from harness.hal import (
    Operand,
    OperandLifeTime,
    OperandType,
    OperationType,
    SymmPerChannelQuantParams,
    is_scalar_type,
    numpy_dtype,
)
from harness.hal.sizes import SCALAR_TYPES
from harness.ops import Arg, KernelContext, OpSpec, ShapeContext, Signature
from harness.ops.common import ExecutionError, UnspecifiedResult, silences_warnings
from harness.ops.parameters import BATCH_INDEX_INPUTS, Domain, batch_index_domain, domain_of
from harness.reference.executor import shape_conflicts

L = OperandLifeTime
T = OperandType
# Enum members used in loops, as module constants (an attribute of an Enum class is several times slower).
_NO_VALUE = L.NO_VALUE
_SUBGRAPH_INPUT = L.SUBGRAPH_INPUT
# Quantized types whose operands carry one scale (the per-channel type carries its scales in channel params).
_ABSENT_QUANTIZED = V.QUANTIZED - {OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL}
_CONSTANT_COPY = L.CONSTANT_COPY
_CONSTANT_REFERENCE = L.CONSTANT_REFERENCE
_TEMPORARY_VARIABLE = L.TEMPORARY_VARIABLE
_PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL
_TENSOR_INT32 = T.TENSOR_INT32

# Kernel failures that make a draw unusable (the executor turns them into failure statuses).
KERNEL_FAILURES = (
    ExecutionError,
    UnspecifiedResult,
    ValueError,
    IndexError,
    KeyError,
    ZeroDivisionError,
    OverflowError,
    FloatingPointError,
)


_SCALARS = frozenset({T.INT32, T.UINT32, T.FLOAT32, T.FLOAT16, T.BOOL})
# Reused float values must stay within this magnitude unless the input's range is strict.
_LOOSE_BOUND = 100.0
# Operations whose float inputs must stay inside their hinted range (else results overflow).
_STRICT_OPS = frozenset(
    int(o) for o in (OperationType.EXP, OperationType.POW, OperationType.REDUCE_PROD, OperationType.CAST)
)
_UNSET = object()
# Catalogue families whose operations round each result once from one or two input elements (element-wise
# arithmetic, activations, comparisons, data movement, selection, conversions): the only ones that get float
# inputs near the magnitude the oracle judges. An operation that accumulates (a convolution, a pool, a reduction, a
# normalization, an interpolation) may lose the float32 rounding of such inputs in a cancellation (HAL-allowed
# float32 arithmetic, about 6e-5 at 1e3) and land on a small result whose absolute tolerance is 1e-5; in a relaxed
# model the inputs themselves may be rounded to float16 (a step of 0.5 at 1e3).
_ROUNDING_ONCE = frozenset({"elementwise", "activations", "comparison", "reshape", "selection", "quantization"})
# Activations that normalize over an axis (a maximum, a sum of exponentials): they accumulate.
_NORMALIZING = frozenset(int(o) for o in (OperationType.SOFTMAX, OperationType.LOG_SOFTMAX))
_max = np.maximum.reduce

# Output quantization the HAL fixes: (operation, output position, type) -> (scale, zero point).
FIXED_OUTPUT_QUANT: dict[tuple[int, int, int], tuple[float, int]] = {}


def param_table(spec: OpSpec, sig: Signature) -> dict[int, Any]:
    """The spec's "params" hints keyed by input position of this signature (hints name positions by index, by
    negative index from the end, or by Arg name)."""
    return _sig_info(spec, sig).table


def _param_table(spec: OpSpec, sig: Signature) -> dict[int, Any]:
    table = spec.hints.get("params", {})
    n = len(sig.inputs)
    out = {k % n: v for k, v in table.items() if isinstance(k, int) and -n <= k < n}
    out.update({i: table[a.name] for i, a in enumerate(sig.inputs) if a.name in table})
    return out


def _expand(args: Sequence[Arg], count: int | None) -> tuple[list[Arg], list[int]]:
    """The concrete positions of a signature with its repeated Arg used enough times to give `count` positions."""
    if count is None:
        return list(args), list(range(len(args)))
    repeated = [k for k, a in enumerate(args) if a.repeated]
    if not repeated:
        return list(args), list(range(len(args)))
    k = repeated[0]
    times = max(1, count - (len(args) - 1))
    positions = list(range(k)) + [k] * times + list(range(k + 1, len(args)))
    return [args[p] for p in positions], positions


class _SigInfo:
    """What drawing against one signature of one operation reads of the catalogue, worked out once per process:
    the expanded positions, the parameter table and, per input position, the hinted ranges."""

    __slots__ = (
        "spec",
        "sig",
        "hints",
        "args",
        "positions",
        "out_args",
        "table",
        "real",
        "ints",
        "slots",
        "op_type",
        "required",
    )

    def __init__(self, spec: OpSpec, sig: Signature) -> None:
        self.spec = spec
        self.sig = sig
        self.hints = spec.hints
        args, positions = _expand(sig.inputs, None)
        # Tuples: every draw shares them (set_input_count replaces them rather than changing them).
        self.args = tuple(args)
        self.positions = tuple(positions)
        self.out_args = tuple(_expand(sig.outputs, None)[0])
        self.table = _param_table(spec, sig)
        self.real: dict[int, tuple[float, float]] = {}  # per position, as real_range gives it
        self.ints: dict[int, tuple[int, int]] = {}  # per position, as int_range gives it
        # Per (position, max_rank): what `data` uses when the caller does not say (real range, integer range,
        # rank bounds).
        self.slots: dict[tuple[int, int], tuple[tuple[float, float], tuple[int, int], tuple[int, int]]] = {}
        self.op_type = int(spec.op)
        self.required = sig.required_inputs


# Per signature (held to keep its id valid, with the spec and hints it was worked out from).
_SIG_INFO: dict[int, _SigInfo] = {}


def _sig_info(spec: OpSpec, sig: Signature) -> _SigInfo:
    info = _SIG_INFO.get(id(sig))
    if info is None or info.sig is not sig or info.spec is not spec or info.hints is not spec.hints:
        if len(_SIG_INFO) > 4096:
            _SIG_INFO.clear()
        info = _SIG_INFO[id(sig)] = _SigInfo(spec, sig)
    return info


def _real_range(hints: dict[str, Any], pos: int) -> tuple[float, float]:
    ranges = hints.get("input_ranges", {})
    if pos in ranges:
        return tuple(ranges[pos])  # type: ignore[return-value]
    return tuple(hints.get("input_range", V.DEFAULT_RANGE))  # type: ignore[return-value]


def _int_range(hints: dict[str, Any], pos: int) -> tuple[int, int]:
    ranges = hints.get("input_ranges", {})
    if pos in ranges:
        lo, hi = ranges[pos]
        return math.ceil(lo), math.floor(hi)
    if "int_range" in hints:
        return tuple(hints["int_range"])  # type: ignore[return-value]
    lo, hi = hints.get("input_range", V.DEFAULT_INT_RANGE)
    return math.ceil(lo), math.floor(hi)


def operand_shape(op: Operand) -> tuple[int, ...] | None:
    """What a signature check sees: () for scalars, the dimensions, None for unknown rank."""
    if is_scalar_type(op.type):
        return ()
    return tuple(op.dimensions) if op.dimensions else None


class OpDraw:
    """One operation being drawn for a subgraph."""

    def __init__(
        self,
        gen: Gen,
        graph: Graph,
        spec: OpSpec,
        sig: Signature,
        *,
        n_inputs: int | None = None,
        n_outputs: int | None = None,
    ) -> None:
        self.gen = gen
        self.src = gen.src
        self.cfg = gen.cfg
        self.graph = graph
        self.spec = spec
        self.sig = sig
        info = self._info = _sig_info(spec, sig)
        self.op_type = info.op_type
        self.args: Sequence[Arg] = info.args
        self.positions: Sequence[int] = info.positions
        if n_inputs is not None:
            self.args, self.positions = _expand(sig.inputs, n_inputs)
        self.out_args: Sequence[Arg] = info.out_args if n_outputs is None else _expand(sig.outputs, n_outputs)[0]
        self.inputs: list[Any] = [_UNSET] * len(self.args)
        self.table = info.table
        self.hints = spec.hints
        self.out_quant: dict[int, tuple[float, int]] = {}  # explicit output quantization
        self.out_types: dict[int, int] = {}
        self.free_quant = False  # quantized outputs get parameters fitted to the results
        self.scale_floor: dict[int, float] = {}  # fitted output scales must exceed these
        self.bound: dict[int, GenOperand] = {}  # inputs fixed by the caller (control flow bodies)
        self.keep_dims = False  # outputs declare their full dimensions (never unknown)
        self.drawn: list[str] = []  # the extremes drawn (features of the model once the operation is committed)

    def set_input_count(self, n: int) -> None:
        """Use the repeated input position enough times for n inputs (before any input is drawn)."""
        self.args, self.positions = _expand(self.sig.inputs, n)
        self.inputs = [_UNSET] * len(self.args)

    def set_output_count(self, n: int) -> None:
        """Use the repeated output position enough times for n outputs."""
        self.out_args, _ = _expand(self.sig.outputs, n)

    # ------------------------------------------------------------------------------------------ hints

    def hint_kind(self, i: int) -> Any:
        """The "params" hint of input position i (None if there is none)."""
        return self.table.get(self.positions[i])

    def real_range(self, i: int) -> tuple[float, float]:
        """The real range the hints give for data input i."""
        pos = self.positions[i]
        known = self._info.real
        r = known.get(pos)
        if r is None:
            r = known[pos] = _real_range(self.hints, pos)
        return r

    def int_range(self, i: int) -> tuple[int, int]:
        """The integer range for a TENSOR_INT32 data input i."""
        pos = self.positions[i]
        known = self._info.ints
        r = known.get(pos)
        if r is None:
            r = known[pos] = _int_range(self.hints, pos)
        return r

    # ------------------------------------------------------------------------------------------ inputs

    def is_set(self, i: int) -> bool:
        """True once position i has an operand or is omitted."""
        return self.inputs[i] is not _UNSET

    def get(self, i: int) -> GenOperand | None:
        """The operand at position i (None when omitted or unset)."""
        v = self.inputs[i]
        return v if isinstance(v, GenOperand) else None

    def value(self, i: int) -> np.ndarray | None:
        """The actual value at position i."""
        g = self.get(i)
        return None if g is None else g.value

    def _rank_bounds(self, arg: Arg, rank: tuple[int, int] | int | None) -> tuple[int, int]:
        if isinstance(rank, int):
            return rank, rank
        lo, hi = rank or arg.rank or (1, self.cfg.max_rank)
        return max(lo, 0), max(min(hi, self.cfg.max_rank), lo)

    def _fits_reuse(
        self,
        g: GenOperand,
        types: Sequence[int],
        shape: tuple[int, ...] | None,
        ranks: tuple[int, int],
        fits: Callable[[tuple[int, ...]], bool] | None,
        quant: tuple[float, int] | None,
        real: tuple[float, float],
        ints: tuple[int, int],
        constant_only: bool,
        strict: bool,
    ) -> bool:
        t = g.type
        if t not in types or g.value is None or t == _PER_CHANNEL:
            return False
        if constant_only and g.lifetime not in CONSTANT_LIFETIMES:
            return False
        s = g.shape
        if shape is not None and s != shape:
            return False
        if shape is None and not ranks[0] <= len(s) <= ranks[1]:
            return False
        if fits is not None and not fits(s):
            return False
        if quant is not None and (float(g.op.scale), int(g.op.zero_point)) != (V.f32(quant[0]), int(quant[1])):
            return False
        if g.value.size == 0 or g.value.size > self.gen.max_elements:
            return False
        if t in V.FLOAT_TENSORS:
            lo, hi = g.extent()
            if strict:
                return real[0] <= lo and hi <= real[1]
            return -_LOOSE_BOUND <= lo and hi <= _LOOSE_BOUND
        if t == _TENSOR_INT32:
            lo, hi = g.extent()
            return ints[0] <= lo and hi <= ints[1]
        return True

    def strict_range(self, i: int, real: tuple[float, float]) -> bool:
        """True when input i needs values inside its hinted range (a restricted domain), not just moderate ones."""
        return real[0] >= 0.0 or self.positions[i] in self.hints.get("input_ranges", {}) or self.op_type in _STRICT_OPS

    def data(
        self,
        i: int,
        *,
        shape: tuple[int, ...] | None = None,
        rank: tuple[int, int] | int | None = None,
        types: Sequence[int] | None = None,
        real: tuple[float, float] | None = None,
        ints: tuple[int, int] | None = None,
        quant: tuple[float, int] | None = None,
        channel_dim: int | None = None,
        fits: Callable[[tuple[int, ...]], bool] | None = None,
        reuse: bool = True,
        constant: bool | None = None,
        min_dim: int = 1,
        max_dim: int | None = None,
        value: np.ndarray | None = None,
        new_shape: tuple[int, ...] | None = None,
        extremes: bool | None = None,
    ) -> GenOperand:
        """A tensor (or scalar) data operand for position i: an earlier value that fits, or a new one.

        `shape` constrains both reused and new values; `fits` filters reused values (and new drawn shapes);
        `new_shape` is the shape of a new value when nothing is reused. `extremes` says whether a new value may get
        extreme quantization parameters or values at saturation (ModelConfig): by default only where the caller
        left the values to the hints (a `real` or `ints` range of the caller's is a domain: deltas, scores,
        indices, biases); True where the caller's range is only a magnitude (filters, weights).
        """
        bound = self.bound
        if bound and i in bound:
            g = bound[i]
            self.inputs[i] = g
            return g
        arg = self.args[i]
        types = tuple(types or arg.types)
        cfg = self.cfg
        # The defaults depend on the position and max_rank only.
        key = (self.positions[i], cfg.max_rank)
        known = self._info.slots
        slot = known.get(key)
        if slot is None:
            slot = known[key] = (self.real_range(i), self.int_range(i), self._rank_bounds(arg, None))
        if extremes is None:
            extremes = real is None and ints is None
        real = real or slot[0]
        ints = ints or slot[1]
        ranks = slot[2] if rank is None else self._rank_bounds(arg, rank)
        constant_only = arg.constant or constant is True
        gen = self.gen
        src = self.src
        if reuse and value is None and constant is not False and gen.chance(cfg.reuse_probability):
            strict = self.strict_range(i, real)
            fits_reuse = self._fits_reuse
            # Graph.values() and the type test (_fits_reuse's own first test, which rules most operands out)
            # inline, in that order.
            candidates = [
                g
                for g in self.graph.operands
                if g.value is not None
                and (g.produced or g.op.lifetime in READABLE_LIFETIMES)
                and g.type in types
                and fits_reuse(g, types, shape, ranks, fits, quant, real, ints, constant_only, strict)
            ]
            if candidates:
                # Earlier results first: they make the graph a graph rather than independent operations.
                results = [g for g in candidates if g.produced]
                if results and gen.chance(0.75):
                    candidates = results
                g = src.choice(candidates)
                self.inputs[i] = g
                return g
        t = src.choice(types)
        if value is not None:
            shape = tuple(value.shape)
        if shape is None and new_shape is not None:
            shape = tuple(new_shape)
        if shape is None:
            hi_dim = cfg.max_dim if max_dim is None else max_dim
            for _ in range(4):
                shape = draw_shape(src, src.integer(*ranks), hi_dim, min_dim)
                if max_dim is None and shape and gen.chance(cfg.vector_width_probability):
                    shape = self._widen(shape, min_dim)
                if fits is None or fits(shape):
                    break
            else:
                raise OpRejected(f"no shape fits input {i}")
        if t in SCALAR_TYPES:
            shape = ()
        scale, zero_point, channel = 0.0, 0, None
        whole_type = False  # stored values over the whole range of the type (extreme parameters)
        if t in V.QUANTIZED:
            if t == _PER_CHANNEL:
                cd = channel_dim if channel_dim is not None else src.integer(0, max(len(shape) - 1, 0))
                if gen.chance(cfg.extreme_quant_probability):
                    channel = V.spread_channel_params(src, shape[cd], cd, *real)
                    self._extreme("extreme_quant:channel_spread")
                else:
                    channel = V.channel_params(src, shape[cd], cd, *real)
            elif quant is not None:
                scale, zero_point = V.f32(quant[0]), int(quant[1])
            elif (
                extremes
                and value is None
                and gen.chance(cfg.extreme_quant_probability)
                and not self.strict_range(i, real)
            ):
                scale, zero_point, what = V.extreme_quant_params(src, t, *real)
                self._extreme("extreme_quant:" + what)
                whole_type = True
            else:
                scale, zero_point = V.quant_params(src, t, *real)
        elif t == _TENSOR_INT32 and quant is not None:
            scale = V.f32(quant[0])
        if value is None:
            if whole_type:
                value = V.int_array(src, numpy_dtype(t), shape, *V.STORED_RANGE[t])
            else:
                value = V.tensor_value(src, t, shape, real, ints, scale, zero_point, channel)
            if extremes and gen.chance(cfg.saturation_probability):
                value = self._saturate(i, t, shape, value, real, scale)
        else:
            value = np.array(value, dtype=numpy_dtype(t))  # a contiguous copy (0-d stays 0-d)
        # A constant (by reference or by copy) or a model input; outside main, new data is always a constant.
        if constant_only or constant is True or not self.graph.main:
            lifetime = _CONSTANT_REFERENCE if gen.chance(cfg.reference_probability) else _CONSTANT_COPY
        elif constant is False:
            lifetime = _SUBGRAPH_INPUT
        elif gen.chance(cfg.constant_probability):
            lifetime = _CONSTANT_REFERENCE if gen.chance(cfg.reference_probability) else _CONSTANT_COPY
        else:
            lifetime = _SUBGRAPH_INPUT
        dims = list(shape)
        if lifetime == _SUBGRAPH_INPUT and dims and channel is None and gen.chance(cfg.unknown_input_dims_probability):
            dims = [0] * len(dims)
        g = GenOperand(t, dims, lifetime, value, scale, zero_point, channel)
        self.inputs[i] = g
        return g

    def size(self, lo: int, hi: int) -> int:
        """A channel count or innermost size: in [lo, hi], now and then one around a vector width."""
        if self.gen.chance(self.cfg.vector_width_probability):
            return self._vector_width()
        return self.src.integer(lo, hi)

    def long(self, lo: int, hi: int, long_lo: int, long_hi: int, weight: float = 1.0) -> int:
        """A size in [lo, hi], now and then (long_size_probability, times `weight`) one in [long_lo, long_hi]."""
        if self.gen.chance(min(1.0, self.cfg.long_size_probability * weight)):
            self.gen.allow_wide()
            self.drawn.append("long_size")
            return self.src.integer(long_lo, long_hi)
        return self.src.integer(lo, hi)

    def _vector_width(self) -> int:
        width, band = V.vector_width(self.src)
        self.gen.allow_wide()
        self.drawn.append(band)
        return width

    def _extreme(self, feature: str) -> None:
        self.gen.judge_strictly()
        self.drawn.append(feature)

    def _widen(self, shape: tuple[int, ...], min_dim: int) -> tuple[int, ...]:
        """The shape with its innermost dimension around a vector width, its outer dimensions cut back (from the
        outermost) until the tensor fits the wide element limit."""
        width = max(self._vector_width(), min_dim)
        outer = list(shape[:-1])
        limit = self.gen.max_elements
        k = 0
        while k < len(outer) and math.prod(outer) * width > limit:
            outer[k] = max(1, min_dim)
            k += 1
        return (*outer, width)

    def _saturate(
        self,
        i: int,
        t: int,
        shape: tuple[int, ...],
        value: np.ndarray,
        real: tuple[float, float],
        scale: float,
    ) -> np.ndarray:
        """A new value at saturation (ModelConfig.saturation_probability), or `value` where the position restricts
        its values (a domain: see strict_range): quantized values piled on the bounds of the type, int32 values on
        the int32 extremes (not for a bias, which has a scale), floats widened to nearly the magnitude the oracle
        still judges."""
        if self.strict_range(i, real):
            return value
        if t in V.QUANTIZED:
            lo, hi = V.STORED_RANGE[t]
            self._extreme("saturation:quantized")
            return V.pile_on_bounds(self.src, value, lo, hi)
        if t == _TENSOR_INT32:
            if scale:
                return value
            self._extreme("saturation:int32")
            return V.pile_on_bounds(self.src, value, V.INT32_MIN, V.INT32_MAX)
        if t in V.FLOAT_TENSORS:
            if self.gen.relaxed or self.spec.family not in _ROUNDING_ONCE or self.op_type in _NORMALIZING:
                return value
            top = self.cfg.judged_abs_value * V.log_uniform(self.src, V.SATURATED_FLOAT_EXPONENTS)
            self._extreme("saturation:float")
            return V.float_array(self.src, value.dtype, shape, -top, top)
        return value

    def weight(self, i: int, shape: tuple[int, ...], **kw: Any) -> GenOperand:
        """A weight tensor: usually a constant, sometimes a model input."""
        constant = None if self.gen.chance(0.25) else True
        return self.data(i, shape=shape, reuse=kw.pop("reuse", False), constant=constant, **kw)

    def const(
        self,
        i: int,
        value: Any,
        *,
        operand_type: int | None = None,
        quant: tuple[float, int] | None = None,
        channel: SymmPerChannelQuantParams | None = None,
        allow_input: bool = False,
        copy: bool = False,
        domain: Domain | None = None,
    ) -> GenOperand:
        """A constant (or, when allowed and drawn, a model input) holding exactly `value`.

        `copy` forces CONSTANT_COPY: the validator's checks read only those values. `domain` (a parameter's range)
        makes it a model input with even odds when the model draws parameters out of range at run time.
        """
        arg = self.args[i]
        t = int(operand_type if operand_type is not None else arg.types[0])
        # astype always returns a new array (the copy this operand owns).
        array = np.asarray(value).astype(numpy_dtype(t))
        if t in SCALAR_TYPES:
            array = array.reshape(())
        gen = self.gen
        if copy:
            lifetime = _CONSTANT_COPY
        else:
            lifetime = _CONSTANT_REFERENCE if gen.chance(self.cfg.reference_probability) else _CONSTANT_COPY
            if allow_input and not arg.constant and self.graph.main:
                if gen.chance(self.cfg.param_input_probability):
                    lifetime = _SUBGRAPH_INPUT
                elif domain is not None and gen.break_parameter and self.src.boolean():
                    lifetime = _SUBGRAPH_INPUT
                else:
                    domain = None
        scale, zero_point = (V.f32(quant[0]), int(quant[1])) if quant else (0.0, 0)
        g = GenOperand(t, list(array.shape), lifetime, array, scale, zero_point, channel)
        g.parameter = lifetime == _SUBGRAPH_INPUT
        if g.parameter and domain is not None and gen.break_parameter:
            g.domain = domain
        self.inputs[i] = g
        return g

    def param(self, i: int, value: Any = None, *, copy: bool = False) -> GenOperand | None:
        """A parameter input: `value`, or one drawn from the hints; None (omitted) when the hint says so."""
        if value is None:
            value = param_value(self, i, self.hint_kind(i))
        if value is OMIT:
            self.omit(i)
            return None
        domain = domain_of(self.op_type, self.args[i].name) if self.gen.break_parameter else None
        return self.const(i, value, allow_input=True, copy=copy, domain=domain)

    def batch_indices(self, indices: Sequence[int], batches: int) -> GenOperand:
        """The operation's batch-index input holding `indices` (each in [0, batches)).

        When the model draws run-time values out of range, it is a model input with even odds, marked so that one
        of its elements may be given a batch that does not exist (harness.gen.model._generate).
        """
        i = BATCH_INDEX_INPUTS[self.op_type]
        breakable = self.gen.break_parameter and self.graph.main and self.src.boolean()
        value = np.array(indices, dtype=np.int32)
        g = self.data(i, value=value, reuse=False, constant=False if breakable else None)
        if breakable and g.lifetime == _SUBGRAPH_INPUT and g.value is not None and g.value.size:
            g.domain = batch_index_domain(batches)
        return g

    def omit(self, i: int) -> None:
        """Leave optional position i without a value."""
        self.inputs[i] = OMIT

    def maybe_omit(self, i: int) -> bool:
        """Omit optional position i with the configured probability; True if omitted."""
        if self.args[i].optional and self.gen.chance(self.cfg.omit_optional_probability):
            self.omit(i)
            return True
        return False

    # ------------------------------------------------------------------------------------------ finishing

    def _fill(self) -> None:
        inputs, positions, table = self.inputs, self.positions, self.table
        first = None
        for g in inputs:
            if isinstance(g, GenOperand) and g.type not in SCALAR_TYPES:
                first = g
                break
        for i, arg in enumerate(self.args):
            if inputs[i] is not _UNSET or arg.types[0] in SCALAR_TYPES or positions[i] in table:
                continue
            if arg.optional and self.maybe_omit(i):
                continue
            g = self.data(i, shape=first.shape if first is not None else None)
            if first is None:
                first = g
        for i, arg in enumerate(self.args):
            if inputs[i] is not _UNSET:
                continue
            if arg.optional and self.maybe_omit(i):
                continue
            self.param(i)

    def _input_operands(self) -> list[GenOperand]:
        # An omitted tensor stays in its position as a NO_VALUE operand (the HAL's optional tensors); only omitted
        # trailing scalars are left off, as the operations with optional trailing parameters count their inputs.
        inputs, args = self.inputs, self.args
        keep = 0
        for k in range(len(inputs) - 1, -1, -1):  # the last position kept
            v = inputs[k]
            if isinstance(v, GenOperand) or (v is OMIT and args[k].types[0] not in _SCALARS):
                keep = k + 1
                break
        required = self._info.required
        if required > keep:
            keep = required
        out = []
        for k in range(keep):
            v = inputs[k]
            out.append(v if isinstance(v, GenOperand) else self._absent(k))
        return out

    def _absent(self, k: int) -> GenOperand:
        arg = self.args[k]
        if not arg.optional:
            raise OpRejected(f"required input {arg.name} has no value")
        t = int(arg.types[0])
        # An operand without a value is still an operand of its type: a quantized one needs a positive scale.
        scale, zero_point = V.quant_params(self.src, t, -1.0, 1.0) if t in _ABSENT_QUANTIZED else (0.0, 0)
        if self.graph.main and self.gen.chance(self.cfg.absent_input_probability):
            g = GenOperand(t, [], _SUBGRAPH_INPUT, None, scale, zero_point)
            g.absent = True
            return g
        return GenOperand(t, [], _NO_VALUE, None, scale, zero_point)

    def _output_operands(self, inputs: list[GenOperand]) -> tuple[list[GenOperand], list[int]]:
        """Outputs (quantization set unless it must be fitted) and the positions to fit."""
        outs, fit = [], []
        first = inputs[0] if inputs else None
        out_types, out_quant, op_type = self.out_types, self.out_quant, self.op_type
        for k, arg in enumerate(self.out_args):
            t = int(out_types.get(k, arg.types[0]))
            scale, zero_point = 0.0, 0
            if k in out_quant:
                scale, zero_point = out_quant[k]
            elif (op_type, k, t) in FIXED_OUTPUT_QUANT:
                scale, zero_point = FIXED_OUTPUT_QUANT[(op_type, k, t)]
            elif t in V.QUANTIZED:
                if not self.free_quant and first is not None and first.type == t and first.value is not None:
                    scale, zero_point = float(first.op.scale), int(first.op.zero_point)
                else:
                    fit.append(k)
            outs.append(GenOperand(t, [], _TEMPORARY_VARIABLE, None, V.f32(scale) if scale else 0.0, zero_point))
        return outs, fit

    def shape_context(self, inputs: list[GenOperand], outputs: list[GenOperand]) -> ShapeContext:
        """What the validator's signature check sees for these operands."""
        operands: list[Operand | None] = []
        shapes: list[tuple[int, ...] | None] = []
        values: list[np.ndarray | None] = []
        for g in inputs:
            op = g.op
            lifetime = op.lifetime
            if lifetime == _NO_VALUE:
                operands.append(None)
                shapes.append(None)
                values.append(None)
                continue
            operands.append(op)
            # operand_shape(op), inline.
            if op.type in SCALAR_TYPES:
                shapes.append(())
            else:
                dims = op.dimensions
                shapes.append(tuple(dims) if dims else None)
            values.append(g.value if lifetime == _CONSTANT_COPY else None)
        return ShapeContext(operands, shapes, values, [o.op for o in outputs])

    def _run(self, inputs: list[GenOperand], output_ops: list[Operand]) -> list[np.ndarray]:
        # Positional, in KernelContext's field order (inputs, input_operands, output_operands, relaxed).
        ctx = KernelContext([g.value for g in inputs], [g.op for g in inputs], output_ops, self.gen.relaxed)
        kernel = self.spec.kernel
        try:
            if silences_warnings(kernel):  # type: ignore[arg-type]
                results = kernel(ctx)  # type: ignore[misc]
            else:
                with np.errstate(all="ignore"):
                    results = kernel(ctx)  # type: ignore[misc]
        except KERNEL_FAILURES as exc:
            raise OpRejected(f"kernel failed: {exc}") from exc
        if len(results) != len(output_ops):
            raise OpRejected("kernel output count")
        return results

    def _fit_quant(self, inputs: list[GenOperand], outputs: list[GenOperand], fit: list[int]) -> None:
        probe = [o.op for o in outputs]
        for k in fit:
            probe[k] = Operand(type=T.TENSOR_FLOAT32, dimensions=list(outputs[k].op.dimensions))
        results = self._run(inputs, probe)
        # The scale of the first per-tensor quantized input: what an output scale is measured against.
        reference = next((float(g.op.scale) for g in inputs if g.type in V.QUANTIZED and g.op.scale), None)
        for k in fit:
            real = np.asarray(results[k], dtype=np.float64)
            finite = real[np.isfinite(real)]
            lo = float(finite.min()) if finite.size else -1.0
            hi = float(finite.max()) if finite.size else 1.0
            if hi - lo < 1e-3:
                # Widened to a unit range, or (inputs of a tiny extreme scale) to their own magnitude: a result of
                # tiny values keeps a scale fitted to them rather than one a million times larger.
                pad = 0.5 if reference is None or reference >= V.TINY_SCALE else max(abs(lo), abs(hi), 128 * reference)
                lo, hi = lo - pad, hi + pad
            scale, zero_point = V.quant_params(self.src, outputs[k].type, lo, hi)
            if self.gen.chance(self.cfg.extreme_quant_probability):
                # An input computed by a quantized operation may differ by a step in any correct implementation:
                # a rescale factor above one would multiply that step. Such outputs only get coarser than the fit.
                exact = not any(g.produced for g in inputs if g.type in V.QUANTIZED)
                scale, zero_point, what = V.off_fit_quant(
                    self.src, outputs[k].type, scale, zero_point, reference if exact else None, coarser=not exact
                )
                self._extreme("extreme_quant:" + what)
            if k in self.scale_floor and not np.float32(scale) > np.float32(self.scale_floor[k]):
                scale = V.f32(self.scale_floor[k] * 1.5)
            if not V.usable_scale(scale):
                raise OpRejected(f"output scale {scale} out of range")
            outputs[k].op.scale, outputs[k].op.zero_point = scale, zero_point

    def _headroom_floor(self, inputs: list[GenOperand], bits: int) -> None:
        """Output 0's scale must exceed max(quantized input scales) / 2^bits (the catalogue's rescale_headroom)."""
        scales = [float(g.op.scale) for g in inputs if g.type in V.QUANTIZED and g.op.scale]
        if scales:
            floor = max(scales) / 2.0**bits
            self.scale_floor[0] = max(self.scale_floor.get(0, 0.0), floor)

    def _accept(self, value: np.ndarray, operand_type: int) -> None:
        if value.size > self.gen.max_elements:
            raise OpRejected("output too large")
        if operand_type in V.FLOAT_TENSORS or operand_type in V.FLOAT_SCALARS:
            # Every value finite and within max_abs_value, in one reduction (the one x.max() dispatches to): the
            # maximum magnitude is NaN when any value is NaN (np.maximum propagates it) and inf when any is
            # infinite, and neither passes both comparisons.
            if value.size:
                top = float(_max(np.abs(value), axis=None))
                if not (top <= self.gen.max_abs_value and top < math.inf):
                    raise OpRejected("non-finite or huge float result")

    def _declared(self, static: tuple[int, ...] | None, actual: tuple[int, ...], operand_type: int) -> list[int]:
        if operand_type in SCALAR_TYPES:
            return []
        if static is None or self.keep_dims:
            dims = list(actual)
        elif not static:
            dims = []  # the shape function cannot tell the rank
        elif len(static) != len(actual):
            dims = list(actual)
        else:
            dims = [a if s else 0 for s, a in zip(static, actual)]
        if dims and not self.keep_dims and self.gen.chance(self.cfg.unknown_dims_probability):
            mode = self.src.integer(0, 2)
            if mode == 0:
                dims = [0 if self.src.boolean() else d for d in dims]
            elif mode == 1:
                dims = [0] * len(dims)
            else:
                dims = []
        return dims

    def finish(self) -> list[GenOperand]:
        """Complete, check, execute and commit the operation; its outputs."""
        spec = self.spec
        if spec.kernel is None:
            raise OpRejected("no reference kernel")
        self._fill()
        inputs = self._input_operands()
        outputs, fit = self._output_operands(inputs)
        headroom = self.hints.get("rescale_headroom")
        if headroom is not None:
            self._headroom_floor(inputs, headroom)
        if fit:
            self._fit_quant(inputs, outputs, fit)
        for k, floor in self.scale_floor.items():
            if outputs[k].type in V.QUANTIZED and not np.float32(outputs[k].op.scale) > np.float32(floor):
                raise OpRejected(f"output {k} scale {outputs[k].op.scale} not above {floor}")
        context = self.shape_context(inputs, outputs)
        check = self.sig.check
        if check is not None:
            problems = check(context)
            if problems:
                raise OpRejected("; ".join(problems))
        results = self._run(inputs, [o.op for o in outputs])
        statics: list[tuple[int, ...] | None] = [None] * len(outputs)
        if spec.shape is not None:
            try:
                statics = list(spec.shape(context))
            except Exception:
                # A shape function that cannot cope with these operands leaves the dimensions to the kernel.
                statics = [None] * len(outputs)
            if len(statics) != len(outputs):
                statics = [None] * len(outputs)
        for o, result, static in zip(outputs, results, statics):
            t = o.type
            dtype = numpy_dtype(t)
            value = np.asarray(result)
            if value.dtype is not dtype and value.dtype != dtype:
                value = value.astype(dtype)
            if t in SCALAR_TYPES:
                value = value.reshape(())
            self._accept(value, t)
            o.value = value if value.flags.c_contiguous else np.array(value)
            actual = value.shape
            declared = self._declared(static, actual, t)
            if shape_conflicts(declared, actual):
                raise OpRejected("declared dimensions conflict with the result")
            o.op.dimensions = declared
        self.graph.add_operation(self.op_type, inputs, outputs)
        if self.drawn:
            self.gen.features.update(self.drawn)
        return outputs
