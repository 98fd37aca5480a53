"""What the model generator's tests share: models over a range of seeds, and the reference's verdict on one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from harness.gen import GeneratedModel, GenerationRejected, ModelConfig, RandomSource, generate_model
from harness.hal import ErrorStatus
from harness.reference import run_model


def generated(seeds: Iterable[int], config: ModelConfig = ModelConfig()) -> Iterator[tuple[int, GeneratedModel]]:  # noqa: B008
    """(seed, model) for every seed whose choices make a model."""
    for seed in seeds:
        try:
            yield seed, generate_model(RandomSource(seed), config)
        except GenerationRejected:
            continue


def reference_failures(seed: int, g: GeneratedModel) -> list[tuple]:
    """Why the reference executor does not run a generated model as it was drawn (empty: it does)."""
    result = run_model(g.model, g.inputs)
    if "parameter_out_of_range_input" in g.features:
        # A parameter given at run time outside its range: the execution must fail with INVALID_ARGUMENT.
        if result.status != ErrorStatus.INVALID_ARGUMENT or "must be" not in result.message:
            return [(seed, result.status, result.message, "a parameter out of range was given")]
        return []
    if "index_out_of_range_input" in g.features:
        # A batch index given at run time names no batch: the execution must fail (the HAL names no status).
        if result.status not in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT):
            return [(seed, result.status, result.message, "a batch index out of range was given")]
        return []
    if result.status != ErrorStatus.NONE or result.unspecified:
        return [(seed, result.status, result.message)]
    # The reference executor reproduces, value for value, what the kernels gave while the model was drawn.
    return [
        (seed, "outputs differ from the drawn ones")
        for got, drawn in zip(result.outputs, g.outputs)
        if got.shape != drawn.shape or not np.array_equal(got, drawn, equal_nan=True)
    ]
