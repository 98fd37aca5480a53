"""The burst life cycle as a state machine: configure, execute with old and new memories, free, release.
Invariants: every execution computes the right values, the driver caches only slots the client still holds,
and it holds exactly one handle of its own per cached memory."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from driver_under_test import create_device
from harness.case import simple_request
from harness.hal import ErrorStatus
from harness.paths.burst_client import BurstClient
from tests.driver.burst.support import open_handles
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model

MODEL = add_model()
_PM = prepared(create_device(faults=[]), MODEL)


class BurstLifeCycle(RuleBasedStateMachine):
    """A client juggling request buffers over one burst."""

    buffers = Bundle("buffers")

    def __init__(self) -> None:
        super().__init__()
        self.client = BurstClient(_PM, timeout_s=10)
        self.live: list = []  # every LiveRequest not yet freed
        self.baseline: dict[int, int] = {}  # id(memory) -> fds before the driver saw it

    @rule(target=buffers, k=st.integers(-3, 3))
    def new_buffers(self, k: int):
        rb = simple_request(MODEL, [f32([[1, 2], [3, 4]]) * k, f32([[5, 6], [7, 8]])], [16])
        rb.k = k
        for m in rb.memories:
            m.map()  # the client's own mapping holds an fd too: count from there
            self.baseline[id(m)] = open_handles(m)
        self.live.append(rb)
        return rb

    @rule(rb=buffers)
    def execute(self, rb) -> None:
        if rb not in self.live:
            return
        rb.memories[1].write(0, bytes(16))
        assert self.client.execute(rb.request)[0] == ErrorStatus.NONE
        expected = f32([[1, 2], [3, 4]]) * rb.k + f32([[5, 6], [7, 8]])  # by hand: a * k + b
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), expected)

    @rule(rb=consumes(buffers))
    def free(self, rb) -> None:
        if rb not in self.live:
            return
        for m in rb.memories:
            self.client.free_memory(m)
        self.live.remove(rb)
        for m in rb.memories:
            assert open_handles(m) == self.baseline.pop(id(m))
        rb.close()

    @invariant()
    def driver_caches_only_what_the_client_holds(self) -> None:
        slots = {id(m): self.client.callback.slot_of(m) for rb in self.live for m in rb.memories}
        cached = set(self.client.context.cached_slots())
        assert cached <= {s for s in slots.values() if s is not None}
        for rb in self.live:
            for m in rb.memories:
                # One handle of the driver's own per cached memory, none for the others.
                assert open_handles(m) == self.baseline[id(m)] + (slots[id(m)] in cached)

    def teardown(self) -> None:
        context = self.client.context
        self.client.close()
        assert not context.listening and context.cached_slots() == []
        for rb in self.live:
            for m in rb.memories:
                assert open_handles(m) == self.baseline[id(m)]
            rb.close()


BurstLifeCycle.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)
test_burst_life_cycle_keeps_its_invariants = BurstLifeCycle.TestCase
