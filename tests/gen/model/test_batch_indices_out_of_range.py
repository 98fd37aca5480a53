"""Batch indices out of range, given at run time: the generator draws them for the operations that take a batch
index (the model stays valid) and the reference fails those executions; the driver must too."""

from __future__ import annotations

from collections import Counter

import numpy as np

from harness.gen import ModelConfig
from harness.hal import ErrorStatus, OperationType
from harness.ops.parameters import BATCH_INDEX_INPUTS, batch_index_domain
from harness.reference import run_model, validate_model
from tests.gen.model.generated import generated

SEEDS = range(400)
O = OperationType
TAKES_BATCH_INDEX = ModelConfig(operations=frozenset(BATCH_INDEX_INPUTS), max_operations=1, control_flow=False)
# The input whose first dimension counts the batches a batch index names: the features, or the image sizes.
BATCH_COUNT_INPUT = {int(O.ROI_ALIGN): 0, int(O.ROI_POOLING): 0, int(O.AXIS_ALIGNED_BBOX_TRANSFORM): 3}


def _bad_batch_indices(g) -> list[tuple[str, int]]:
    """(operation name, index) of each batch index a model input gives outside [0, batches)."""
    main = g.model.main
    found = []
    for op in main.operations:
        position = BATCH_INDEX_INPUTS.get(int(op.type))
        k = None if position is None else op.inputs[position]
        if k is None or k not in main.input_indexes:
            continue
        counted = op.inputs[BATCH_COUNT_INPUT[int(op.type)]]
        source = g.inputs[main.input_indexes.index(counted)] if counted in main.input_indexes else None
        batches = np.shape(source)[0] if source is not None else _constant_batches(g.model, counted)
        domain = batch_index_domain(batches)
        indices = g.inputs[main.input_indexes.index(k)]
        found += [(O(op.type).name, int(v)) for v in np.ravel(indices) if not domain.holds(v)]
    return found


def _constant_batches(model, index: int) -> int:
    return int(model.main.operands[index].dimensions[0])


def test_batch_indices_out_of_range_are_drawn_and_fail_on_the_reference() -> None:
    drawn: Counter = Counter()
    for _seed, g in generated(SEEDS, TAKES_BATCH_INDEX):
        bad = _bad_batch_indices(g)
        assert bool(bad) == ("index_out_of_range_input" in g.features), bad
        for name, value in bad:
            drawn[name] += 1
            drawn["negative" if value < 0 else "past the end"] += 1
        if bad:
            assert validate_model(g.model) == []
            result = run_model(g.model, g.inputs)
            assert result.status in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT), result.message
        g.close()
    for name in ("ROI_ALIGN", "ROI_POOLING", "AXIS_ALIGNED_BBOX_TRANSFORM", "negative", "past the end"):
        assert drawn[name] > 0, drawn


def test_turned_off_no_batch_index_is_drawn_out_of_range() -> None:
    config = ModelConfig(operations=TAKES_BATCH_INDEX.operations, parameter_out_of_range_probability=0.0)
    for _seed, g in generated(range(150), config):
        assert not _bad_batch_indices(g)
        g.close()


def test_a_batch_index_domain_holds_exactly_the_batches() -> None:
    domain = batch_index_domain(2)
    assert [domain.holds(v) for v in (-1, 0, 1, 2)] == [False, True, True, False]
    assert all(not domain.holds(v) for v in domain.outside()) and not domain.holds(domain.just_outside())
