"""The V10 mutation quantization_unlike_input: drawn on the generated models of every operation whose output keeps
an input's quantization, and every mutated model is refused by the reference validator and the driver alike."""

from __future__ import annotations

from collections import Counter

from driver_under_test.validation import Limits
from driver_under_test.validation import validate_model as driver_validate_model
from harness.gen import GenerationRejected, ModelConfig, RandomSource
from harness.gen.mutations import MUTATIONS, apply_mutation
from harness.hal import Model, OperationType
from harness.ops.same_quantization import SAME_OPERATIONS
from harness.reference import validate_model
from tests.gen.model.generated import generated

O = OperationType
MUTATION = MUTATIONS["quantization_unlike_input"]


def _moved(before: Model, after: Model) -> list[str]:
    """The operations writing an operand whose quantization the mutation changed."""
    return [
        O(op.type).name
        for op in after.main.operations
        for k in op.outputs
        if (after.main.operands[k].scale, after.main.operands[k].zero_point)
        != (before.main.operands[k].scale, before.main.operands[k].zero_point)
    ]


def _driver_refuses(model: Model) -> bool:
    try:
        driver_validate_model(model, Limits())
    except Exception:
        return True
    return False


def test_each_kept_quantization_broken_is_refused_by_the_reference_and_the_driver() -> None:
    drawn: Counter = Counter()
    for op in sorted(SAME_OPERATIONS):
        config = ModelConfig(operations=frozenset({op}), max_operations=1, control_flow=False)
        for seed, g in generated(range(40), config):
            try:
                mutated = apply_mutation(MUTATION, g.model, RandomSource(seed + 3))
            except GenerationRejected:
                g.close()
                continue
            moved = _moved(g.model, mutated)
            assert len(moved) == 1, moved
            drawn[moved[0]] += 1
            violations = validate_model(mutated)
            assert any(v.v == "V10" for v in violations), (O(op).name, seed, violations)
            assert {v.v for v in violations} <= set(MUTATION.allowed), violations
            assert _driver_refuses(mutated), (O(op).name, seed)
            g.close()
    assert set(drawn) == {O(op).name for op in SAME_OPERATIONS}, drawn
