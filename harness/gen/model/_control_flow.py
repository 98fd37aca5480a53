"""IF and WHILE over referenced subgraphs.

IF(cond, then, else, x...) -> y: both branches take the x operands and transform x0 with one or two operations
that keep its type, quantization and shape, so the branches' outputs match y; now and then the IF takes no x at
all and each branch transforms a constant of its own holding x0's value. WHILE(cond, body, x, i, n) -> x'
(and i'): a counter i climbs to a limit n (at most three iterations), the condition subgraph is LESS(i, n), the
body transforms x the same way and increments i with ADD (LESS and ADD serve the counter even when the
configuration restricts the operations; the shape-keeping operations come from the allowed ones). Both subgraphs
are executed while drawing, and the loop is evaluated to the end, so the operation's outputs carry their actual
values like any other result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness import ops
from harness.gen.model import _values as V
from harness.gen.model._graph import CONSTANT_LIFETIMES, Gen, GenOperand, Graph, OpRejected
from harness.gen.model._operation import KERNEL_FAILURES, OpDraw
from harness.gen.model._values import broadcastable
from harness.hal import DataLocation, OperandLifeTime, OperandType, OperationType
from harness.ops import KernelContext, OpSpec, Signature
from harness.ops.common import silences_warnings
from harness.reference.executor import shape_conflicts

L = OperandLifeTime
T = OperandType
O = OperationType

CONTROL_FLOW_OPS = frozenset({int(O.IF), int(O.WHILE)})
_max = np.maximum.reduce  # what np.max and x.max() dispatch to
MAX_ITERATIONS = 3

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_Q8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
# Operations whose output can keep input 0's type, quantization and shape, per type of input 0.
_ENDO: dict[int, tuple[int, ...]] = {}
for _t in _FLOATS:
    _ENDO[int(_t)] = tuple(
        int(o)
        for o in (
            O.ADD,
            O.SUB,
            O.MUL,
            O.MAXIMUM,
            O.MINIMUM,
            O.RELU,
            O.RELU1,
            O.RELU6,
            O.ABS,
            O.NEG,
            O.FLOOR,
            O.TANH,
            O.LOGISTIC,
            O.SIN,
            O.HARD_SWISH,
        )
    )
for _t in _Q8:
    _ENDO[int(_t)] = tuple(int(o) for o in (O.ADD, O.SUB, O.MUL, O.MAXIMUM, O.MINIMUM, O.RELU, O.RELU1, O.RELU6))
_ENDO[int(T.TENSOR_INT32)] = tuple(int(o) for o in (O.ADD, O.SUB, O.MAXIMUM, O.MINIMUM, O.ABS, O.NEG))
_ENDO[int(T.TENSOR_BOOL8)] = tuple(int(o) for o in (O.LOGICAL_NOT, O.LOGICAL_AND, O.LOGICAL_OR))
_BINARY = frozenset(int(o) for o in (O.ADD, O.SUB, O.MUL, O.MAXIMUM, O.MINIMUM, O.LOGICAL_AND, O.LOGICAL_OR))


# Per allowed-operation tuple (held to keep its id valid): the shape-keeping operations per type. Control flow is
# drawn with the same few tuples again and again, and each draw asks for several types.
_ENDO_CACHE: dict[int, tuple[tuple[int, ...], dict[int, list[int]]]] = {}


def _endo_ops(t: int, plain: tuple[int, ...]) -> list[int]:
    if type(plain) is not tuple:  # only an immutable sequence can be remembered by identity
        allowed = set(plain)
        return [o for o in _ENDO.get(t, ()) if o in allowed]
    entry = _ENDO_CACHE.get(id(plain))
    if entry is None or entry[0] is not plain:
        allowed = set(plain)
        entry = (plain, {k: [o for o in v if o in allowed] for k, v in _ENDO.items()})
        if len(_ENDO_CACHE) > 64:
            _ENDO_CACHE.clear()
        _ENDO_CACHE[id(plain)] = entry
    return list(entry[1].get(t, ()))


# Per (operation, type): the spec and signatures they were worked out from, and the signatures that keep the type.
_KEEPING: dict[tuple[int, int], tuple[OpSpec, Sequence[Signature], list[Signature]]] = {}


def _type_keeping(spec: OpSpec, op: int, t: int) -> list[Signature]:
    """The signatures of `spec` whose input 0 and output 0 both take type t."""
    sigs = spec.signatures
    entry = _KEEPING.get((op, t))
    if entry is None or entry[0] is not spec or entry[1] is not sigs:
        keeping = [s for s in sigs if t in s.inputs[0].types and t in s.outputs[0].types]
        entry = _KEEPING[(op, t)] = (spec, sigs, keeping)
    return entry[2]


def _endo_op(gen: Gen, sub: Graph, x: GenOperand, plain: tuple[int, ...]) -> GenOperand:
    """One operation of `sub` from x to a result with x's type, quantization and shape."""
    choices = _endo_ops(x.type, plain)
    if not choices:
        raise OpRejected("no shape-keeping operation for this type")
    op = gen.src.choice(choices)
    spec = ops.get(op)
    sigs = _type_keeping(spec, op, x.type)
    if not sigs:
        raise OpRejected("no signature keeps the type")
    d = OpDraw(gen, sub, spec, gen.src.choice(sigs))
    d.bound[0] = x
    d.data(0)
    if x.type in V.QUANTIZED:
        d.out_quant[0] = (float(x.op.scale), int(x.op.zero_point))
    if op in _BINARY:
        shape = x.shape
        d.data(1, fits=lambda s: len(s) <= len(shape) and broadcastable(shape, s), new_shape=shape)
    (y,) = d.finish()
    if y.quant() != x.quant() or y.shape != x.shape:
        raise OpRejected("result does not keep the input's type and shape")
    return y


