"""V10.same_quantization: an output that keeps an input's quantization (types.hal: "the scale and zeroPoint must
be the same as input0") must declare that input's scale and zero point."""

from __future__ import annotations

import pytest

from driver_under_test.faults import FaultSet
from driver_under_test.validation import Limits, validate_model
from driver_under_test.validation.same_quantization import check_same_quantization
from harness.hal import Model, Operand, Operation, Subgraph
from harness.hal import OperandLifeTime as LT
from harness.hal import OperandType as T
from harness.reference import validate_model as reference_validate_model

from .builders import OP, rejects, tensor

LIMITS = Limits()
RULE = "V10.same_quantization"
Q8 = T.TENSOR_QUANT8_ASYMM


def relu_model(scale: float = 0.5, zero_point: int = 128) -> Model:
    """RELU of a quant8 [2] input at scale 0.5, zero point 128, into an output of the given quantization."""
    operands = [
        tensor([2], LT.SUBGRAPH_INPUT, 1, Q8, scale=0.5, zero_point=128),
        tensor([2], LT.SUBGRAPH_OUTPUT, 0, Q8, scale=scale, zero_point=zero_point),
    ]
    return Model(main=Subgraph(operands, [Operation(OP.RELU, [0], [1])], [0], [1]))


def test_an_output_with_its_input_s_quantization_is_accepted() -> None:
    validate_model(relu_model(), LIMITS)
    assert reference_validate_model(relu_model()) == []


@pytest.mark.parametrize("scale, zero_point", [(1.0, 128), (0.25, 128), (0.5, 127), (0.5, 0)])
def test_another_scale_or_zero_point_is_refused_by_driver_and_reference(scale: float, zero_point: int) -> None:
    model = relu_model(scale, zero_point)
    error = rejects(lambda: validate_model(model, LIMITS), RULE)
    assert "output 0 must have input 0's scale 0.5 and zero point 128" in str(error)
    assert reference_validate_model(model) != []


def _q8(scale: float, zero_point: int) -> Operand:
    return tensor([1], LT.TEMPORARY_VARIABLE, 0, Q8, scale=scale, zero_point=zero_point)


def test_every_output_of_split_and_the_values_input_of_a_lookup_are_held() -> None:
    faults = FaultSet()
    source, same, other = _q8(0.5, 10), _q8(0.5, 10), _q8(0.5, 11)
    check_same_quantization(OP.SPLIT, [source], [same, same, same], "op", faults)
    with pytest.raises(Exception, match="output 2 must have input 0's"):
        check_same_quantization(OP.SPLIT, [source], [same, same, other], "op", faults)
    # EMBEDDING_LOOKUP's output keeps its values' (input 1) quantization, not its lookups'.
    lookups = tensor([1], LT.TEMPORARY_VARIABLE, 0, T.TENSOR_INT32)
    check_same_quantization(OP.EMBEDDING_LOOKUP, [lookups, source], [same], "op", faults)
    with pytest.raises(Exception, match="output 0 must have input 1's"):
        check_same_quantization(OP.EMBEDDING_LOOKUP, [lookups, source], [other], "op", faults)


def test_an_unquantized_output_or_an_operation_that_rescales_is_not_held() -> None:
    faults = FaultSet()
    check_same_quantization(OP.ADD, [_q8(0.5, 10), _q8(0.5, 10)], [_q8(1.0, 0)], "op", faults)
    floats = tensor([1], LT.TEMPORARY_VARIABLE, 0, T.TENSOR_FLOAT32)
    check_same_quantization(OP.RELU, [floats], [floats], "op", faults)
