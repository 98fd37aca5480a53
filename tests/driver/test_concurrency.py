"""D6/D19: many threads executing on one prepared model get what serial runs get."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from harness.case import simple_request
from harness.hal import ErrorStatus, MeasureTiming
from tests.driver.conftest import prepared
from tests.driver.models import add_then_mul_model

THREADS = 8
RUNS_PER_THREAD = 25


def _execute(pm, model, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with simple_request(model, [a, b], [a.nbytes, a.nbytes]) as rb:
        status, shapes, _ = pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)
        assert status == ErrorStatus.NONE
        return rb.read_output(0, shapes[0].dimensions), rb.read_output(1, shapes[1].dimensions)


def test_eight_threads_on_one_prepared_model_match_serial_runs(device) -> None:
    model = add_then_mul_model(dims=[16, 16])
    pm = prepared(device, model)
    rng = np.random.default_rng(7)
    jobs = [
        (rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32))
        for _ in range(THREADS * RUNS_PER_THREAD)
    ]
    serial = [_execute(pm, model, a, b) for a, b in jobs]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        parallel = list(pool.map(lambda job: _execute(pm, model, *job), jobs))
    for (s0, s1), (p0, p1), (a, b) in zip(serial, parallel, jobs):
        np.testing.assert_array_equal(s0, p0)
        np.testing.assert_array_equal(s1, p1)
        # And the serial values are the hand-derivable ones: (a + b) and (a + b) * b.
        np.testing.assert_array_equal(s0, a + b)
        np.testing.assert_allclose(s1, (a + b) * b, rtol=1e-6)
