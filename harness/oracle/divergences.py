"""Known divergences: documented differences between a real engine and the HAL, one entry each.

A finding on a driver over an engine that matches an entry is a *divergence*: labelled, kept and counted apart
from new bugs, never dropped. Each entry says which engine and kernel sets show it, under which condition, what the
HAL says and what the engine does, and carries a reduced model that shows it (its test replays that model on every
kernel set, so an engine release that changes the behaviour makes the entry fail rather than go stale).

`nature` tells what to do about it: "bug" (the engine contradicts the HAL and its own definition: report it to the
engine's owners), "gap" (the engine lacks a kernel or a parameter range the HAL allows).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from harness import ops
from harness.hal import Model, OperandLifeTime, OperandType, Operation, OperationType, Subgraph
from harness.hal.values import constant_value
from harness.oracle.verdict import Verdict

# Rules under which an execution that should succeed shows up as failed or different between paths.
_STATUS_RULES = frozenset(
    {"status.expected", "paths.agree", "burst.matches_synchronous", "cache.untouched_cache_round_trips"}
)
_CONSTANT = frozenset({OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE})


@dataclass(frozen=True)
class Sighting:
    """What a divergence is matched against: a (reduced) finding's model and verdict, and where it showed."""

    engine: str  # the engine's distribution name, e.g. "ai-edge-litert"
    kernel_set: str  # the kernel set of the driver variant it showed on, e.g. "xnnpack"
    model: Model
    verdict: Verdict


@dataclass(frozen=True)
class Divergence:
    """One documented difference between an engine and the HAL."""

    id: str
    engine: str
    kernel_sets: frozenset[str]
    operation: OperationType
    nature: str  # "bug" or "gap"
    condition: str  # when it shows
    hal: str  # what the HAL says
    behaviour: str  # what the engine does
    matches: Callable[[Sighting], bool] = field(repr=False)

    @property
    def example(self) -> dict:
        """A reduced case showing it: the model JSON of the case format and its input values (divergence_examples.json),
        run by the execution target on each kernel set of the engine by the registry's test."""
        return _examples()[self.id]

    def to_json(self) -> dict:
        """The entry for reports (without its matcher and example)."""
        return {
            "id": self.id,
            "engine": self.engine,
            "kernel_sets": sorted(self.kernel_sets),
            "operation": self.operation.name,
            "nature": self.nature,
            "condition": self.condition,
            "hal": self.hal,
            "behaviour": self.behaviour,
        }


DIVERGENCES: dict[str, Divergence] = {}
_EXAMPLES = Path(__file__).with_name("divergence_examples.json")


@functools.cache
def _examples() -> dict[str, dict]:
    return json.loads(_EXAMPLES.read_text(encoding="utf-8"))


def register(divergence: Divergence) -> Divergence:
    """Add an entry; a second entry of one id is an error."""
    if divergence.id in DIVERGENCES:
        raise RuntimeError(f"divergence {divergence.id!r} registered twice")
    DIVERGENCES[divergence.id] = divergence
    return divergence


def matching(sighting: Sighting) -> Divergence | None:
    """The registered divergence a sighting shows, if any."""
    for divergence in DIVERGENCES.values():
        if (
            divergence.engine == sighting.engine
            and sighting.kernel_set in divergence.kernel_sets
            and divergence.matches(sighting)
        ):
            return divergence
    return None


def label(verdict: Verdict, model: Model, engine_identity: tuple[str, str] | None) -> Verdict:
    """The verdict, marked with the registered divergence it shows (`extras["divergence"]`) when it is a failure on
    a device over an engine (`engine_identity`: the engine and its version, the kernel set) that matches one."""
    if verdict.ok or engine_identity is None:
        return verdict
    engine, kernel_set = engine_identity
    found = matching(Sighting(engine.split()[0], kernel_set, model, verdict))
    if found is None:
        return verdict
    return replace(verdict, extras={**verdict.extras, "divergence": found.id})


# How an engine standing apart in a differential run would have been judged alone against the reference: wrong
# values at the operation writing the output, or an execution that ended unlike the others.
_ALONE_VALUES, _ALONE_STATUS = "accuracy.engines", "status.expected"


def label_apart(
    verdict: Verdict,
    model: Model,
    apart: Sequence[str],
    identities: Mapping[str, tuple[str, str] | None],
    producer: str,
) -> Verdict:
    """A differential verdict (engines.disagree), marked with the registered divergence (`extras["divergence"]`)
    when every engine standing apart is an engine variant showing one: the wrong values at `producer` (or, with no
    producer, the different ending) are then what that divergence documents."""
    if verdict.ok or not apart:
        return verdict
    alone = replace(verdict, rule=_ALONE_VALUES if producer else _ALONE_STATUS, locus=producer)
    found = set()
    for name in apart:
        identity = identities.get(name)
        if identity is None:  # an engine of the driver's own (numpy): no engine divergence explains it
            return verdict
        engine, kernel_set = identity
        divergence = matching(Sighting(engine.split()[0], kernel_set, model, alone))
        if divergence is None:
            return verdict
        found.add(divergence.id)
    return replace(verdict, extras={**verdict.extras, "divergence": ", ".join(sorted(found))})


