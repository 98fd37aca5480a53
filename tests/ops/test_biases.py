"""The table of quantized biases names, for each operation, a TENSOR_INT32 bias position of its catalogue
signatures and the two quantized operands whose scales multiply to the bias scale."""

from __future__ import annotations

from harness.hal import OperandType, OperationType
from harness.hal.sizes import QUANTIZED_TYPES
from harness.ops import get
from harness.ops.biases import QUANTIZED_BIASES, bias_sites

T = OperandType


def test_every_site_is_an_int32_bias_next_to_quantized_input_and_weights_in_some_signature() -> None:
    for op_type, sites in QUANTIZED_BIASES.items():
        spec = get(op_type)
        assert spec is not None, op_type
        for site in sites:
            fitting = [
                sig
                for sig in spec.signatures
                if len(sig.inputs) > max(site.bias, site.input, site.weights)
                and sig.inputs[site.bias].types == (T.TENSOR_INT32,)
                and set(sig.inputs[site.input].types) <= QUANTIZED_TYPES
                and set(sig.inputs[site.weights].types) <= QUANTIZED_TYPES
            ]
            assert fitting, (OperationType(op_type).name, site)
            assert "bias" in fitting[0].inputs[site.bias].name


def test_operations_without_a_quantized_bias_have_no_site() -> None:
    assert bias_sites(OperationType.ADD) == ()
    # The HAL leaves QUANTIZED_LSTM's bias scales open: no site, so nothing is mutated or compared there.
    assert bias_sites(OperationType.QUANTIZED_LSTM) == ()
    assert len(bias_sites(OperationType.QUANTIZED_16BIT_LSTM)) == 4
