"""The statuses each HAL method may answer, from the HAL definition files, and the rule that checks every answer.

Every HAL method documents under `@return status` (or `@param status` for a callback) the only ErrorStatus
values it may give. `STATUS_SETS` holds those lists, one entry per method the harness models, each citing the file
of `android.hardware.neuralnetworks` it is read from (the 1.3 interfaces, and the 1.2 ones 1.3 keeps unchanged).
The 1.3 methods extend their 1.0-1.2 versions with the statuses 1.3 added to ErrorStatus (MISSED_DEADLINE_* and
RESOURCE_EXHAUSTED_*) where their text names them; the 1.2 methods kept unchanged in 1.3, and the burst's result
packet, which carries a @1.0::ErrorStatus, cannot give those.

`judge_status_in_set(method, status)` is the rule `status.in_method_set`: a status outside its method's set is a
finding of its own, whatever the method's other rules say. The targets check every answer of every HAL call once,
where they make the call (harness.targets._common.call); a value that is no ErrorStatus at all is
`driver.returns_hal_values` instead. `carried(method, status)` is what a method answers for an outcome it cannot
report as such (GENERAL_FAILURE), for rules that compare two methods' answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hal import ErrorStatus
from harness.oracle.rules import Breach
from harness.oracle.verdict import define_rule

STATUS_IN_METHOD_SET = define_rule(
    "status.in_method_set",
    "every HAL call answers one of the statuses the HAL documents for that method (harness.oracle.status_sets)",
)

_NONE = ErrorStatus.NONE
_UNAVAILABLE = ErrorStatus.DEVICE_UNAVAILABLE
_FAILURE = ErrorStatus.GENERAL_FAILURE
_INSUFFICIENT = ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
_INVALID = ErrorStatus.INVALID_ARGUMENT
_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
_EXHAUSTED = (ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)


@dataclass(frozen=True)
class MethodStatuses:
    """The statuses one HAL method may answer, and the HAL file that lists them."""

    method: str  # "Interface::method" as the HAL names it
    statuses: frozenset[ErrorStatus]
    source: str  # the HAL definition file, under hardware/interfaces/neuralnetworks/
    answered_by: str = "driver"  # "client" for a callback the harness itself implements

    def allows(self, status: ErrorStatus) -> bool:
        """True when the HAL lets this method answer `status`."""
        return status in self.statuses


def _entry(method: str, source: str, *statuses: ErrorStatus, answered_by: str = "driver") -> MethodStatuses:
    return MethodStatuses(method, frozenset(statuses), source, answered_by)


_TABLE = (
    # --- IDevice ---------------------------------------------------------------------------------------------------
    # 1.3/IDevice.hal getCapabilities_1_3: NONE, DEVICE_UNAVAILABLE ("driver is offline or busy"), GENERAL_FAILURE.
    _entry("IDevice::getCapabilities_1_3", "1.3/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE),
    # 1.2/IDevice.hal getVersionString, getType, getSupportedExtensions, getNumberOfCacheFilesNeeded (unchanged in
    # 1.3): NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE.
    _entry("IDevice::getVersionString", "1.2/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE),
    _entry("IDevice::getType", "1.2/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE),
    _entry("IDevice::getSupportedExtensions", "1.2/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE),
    _entry("IDevice::getNumberOfCacheFilesNeeded", "1.2/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE),
    # 1.3/IDevice.hal getSupportedOperations_1_3 (as 1.0-1.2): NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE,
    # INVALID_ARGUMENT ("if provided model is invalid"). No resource or deadline status: a model too big to run is
    # "unsupported", not an error (REQUIREMENTS D26).
    _entry("IDevice::getSupportedOperations_1_3", "1.3/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID),
    # 1.3/IDevice.hal prepareModel_1_3, the launch status: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE,
    # INVALID_ARGUMENT, MISSED_DEADLINE_*, RESOURCE_EXHAUSTED_* (1.0-1.2: the first four).
    _entry(
        "IDevice::prepareModel_1_3", "1.3/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID, *_DEADLINE, *_EXHAUSTED
    ),
    # 1.3/IDevice.hal prepareModelFromCache_1_3, the launch status: the same list (GENERAL_FAILURE also "if caching
    # is not supported").
    _entry(
        "IDevice::prepareModelFromCache_1_3",
        "1.3/IDevice.hal",
        _NONE,
        _UNAVAILABLE,
        _FAILURE,
        _INVALID,
        *_DEADLINE,
        *_EXHAUSTED,
    ),
    # 1.3/IDevice.hal allocate: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE ("a certain buffer property or role is
    # not supported"), INVALID_ARGUMENT.
    _entry("IDevice::allocate", "1.3/IDevice.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID),
    # --- IPreparedModelCallback (both preparations answer through it) --------------------------------------------
    # 1.3/IPreparedModelCallback.hal notify_1_3: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE, INVALID_ARGUMENT,
    # MISSED_DEADLINE_*, RESOURCE_EXHAUSTED_* (1.0/1.2 notify: the first four).
    _entry(
        "IPreparedModelCallback::notify_1_3",
        "1.3/IPreparedModelCallback.hal",
        _NONE,
        _UNAVAILABLE,
        _FAILURE,
        _INVALID,
        *_DEADLINE,
        *_EXHAUSTED,
    ),
    # --- IPreparedModel ------------------------------------------------------------------------------------------
    # 1.3/IPreparedModel.hal execute_1_3 (launch) and executeSynchronously_1_3: every ErrorStatus (NONE,
    # DEVICE_UNAVAILABLE, GENERAL_FAILURE, OUTPUT_INSUFFICIENT_SIZE, INVALID_ARGUMENT, MISSED_DEADLINE_*,
    # RESOURCE_EXHAUSTED_*).
    _entry("IPreparedModel::execute_1_3", "1.3/IPreparedModel.hal", *ErrorStatus),
    _entry("IPreparedModel::executeSynchronously_1_3", "1.3/IPreparedModel.hal", *ErrorStatus),
    # 1.3/IPreparedModel.hal executeFenced, the launch status: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE,
    # INVALID_ARGUMENT ("including fences in error states"), MISSED_DEADLINE_*, RESOURCE_EXHAUSTED_*. No
    # OUTPUT_INSUFFICIENT_SIZE: a fenced request's outputs "must have fully specified dimensions".
    _entry(
        "IPreparedModel::executeFenced",
        "1.3/IPreparedModel.hal",
        _NONE,
        _UNAVAILABLE,
        _FAILURE,
        _INVALID,
        *_DEADLINE,
        *_EXHAUSTED,
    ),
    # 1.2/IPreparedModel.hal configureExecutionBurst (unchanged in 1.3): NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE,
    # INVALID_ARGUMENT.
    _entry(
        "IPreparedModel::configureExecutionBurst", "1.2/IPreparedModel.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID
    ),
    # --- IExecutionCallback --------------------------------------------------------------------------------------
    # 1.3/IExecutionCallback.hal notify_1_3: every ErrorStatus.
    _entry("IExecutionCallback::notify_1_3", "1.3/IExecutionCallback.hal", *ErrorStatus),
    # --- IFencedExecutionCallback ------------------------------------------------------------------------------
    # 1.3/IFencedExecutionCallback.hal getExecutionInfo: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE,
    # MISSED_DEADLINE_*, RESOURCE_EXHAUSTED_*. Neither INVALID_ARGUMENT (arguments are checked at launch) nor
    # OUTPUT_INSUFFICIENT_SIZE.
    _entry(
        "IFencedExecutionCallback::getExecutionInfo",
        "1.3/IFencedExecutionCallback.hal",
        _NONE,
        _UNAVAILABLE,
        _FAILURE,
        *_DEADLINE,
        *_EXHAUSTED,
    ),
    # --- IBuffer -------------------------------------------------------------------------------------------------
    # 1.3/IBuffer.hal copyTo: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE ("if the IBuffer object is uninitialized"),
    # INVALID_ARGUMENT ("if provided memory is invalid"). copyFrom: the same four.
    _entry("IBuffer::copyTo", "1.3/IBuffer.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID),
    _entry("IBuffer::copyFrom", "1.3/IBuffer.hal", _NONE, _UNAVAILABLE, _FAILURE, _INVALID),
    # --- Bursts (1.2, unchanged in 1.3) --------------------------------------------------------------------------
    # 1.2/types.hal FmqResultDatum: a result packet's packetInformation.errorStatus is a @1.0::ErrorStatus (1.0/
    # types.hal: NONE, DEVICE_UNAVAILABLE, GENERAL_FAILURE, OUTPUT_INSUFFICIENT_SIZE, INVALID_ARGUMENT), the statuses
    # of the 1.2 executeSynchronously it stands for (1.2/IPreparedModel.hal).
    _entry(
        "FmqResultDatum::packetInformation", "1.2/types.hal", _NONE, _UNAVAILABLE, _FAILURE, _INSUFFICIENT, _INVALID
    ),
    # 1.2/IBurstCallback.hal getMemories: NONE, GENERAL_FAILURE, INVALID_ARGUMENT ("if a slot number is invalid").
    # The client answers it (harness.paths.burst_client.SlotCallback), not the driver.
    _entry("IBurstCallback::getMemories", "1.2/IBurstCallback.hal", _NONE, _FAILURE, _INVALID, answered_by="client"),
)

STATUS_SETS: dict[str, MethodStatuses] = {}
for _row in _TABLE:
    if _row.method in STATUS_SETS:
        raise RuntimeError(f"status set of {_row.method} given twice")
    STATUS_SETS[_row.method] = _row


class UnknownMethod(KeyError):
    """A method the status table does not list (a harness bug: add it to the table)."""


def statuses_of(method: str) -> frozenset[ErrorStatus]:
    """The statuses `method` may answer; UnknownMethod if the table does not list it."""
    try:
        return STATUS_SETS[method].statuses
    except KeyError:
        raise UnknownMethod(f"no status set for HAL method {method!r}; known: {', '.join(STATUS_SETS)}") from None


def carried(method: str, status: ErrorStatus) -> ErrorStatus:
    """The status `method` answers for an outcome of `status`: the status itself when the method may give it,
    else GENERAL_FAILURE, the unspecified error every method may answer (a burst's result packet cannot carry
    what 1.3 added to ErrorStatus, say)."""
    return status if status in statuses_of(method) else ErrorStatus.GENERAL_FAILURE


def judge_status_in_set(method: str, status: ErrorStatus, call: str = "") -> Breach | None:
    """status.in_method_set: the Breach of an answer outside its method's set, else None.

    `call` is how the caller names the call (e.g. "fenced execution") when that says more than the method.
    """
    allowed = statuses_of(method)
    if status in allowed:
        return None
    entry = STATUS_SETS[method]
    names = ", ".join(s.name for s in sorted(allowed))
    via = f" ({call})" if call and call != method else ""
    return Breach(
        STATUS_IN_METHOD_SET,
        f"{method}{via} answered {ErrorStatus(status).name}, which the HAL does not list for it",
        f"{entry.source} lists {names}",
        locus=method,
    )
