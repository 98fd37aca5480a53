"""The status table (harness.oracle.status_sets): the sets the HAL definition files give each method, and the judge
of status.in_method_set."""

from __future__ import annotations

from harness.hal import ErrorStatus
from harness.oracle.status_sets import (
    STATUS_IN_METHOD_SET,
    STATUS_SETS,
    carried,
    judge_status_in_set,
    statuses_of,
)
from harness.oracle.verdict import RULES

ALL = frozenset(ErrorStatus)
BASIC = {ErrorStatus.NONE, ErrorStatus.DEVICE_UNAVAILABLE, ErrorStatus.GENERAL_FAILURE}
ARGUMENT = BASIC | {ErrorStatus.INVALID_ARGUMENT}
LATE = {
    ErrorStatus.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
}


def test_the_sets_are_those_of_the_hal_text() -> None:
    expected = {
        "IDevice::getCapabilities_1_3": BASIC,
        "IDevice::getVersionString": BASIC,
        "IDevice::getType": BASIC,
        "IDevice::getSupportedExtensions": BASIC,
        "IDevice::getNumberOfCacheFilesNeeded": BASIC,
        "IDevice::getSupportedOperations_1_3": ARGUMENT,
        "IDevice::prepareModel_1_3": ARGUMENT | LATE,
        "IDevice::prepareModelFromCache_1_3": ARGUMENT | LATE,
        "IDevice::allocate": ARGUMENT,
        "IPreparedModelCallback::notify_1_3": ARGUMENT | LATE,
        "IPreparedModel::execute_1_3": ALL,
        "IPreparedModel::executeSynchronously_1_3": ALL,
        "IPreparedModel::executeFenced": ARGUMENT | LATE,
        "IPreparedModel::configureExecutionBurst": ARGUMENT,
        "IExecutionCallback::notify_1_3": ALL,
        "IFencedExecutionCallback::getExecutionInfo": BASIC | LATE,
        "IBuffer::copyTo": ARGUMENT,
        "IBuffer::copyFrom": ARGUMENT,
        "FmqResultDatum::packetInformation": ARGUMENT | {ErrorStatus.OUTPUT_INSUFFICIENT_SIZE},
        "IBurstCallback::getMemories": {ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT},
    }
    assert {m: set(e.statuses) for m, e in STATUS_SETS.items()} == expected
    assert all(e.source.split("/")[0] in ("1.2", "1.3") and e.source.endswith(".hal") for e in STATUS_SETS.values())
    assert STATUS_IN_METHOD_SET in RULES


def test_the_judge_names_the_method_its_file_and_the_allowed_statuses() -> None:
    assert judge_status_in_set("IDevice::allocate", ErrorStatus.INVALID_ARGUMENT) is None
    breach = judge_status_in_set("IDevice::allocate", ErrorStatus.MISSED_DEADLINE_TRANSIENT, "allocate")
    assert breach is not None and breach.rule == STATUS_IN_METHOD_SET and breach.locus == "IDevice::allocate"
    assert "1.3/IDevice.hal lists NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE, INVALID_ARGUMENT" == breach.details
    # The sets of the example and of the 1.0 status the burst's result packet carries.
    assert statuses_of("IDevice::getSupportedOperations_1_3") == {
        ErrorStatus.NONE,
        ErrorStatus.DEVICE_UNAVAILABLE,
        ErrorStatus.GENERAL_FAILURE,
        ErrorStatus.INVALID_ARGUMENT,
    }
    assert max(statuses_of("FmqResultDatum::packetInformation")) == ErrorStatus.INVALID_ARGUMENT
    assert ErrorStatus.OUTPUT_INSUFFICIENT_SIZE not in statuses_of("IPreparedModel::executeFenced")


def test_what_a_method_cannot_carry_is_a_general_failure() -> None:
    assert carried("FmqResultDatum::packetInformation", ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT) == (
        ErrorStatus.GENERAL_FAILURE
    )
    assert carried("FmqResultDatum::packetInformation", ErrorStatus.OUTPUT_INSUFFICIENT_SIZE) == (
        ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    )
    assert all(ErrorStatus.GENERAL_FAILURE in e.statuses for e in STATUS_SETS.values())


def test_the_clients_slot_callback_answers_within_the_set_of_get_memories() -> None:
    from harness.paths.burst_client import SlotCallback

    callback = SlotCallback()
    for slots in ([], [0], [-1]):
        status, _ = callback.get_memories(slots)
        assert judge_status_in_set("IBurstCallback::getMemories", status) is None