# Rules whose breach means wrong output values: the accuracy rules, and the memory-domain rule that wraps them for
# executions reading or writing a device buffer.
_WRONG_VALUE_RULES = ("accuracy.", "memory_domain.values_match_reference")


def _wrong_values_at(s: Sighting, *operations: str) -> bool:
    """The sighting is a wrong-values failure at an output written by one of these operations (type names), or by
    an operation of main computed from one of theirs, or by an IF or WHILE whose subgraphs hold one: wrong values
    travel down the graph and out of the subgraphs."""
    if not (s.verdict.rule or "").startswith(_WRONG_VALUE_RULES):
        return False
    sources = {s.verdict.locus, *_upstream(s.model.main, s.verdict.locus)}
    if sources & _CONTROL_FLOW:
        sources |= {_type_name(op.type) for graph in s.model.referenced for op in graph.operations}
    return bool(sources & set(operations))


# Operations whose outputs the referenced subgraphs compute.
_CONTROL_FLOW = frozenset({OperationType.IF.name, OperationType.WHILE.name})


def _graph_operations(model: Model) -> list[tuple[Subgraph, Operation]]:
    """Every operation of the model with the subgraph it belongs to, main's first."""
    return [(graph, op) for graph in (model.main, *model.referenced) for op in graph.operations]


def _upstream(main: Subgraph, locus: str) -> set[str]:
    """Type names of the operations of main that the operations named `locus` read from, directly or not."""
    writer = {index: op for op in main.operations for index in op.outputs}
    seen: set[int] = set()
    names: set[str] = set()
    todo = [op for op in main.operations if _type_name(op.type) == locus]
    while todo:
        op = todo.pop()
        for index in op.inputs:
            source = writer.get(index)
            if source is not None and id(source) not in seen:
                seen.add(id(source))
                names.add(_type_name(source.type))
                todo.append(source)
    return names


def _type_name(op_type: int) -> str:
    try:
        return OperationType(op_type).name
    except ValueError:
        return str(op_type)


def _operations(model: Model, op: OperationType) -> list:
    return [o for g in (model.main, *model.referenced) for o in g.operations if o.type == op]


def _constant_input(model: Model, op: OperationType) -> bool:
    """Some operation of type `op` in main reads a constant as its first input."""
    main = model.main
    return any(main.operands[o.inputs[0]].lifetime in _CONSTANT for o in main.operations if o.type == op and o.inputs)


def _named_input(op_type: OperationType, name: str) -> int:
    """The position of an operation's input of this name in its catalogue signature."""
    return next(i for i, arg in enumerate(ops.get(op_type).signatures[0].inputs) if arg.name == name)


_LSTMS = (OperationType.LSTM, OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, OperationType.BIDIRECTIONAL_SEQUENCE_LSTM)


def _lstm_without_activation(s: Sighting) -> bool:
    """An accuracy failure at an LSTM of the family whose activation is a constant NONE (0)."""
    if not _wrong_values_at(s, *(o.name for o in _LSTMS)):
        return False
    main = s.model.main
    for op in main.operations:
        if op.type in _LSTMS:
            at = _named_input(OperationType(op.type), "activation")
            value = constant_value(s.model, main, op.inputs[at]) if at < len(op.inputs) else None
            if value is not None and int(value) == 0:
                return True
    return False


register(
    Divergence(
        id="litert-xnnpack-constant-dequantize",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"xnnpack"}),
        operation=OperationType.DEQUANTIZE,
        nature="bug",
        condition="a DEQUANTIZE of a constant tensor, on an interpreter with the XNNPACK delegate",
        hal="DEQUANTIZE: output = (input - zeroPoint) * scale for every element; an execution of a valid model "
        "the device prepared succeeds (D5)",
        behaviour="the delegate never writes that DEQUANTIZE's output: when it is alone in the delegate's "
        "partition the first invoke fails ('failed to setup XNNPACK runtime'; later invokes of the same interpreter "
        "succeed with the right values); when the partition holds other nodes (e.g. a QUANTIZE rescaling another "
        "operation's input) every invoke succeeds and the output holds whatever its buffer held, in the shape the "
        "model declared (a tensor of unknown rank stays a scalar)",
        matches=lambda s: (
            (s.verdict.rule in _STATUS_RULES or _wrong_values_at(s, OperationType.DEQUANTIZE.name))
            and _constant_input(s.model, OperationType.DEQUANTIZE)
        ),
    )
)

