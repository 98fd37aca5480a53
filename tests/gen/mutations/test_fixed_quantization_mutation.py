"""The V10 mutation fixed_quantization_off: drawn on the generated models of every operation with a quantization
the HAL fixes, on inputs and outputs, and every mutated model is refused by the reference validator."""

from __future__ import annotations

from collections import Counter

from harness.gen import GenerationRejected, ModelConfig, RandomSource
from harness.gen.mutations import MUTATIONS, apply_mutation
from harness.hal import Model, OperationType
from harness.ops.fixed_quantization import FIXED_OPERATIONS, fixed_quantization
from harness.reference import validate_model
from tests.gen.model.generated import generated

O = OperationType
MUTATION = MUTATIONS["fixed_quantization_off"]
FIXED = ModelConfig(operations=FIXED_OPERATIONS, control_flow=False)


def _moved(before: Model, after: Model) -> list[tuple[str, str, int]]:
    """(operation, side, position) of every fixed operand whose scale or zero point the mutation changed."""
    moved = []
    for op in after.main.operations:
        for side, indexes in (("input", op.inputs), ("output", op.outputs)):
            for position, k in enumerate(indexes):
                was, now = before.main.operands[k], after.main.operands[k]
                if fixed_quantization(op.type, side, position, now.type) is None:
                    continue
                if (now.scale, now.zero_point) != (was.scale, was.zero_point):
                    moved.append((O(op.type).name, side, position))
    return moved


def test_the_mutation_moves_one_fixed_quantization_and_the_reference_refuses_it() -> None:
    drawn: Counter = Counter()
    for seed, g in generated(range(400), FIXED):
        try:
            mutated = apply_mutation(MUTATION, g.model, RandomSource(seed + 7))
        except GenerationRejected:
            g.close()
            continue
        moved = _moved(g.model, mutated)
        # One operand; it may be the output of one operation and the input of the next (a chain of 16-bit LSTMs).
        assert 1 <= len(moved) <= 2, moved
        drawn.update(moved)
        violations = validate_model(mutated)
        assert any(v.v == "V10" for v in violations), violations
        assert {v.v for v in violations} <= set(MUTATION.allowed), violations
        g.close()
    assert {operation for operation, _, _ in drawn} == {O(t).name for t in FIXED_OPERATIONS}, drawn
    for position in (0, 13, 14):
        assert drawn[("QUANTIZED_16BIT_LSTM", "input", position)] > 0, drawn
