"""What the oracle needs to know about a model's outputs before judging them against the reference.

- `unspecified_outputs`: outputs whose values the HAL leaves to the implementation (never compared).
- `quantized_operations`: how many operations round to a quantized type (the random-graph accuracy criterion).
- `output_producer`: the operation writing an output (the locus of a wrong value, for signatures).
- `reference_is_stable`: whether the reference's outputs survive one-ULP nudges of every intermediate result,
  every quantized rounding leaning as far as correct fixed-point rounding may (LEAN_STEPS), rounding ties resolved
  element by element, and float32 arithmetic carried out in float32; when they do not (a FLOOR, a comparison or a
  threshold sits on an edge, or a graph amplifies a legitimate one-step difference beyond its tolerance), no
  implementation can be judged on them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness import ops
from harness.hal import Model, OperandType, OperationType
from harness.hal.sizes import QUANTIZED_TYPES
from harness.oracle.accuracy import compare
from harness.oracle.exactness import exact_outputs
from harness.reference import ReferenceResult, operation_name, run_model

# The stability check nudges every float result by one epsilon of its type (about an ULP): the per-step difference
# any correct implementation may have, well inside the O2 tolerances of a single step.
_PERTURBATIONS = (1, -1)

# How far (in quantization steps) a correct implementation's value before rounding may be from the exact one.
# The HAL's reference fixed-point arithmetic (gemmlowp's MultiplyByQuantizedMultiplier, which the conformance
# vectors embody) rounds twice when the multiplier is below one half: a doubling high multiply rounds to an integer
# of x * m * 2^right, then a rounding right shift by `right` rounds again. Its first rounding is 2^-right steps
# coarse, an error up to 2^-(right + 1) steps: a quarter step for right = 1 (multipliers in [1/4, 1/2)), less for
# larger shifts. A quarter step is therefore what correct rounding may lean, and no further: a truncation loses
# up to a whole step, and values in the upper quarter of a step it always rounds the wrong way.
LEAN_STEPS = 0.25
FLOAT32_TYPES = frozenset({OperandType.FLOAT32, OperandType.TENSOR_FLOAT32})
# Operations that round many times inside themselves: the ends of one lean do not bound them.
SEVERAL_ROUNDINGS = frozenset({OperationType.QUANTIZED_16BIT_LSTM, OperationType.QUANTIZED_LSTM})


def unspecified_outputs(model: Model) -> set[int]:
    """Positions of main outputs whose values the HAL leaves to the implementation (catalogue hint), directly or
    through any operation that consumes such a value."""
    main = model.main
    open_values: set[int] = set()
    for op in main.operations:
        if any(i in open_values for i in op.inputs):
            open_values.update(op.outputs)
            continue
        spec = ops.get(op.type)
        if spec is not None:
            open_values.update(op.outputs[k] for k in spec.hints.get("unspecified_outputs", ()) if k < len(op.outputs))
    return {position for position, index in enumerate(main.output_indexes) if index in open_values}


def quantized_operations(model: Model) -> int:
    """Operations of every subgraph that write a quantized tensor (each rounds once: random-graph criterion)."""
    quantized = 0
    for graph in (model.main, *model.referenced):
        for op in graph.operations:
            if any(graph.operands[i].type in QUANTIZED_TYPES for i in op.outputs):
                quantized += 1
    return quantized


def output_producer(model: Model, position: int) -> str:
    """The type name of the operation of main that writes main output `position` ("" if none does)."""
    main = model.main
    if not 0 <= position < len(main.output_indexes):
        return ""
    index = main.output_indexes[position]
    for op in main.operations:
        if index in op.outputs:
            return operation_name(op.type)
    return ""


def reference_is_stable(
    model: Model, inputs: Sequence[np.ndarray | None], base: ReferenceResult, loop_timeout_ns: int | None = None
) -> bool:
    """True when the reference's outputs stay within tolerance (exactly equal where the HAL defines them exactly)
    under every probe: every float result nudged by one epsilon (edges the HAL leaves open resolved the other way),
    every quantized rounding leaning LEAN_STEPS down, then up, values about to be quantized nudged up or down
    element by element, and float32 arithmetic computed in float32."""
    main = model.main
    types = [main.operands[i].type for i in main.output_indexes]
    relaxed = model.relax_computation_float32_to_float16
    steps = quantized_operations(model)
    exact = exact_outputs(model)
    for probe in _probes(model, steps):
        other = run_model(model, inputs, loop_timeout_ns=loop_timeout_ns, **probe)
        if other.status != base.status or other.unspecified or len(other.outputs) != len(base.outputs):
            return False
        for i, (expected, actual, t) in enumerate(zip(base.outputs, other.outputs, types)):
            if not compare(expected, actual, t, relaxed, quantized_operations=steps, exact=i in exact).ok:
                return False
    return True


def probe_results(
    model: Model, inputs: Sequence[np.ndarray | None], loop_timeout_ns: int | None = None
) -> list[ReferenceResult]:
    """The reference's results under each of the stability probes of reference_is_stable."""
    probes = _probes(model, quantized_operations(model))
    return [run_model(model, inputs, loop_timeout_ns=loop_timeout_ns, **probe) for probe in probes]


def _probes(model: Model, quantized: int) -> list[dict]:
    """The reference runs of the stability check: the nudges always; the leans where a quantized result is rounded
    and every rounding is one the lean models (a graph may amplify a one-step difference of correct double rounding
    beyond the tolerance of its outputs, as MUL does squaring a result that lies near a tie)."""
    probes: list[dict] = [{"perturbation": p} for p in _PERTURBATIONS]
    if any(o.type in FLOAT32_TYPES for g in (model.main, *model.referenced) for o in g.operands):
        # Nudges model one rounding per result; an operation that rounds many times inside itself (a recurrent
        # cell over a long sequence, a layer normalization of nearly equal values) can be ill-conditioned at
        # float32 precision where no single nudge shows it: every correct float32 implementation lands away from
        # the float64 value, together (a 23-step LSTM with layer norm over two units: 1.4e-5 from float64).
        probes.append({"native": True})
    several = any(op.type in SEVERAL_ROUNDINGS for g in (model.main, *model.referenced) for op in g.operations)
    if quantized and not several:
        probes += [{"lean": lean} for lean in (-LEAN_STEPS, LEAN_STEPS)]
    if quantized:
        # Ties resolved element by element: the nudges and leans move every tie the same way, which a normalization
        # of tied values cancels (SOFTMAX after a RESIZE_BILINEAR that averages to exact half steps: an engine
        # rounding some ties up and others down lands 7 steps from both).
        probes += [{"perturbation": p, "scatter": True} for p in _PERTURBATIONS]
    return probes
