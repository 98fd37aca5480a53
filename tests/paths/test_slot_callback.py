"""The burst client's slots: what getMemories answers is what a packet may name, whichever case gave the memory."""

from __future__ import annotations

from harness.hal import ErrorStatus
from harness.paths.burst_client import SlotCallback


class _Memory:
    """A stand-in memory: the callback only keeps and hands back the object."""


def test_a_slot_an_earlier_case_left_is_answered_until_it_is_forgotten() -> None:
    callback = SlotCallback()
    earlier, now = _Memory(), _Memory()
    assert callback.slots_for([earlier]) == [0]
    assert callback.slots_for([now]) == [1]
    assert callback.slots() == {0, 1}
    assert callback.get_memories([0]) == (ErrorStatus.NONE, [earlier])
    callback.forget(earlier)
    assert callback.slots() == {1}
    assert callback.get_memories([0]) == (ErrorStatus.INVALID_ARGUMENT, [])
