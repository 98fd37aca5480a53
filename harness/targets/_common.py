"""What every target shares: calling the driver so that its exceptions become verdicts, preparing, inputs.

A target never lets a driver exception or a missing callback escape as an exception of its own: `guarded` turns
them into FAILURE (driver.no_exception_escapes) and HANG (driver.answers_in_time) verdicts. Exceptions raised by
harness code outside a HAL call propagate: they are harness bugs and must crash loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from harness.case.pools import pool_to_json
from harness.case.values import pack, unpack
from harness.gen.requests import materialize_request
from harness.gen.source import GenerationRejected
from harness.hal import (
    CallbackTimeout,
    DataLocation,
    Device,
    ErrorStatus,
    ExecutionPreference,
    Model,
    PreparedModel,
    Priority,
    Request,
    RequestArgument,
)
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.hal.memory import Memory, MemoryMapError
from harness.oracle.rules import exception_verdict, hang_verdict
from harness.oracle.verdict import Verdict

T = TypeVar("T")

# How long a target waits for a callback or fence before calling the driver hung (seconds).
DEFAULT_TIMEOUT_S = 10.0
TOKEN = bytes(32)
DEFAULT_PREFERENCE = int(ExecutionPreference.FAST_SINGLE_ANSWER)
DEFAULT_PRIORITY = int(Priority.MEDIUM)


class DriverRaised(Exception):
    """An exception escaped a HAL call (carried to `guarded`, which makes it a verdict)."""

    def __init__(self, call: str, error: BaseException) -> None:
        super().__init__(f"{call}: {type(error).__name__}: {error}")
        self.call = call
        self.error = error


class Hung(Exception):
    """A HAL call never answered (carried to `guarded`, which makes it a HANG verdict)."""

    def __init__(self, call: str, error: CallbackTimeout) -> None:
        super().__init__(f"{call}: {error}")
        self.call = call
        self.error = error


def call(what: str, fn: Callable[..., T], *args: Any) -> T:
    """fn(*args), a HAL call (or a path function wrapping one): its exceptions become DriverRaised or Hung."""
    try:
        return fn(*args)
    except CallbackTimeout as exc:
        raise Hung(what, exc) from exc
    except Exception as exc:  # the harness treats anything escaping the HAL interface as a driver failure
        raise DriverRaised(what, exc) from exc


def guarded(target: str, body: Callable[[], Verdict]) -> Verdict:
    """body(), with escaped driver exceptions as FAILURE and missing answers as HANG verdicts."""
    try:
        return body()
    except DriverRaised as exc:
        return exception_verdict(exc.call, exc.error, target)
    except Hung as exc:
        return hang_verdict(exc.call, str(exc.error), target)


def status_of(value: object) -> ErrorStatus:
    """A driver's status as an ErrorStatus (ValueError for values the HAL does not define)."""
    return ErrorStatus(value)


def supported_operations(device: Device, model: Model) -> tuple[ErrorStatus, list[bool]]:
    """IDevice::getSupportedOperations_1_3, checked to return a status and a list of booleans."""

    def ask() -> tuple[ErrorStatus, list[bool]]:
        status, flags = device.get_supported_operations(model)
        flags = list(flags)
        if not all(isinstance(f, bool | np.bool_) for f in flags):
            raise TypeError(f"getSupportedOperations flags are not booleans: {flags!r}")
        return status_of(status), [bool(f) for f in flags]

    return call("getSupportedOperations", ask)


@dataclass
class Preparation:
    """What prepareModel answered."""

    launch: ErrorStatus
    status: ErrorStatus
    prepared: PreparedModel | None


