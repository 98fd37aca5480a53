"""Rounding bias (REQUIREMENTS O2): a quantized output whose mean signed error is larger than any correct rounding
can produce is wrong even when every element is within its one-step tolerance.

The bound. A quantized result is the exact real value rounded to the nearest step. A correct implementation
computes the value before rounding to some intermediate precision (fixed-point multipliers, float32, tables): its
value is within `LEAN_STEPS` steps of the exact one, on either side, and it rounds that. So each element can
legitimately land only between the rounding of (exact - LEAN_STEPS) and the rounding of (exact + LEAN_STEPS),
and nowhere else: ties (exactly half a step) may go either way, so may values within LEAN_STEPS of a tie, and a
value further from a tie has one right rounding. The reference computes both ends: it runs again with every
value about to be quantized leaning LEAN_STEPS down, then up (run_model's `lean`). Over a tensor, the signed error
correct rounding can produce is therefore between the sum of the low ends' differences and the sum of the high
ends' differences from the reference, whatever n is; this bound is exact, not statistical, and rounding that is
free in the HAL (a tie) is inside it by construction.

What lies beyond those ends is error a correct rounding cannot make; `above` and `below` count it, in steps. An
implementation less precise than LEAN_STEPS (a coarse table, a float16 intermediate) makes such errors too, but
without a preferred sign; a biased one (truncation instead of rounding to nearest, a lost rounding constant) makes
them all of one sign. The criterion fires when the imbalance is beyond chance for unsigned errors:
|above - below| >= 3 sqrt(above + below) (a sum of m independent +-1 steps with no preferred sign exceeds
3 sqrt(m) with probability below 0.3 %), which needs at least 9 one-sided steps. A truncation puts the values of
the upper quarter of each step beyond the low end, so a quarter of the elements: it shows on tensors of a few dozen
elements.

Double rounding. The HAL's own reference arithmetic rounds some results twice, the first time to half a step
(see LEAN_STEPS): values between a quarter and a half step above an integer then round up, a bias of up to a
quarter of the elements that no driver following the HAL's arithmetic can avoid. LEAN_STEPS covers it.

Scope. The ends bound a single rounding: through several roundings a graph may flip signs (SUB of two rounded
values), so only outputs with one quantized operation on their way from the inputs are judged, not relaxed
models (a float16 intermediate may be coarser than LEAN_STEPS), and not the quantized recurrent operations, which
round inside themselves many times.
Float16 outputs are not judged: their rounding is the hardware's, and a float16 kernel's error is not a rounding
of one exact value the reference can lean.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from harness.hal import Model, OperationType
from harness.hal.sizes import QUANTIZED_TYPES
from harness.oracle.outputs import LEAN_STEPS, SEVERAL_ROUNDINGS, output_producer
from harness.oracle.rules import ROUNDING_BIAS, Breach
from harness.reference import run_model

# Significance of the imbalance: |above - below| >= SIGMAS * sqrt(above + below).
SIGMAS = 3.0


@dataclass(frozen=True)
class Bias:
    """A quantized output's error beyond what correct rounding can produce."""

    output: int
    elements: int
    above: int  # steps above the highest value correct rounding allows, summed over elements
    below: int  # steps below the lowest
    mean_error: float  # mean signed error against the reference, in steps

    @property
    def significant(self) -> bool:
        """The imbalance is beyond chance for errors without a preferred sign."""
        spread = self.above + self.below
        return spread > 0 and abs(self.above - self.below) >= SIGMAS * math.sqrt(spread)

    def describe(self) -> str:
        """One line: the mean error and the steps beyond correct rounding on each side."""
        return (
            f"mean signed error {self.mean_error:+.3f} steps over {self.elements} elements; beyond what rounding "
            f"to nearest (within {LEAN_STEPS} step) can give: {self.above} steps above, {self.below} below"
        )


