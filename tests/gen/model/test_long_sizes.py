"""Long sizes: now and then a recipe draws a size past the small default ones where code runs longer on longer
inputs (LSH_PROJECTION keys past FarmHash's 64-byte blocks, long sequences and wide recurrent cells), and the
models drawn with them stay valid and run on the reference. LSH_PROJECTION keys fall in every length band of
FarmHash, and a wrong fingerprint in any band changes the drawn models' outputs."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from harness.gen import ModelConfig
from harness.hal import OperationType, element_size
from harness.ops import hashing
from harness.reference import run_model, validate_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
_SEQUENCES = (O.UNIDIRECTIONAL_SEQUENCE_LSTM, O.UNIDIRECTIONAL_SEQUENCE_RNN)
_CELLS = (O.LSTM, O.RNN)
# FarmHash's length bands of keys (bytes): each has a code path of its own.
_BANDS = {"key<=16": (0, 16), "key17..32": (17, 32), "key33..64": (33, 64), "key>64": (65, 1 << 20)}


def _shape(g, k: int) -> tuple[int, ...]:
    """The actual shape of operand k of main: its value's for a model input, else its dimensions."""
    main = g.model.main
    if k in main.input_indexes:
        return tuple(np.shape(g.inputs[main.input_indexes.index(k)]))
    return tuple(main.operands[k].dimensions)


def _sizes(ops: tuple[int, ...], seeds: range, config: ModelConfig = ModelConfig()) -> Counter:  # noqa: B008
    """Per model: the longest LSH key (bytes, with its 4-byte seed), sequence (steps) and cell (units) drawn."""
    config = ModelConfig(
        operations=frozenset(ops),
        max_operations=1,
        control_flow=False,
        long_size_probability=config.long_size_probability,
    )
    counts: Counter = Counter()
    for seed, g in generated(seeds, config):
        main = g.model.main
        for op in main.operations:
            dims = [_shape(g, k) for k in op.inputs]
            if op.type == O.LSH_PROJECTION:
                x = main.operands[op.inputs[1]]
                key = 4 + math.prod(dims[1][1:]) * element_size(x.type)
                counts.update(band for band, (lo, hi) in _BANDS.items() if lo <= key <= hi)
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


def test_lsh_keys_fall_in_every_farmhash_length_band() -> None:
    counts = _sizes((O.LSH_PROJECTION,), range(300))
    assert all(counts[band] >= 0.1 * counts["models"] for band in _BANDS), counts


def _lsh_models(seeds: range) -> list:
    config = ModelConfig(operations=frozenset({O.LSH_PROJECTION}), max_operations=1, control_flow=False)
    return list(generated(seeds, config))


def _wrong_band(band: str) -> object:
    """A fingerprint that is FarmHash's except for keys in one length band, where its sign is flipped."""
    lo, hi = _BANDS[band]
    right = hashing.fingerprint64
    return lambda s: right(s) ^ (1 << 63) if lo <= len(s) <= hi else right(s)


@pytest.mark.parametrize("band", list(_BANDS))
def test_a_fingerprint_wrong_in_one_length_band_changes_drawn_outputs(band, monkeypatch) -> None:
    models = _lsh_models(range(60))
    monkeypatch.setattr(hashing, "fingerprint64", _wrong_band(band))
    changed = [
        seed
        for seed, g in models
        if not all(np.array_equal(got, drawn) for got, drawn in zip(run_model(g.model, g.inputs).outputs, g.outputs))
    ]
    assert changed, band


def test_long_sequences_and_wide_cells_are_drawn() -> None:
    assert _sizes(_SEQUENCES, range(200))["steps>3"] >= 5
    assert _sizes(_CELLS, range(200))["units>3"] >= 5


def test_turned_off_sizes_stay_small() -> None:
    off = ModelConfig(long_size_probability=0.0)
    assert _sizes((O.LSH_PROJECTION,), range(100), off)["key>64"] == 0
    assert _sizes(_SEQUENCES, range(60), off)["steps>3"] == 0
    assert _sizes(_CELLS, range(60), off)["units>3"] == 0
