"""Every translated operation against the harness's reference, on generated one-operation models (float, float16
and quantized typings, unknown dimensions included), at each of ONNX Runtime's graph optimization levels.

Seeds are the first few whose model the backend supports and whose reference result the HAL specifies. A case
ONNX Runtime cannot run or computes differently is listed in DIVERGENCES as a strict xfail with the reason: an
engine's divergence from the HAL is reported, never hidden behind a wider tolerance.
"""

from __future__ import annotations

import pytest

from tests.driver.backends.onnxruntime.cases import (
    FLAVORS,
    picks,
    require_onnxruntime,
    run_case,
    supported_seeds,
)

require_onnxruntime()

from driver_under_test.backends.onnxruntime import RULES, OptLevel  # noqa: E402
from harness.hal import OperationType as O  # noqa: E402

SEEDS_PER_FLAVOR = 4

QDQ_S8_PROPAGATION = (
    "ONNX Runtime bug: at the extended and all levels a session over a valid opset-21 model fails to initialize "
    "('QuantizeLinear: output_dtype INT8 does not match y_zero_point type UINT8') when an int8 tensor given at run "
    "time is dequantized and then reshaped or transposed before a Gemm/Conv/ConvTranspose: "
    "QDQPropagationTransformer inserts a QuantizeLinear with output_dtype INT8 after the Reshape/Transpose, "
    "QDQS8ToU8Transformer turns its zero point into uint8 and leaves output_dtype as it was (registered as "
    "divergence onnxruntime-qdq-s8-propagation)"
)
_OPTIMIZING = (OptLevel.EXTENDED, OptLevel.ALL)
# (operation, flavor, seed, level) -> why ONNX Runtime differs from the HAL there.
DIVERGENCES: dict[tuple[O, str, int, OptLevel], str] = {
    **{(O.FULLY_CONNECTED, "quant", s, lv): QDQ_S8_PROPAGATION for s in (1, 2, 3) for lv in _OPTIMIZING},
    **{(O.GROUPED_CONV_2D, "quant", s, lv): QDQ_S8_PROPAGATION for s in (0, 1) for lv in _OPTIMIZING},
    **{(O.TRANSPOSE_CONV_2D, "quant", s, lv): QDQ_S8_PROPAGATION for s in (0, 1) for lv in _OPTIMIZING},
}

# IF and WHILE need other operations in their subgraphs: test_control_flow covers them.
ELSEWHERE = (O.IF, O.WHILE)
DATA_RULES = sorted((op for op in RULES if op not in ELSEWHERE), key=int)


def _cases():
    for op in DATA_RULES:
        for flavor in FLAVORS:
            for seed in supported_seeds(op, flavor, SEEDS_PER_FLAVOR):
                for level in OptLevel:
                    reason = DIVERGENCES.get((op, flavor, seed, level))
                    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                    yield pytest.param(op, flavor, seed, level, id=f"{op.name}-{flavor}-{seed}-{level}", marks=marks)


@pytest.mark.parametrize(("op", "flavor", "seed", "level"), list(_cases()))
def test_operation_matches_reference(op: O, flavor: str, seed: int, level: OptLevel) -> None:
    assert run_case(op, flavor, seed, level) == []


@pytest.mark.parametrize("op", DATA_RULES, ids=lambda o: o.name)
def test_every_rule_has_generated_cases(op: O) -> None:
    # A rule no generated case reaches would be untested: each needs supported cases in some flavor.
    assert any(supported_seeds(op, flavor, SEEDS_PER_FLAVOR) for flavor in FLAVORS), [
        p.reason for flavor in FLAVORS for p in picks(op, flavor, SEEDS_PER_FLAVOR)
    ]


def test_every_divergence_is_a_generated_case() -> None:
    # A divergence whose seed is no longer generated would pin nothing: the list must follow the generator.
    stale = [key for key in DIVERGENCES if key[2] not in supported_seeds(key[0], key[1], SEEDS_PER_FLAVOR)]
    assert stale == []