register(
    Divergence(
        id="litert-reference-lrn-window",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"reference"}),
        operation=OperationType.LOCAL_RESPONSE_NORMALIZATION,
        nature="bug",
        condition="LOCAL_RESPONSE_NORMALIZATION with a radius that reaches past the channel (c + radius exists)",
        hal="LOCAL_RESPONSE_NORMALIZATION: sqr_sum[c] is the sum of input[c']^2 for c' in [c - radius, c + radius], "
        "both ends included (TFLite's own definition and its optimized kernel agree)",
        behaviour="the reference kernel sums over [c - radius, c + radius): channel c + radius is left out",
        matches=lambda s: _wrong_values_at(s, "LOCAL_RESPONSE_NORMALIZATION"),
    )
)

register(
    Divergence(
        id="litert-reference-no-elu",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"reference"}),
        operation=OperationType.ELU,
        nature="gap",
        condition="ELU with alpha 1 (the translation maps it to the ELU builtin; other alphas are composed)",
        hal="ELU is an operation of the HAL 1.3 for TENSOR_FLOAT32 and TENSOR_FLOAT16",
        behaviour="the reference op resolver registers no ELU kernel: creating the interpreter fails ('Didn't find "
        "op for builtin opcode ELU')",
        matches=lambda s: s.verdict.rule in _STATUS_RULES and bool(_operations(s.model, OperationType.ELU)),
    )
)

register(
    Divergence(
        id="litert-lstm-activation-none",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.LSTM,
        nature="bug",
        condition="LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM or BIDIRECTIONAL_SEQUENCE_LSTM with the activation NONE (0)",
        hal="LSTM: h_t = o_t (.) g(C_t), where g is the activation when it is not NONE (the identity for NONE); "
        "C_t = f_t (.) C_{t-1} + i_t (.) g(Wxc x_t + Whc h_{t-1} + b_c)",
        behaviour="for activation NONE the kernels leave their scratch buffer as it was: the output is o_t times "
        "the cell gate instead of o_t times the new cell state",
        matches=_lstm_without_activation,
    )
)


register(
    Divergence(
        id="litert-quantized-16bit-lstm-gate-rounding",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.QUANTIZED_16BIT_LSTM,
        nature="bug",
        condition="QUANTIZED_16BIT_LSTM whose gate accumulator, scaled to steps of 2^-12, ends on a tie of the "
        "final rounding shift with a negative value (seen on 4% of steps drawn over the whole cell-state range, "
        "the cell state wrong by 2 to 6 steps of 2^-11 where the previous cell state is large)",
        hal="the HAL's reference (and so the conformance suite) scales each gate accumulator by a 31-bit multiplier "
        "with a rounding doubling high multiply, then a rounding right shift that breaks ties away from zero; the "
        "cell state is judged within one step of its arithmetic",
        behaviour="the kernel sets break that tie upward: the gate's pre-activation is one step higher, which moves "
        "the fixed-point logistic by up to 6 steps of 2^-15 (it is not monotonic at that scale), and the forget "
        "gate multiplies the previous cell state (up to 16)",
        matches=lambda s: _wrong_values_at(s, "QUANTIZED_16BIT_LSTM"),
    )
)


def _given(main: Subgraph, op: Operation, position: int) -> bool:
    """Input `position` of the operation is present and has a value."""
    return position < len(op.inputs) and main.operands[op.inputs[position]].lifetime != OperandLifeTime.NO_VALUE


_RNN = OperationType.BIDIRECTIONAL_SEQUENCE_RNN
_AUX, _FW_AUX_WEIGHTS, _TIME_MAJOR = (_named_input(_RNN, n) for n in ("aux_input", "fw_aux_weights", "time_major"))


def _parallel_aux_rnn(s: Sighting) -> bool:
    """An accuracy failure at a BIDIRECTIONAL_SEQUENCE_RNN given an auxiliary input without auxiliary weights."""
    if not _wrong_values_at(s, _RNN.name):
        return False
    main = s.model.main
    return any(
        _given(main, op, _AUX) and _FW_AUX_WEIGHTS < len(op.inputs) and not _given(main, op, _FW_AUX_WEIGHTS)
        for op in main.operations
        if op.type == _RNN
    )


register(
    Divergence(
        id="litert-bidirectional-rnn-parallel-aux",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.BIDIRECTIONAL_SEQUENCE_RNN,
        nature="bug",
        condition="BIDIRECTIONAL_SEQUENCE_RNN with an auxiliary input and no auxiliary weights (parallel linking), "
        "batch-major",
        hal="BIDIRECTIONAL_SEQUENCE_RNN with parallel linking: the forward cell reads the input and the backward cell "
        "reads the auxiliary input",
        behaviour="the backward cell reads the input instead of the auxiliary input",
        matches=_parallel_aux_rnn,
    )
)


