"""The V10 mutation bias_quantization_off: drawn on the generated models of every operation with a quantized bias,
and every mutated model is refused by the reference validator for the bias."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from harness.gen import GenerationRejected, ModelConfig, RandomSource
from harness.gen.mutations import MUTATIONS, apply_mutation
from harness.hal import Model, OperandType, OperationType
from harness.ops.biases import QUANTIZED_BIASES, bias_sites
from harness.reference import validate_model
from tests.gen.model.generated import generated

O = OperationType
MUTATION = MUTATIONS["bias_quantization_off"]
BIASED = ModelConfig(operations=frozenset(QUANTIZED_BIASES), quantized_bias=1.0, control_flow=False)


def _changed_biases(before: Model, after: Model) -> list[tuple[str, str, float]]:
    """(operation, "scale" or "zero_point", new value) of every bias whose quantization the mutation changed."""
    changes = []
    for old, new in zip((before.main, *before.referenced), (after.main, *after.referenced)):
        for op in new.operations:
            for site in bias_sites(int(op.type)):
                if site.bias >= len(op.inputs):
                    continue
                k = op.inputs[site.bias]
                was, now = old.operands[k], new.operands[k]
                if now.scale != was.scale:
                    changes.append((O(op.type).name, "scale", now.scale))
                if now.zero_point != was.zero_point:
                    changes.append((O(op.type).name, "zero_point", float(now.zero_point)))
    return changes


def test_the_bias_mutation_breaks_one_bias_of_every_kind_of_operation_and_the_reference_refuses_it() -> None:
    drawn: Counter = Counter()
    zero_scales = 0
    for seed, g in generated(range(400), BIASED):
        try:
            mutated = apply_mutation(MUTATION, g.model, RandomSource(seed + 20_000))
        except GenerationRejected:
            g.close()
            continue
        changes = _changed_biases(g.model, mutated)
        assert len(changes) == 1, changes
        ((operation, part, value),) = changes
        drawn[(operation, part)] += 1
        zero_scales += part == "scale" and value == 0.0
        violations = validate_model(mutated)
        assert any(v.v == "V10" and "bias" in v.message for v in violations), violations
        assert {v.v for v in violations} <= set(MUTATION.allowed), violations
        g.close()
    operations = {operation for operation, _ in drawn}
    assert operations >= {O(t).name for t in QUANTIZED_BIASES}, drawn
    assert drawn[("FULLY_CONNECTED", "zero_point")] + drawn[("CONV_2D", "zero_point")] > 0, drawn
    assert zero_scales > 0, drawn  # the scale of the minimized QUANTIZED_16BIT_LSTM finding


def test_a_per_channel_filter_s_bias_is_never_chosen() -> None:
    # Its scale is not input scale * filter scale (each channel has its own): moving it would break nothing.
    per_channel = 0
    for seed, g in generated(range(300), replace(BIASED, operations=frozenset({O.CONV_2D}))):
        operands = g.model.main.operands
        convs = [op for op in g.model.main.operations if int(op.type) == O.CONV_2D]
        if all(int(operands[op.inputs[1]].type) == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL for op in convs):
            per_channel += 1
            try:
                apply_mutation(MUTATION, g.model, RandomSource(seed))
            except GenerationRejected:
                pass
            else:
                raise AssertionError(f"seed {seed}: a per-channel convolution's bias was mutated")
        g.close()
    assert per_channel > 0
