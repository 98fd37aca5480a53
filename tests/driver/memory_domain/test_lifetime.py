"""Buffer lifetime: a token is valid exactly while its IBuffer object lives, and is known to its own device only;
a buffer does not keep its prepared models alive.
"""

from __future__ import annotations

import gc
import weakref

from harness.hal import ErrorStatus, MeasureTiming
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import A, B, Buf, Out, allocated, copy_in, mixed_request
from tests.driver.models import add_model


def _read_status(pm, token: int) -> ErrorStatus:
    with mixed_request([Buf(token), B], [Out(A.nbytes)]) as mr:
        return pm.execute_synchronously(mr.request, MeasureTiming.NO, None, None)[0]


def test_a_token_stays_valid_while_its_buffer_lives_and_dies_with_it(device) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    gc.collect()
    assert _read_status(pm, token) == ErrorStatus.NONE
    del buffer
    gc.collect()
    assert _read_status(pm, token) == ErrorStatus.INVALID_ARGUMENT


def test_tokens_of_live_buffers_are_distinct(device) -> None:
    pm = prepared(device, add_model())
    held = [allocated(device, [pm], inputs=[(0, 0)]) for _ in range(50)]
    tokens = [token for _, token in held]
    assert len(set(tokens)) == len(tokens) and min(tokens) > 0


def test_a_buffer_does_not_keep_its_prepared_models_alive(device) -> None:
    pm = prepared(device, add_model())
    buffer, _ = allocated(device, [pm], inputs=[(0, 0)])
    gone = weakref.ref(pm)
    del pm
    gc.collect()
    assert gone() is None
    # The buffer itself still works.
    assert copy_in(buffer, A) == ErrorStatus.NONE