def _chain(gen: Gen, sub: Graph, x: GenOperand, plain: tuple[int, ...]) -> GenOperand:
    y = x
    for _ in range(gen.src.integer(1, max(1, gen.cfg.subgraph_max_operations))):
        y = _endo_op(gen, sub, y, plain)
    return y


def _sub_input(sub: Graph, template: GenOperand) -> GenOperand:
    """A subgraph input matching an operand of the calling graph (same value for drawing)."""
    op = template.op
    g = GenOperand(
        template.type,
        list(op.dimensions),
        L.SUBGRAPH_INPUT,
        template.value,
        float(op.scale),
        int(op.zero_point),
        op.extra_params,
    )
    return sub.commit(g)


def _subgraph_ref(index: int) -> GenOperand:
    g = GenOperand(T.SUBGRAPH, [], L.SUBGRAPH, None)
    g.op.location = DataLocation(0, index, 0)
    return g


def _pick(gen: Gen, graph: Graph, accept, make) -> GenOperand:
    """An existing value of `graph` that `accept` likes (sometimes), else `make()`."""
    if gen.chance(gen.cfg.reuse_probability):
        candidates = [g for g in graph.values() if accept(g)]
        if candidates:
            return gen.src.choice(candidates)
    return make()


def _new_value(gen: Gen, operand_type: int, shape: tuple[int, ...], value: np.ndarray | None = None) -> GenOperand:
    """A new model input or constant of main."""
    scale, zero_point = 0.0, 0
    if operand_type in V.QUANTIZED:
        scale, zero_point = V.quant_params(gen.src, operand_type, *V.DEFAULT_RANGE)
    if value is None:
        value = V.tensor_value(gen.src, operand_type, shape, V.DEFAULT_RANGE, V.DEFAULT_INT_RANGE, scale, zero_point)
    if gen.chance(gen.cfg.constant_probability):
        lifetime = L.CONSTANT_REFERENCE if gen.chance(gen.cfg.reference_probability) else L.CONSTANT_COPY
    else:
        lifetime = L.SUBGRAPH_INPUT
    return GenOperand(operand_type, list(shape), lifetime, value, scale, zero_point)


