"""Random valid models from the operation catalogue, drawn from a Source.

`generate_model(source, config)` builds main as a small DAG of catalogued operations (fan-out and fan-in through
reused results and model inputs), with every operand lifetime, constants by copy and by reference in ashmem and
mmap_fd pools, optional inputs without values, unknown dimensions, relaxed float32, quantized typings with
consistent parameters and IF/WHILE over referenced subgraphs. Each operation is executed with the reference
kernels while it is drawn, so the generated model is valid by construction (harness.reference.validate_model finds
nothing) and runs on the reference executor with the generated inputs; a draw that cannot be made valid is
redrawn, and when nothing usable comes out the call raises GenerationRejected.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness import ops
from harness.case import close_model_pools, model_to_json
from harness.gen.model._assemble import assemble, choose_main_outputs
from harness.gen.model._config import ModelConfig
from harness.gen.model._control_flow import CONTROL_FLOW_OPS, draw_control_flow
from harness.gen.model._graph import Gen, Graph, OpRejected
from harness.gen.model._operation import OpDraw
from harness.gen.model._values import QUANTIZED
from harness.gen.model.recipes import FREE_QUANT, RECIPES, recipe_for
from harness.gen.source import GenerationRejected, Source
from harness.hal import Model, OperandLifeTime, OperandType, OperationType, numpy_dtype
from harness.hal.sizes import SCALAR_TYPES
from harness.ops import OpSpec, Signature
from harness.ops.common import QuietKernels

L = OperandLifeTime
_LIFETIME_NAMES = {int(x): x.name for x in OperandLifeTime}
_TYPE_NAMES = {int(x): x.name for x in OperandType}
_OP_NAMES = {int(x): x.name for x in OperationType}

O = OperationType
# Operations whose operands are related in ways the hints alone cannot express: drawn only through a recipe.
NEEDS_RECIPE = frozenset(
    int(o)
    for o in (
        O.CONV_2D,
        O.DEPTHWISE_CONV_2D,
        O.GROUPED_CONV_2D,
        O.TRANSPOSE_CONV_2D,
        O.FULLY_CONNECTED,
        O.AVERAGE_POOL_2D,
        O.MAX_POOL_2D,
        O.L2_POOL_2D,
        O.RESIZE_BILINEAR,
        O.RESIZE_NEAREST_NEIGHBOR,
        O.LSH_PROJECTION,
        O.LSTM,
        O.UNIDIRECTIONAL_SEQUENCE_LSTM,
        O.BIDIRECTIONAL_SEQUENCE_LSTM,
        O.RNN,
        O.UNIDIRECTIONAL_SEQUENCE_RNN,
        O.BIDIRECTIONAL_SEQUENCE_RNN,
        O.SVDF,
        O.QUANTIZED_16BIT_LSTM,
        O.QUANTIZED_LSTM,
        O.AXIS_ALIGNED_BBOX_TRANSFORM,
        O.BOX_WITH_NMS_LIMIT,
        O.DETECTION_POSTPROCESSING,
        O.GENERATE_PROPOSALS,
        O.HEATMAP_MAX_KEYPOINT,
        O.ROI_ALIGN,
        O.ROI_POOLING,
        O.RANDOM_MULTINOMIAL,
    )
)


@dataclass
class GeneratedModel:
    """A generated model: the hal.Model, one value per main input, and what the reference kernels gave.

    `model_json` (the case format) is made from `model` when first read; `features` is worked out on first read too
    (only tests and statistics read it). `close()` releases the model's shared memory pools.
    """

    model: Model
    inputs: list[np.ndarray | None]  # stored dtype and actual shape; None = no value (hasNoValue)
    outputs: list[np.ndarray] = field(default_factory=list)  # what the reference kernels gave while generating
    # Which generator features the model exercises, or what works them out.
    describe: frozenset[str] | Callable[[], frozenset[str]] = field(default=frozenset(), repr=False)
    _model_json: dict | None = field(default=None, repr=False)
    _features: frozenset[str] | None = field(default=None, repr=False)

    @property
    def features(self) -> frozenset[str]:
        """Which generator features the model exercises (see _features), worked out once."""
        if self._features is None:
            describe = self.describe
            self._features = describe() if callable(describe) else frozenset(describe)
        return self._features

    @property
    def model_json(self) -> dict:
        """The case-format JSON of `model` (model_from_json of it gives an equal model), made once."""
        if self._model_json is None:
            self._model_json = model_to_json(self.model)
        return self._model_json

    def close(self) -> None:
        """Release the model's shared memory pools."""
        close_model_pools(self.model)


def _supported(op: int) -> bool:
    spec = ops.get(op)
    # Generation executes every operation as it is drawn: only operations with a reference kernel qualify.
    if spec is None or spec.kernel is None or not spec.signatures:
        return False
    return op in RECIPES or op not in NEEDS_RECIPE


