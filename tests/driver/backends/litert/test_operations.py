"""Every translated operation against the harness's reference, on generated one-operation models (float and
quantized typings, unknown dimensions included), on each of LiteRT's three kernel sets.

Seeds are the first few whose model the backend supports and whose reference result the HAL specifies. A case
LiteRT cannot run or computes differently is listed in DIVERGENCES as a strict xfail with the reason: an
engine's divergence from the HAL is reported, never hidden behind a wider tolerance.
"""

from __future__ import annotations

import pytest

from driver_under_test.backends.litert import RULES, KernelSet
from harness.hal import OperationType as O
from tests.driver.backends.litert.cases import FLAVORS, picks, run_case, supported_seeds

SEEDS_PER_FLAVOR = 8
K = KernelSet

# (operation, flavor, seed, kernel set) -> why LiteRT differs from the HAL there.
XNNPACK_CONSTANT_DEQUANTIZE = (
    "LiteRT bug: with the XNNPACK delegate, a graph whose DEQUANTIZE reads a constant int8 tensor (the model has no "
    "input) fails at invoke: 'failed to setup XNNPACK runtime' (the delegate folds the constant and is left with "
    "an empty runtime); the optimized and reference kernel sets run it"
)
REFERENCE_LRN_WINDOW = (
    "LiteRT bug: the reference kernel of LOCAL_RESPONSE_NORMALIZATION sums the squares over channels "
    "[c - radius, c + radius) instead of [c - radius, c + radius] (the HAL's and TFLite's own definition, which "
    "the optimized kernel follows): channel c + radius is left out wherever it exists"
)
LSTM_ACTIVATION_NONE = (
    "LiteRT bug: with cell activation NONE, LSTM kernels (lstm_eval) compute the output as output_gate * cell_gate "
    "instead of output_gate * cell_state (the HAL's output with an identity activation): ApplyActivationToVector "
    "writes nothing for kTfLiteActNone, so the scratch buffer keeps the cell gate; the cell state is right"
)
DIVERGENCES: dict[tuple[O, str, int, KernelSet], str] = {
    (O.DEQUANTIZE, "quant", 0, K.XNNPACK): XNNPACK_CONSTANT_DEQUANTIZE,
    (O.DEQUANTIZE, "quant", 3, K.XNNPACK): XNNPACK_CONSTANT_DEQUANTIZE,
    **{(O.LOCAL_RESPONSE_NORMALIZATION, "float", s, K.REFERENCE): REFERENCE_LRN_WINDOW for s in (4, 7, 9, 10, 11, 15)},
    # float16 runs through the same float32 kernel
    **{(O.LOCAL_RESPONSE_NORMALIZATION, "half", s, K.REFERENCE): REFERENCE_LRN_WINDOW for s in (1, 2, 5, 8, 14, 17)},
    **{
        (op, flavor, s, k): LSTM_ACTIVATION_NONE
        for op, flavor, seeds in (
            (O.LSTM, "float", (18,)),
            (O.LSTM, "half", (17,)),
            (O.UNIDIRECTIONAL_SEQUENCE_LSTM, "float", (16, 29, 30)),
            (O.UNIDIRECTIONAL_SEQUENCE_LSTM, "half", (6, 14)),
            (O.BIDIRECTIONAL_SEQUENCE_LSTM, "float", (7, 9, 22, 28)),
            (O.BIDIRECTIONAL_SEQUENCE_LSTM, "half", (11, 12)),
        )
        for s in seeds
        for k in KernelSet
    },
}


# IF and WHILE need other operations in their subgraphs: test_control_flow covers them. QUANTIZED_LSTM's values are
# left to the implementation by the reference (its outputs are unspecified, only their shapes are judged) and
# RANDOM_MULTINOMIAL is never generated: test_recurrent and test_random check them on hand-built models.
ELSEWHERE = (O.IF, O.WHILE, O.QUANTIZED_LSTM, O.RANDOM_MULTINOMIAL)
DATA_RULES = sorted((op for op in RULES if op not in ELSEWHERE), key=int)


def _cases():
    for op in DATA_RULES:
        for flavor in FLAVORS:
            for seed in supported_seeds(op, flavor, SEEDS_PER_FLAVOR):
                for kernel_set in KernelSet:
                    reason = DIVERGENCES.get((op, flavor, seed, kernel_set))
                    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                    name = f"{op.name}-{flavor}-{seed}-{kernel_set}"
                    yield pytest.param(op, flavor, seed, kernel_set, id=name, marks=marks)


@pytest.mark.parametrize(("op", "flavor", "seed", "kernel_set"), list(_cases()))
def test_operation_matches_reference(op: O, flavor: str, seed: int, kernel_set: KernelSet) -> None:
    assert run_case(op, flavor, seed, kernel_set) == []


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