def _time_major_cross_aux_rnn(s: Sighting) -> bool:
    """An accuracy failure at a time-major BIDIRECTIONAL_SEQUENCE_RNN whose auxiliary input, read through auxiliary
    weights, is not as wide as its input (or either width is left to the execution: the model does not say)."""
    if not _wrong_values_at(s, _RNN.name):
        return False
    main = s.model.main
    for op in main.operations:
        if op.type != _RNN or not (_given(main, op, _AUX) and _given(main, op, _FW_AUX_WEIGHTS)):
            continue
        time_major = constant_value(s.model, main, op.inputs[_TIME_MAJOR]) if _TIME_MAJOR < len(op.inputs) else None
        x, aux_x = main.operands[op.inputs[0]], main.operands[op.inputs[_AUX]]
        widths = (x.dimensions[-1:], aux_x.dimensions[-1:])
        if time_major is not None and bool(time_major) and (widths[0] != widths[1] or [0] in widths):
            return True
    return False


register(
    Divergence(
        id="litert-bidirectional-rnn-time-major-cross-aux",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.BIDIRECTIONAL_SEQUENCE_RNN,
        nature="bug",
        condition="time-major BIDIRECTIONAL_SEQUENCE_RNN with an auxiliary input and auxiliary weights (cross "
        "linking), the auxiliary input not as wide as the input (or a width the model leaves to the execution)",
        hal="BIDIRECTIONAL_SEQUENCE_RNN with cross linking: at each step both cells add aux_weights * aux_input[t]",
        behaviour="the time-major kernel steps through the auxiliary input by the input's width instead of its own, "
        "so every step after the first reads the auxiliary input at the wrong offset (past its end when it is "
        "narrower: the values then vary from run to run)",
        matches=_time_major_cross_aux_rnn,
    )
)


# The HAL's fused activation codes with the bounds of their clip.
_CLIPPING_ACTIVATIONS = {1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}  # RELU, RELU1, RELU6
_ACTIVATION_FUSED = frozenset({OperationType.ADD, OperationType.MUL})


def _clip_dropped_with_a_name_clash(model: Model, graph: Subgraph, op: Operation) -> bool:
    """A quantized ADD or MUL with a fused clip that ONNX Runtime's optimizer drops (and then names a node after
    an existing one): RELU1 or RELU6 whose output's largest value lies above the clip's upper bound by less than
    half a step, its least at the lower bound or above; inside an IF or WHILE body, also RELU whose output's least
    value is 0 or above."""
    if op.type not in _ACTIVATION_FUSED or len(op.inputs) < 3:
        return False
    activation = constant_value(model, graph, op.inputs[2])
    out = graph.operands[op.outputs[0]]
    stored = _QUANT8_RANGES.get(out.type)  # type: ignore[call-overload]
    if activation is None or stored is None:
        return False
    bounds = _CLIPPING_ACTIVATIONS.get(int(np.asarray(activation).reshape(-1)[0]))
    if bounds is None:
        return False
    scale = float(out.scale)
    least, largest = scale * (stored[0] - out.zero_point), scale * (stored[1] - out.zero_point)
    if least < bounds[0]:
        return False
    if math.isinf(bounds[1]):
        return graph is not model.main
    return 0.0 < largest - bounds[1] < scale / 2


register(
    Divergence(
        id="onnxruntime-duplicate-node-name",
        engine="onnxruntime",
        kernel_sets=frozenset({"extended", "all"}),
        operation=OperationType.ADD,
        nature="bug",
        condition="a quantized ADD or MUL with RELU1 or RELU6 fused whose output's least value lies at the clip's "
        "lower bound or above and whose largest lies above its upper bound by less than half a quantization step "
        "(uint8, zero point 0, scale 0.003925: largest 1.000875; int8, zero point -128, largest 6.0001); inside an "
        "IF or WHILE body, also one with RELU fused whose output's least value is 0 or above (uint8, zero point 0)",
        hal="ADD/MUL with RELU1 (RELU6): the result clamped to [-1, 1] ([0, 6]), then quantized into the output's "
        "scale and zero point",
        behaviour="at the extended and all optimization levels the session fails to initialize ('This is an invalid "
        "model. Error: two nodes with same node name'): an optimizer step that drops the Clip whose quantized bounds "
        "are the type's ends gives a new node the name of an existing one",
        matches=lambda s: (
            s.verdict.rule in _STATUS_RULES
            and any(_clip_dropped_with_a_name_clash(s.model, graph, op) for graph, op in _graph_operations(s.model))
        ),
    )
)


_QDQ_WINDOWS = frozenset(
    {
        OperationType.FULLY_CONNECTED,
        OperationType.CONV_2D,
        OperationType.DEPTHWISE_CONV_2D,
        OperationType.GROUPED_CONV_2D,
        OperationType.TRANSPOSE_CONV_2D,
        OperationType.AVERAGE_POOL_2D,
        OperationType.MAX_POOL_2D,
    }
)
_INT8 = frozenset({OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL})


def _int8_moved_before_qdq_window(s: Sighting) -> bool:
    """A failed execution of a model with a FULLY_CONNECTED, convolution or average or max pooling whose input (or
    filter) is an int8 tensor given at run time (which the translation dequantizes, then reshapes or transposes)."""
    if s.verdict.rule not in _STATUS_RULES:
        return False
    main = s.model.main
    for op in main.operations:
        if op.type in _QDQ_WINDOWS:
            operands = [main.operands[i] for i in op.inputs[:2]]
            if any(o.type in _INT8 and o.lifetime not in _CONSTANT for o in operands):
                return True
    return False