_DEFAULT = tuple(int(s.op) for s in ops.all_specs() if _supported(int(s.op)) and int(s.op) not in CONTROL_FLOW_OPS)


# Per operation, the operand types its input 0 accepts (to continue a chain from an earlier result).
_INPUT0_TYPES: dict[int, frozenset[int]] = {
    int(s.op): frozenset(int(t) for sig in s.signatures if sig.inputs for t in sig.inputs[0].types)
    for s in ops.all_specs()
}


def default_operations() -> tuple[int, ...]:
    """The operation types generate_model draws from by default (control flow aside)."""
    return _DEFAULT


def _operation_pool(cfg: ModelConfig) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(data operations, control flow operations) allowed by the configuration."""
    if cfg.operations is None:
        plain = _DEFAULT
        control = tuple(CONTROL_FLOW_OPS) if cfg.control_flow else ()
    else:
        wanted = sorted(int(o) for o in cfg.operations)
        plain = tuple(o for o in wanted if o not in CONTROL_FLOW_OPS and _supported(o))
        control = tuple(o for o in wanted if o in CONTROL_FLOW_OPS) if cfg.control_flow else ()
    return plain, control


# Per (operation, input type): the spec and signatures they were worked out from, and the preferred signatures.
_PREFERRED: dict[tuple[int, int], tuple[OpSpec, Sequence[Signature], list[Signature]]] = {}


def _preferred(spec: OpSpec, op: int, input_type: int) -> Sequence[Signature]:
    """The signatures of `spec` whose input 0 takes `input_type` (all of them when none does)."""
    sigs = spec.signatures
    key = (op, input_type)
    entry = _PREFERRED.get(key)
    if entry is None or entry[0] is not spec or entry[1] is not sigs:
        if len(_PREFERRED) > 4096:
            _PREFERRED.clear()
        entry = _PREFERRED[key] = (spec, sigs, [s for s in sigs if s.inputs and input_type in s.inputs[0].types])
    return entry[2] or sigs


def draw_operation(gen: Gen, graph: Graph, op: int, input_type: int | None = None) -> list:
    """Draw one operation of type `op` into `graph` (OpRejected if this draw does not work out).

    With `input_type`, signatures whose input 0 takes that type are preferred (to continue from a result).
    """
    spec = ops.get(op)
    if spec is None or spec.kernel is None:
        raise OpRejected(f"operation {op} has no kernel")
    sigs = spec.signatures if input_type is None else _preferred(spec, op, input_type)
    sig = _choose_signature(gen, sigs)
    d = OpDraw(gen, graph, spec, sig)
    d.free_quant = int(op) in FREE_QUANT
    recipe_for(op)(d)
    return d.finish()


# Per allowed-operation tuple (held to keep its id valid): per operand type, the operations whose input 0 takes it.
_FITTING: dict[int, tuple[tuple[int, ...], dict[int, list[int]]]] = {}


def _fitting(plain: tuple[int, ...], t: int) -> list[int]:
    """The operations of `plain` whose input 0 accepts type t, in `plain` order."""
    if type(plain) is not tuple:  # only an immutable sequence can be remembered by identity
        return [o for o in plain if t in _INPUT0_TYPES.get(o, ())]
    entry = _FITTING.get(id(plain))
    if entry is None or entry[0] is not plain:
        if len(_FITTING) > 64:
            _FITTING.clear()
        entry = _FITTING[id(plain)] = (plain, {})
    by_type = entry[1]
    if t not in by_type:
        by_type[t] = [o for o in plain if t in _INPUT0_TYPES.get(o, ())]
    return list(by_type[t])


def _draw_plain(gen: Gen, main: Graph, plain: tuple[int, ...]) -> None:
    """One data operation, often one that can read an earlier result."""
    results = [
        g
        for g in main.operands
        if g.produced and g.value is not None and g.value.size and g.type not in SCALAR_TYPES  # tensor results
    ]
    if results and gen.chance(0.6):
        t = gen.src.choice(results).type
        fitting = _fitting(plain, t)
        if fitting:
            draw_operation(gen, main, gen.src.choice(fitting), input_type=t)
            return
    draw_operation(gen, main, gen.src.choice(plain))


def _choose_signature(gen: Gen, sigs: Sequence[Signature]) -> Signature:
    bias = gen.cfg.quantized_bias
    if bias <= 0:
        return gen.src.choice(sigs)
    quantized = [s for s in sigs if any(t in QUANTIZED for a in s.inputs for t in a.types)]
    if quantized and gen.chance(bias):
        return gen.src.choice(quantized)
    return gen.src.choice(sigs)


def _features(gen: Gen, main: Graph) -> frozenset[str]:
    """What the finished model exercises (for coverage statistics and tests), with what generation recorded."""
    lifetimes: set[int] = set()
    types: set[int] = set()
    op_types: set[int] = set()
    f = gen.features
    for graph in [main, *gen.referenced]:
        for g in graph.operands:
            op = g.op
            lifetimes.add(int(op.lifetime))
            types.add(int(op.type))
            consumers = g.consumers
            if consumers > 1:
                f.add("fan_out")
            if g.produced:
                if consumers:
                    f.add("chain")
                if op.type not in SCALAR_TYPES and (not op.dimensions or 0 in op.dimensions):
                    f.add("unknown_dims")
            if g.absent:
                f.add("absent_input")
            if g.parameter:
                f.add("parameter_input")
        operands = graph.operands
        for op_type, ins, _ in graph.operations:
            op_types.add(op_type)
            if sum(1 for i in ins if operands[i].produced) > 1:
                f.add("fan_in")
    for i in main.inputs:
        g = main.operands[i]
        op = g.op
        if op.type not in SCALAR_TYPES and not g.absent and (not op.dimensions or 0 in op.dimensions):
            f.add("unknown_input_dims")
    f.update(f"lifetime:{_LIFETIME_NAMES[x]}" for x in lifetimes)
    f.update(f"type:{_TYPE_NAMES[x]}" for x in types)
    f.update(f"op:{_OP_NAMES[x]}" for x in op_types)
    if int(OperationType.IF) in op_types:
        f.add("control:IF")
    if int(OperationType.WHILE) in op_types:
        f.add("control:WHILE")
    if int(OperandLifeTime.NO_VALUE) in lifetimes:
        f.add("no_value")
    if types & QUANTIZED:
        f.add("quantized")
    if gen.relaxed:
        f.add("relaxed")
    return frozenset(f)


def _break_parameter(gen: Gen, main: Graph, inputs: list[np.ndarray | None]) -> None:
    """Give one bounded input a value outside its range (the model stays valid; its execution must fail): a
    parameter (INVALID_ARGUMENT) or one element of a batch-index tensor (the HAL names no status for it)."""
    candidates = [k for k, i in enumerate(main.inputs) if main.operands[i].domain is not None]
    if not candidates:
        return
    k = gen.src.choice(candidates)
    g = main.operands[main.inputs[k]]
    assert g.domain is not None
    # The value next to the bound half the time: where off-by-one checks and divisions by zero are.
    value = g.domain.just_outside() if gen.src.boolean() else gen.src.choice(g.domain.outside())
    if g.value is not None and np.ndim(g.value):
        # A tensor (a block shape, batch indices): its domain holds per element, so one element leaves it.
        broken = np.array(g.value, dtype=numpy_dtype(g.type))
        broken.flat[gen.src.integer(0, broken.size - 1)] = value
        inputs[k] = broken
    else:
        inputs[k] = np.array(value, dtype=numpy_dtype(g.type))
    # A batch index out of range has no status the HAL names (the execution fails, however it ends): its own feature.
    batch_index = g.domain.below is not None
    gen.features.add("index_out_of_range_input" if batch_index else "parameter_out_of_range_input")


def generate_model(source: Source, config: ModelConfig = ModelConfig()) -> GeneratedModel:  # noqa: B008
    """A random valid model drawn from `source` (GenerationRejected if the choices cannot make one)."""
    # Generation runs a few kernels per model: one errstate for all of them (inf/NaN results are redrawn anyway).
    with QuietKernels():
        return _generate(source, config)


def _generate(source: Source, config: ModelConfig) -> GeneratedModel:
    gen = Gen(source, config)
    gen.relaxed = gen.chance(config.relaxed_probability)
    gen.break_parameter = gen.chance(config.parameter_out_of_range_probability)
    plain, control = _operation_pool(config)
    if not plain and not control:
        raise GenerationRejected("no operation to draw from")
    main = Graph(main=True)
    slots = source.integer(1, max(1, config.max_operations))
    for _ in range(slots):
        for _attempt in range(config.max_attempts):
            try:
                if control and (not plain or gen.chance(config.control_flow_probability)):
                    # Subgraphs use the allowed data operations, or any when only control flow is allowed.
                    draw_control_flow(gen, main, source.choice(control), plain or _DEFAULT)
                else:
                    _draw_plain(gen, main, plain)
                break
            except OpRejected:
                continue
        if source.exhausted and main.operations:
            break
    if not main.operations:
        raise GenerationRejected("no operation could be drawn")
    choose_main_outputs(gen, main)
    model = assemble(gen, main)
    operands = main.operands
    inputs = [operands[i].value for i in main.inputs]
    outputs = [operands[i].value for i in main.outputs]
    if gen.break_parameter:
        _break_parameter(gen, main, inputs)
    # The operands are final here (nothing changes them once the model is assembled): features are read from
    # them on demand.
    return GeneratedModel(model, inputs, outputs, functools.partial(_features, gen, main))
