"""QUANTIZED_LSTM models: the recipe draws each optional group (CIFG, peephole, projection, layer normalization,
the clips) both present and absent, and the models are valid to the reference validator and to the bundled
driver and run on the reference."""

from __future__ import annotations

from collections import Counter

from driver_under_test import create_device
from harness.gen import ModelConfig, default_operations
from harness.hal import ErrorStatus, OperandLifeTime, OperationType
from harness.reference import validate_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
CONFIG = ModelConfig(operations=frozenset({O.QUANTIZED_LSTM}), max_operations=1, control_flow=False)
# Per optional group, an input that is present exactly when the group is.
GROUPS = {"full gates (no CIFG)": 1, "peephole": 10, "projection": 16, "layer norm": 21, "cell clip": 24}


def _presence(seeds: range) -> Counter:
    counts: Counter = Counter()
    for _, g in generated(seeds, CONFIG):
        main = g.model.main
        for op in main.operations:
            for group, i in GROUPS.items():
                operand = main.operands[op.inputs[i]]
                given = operand.lifetime != OperandLifeTime.NO_VALUE and not (
                    op.inputs[i] in main.input_indexes and g.inputs[main.input_indexes.index(op.inputs[i])] is None
                )
                counts[group, given] += 1
        g.close()
    return counts


def test_quantized_lstm_is_a_default_operation() -> None:
    assert int(O.QUANTIZED_LSTM) in default_operations()


def test_every_optional_group_is_drawn_present_and_absent() -> None:
    counts = _presence(range(120))
    assert all(counts[group, given] >= 5 for group in GROUPS for given in (True, False)), counts


def test_quantized_lstm_models_are_valid_and_run_on_the_reference() -> None:
    models = 0
    for seed, g in generated(range(150), CONFIG):
        assert validate_model(g.model) == [], seed
        assert reference_failures(seed, g) == []
        models += 1
        g.close()
    assert models >= 140


def test_the_bundled_driver_finds_quantized_lstm_models_valid() -> None:
    # The driver validates them (NONE) and, having no kernel of its own, reports the operation unsupported.
    device = create_device(faults=[])
    for seed, g in generated(range(60), CONFIG):
        status, flags = device.get_supported_operations(g.model)
        assert (status, flags) == (ErrorStatus.NONE, [False]), seed
        g.close()