register(
    Divergence(
        id="onnxruntime-qdq-s8-propagation",
        engine="onnxruntime",
        kernel_sets=frozenset({"extended", "all"}),
        operation=OperationType.FULLY_CONNECTED,
        nature="bug",
        condition="an opset-21 QDQ model where an int8 tensor given at run time is dequantized, then reshaped or "
        "transposed before Gemm/Conv/ConvTranspose/AveragePool/MaxPool (FULLY_CONNECTED, CONV_2D, "
        "DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D, AVERAGE_POOL_2D, MAX_POOL_2D over "
        "TENSOR_QUANT8_ASYMM_SIGNED inputs or per-channel filters given at run time)",
        hal="an execution of a valid model the device prepared succeeds (D5)",
        behaviour="the session fails to initialize: QDQPropagationTransformer inserts a QuantizeLinear whose "
        "output_dtype is INT8 and QDQS8ToU8Transformer turns its zero point into uint8 without updating "
        "output_dtype ('output_dtype INT8 does not match y_zero_point type UINT8')",
        matches=_int8_moved_before_qdq_window,
    )
)


register(
    Divergence(
        id="litert-hard-swish-rounds-down",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.HARD_SWISH,
        nature="bug",
        condition="quantized HARD_SWISH whose results all lie a small fraction of a step below zero (seen with an "
        "output scale about 900 times the input's and every input at or below the zero point; with scales 1e-8 "
        "and 1e-5 it does not show)",
        hal="HARD_SWISH: output = input * relu6(input + 3) / 6, quantized to the nearest step; a result within "
        "a quarter step of zero is stored as the zero point",
        behaviour="every such element is stored one step below the zero point: each is within the per-element "
        "tolerance, but the whole tensor is biased by a full step (accuracy.rounding_bias)",
        matches=lambda s: s.verdict.rule == "accuracy.rounding_bias" and s.verdict.locus == "HARD_SWISH",
    )
)


# hard_swish.h keeps the relu6 factor on 16 bits in steps of 3/32768, reached from the input scale over 128 by this
# multiplier; QuantizeMultiplier splits it into a fraction in [0.5, 1) and an exponent.
_HIRES_STEPS, _RELUISH_STEP = np.float32(128.0), np.float32(3.0 / 32768.0)


def _reluish_shift_overflows(scale: float) -> bool:
    """The relu6 multiplier of a quantized HARD_SWISH of this input scale, computed in float32 as the kernel does,
    has an exponent of 32 or more (it is at least 2^31): the kernel's left shift by exponent - 1 overflows int."""
    with np.errstate(over="ignore"):
        multiplier = float((np.float32(scale) / _HIRES_STEPS) / _RELUISH_STEP)
    return multiplier >= 2.0**31


def _hard_swish_reluish_overflow(s: Sighting) -> bool:
    """Wrong values at a quantized HARD_SWISH of main whose input scale is at least 2^31 * 3 / 256."""
    if not _wrong_values_at(s, OperationType.HARD_SWISH.name):
        return False
    main = s.model.main
    for op in main.operations:
        source = main.operands[op.inputs[0]] if op.type == OperationType.HARD_SWISH else None
        if source is not None and source.type in _QUANT8 and _reluish_shift_overflows(source.scale):
            return True
    return False


_RELU_UPPER_BOUNDS = {OperationType.RELU1: 1.0, OperationType.RELU6: 6.0}
_QUANT8 = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})


def _bound_overflows_int32(bound: float, scale: float) -> bool:
    """round(bound / scale), computed in float32 as the kernel does, lies at or beyond 2^31 (no int32 holds it)."""
    with np.errstate(over="ignore", divide="ignore"):
        quotient = float(np.float32(bound) / np.float32(scale))
    return not math.isfinite(quotient) or math.floor(quotient + 0.5) >= 2.0**31


def _relu_bound_overflow(s: Sighting) -> bool:
    """Wrong values at a quantized RELU1 or RELU6 of main whose upper bound divided by the output scale does not
    fit int32."""
    if not _wrong_values_at(s, *(o.name for o in _RELU_UPPER_BOUNDS)):
        return False
    main = s.model.main
    for op in main.operations:
        bound = _RELU_UPPER_BOUNDS.get(op.type)  # type: ignore[call-overload]
        out = main.operands[op.outputs[0]] if bound is not None else None
        if out is not None and out.type in _QUANT8 and _bound_overflows_int32(bound, out.scale):
            return True
    return False


