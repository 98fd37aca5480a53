"""QUANTIZED_16BIT_LSTM models: the recipe now and then draws the cell state over its format's whole range, and
there the oracle tells gates computed as the HAL's reference computes them from gates computed as real functions
(the bug a differential campaign found in the bundled driver, which a small cell state hides)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.gen import ModelConfig
from harness.hal import OperandType, OperationType
from harness.hal.values import constant_value
from harness.ops import _fixed16
from harness.oracle.accuracy import compare
from harness.reference import run_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
CONFIG = ModelConfig(operations=frozenset({O.QUANTIZED_16BIT_LSTM}), max_operations=1, control_flow=False)
SEEDS = range(80)


def _cell_state_in(g) -> np.ndarray | None:
    """The previous cell state (input 13) of the model's QUANTIZED_16BIT_LSTM, as drawn."""
    main = g.model.main
    op = next(o for o in main.operations if o.type == O.QUANTIZED_16BIT_LSTM)
    index = op.inputs[13]
    if index in main.input_indexes:
        return g.inputs[main.input_indexes.index(index)]
    return constant_value(g.model, main, index)


def _real_gates(raw: np.ndarray, integer_bits: int, function) -> np.ndarray:
    """A planted bug: the real function of the gate, rounded to Q0.15."""
    real = function(np.asarray(raw, dtype=np.float64) / 2.0 ** (15 - integer_bits))
    return np.clip(np.floor(real * 32768 + 0.5), -32768, 32767).astype(np.int64)


def test_cell_states_are_drawn_small_and_over_the_whole_range() -> None:
    largest = []
    for seed, g in generated(SEEDS, CONFIG):
        assert reference_failures(seed, g) == []
        c = _cell_state_in(g)
        if c is not None and c.size:
            largest.append(int(np.abs(c.astype(np.int64)).max()))
        g.close()
    assert sum(m > 4096 for m in largest) >= 5 and sum(m <= 4096 for m in largest) >= 5, largest


def test_real_valued_gates_are_flagged_on_drawn_models(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = [g for _, g in generated(SEEDS, CONFIG)]
    expected = [run_model(g.model, g.inputs) for g in drawn]
    monkeypatch.setattr(_fixed16, "logistic", lambda raw, bits: _real_gates(raw, bits, lambda x: 1 / (1 + np.exp(-x))))
    monkeypatch.setattr(_fixed16, "tanh", lambda raw, bits: _real_gates(raw, bits, np.tanh))
    flagged = 0
    for g, reference in zip(drawn, expected):
        planted = run_model(g.model, g.inputs)
        if reference.outputs and planted.outputs and reference.outputs[0].size:
            comparison = compare(reference.outputs[0], planted.outputs[0], OperandType.TENSOR_QUANT16_SYMM)
            flagged += not comparison.ok
        g.close()
    # About one model in four (one in eighty when cell states stayed within [-2, 2]).
    assert flagged >= 8, flagged