def _data_value(gen: Gen, main: Graph, plain: tuple[int, ...]) -> GenOperand:
    types = [t for t in (*_FLOATS, *_Q8, T.TENSOR_INT32, T.TENSOR_BOOL8) if _endo_ops(int(t), plain)]
    if not types:
        raise OpRejected("no operation keeps any type")

    def accept(g: GenOperand) -> bool:
        return (
            g.type in types
            and g.is_tensor
            and 0 < g.value.size <= gen.max_elements
            # The largest magnitude of a float value is that of its min or max (the extent is cached).
            and (g.type not in _FLOATS or max(-g.extent()[0], g.extent()[1]) <= 10.0)
            and (g.type != T.TENSOR_INT32 or float(_max(np.abs(g.value), axis=None)) <= 100)
        )

    def make() -> GenOperand:
        t = gen.src.choice(types)
        rank = gen.src.integer(1, gen.cfg.max_rank)
        return _new_value(gen, t, tuple(gen.src.integer(1, gen.cfg.max_dim) for _ in range(rank)))

    return _pick(gen, main, accept, make)


def _output_like(gen: Gen, template: GenOperand, value: np.ndarray) -> GenOperand:
    op = template.op
    dims = list(value.shape)
    if dims and gen.chance(gen.cfg.unknown_dims_probability):
        dims = [0] * len(dims) if gen.src.boolean() else []
    return GenOperand(template.type, dims, L.TEMPORARY_VARIABLE, value, float(op.scale), int(op.zero_point))