register(
    Divergence(
        id="litert-relu-bound-overflow",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.RELU1,
        nature="bug",
        condition="quantized RELU1 (RELU6) whose output scale is below 1 / 2^31 (6 / 2^31): the upper bound "
        "divided by the output scale does not fit int32",
        hal="RELU1: output = min(1.f, max(-1.f, input)); RELU6: output = min(6, max(0, input)), quantized into "
        "the output's scale and zero point (a bound beyond every value the output holds clamps nothing)",
        behaviour="activations.cc QuantizedReluX converts roundf(act_max / output scale) to int32 without a range "
        "check (undefined; on x86 it gives INT32_MIN), so the upper clamp is about -2^31 and every element comes "
        "out as that bound truncated to 8 bits (the output zero point); the XNNPACK delegate leaves the operator "
        "to the same kernel",
        matches=_relu_bound_overflow,
    )
)


# The per-channel convolutions whose requantization was seen to wrap around.
_PER_CHANNEL_CONVOLUTIONS = frozenset({OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D})
# The operations the LiteRT translation requantizes inputs of through QUANTIZE (to the output's scale), with the
# positions of those inputs.
_REQUANTIZED_INPUTS = {
    OperationType.MAXIMUM: slice(0, 2),
    OperationType.MINIMUM: slice(0, 2),
    OperationType.SELECT: slice(1, 3),
    OperationType.CONCATENATION: slice(0, -1),
}


def _shift_wraps(largest: float, multiplier: float) -> bool:
    """A value up to `largest` times 2^e, where multiplier = 2^e * m with m in [0.5, 1) and e > 0, passes int32."""
    exponent = math.frexp(multiplier)[1]
    return exponent > 0 and largest * 2.0**exponent >= 2.0**31


