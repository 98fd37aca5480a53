"""RANDOM_MULTINOMIAL: no reference kernel (the HAL specifies only the distribution of its samples) and no generated
case, so hand-built models check what is certain: the shape and type, classes in range, and certainty where the
logits leave no choice."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.litert import KernelSet, LiteRTProgram, translate
from harness.hal import OperationType as O
from tests.driver.backends.litert.build import Build, T
from tests.driver.backends.litert.cases import constant_reader


def multinomial_model(half: bool, samples_at_run_time: bool):
    b = Build()
    logits = b.input(T.TENSOR_FLOAT16 if half else T.TENSOR_FLOAT32, [3, 4])
    samples = b.input(T.INT32, []) if samples_at_run_time else b.i32(50)
    seeds = b.const(T.TENSOR_INT32, [7, 11])
    out = b.output(T.TENSOR_INT32, [3, 0 if samples_at_run_time else 50])
    b.op(O.RANDOM_MULTINOMIAL, [logits, samples, seeds], [out])
    return b.model()


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize("half", [False, True], ids=["float", "half"])
@pytest.mark.parametrize("at_run_time", [False, True], ids=["constant_count", "run_time_count"])
def test_samples_are_classes_and_follow_certain_logits(kernel_set: KernelSet, half: bool, at_run_time: bool) -> None:
    model = multinomial_model(half, at_run_time)
    # Row 0 can only draw class 2; row 1 draws classes 0 and 3 only; row 2 any class.
    dtype = np.float16 if half else np.float32
    logits = np.array([[-1e4, -1e4, 0, -1e4], [0, -1e4, -1e4, 0], [0, 0, 0, 0]], dtype=dtype)
    inputs = [logits, np.asarray(50, dtype=np.int32)] if at_run_time else [logits]
    program = LiteRTProgram(translate(model, constant_reader(model)), kernel_set)
    (samples,) = program.run(inputs)
    assert samples.shape == (3, 50) and samples.dtype == np.int32
    assert (samples[0] == 2).all()
    assert set(samples[1].tolist()) <= {0, 3}
    assert ((samples[2] >= 0) & (samples[2] < 4)).all()
