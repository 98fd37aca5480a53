"""Rule behaviours the generated cases rarely reach, on hand-written models with hand-computed results."""

from __future__ import annotations

import numpy as np
import pytest

from tests.driver.backends.onnxruntime.cases import require_onnxruntime, run_translated

require_onnxruntime()

from driver_under_test.backends.onnxruntime import OptLevel  # noqa: E402
from harness.case import model_from_json  # noqa: E402


def _operand(type_: str, dims, lifetime: str, **extra) -> dict:
    return {"type": type_, "dimensions": dims, "lifetime": lifetime, **extra}


def _topk_model(type_: str, **quant) -> dict:
    return {
        "operands": [
            _operand(type_, [2, 5], "SUBGRAPH_INPUT", **quant),
            _operand("INT32", [], "CONSTANT_COPY", value=[3]),
            _operand(type_, [2, 3], "SUBGRAPH_OUTPUT", **quant),
            _operand("TENSOR_INT32", [2, 3], "SUBGRAPH_OUTPUT"),
        ],
        "operations": [{"type": "TOPK_V2", "inputs": [0, 1], "outputs": [2, 3]}],
        "inputIndexes": [0],
        "outputIndexes": [2, 3],
    }


@pytest.mark.parametrize("level", list(OptLevel))
@pytest.mark.parametrize(
    ("type_", "quant", "dtype"),
    [("TENSOR_FLOAT32", {}, np.float32), ("TENSOR_QUANT8_ASYMM", {"scale": 0.5, "zeroPoint": 3}, np.uint8)],
)
def test_topk_puts_the_larger_index_first_among_equal_values(level, type_, quant, dtype) -> None:
    model = model_from_json(_topk_model(type_, **quant))
    x = np.array([[1, 7, 7, 4, 7], [9, 2, 2, 9, 5]], dtype=dtype)
    values, indices = run_translated(model, [x], level)
    np.testing.assert_array_equal(values, np.array([[7, 7, 7], [9, 9, 5]], dtype=dtype))
    np.testing.assert_array_equal(indices, np.array([[4, 2, 1], [3, 0, 4]], dtype=np.int32))