def _convolution_wraps(model: Model, graph: Subgraph, op: Operation) -> bool:
    """Some output channel of this per-channel convolution can reach an accumulator that wraps (the largest the
    channel's weights and bias allow)."""
    operands = graph.operands
    source, weights, out = (operands[op.inputs[0]], operands[op.inputs[1]], operands[op.outputs[0]])
    params = weights.extra_params
    if weights.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL or params is None or not out.scale > 0:
        return False
    values = constant_value(model, graph, op.inputs[1])
    bias = constant_value(model, graph, op.inputs[2]) if len(op.inputs) > 2 else None
    channels = len(params.scales)
    if values is None:  # given at run time: any weight up to 127
        magnitudes = np.full(channels, 127.0 * max(1, math.prod(weights.dimensions) // max(channels, 1)))
    else:
        by_channel = np.moveaxis(np.asarray(values, dtype=np.float64), params.channel_dim, 0).reshape(channels, -1)
        magnitudes = np.abs(by_channel).sum(axis=1)
    offsets = np.full(channels, 2.0**31) if bias is None else np.abs(np.asarray(bias, dtype=np.float64).reshape(-1))
    return any(
        _shift_wraps(255.0 * magnitudes[c] + offsets[c], float(source.scale) * float(scale) / float(out.scale))
        for c, scale in enumerate(params.scales)
    )


def _requantized_input_wraps(model: Model, graph: Subgraph, op: Operation) -> bool:
    """A quantized input of this MAXIMUM, MINIMUM, SELECT or CONCATENATION, brought to the output's scale, can
    wrap (|x - zero point| up to 255)."""
    out = graph.operands[op.outputs[0]]
    if out.type not in _QUANT8 or not out.scale > 0:
        return False
    inputs = op.inputs[_REQUANTIZED_INPUTS[OperationType(op.type)]]
    return any(_shift_wraps(255.0, float(graph.operands[i].scale) / float(out.scale)) for i in inputs)


def _requantize_overflow(s: Sighting) -> bool:
    """Wrong values at (or downstream of) a per-channel CONV_2D or DEPTHWISE_CONV_2D, or a quantized MAXIMUM,
    MINIMUM, SELECT or CONCATENATION, whose requantization can wrap around int32."""
    if not _wrong_values_at(s, *(o.name for o in _PER_CHANNEL_CONVOLUTIONS | _REQUANTIZED_INPUTS.keys())):
        return False
    checks = {o: _convolution_wraps for o in _PER_CHANNEL_CONVOLUTIONS} | {
        o: _requantized_input_wraps for o in _REQUANTIZED_INPUTS
    }
    return any(op.type in checks and checks[op.type](s.model, graph, op) for graph, op in _graph_operations(s.model))


register(
    Divergence(
        id="litert-requantize-left-shift-overflow",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.DEPTHWISE_CONV_2D,
        nature="bug",
        condition="an integer requantization whose multiplier is 2^e * m with e > 0 and a value times 2^e beyond "
        "int32: CONV_2D or DEPTHWISE_CONV_2D with a per-channel filter (input scale * channel scale / output "
        "scale, times the accumulator: e.g. input scale 2^22, channel and output scales 2^-6, accumulator 270), "
        "or a quantized MAXIMUM, MINIMUM, SELECT or CONCATENATION whose input scale is 2^23 or more times the "
        "output's (the translation brings each input to the output's scale with QUANTIZE)",
        hal="the output is the real-valued result (the sum of products plus bias; the larger or smaller input; "
        "the chosen or concatenated input) "
        "quantized into the output's scale and zero point, saturated to the type's range: a result far beyond the "
        "range gives its end",
        behaviour="the integer kernels (per-channel convolution, int8 QUANTIZE) multiply the value by 2^e before "
        "the fixed-point multiplication, in int32 without saturation: beyond 2^31 the product wraps around, so a "
        "result that should saturate at one end of the range comes out at the other (127 for -128, -128 for 127); "
        "the XNNPACK delegate leaves such operators to the same kernels",
        matches=_requantize_overflow,
    )
)


# Where LiteRT's optimized quantized ADD was seen to wrap: an input's offset from its zero point, rescaled to the
# output's scale, beyond the int16 range.
_INT16_LARGEST = 2**15 - 1
_ADD_BLOCK = 8  # elements per step of the kernel's vectorized loop


def _add_input_wraps(model: Model, graph: Subgraph, op: Operation) -> bool:
    """An input of this quantized ADD, rescaled to the output's scale, can pass int16: its largest offset from its
    zero point (the constant's, or the type's whole range for a value given at run time) times input scale /
    output scale."""
    out = graph.operands[op.outputs[0]]
    if out.type not in _QUANT8 or not out.scale > 0:
        return False
    if out.dimensions and all(out.dimensions) and math.prod(out.dimensions) < _ADD_BLOCK:
        return False  # only the vectorized loop wraps: fewer elements than one block are computed right
    for index in op.inputs[:2]:
        operand = graph.operands[index]
        stored = _QUANT8_RANGES.get(operand.type)  # type: ignore[call-overload]
        if stored is None:
            continue
        values = constant_value(model, graph, index)
        reach = np.asarray(stored if values is None else values, dtype=np.float64) - operand.zero_point
        if reach.size and float(np.abs(reach).max()) * float(operand.scale) / float(out.scale) > _INT16_LARGEST:
            return True
    return False


def _add_rescale_wraps(s: Sighting) -> bool:
    """Wrong values at (or downstream of) a quantized ADD an input of which, rescaled, can pass int16."""
    if not _wrong_values_at(s, OperationType.ADD.name):
        return False
    return any(
        op.type == OperationType.ADD and _add_input_wraps(s.model, graph, op)
        for graph, op in _graph_operations(s.model)
    )


register(
    Divergence(
        id="litert-add-rescale-int16-wrap",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack"}),
        operation=OperationType.ADD,
        nature="bug",
        condition="a quantized ADD (uint8 or int8) of 8 elements or more with an input whose offset from its zero "
        "point, times its scale over the output's, lies beyond the int16 range: e.g. input scale 300 times the "
        "output's, offset 110 or more (a baseline campaign's WHILE body added a constant at scale 43586 to a "
        "value at scale 0.091)",
        hal="ADD: the real-valued sum quantized into the output's scale and zero point, saturated to the type's "
        "range: a sum far beyond the range gives its end",
        behaviour="the optimized kernel (which the XNNPACK kernel set runs as well) behaves as if it held each "
        "input, rescaled to the output's scale, in 16 bits in its loop over blocks of 8 elements: beyond +-32767 "
        "the value wraps modulo 2^16, so a sum that should saturate at one end comes out at the other or anywhere "
        "between; the elements left over after the last whole block, SUB and the reference kernel saturate",
        matches=_add_rescale_wraps,
    )
)


# The 8-bit stored range (least, greatest) of each quantized type the translation writes through QuantizeLinear.
_QUANT8_RANGES = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127)}
_RELU_CLIPS = {OperationType.RELU1: (-1.0, 1.0), OperationType.RELU6: (0.0, 6.0)}
_FLOAT32_EPSILON = float(np.finfo(np.float32).eps)


def _clip_dropped_wrongly(clip: tuple[float, float], scale: float, zero_point: int, stored: tuple[int, int]) -> bool:
    """ONNX Runtime's ClipQuantFusion would remove this Clip before a QuantizeLinear of this scale and zero point
    (each clip bound within float32 epsilon of the quantized domain's, computed in float32), though the domain
    reaches beyond the clip (the Clip did clamp something)."""
    f32 = np.float32
    lower = float(f32(scale) * f32(stored[0] - zero_point))
    upper = float(f32(scale) * f32(stored[1] - zero_point))
    low, high = clip
    removed = low - lower <= _FLOAT32_EPSILON and upper - high <= _FLOAT32_EPSILON
    return removed and (lower < low or upper > high)


def _quantized_relu_clip_dropped(s: Sighting) -> bool:
    """Wrong values at a quantized RELU1 or RELU6 of main whose output scale and zero point make ONNX Runtime drop
    its Clip although values below (above) the bound are representable."""
    if not _wrong_values_at(s, *(o.name for o in _RELU_CLIPS)):
        return False
    main = s.model.main
    for op in main.operations:
        clip = _RELU_CLIPS.get(op.type)  # type: ignore[call-overload]
        out = main.operands[op.outputs[0]] if clip is not None else None
        stored = _QUANT8_RANGES.get(out.type) if out is not None else None  # type: ignore[call-overload]
        if stored is not None and _clip_dropped_wrongly(clip, out.scale, out.zero_point, stored):
            return True
    return False