def judged(model: Model) -> set[int]:
    """Main outputs the bias criterion applies to: one rounding on the way from the inputs, not relaxed (see the
    module)."""
    if model.relax_computation_float32_to_float16:
        return set()
    if any(op.type in SEVERAL_ROUNDINGS for g in (model.main, *model.referenced) for op in g.operations):
        return set()
    main = model.main
    # Per operand of main: how many operations writing a quantized tensor lie on its way from the inputs
    # (an IF or WHILE counts every such operation of every referenced subgraph).
    nested = sum(
        any(g.operands[i].type in QUANTIZED_TYPES for i in op.outputs) for g in model.referenced for op in g.operations
    )
    roundings: dict[int, int] = {}
    for op in main.operations:
        upstream = max((roundings.get(i, 0) for i in op.inputs), default=0)
        own = int(any(main.operands[i].type in QUANTIZED_TYPES for i in op.outputs))
        if op.type in (OperationType.IF, OperationType.WHILE):
            own = max(own, nested)
        for i in op.outputs:
            roundings[i] = upstream + own
    return {position for position, index in enumerate(main.output_indexes) if roundings.get(index, 0) == 1}


def _one_sided_steps(expected: np.ndarray, actual: np.ndarray) -> int:
    """The larger of the positive and the negative error sums: no bias can be significant with fewer than 9."""
    d = actual.astype(np.int64) - expected.astype(np.int64)
    return int(max(d[d > 0].sum(), -d[d < 0].sum())) if d.size else 0


def find_bias(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    expected: Sequence[np.ndarray],
    actual: Sequence[np.ndarray | None],
    skip: Collection[int] = (),
    loop_timeout_ns: int | None = None,
) -> Bias | None:
    """The first quantized output with a significant bias, or None. Expects outputs already within tolerance."""
    eligible = judged(model)
    if not eligible:
        return None
    main = model.main
    candidates = [
        i
        for i, (e, a) in enumerate(zip(expected, actual))
        if i in eligible
        and i not in skip
        and a is not None
        and main.operands[main.output_indexes[i]].type in QUANTIZED_TYPES
        and np.shape(a) == np.shape(e)
        and _one_sided_steps(np.asarray(e), np.asarray(a)) >= SIGMAS**2
    ]
    if not candidates:
        return None  # the common case: no reference runs at all
    ends = [run_model(model, inputs, loop_timeout_ns=loop_timeout_ns, lean=lean) for lean in (-LEAN_STEPS, LEAN_STEPS)]
    if any(r.status != ends[0].status or r.unspecified or len(r.outputs) != len(expected) for r in ends):
        return None
    for i in candidates:
        e = np.asarray(expected[i]).astype(np.int64)
        a = np.asarray(actual[i]).astype(np.int64)
        lows, highs = (np.asarray(r.outputs[i]).astype(np.int64) for r in ends)
        if lows.shape != e.shape or highs.shape != e.shape:
            continue
        low = np.minimum(np.minimum(lows, highs), e)
        high = np.maximum(np.maximum(lows, highs), e)
        bias = Bias(
            output=i,
            elements=int(e.size),
            above=int(np.maximum(a - high, 0).sum()),
            below=int(np.maximum(low - a, 0).sum()),
            mean_error=float((a - e).mean()),
        )
        if bias.significant:
            return bias
    return None


def judge_bias(
    path: str,
    model: Model,
    inputs: Sequence[np.ndarray | None],
    expected: Sequence[np.ndarray],
    actual: Sequence[np.ndarray | None],
    skip: Collection[int] = (),
    loop_timeout_ns: int | None = None,
) -> Breach | None:
    """O2's bias rule over outputs that passed the element-wise criterion (see the module)."""
    bias = find_bias(model, inputs, expected, actual, skip, loop_timeout_ns)
    if bias is None:
        return None
    return Breach(
        ROUNDING_BIAS,
        f"{path}: output {bias.output} is biased beyond rounding",
        bias.describe(),
        path=path,
        output=bias.output,
        locus=output_producer(model, bias.output),
    )
