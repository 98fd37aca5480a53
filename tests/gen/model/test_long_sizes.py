"""Long sizes: now and then a recipe draws a size past the small default ones where code runs longer on longer
inputs (LSH_PROJECTION keys past FarmHash's 64-byte blocks, long sequences and wide recurrent cells), and the
models drawn with them stay valid and run on the reference."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from harness.gen import ModelConfig
from harness.hal import OperationType, element_size
from harness.reference import validate_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
_SEQUENCES = (O.UNIDIRECTIONAL_SEQUENCE_LSTM, O.UNIDIRECTIONAL_SEQUENCE_RNN)
_CELLS = (O.LSTM, O.RNN)


def _shape(g, k: int) -> tuple[int, ...]:
    """The actual shape of operand k of main: its value's for a model input, else its dimensions."""
    main = g.model.main
    if k in main.input_indexes:
        return tuple(np.shape(g.inputs[main.input_indexes.index(k)]))
    return tuple(main.operands[k].dimensions)


def _sizes(ops: tuple[int, ...], seeds: range, config: ModelConfig = ModelConfig()) -> Counter:  # noqa: B008
    """Per model: the longest LSH key (bytes, with its 4-byte seed), sequence (steps) and cell (units) drawn."""
    config = ModelConfig(operations=frozenset(ops), max_operations=1, control_flow=False,
                         long_size_probability=config.long_size_probability)
    counts: Counter = Counter()
    for seed, g in generated(seeds, config):
        main = g.model.main
        for op in main.operations:
            dims = [_shape(g, k) for k in op.inputs]
            if op.type == O.LSH_PROJECTION:
                x = main.operands[op.inputs[1]]
                key = 4 + math.prod(dims[1][1:]) * element_size(x.type)
                counts["key>64"] += key > 64
            elif op.type in _SEQUENCES:
                counts["steps>3"] += max(dims[0][:2]) > 3
            else:
                # RNN's weights [units, input]; LSTM's input-to-forget weights [cells, input] (always present).
                counts["units>3"] += dims[2 if op.type == O.LSTM else 1][0] > 3
            counts["models"] += 1
        assert validate_model(g.model) == [], seed
        assert reference_failures(seed, g) == []
        g.close()
    return counts


def test_lsh_keys_past_64_bytes_are_drawn() -> None:
    counts = _sizes((O.LSH_PROJECTION,), range(300))
    assert 0.2 < counts["key>64"] / counts["models"] < 0.8, counts


def test_long_sequences_and_wide_cells_are_drawn() -> None:
    assert _sizes(_SEQUENCES, range(200))["steps>3"] >= 5
    assert _sizes(_CELLS, range(200))["units>3"] >= 5


def test_turned_off_sizes_stay_small() -> None:
    off = ModelConfig(long_size_probability=0.0)
    assert _sizes((O.LSH_PROJECTION,), range(100), off)["key>64"] == 0
    assert _sizes(_SEQUENCES, range(60), off)["steps>3"] == 0
    assert _sizes(_CELLS, range(60), off)["units>3"] == 0