def prepare(
    device: Device,
    model: Model,
    *,
    preference: int = DEFAULT_PREFERENCE,
    priority: int = DEFAULT_PRIORITY,
    deadline: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Preparation:
    """IDevice::prepareModel_1_3 without caches, waiting for the callback."""
    callback = WaitablePreparedModelCallback()

    def launch() -> ErrorStatus:
        return status_of(device.prepare_model(model, preference, priority, deadline, [], [], TOKEN, callback))

    launched = call("prepareModel", launch)
    status, prepared = call("prepareModel callback", callback.result, timeout_s)
    return Preparation(launched, status, prepared)


def inputs_from_json(inputs_json: Sequence[dict], model: Model) -> list[np.ndarray | None]:
    """The case's main input values as arrays (None for an omitted input)."""
    main = model.main
    values: list[np.ndarray | None] = []
    for entry, index in zip(inputs_json, main.input_indexes):
        if entry.get("noValue"):
            values.append(None)
            continue
        operand_type = main.operands[index].type
        dims = [int(d) for d in entry.get("dimensions", [])]
        values.append(unpack(pack(entry.get("value", []), operand_type), operand_type, dims))
    return values


def close_model_pools(model: Model) -> None:
    """Close the shared memories a model's CONSTANT_REFERENCE operands live in."""
    for pool in model.pools:
        close = getattr(pool, "close", None)
        if close is not None:
            close()


# --- Requests in the case format ---------------------------------------------------------------------------------
# A request pool is a pool description (harness.case.pools) or {"modelPool": k}: the model's own pool k, the same
# memory object (so that an output can be placed over a CONSTANT_REFERENCE value, V34).


def request_to_json(request: Request, model: Model) -> dict:
    """A hal.Request over shared memory as case-format request JSON (pool contents are not kept)."""
    pools = []
    for pool in request.pools:
        shared = next((k for k, p in enumerate(model.pools) if p is pool), None)
        if shared is not None:
            pools.append({"modelPool": shared})
        elif isinstance(pool, Memory):
            pools.append(pool_to_json(pool))
        else:
            raise GenerationRejected(f"request pool {pool!r} has no case-format description")
    return {
        "pools": pools,
        "inputs": [_argument_to_json(a) for a in request.inputs],
        "outputs": [_argument_to_json(a) for a in request.outputs],
    }


def _argument_to_json(arg: RequestArgument) -> dict:
    loc = arg.location
    return {
        "hasNoValue": bool(arg.has_no_value),
        "poolIndex": int(loc.pool_index),
        "offset": int(loc.offset),
        "length": int(loc.length),
        "dimensions": [int(d) for d in arg.dimensions],
    }


@dataclass
class BuiltRequest:
    """A hal.Request over new shared memory, the memories to close afterwards, and its output reader."""

    request: Request
    memories: list[Memory]
    read_outputs: Callable[[Sequence[Sequence[int]]], list[np.ndarray | None]]
    contents: list[bytes]  # each memory's bytes as built: zeros with the input values in place

    def reset(self) -> None:
        """Put the pools back as built, as an execution may have written anywhere."""
        for memory, raw in zip(self.memories, self.contents):
            if raw:
                memory.write(0, raw)

    def close(self) -> None:
        """Close the memories this request created (never the model's own pools)."""
        for memory in self.memories:
            memory.close()


def build_request(request_json: dict, model: Model, inputs: Sequence[np.ndarray | None]) -> BuiltRequest:
    """The request a case describes, holding its input values.

    An invalid request may place an input where it cannot be written (outside its pool, in a missing pool): its
    pools are then left zero-filled, which changes nothing for a driver that must reject it anyway.
    """
    shared = {i: int(d["modelPool"]) for i, d in enumerate(request_json["pools"]) if "modelPool" in d}
    if shared:
        # Stand-ins for the model's pools, swapped for them once the request is built.
        pools = [{"kind": "ashmem", "size": 1} if i in shared else d for i, d in enumerate(request_json["pools"])]
        request_json = {**request_json, "pools": pools}
    try:
        request, memories, read = materialize_request(request_json, model, inputs)
    except (ValueError, IndexError, MemoryMapError):
        request, memories, read = materialize_request(request_json, model, [None] * len(inputs))
    for i, k in shared.items():
        memories[i].close()
        request.pools[i] = model.pools[k]
    # An argument may have no value and a location all the same (V36): keep what the case says.
    for side, args in (("inputs", request.inputs), ("outputs", request.outputs)):
        for arg, d in zip(args, request_json[side]):
            if arg.has_no_value:
                arg.location = DataLocation(*(int(d.get(k, 0)) for k in ("poolIndex", "offset", "length")))
    own = [m for i, m in enumerate(memories) if i not in shared]
    # One copy of each pool as built (zero-filled, then the inputs written) is what reset() puts back.
    contents = [m.read(0, m.size) if m.size else b"" for m in own]
    return BuiltRequest(request, own, read, contents)