def evaluate(gen: Gen, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a finished subgraph on new input values with the reference kernels."""
    values: dict[int, np.ndarray | None] = dict(zip(graph.inputs, inputs))
    for g in graph.operands:
        if g.lifetime in CONSTANT_LIFETIMES:
            values[g.index] = g.value
    for op_type, ins, outs in graph.operations:
        spec = ops.get(op_type)
        ctx = KernelContext(
            inputs=[values.get(i) for i in ins],
            input_operands=[graph.operands[i].op for i in ins],
            output_operands=[graph.operands[i].op for i in outs],
            relaxed=gen.relaxed,
        )
        kernel = spec.kernel  # type: ignore[union-attr]
        try:
            if silences_warnings(kernel):  # type: ignore[arg-type]
                results = kernel(ctx)  # type: ignore[misc]
            else:
                with np.errstate(all="ignore"):
                    results = kernel(ctx)  # type: ignore[misc]
        except KERNEL_FAILURES as exc:
            raise OpRejected(f"subgraph kernel failed: {exc}") from exc
        for i, r in zip(outs, results):
            operand = graph.operands[i]
            value = np.asarray(r).astype(operand.value.dtype) if operand.value is not None else np.asarray(r)
            if shape_conflicts(operand.op.dimensions, tuple(value.shape)):
                raise OpRejected("subgraph result conflicts with its dimensions")
            if value.dtype.kind == "f" and value.size:
                # Finite and within max_abs_value in one reduction, as OpDraw._accept checks results.
                top = float(_max(np.abs(value), axis=None))
                if not (top <= gen.max_abs_value and top < math.inf):
                    raise OpRejected("subgraph result not finite")
            values[i] = value
    return [values[i] for i in graph.outputs]  # type: ignore[misc]


def _branch_constant(gen: Gen, sub: Graph, template: GenOperand) -> GenOperand:
    """A constant of `sub` holding the value of an operand of the calling graph (a branch without inputs)."""
    op = template.op
    lifetime = L.CONSTANT_REFERENCE if gen.chance(gen.cfg.reference_probability) else L.CONSTANT_COPY
    g = GenOperand(template.type, list(template.shape), lifetime, template.value, float(op.scale), int(op.zero_point))
    return sub.commit(g)


def _draw_if(gen: Gen, main: Graph, plain: tuple[int, ...]) -> None:
    x0 = _data_value(gen, main, plain)
    # The HAL lets an IF pass no data at all: its branches then compute from their own constants, x0 being only
    # the template of their value.
    xs = [] if gen.chance(gen.cfg.if_without_inputs_probability) else [x0]
    if xs and gen.src.boolean():
        xs.append(_data_value(gen, main, plain))

    def is_flag(g: GenOperand) -> bool:
        # The condition must declare exactly [1].
        return g.type == T.TENSOR_BOOL8 and list(g.op.dimensions) == [1]

    cond = _pick(gen, main, is_flag, lambda: _new_value(gen, T.TENSOR_BOOL8, (1,)))
    branches = []
    base = len(gen.referenced)
    for _ in range(2):
        sub = Graph(main=False)
        inputs = [_sub_input(sub, x) for x in xs]
        y = _chain(gen, sub, inputs[0] if inputs else _branch_constant(gen, sub, x0), plain)
        sub.outputs = [y.index]
        branches.append((sub, y))
    taken = branches[0][1] if bool(cond.value.reshape(-1)[0]) else branches[1][1]
    out = _output_like(gen, x0, taken.value)
    gen.referenced.extend(sub for sub, _ in branches)
    main.add_operation(O.IF, [cond, _subgraph_ref(base), _subgraph_ref(base + 1), *xs], [out])


def _counter(gen: Gen, main: Graph, value: int) -> GenOperand:
    array = np.array([value], dtype=np.int32)

    def accept(g: GenOperand) -> bool:
        return g.type == T.TENSOR_INT32 and g.shape == (1,) and int(g.value[0]) == value and g.op.scale == 0.0

    return _pick(gen, main, accept, lambda: _new_value(gen, T.TENSOR_INT32, (1,), array))


def _draw_while(gen: Gen, main: Graph, plain: tuple[int, ...]) -> None:
    x0 = _data_value(gen, main, plain)
    start = gen.src.integer(0, 1)
    counter = _counter(gen, main, start)
    limit = _counter(gen, main, start + gen.src.integer(0, MAX_ITERATIONS))
    outputs_counter = gen.src.boolean()
    loop_inputs = [x0, counter, limit]
    i32 = lambda s: s.inputs[0].types == (T.TENSOR_INT32,)  # noqa: E731

    cond = Graph(main=False)
    xc, cc, lc = (_sub_input(cond, g) for g in loop_inputs)
    d = OpDraw(gen, cond, ops.get(O.LESS), next(s for s in ops.get(O.LESS).signatures if i32(s)))
    d.bound.update({0: cc, 1: lc})
    d.keep_dims = True  # the condition output must declare [1]
    d.data(0)
    d.data(1)
    (flag,) = d.finish()
    cond.outputs = [flag.index]

    body = Graph(main=False)
    xb, cb, lb = (_sub_input(body, g) for g in loop_inputs)
    y = _chain(gen, body, xb, plain)
    d = OpDraw(gen, body, ops.get(O.ADD), next(s for s in ops.get(O.ADD).signatures if i32(s)))
    d.bound[0] = cb
    d.data(0)
    d.const(1, np.array([1], dtype=np.int32))
    d.param(2, 0)
    (step,) = d.finish()
    body.outputs = [y.index, step.index]

    values = [x0.value, counter.value, limit.value]
    for k in range(MAX_ITERATIONS + 1):
        # The first step runs the subgraphs on the values they were drawn with: what evaluate would compute
        # then is what drawing computed (and checked) already.
        (flag_value,) = evaluate(gen, cond, values) if k else (flag.value,)
        if not bool(flag_value.reshape(-1)[0]):
            break
        produced = evaluate(gen, body, values) if k else [y.value, step.value]
        values = produced + values[len(produced) :]
    else:
        raise OpRejected("loop did not end")
    outs = [_output_like(gen, x0, values[0])]
    if outputs_counter:
        outs.append(_output_like(gen, counter, values[1]))
    base = len(gen.referenced)
    gen.referenced.extend([cond, body])
    main.add_operation(O.WHILE, [_subgraph_ref(base), _subgraph_ref(base + 1), *loop_inputs], outs)


def draw_control_flow(gen: Gen, main: Graph, op: int, plain: tuple[int, ...]) -> None:
    """Add an IF or WHILE operation (and its referenced subgraphs) to main."""
    if gen.depth > 0:
        raise OpRejected("no nested control flow")
    if op == O.IF:
        _draw_if(gen, main, plain)
    else:
        _draw_while(gen, main, plain)