register(
    Divergence(
        id="onnxruntime-clip-quant-fusion-epsilon",
        engine="onnxruntime",
        kernel_sets=frozenset({"extended", "all"}),
        operation=OperationType.RELU6,
        nature="bug",
        condition="quantized RELU6 (RELU1) whose output's quantized domain reaches beyond the bound by no more "
        "than float32 epsilon in real values (RELU6: output scale * zero point <= 2^-23, e.g. scale 1e-10 with "
        "zero point 128)",
        hal="RELU6: output = min(6, max(0, input)), quantized into the output's scale and zero point: an input "
        "below zero is stored as the zero point",
        behaviour="ClipQuantFusion removes a Clip followed by QuantizeLinear when each clip bound lies within an "
        "absolute float32 epsilon of the quantized domain's bound, not comparing in steps of the scale; with a "
        "tiny scale the domain reaches many steps below 0 within that epsilon, so negative inputs are stored "
        "below the zero point (down to 0) instead of at it",
        matches=_quantized_relu_clip_dropped,
    )
)


def _folded_at_prepare(graph: Subgraph, index: int, writer: Mapping[int, Operation]) -> bool:
    """The operand is a constant, or a MUL of such operands (LiteRT's mul.cc computes those in Prepare)."""
    if graph.operands[index].lifetime in _CONSTANT:
        return True
    op = writer.get(index)
    return (
        op is not None
        and op.type == OperationType.MUL
        and all(_folded_at_prepare(graph, i, writer) for i in op.inputs[:2])
    )


# The MUL types the XNNPACK delegate leaves to the builtin kernel (it takes float and 8-bit quantized ones).
_XNNPACK_LEAVES_MUL = frozenset({OperandType.TENSOR_INT32})


def _if_branch_output_folded(s: Sighting) -> bool:
    """Wrong values at an IF one of whose branches returns the result of a MUL computed from constants only (with
    XNNPACK: a MUL its delegate leaves to the builtin kernel)."""
    if not _wrong_values_at(s, OperationType.IF.name):
        return False
    types = _XNNPACK_LEAVES_MUL if s.kernel_set == "xnnpack" else None
    for graph in (s.model.main, *s.model.referenced):
        for op in graph.operations:
            if op.type != OperationType.IF:
                continue
            for position in (1, 2):
                branch = s.model.referenced[graph.operands[op.inputs[position]].location.offset]
                writer = {index: o for o in branch.operations for index in o.outputs}
                if any(
                    index in writer
                    and _folded_at_prepare(branch, index, writer)
                    and (types is None or branch.operands[index].type in types)
                    for index in branch.output_indexes
                ):
                    return True
    return False


register(
    Divergence(
        id="litert-if-branch-folded-mul",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.IF,
        nature="bug",
        condition="an IF whose chosen branch returns a MUL of constants (the branch output is computed from "
        "constants only), on the builtin MUL kernel: with XNNPACK only a TENSOR_INT32 MUL (its delegate takes "
        "float and 8-bit quantized MULs and computes them at invoke)",
        hal="IF: executes one of the two referenced models as the condition determines; the operation's outputs "
        "are the outputs of the model executed (here computed from its constants)",
        behaviour="mul.cc Prepare computes a MUL of constant or persistent inputs once, marks its output "
        "kTfLitePersistentRo and makes Eval a no-op; if.cc Eval_static treats only kTfLiteMmapRo branch outputs "
        "as constants (IsConstantTensor), so it points that output at the IF's output buffer and invokes the "
        "branch, which writes nothing: the IF's output holds whatever its buffer held",
        matches=_if_branch_output_folded,
    )
)


register(
    Divergence(
        id="litert-hard-swish-reluish-shift-overflow",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"optimized", "xnnpack", "reference"}),
        operation=OperationType.HARD_SWISH,
        nature="bug",
        condition="quantized HARD_SWISH whose input scale is at least 2^31 * 3 / 256 (about 2.5e7): the multiplier "
        "from the input scale over 128 to the relu6 factor's step of 3/32768 has an exponent of 32 or more",
        hal="HARD_SWISH: output = input * relu6(input + 3) / 6 (for inputs of these scales: the input itself above "
        "zero, 0 below), quantized into the output's scale and zero point",
        behaviour="hard_swish.h SaturatingLeftShift multiplies by (1 << amount) with amount = exponent - 1: at 31 "
        "that int overflows to -2^31 and flips the sign (beyond it the shift is undefined), so the relu6 factor "
        "saturates the wrong way: positive inputs give 0 (the output zero point) and negative inputs give the "
        "input itself; the XNNPACK delegate leaves the operator to the same kernel",
        matches=_hard_swish_reluish_overflow,
    )
)
