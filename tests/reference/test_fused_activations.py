"""The reference validator refuses a fused activation code outside FuseCode (0..3) on every operation that has one
as a constant: the elementwise arithmetic, FULLY_CONNECTED, the RNNs and SVDF (types.hal: "has to be one of the
FuseCode values")."""

from __future__ import annotations

import pytest

from harness.case.json_model import model_from_json, model_to_json
from harness.gen import GenerationRejected, ModelConfig, RandomSource, generate_model
from harness.hal import OperationType as O
from harness.reference import validate_model

# Operation -> position of its fused activation input.
ACTIVATION_AT = {
    O.ADD: 2,
    O.SUB: 2,
    O.MUL: 2,
    O.DIV: 2,
    O.FULLY_CONNECTED: 3,
    O.RNN: 5,
    O.UNIDIRECTIONAL_SEQUENCE_RNN: 5,
    O.BIDIRECTIONAL_SEQUENCE_RNN: 12,
    O.SVDF: 6,
}


def _model_with_constant_activation(op: O) -> dict:
    """The JSON of the first generated one-operation model of `op` whose activation is a CONSTANT_COPY."""
    config = ModelConfig(operations=frozenset({int(op)}), max_operations=1, control_flow=False)
    for seed in range(400):
        try:
            generated = generate_model(RandomSource(seed), config)
        except GenerationRejected:
            continue
        model = model_to_json(generated.model)
        operation = model["operations"][0]
        position = ACTIVATION_AT[op]
        if operation["type"] != op.name or len(operation["inputs"]) <= position:
            continue
        if model["operands"][operation["inputs"][position]]["lifetime"] == "CONSTANT_COPY":
            return model
    raise AssertionError(f"no generated {op.name} model with a constant activation")


@pytest.mark.parametrize("op", list(ACTIVATION_AT), ids=lambda o: o.name)
def test_a_fused_activation_outside_fusecode_makes_the_model_invalid(op: O) -> None:
    model = _model_with_constant_activation(op)
    assert validate_model(model_from_json(model)) == []
    activation = model["operands"][model["operations"][0]["inputs"][ACTIVATION_AT[op]]]
    for code in (4, 7, -1):
        activation["value"] = [code]
        assert validate_model(model_from_json(model)) != [], code
