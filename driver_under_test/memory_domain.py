"""Memory domains (D15-D19): driver-managed buffers, the token table of each device, and the role checks.

`allocate` hands out a `DriverBuffer` (IBuffer) and a token; a request names the buffer by a pool
`DriverBufferToken(token)` and an argument location {poolIndex = k, offset 0, length 0}.

Decisions
- Unknown dimensions are supported. When the roles and the descriptor leave dimensions (or the rank) unknown,
  the buffer is flexible as an input (copyFrom or an execution that wrote it fixes them) and dynamic as an output
  (it takes each execution's actual shape, which may change from one execution to the next). Bytes are stored
  only once written, so `allocate` reserves nothing; a buffer whose known dimensions already pass
  MAX_BUFFER_BYTES is refused with GENERAL_FAILURE (unsupported), and so is an output that would grow past it.
- A device and the prepared models it compiled share one `MemoryDomain`, found through the options and fault-set
  objects they share (create_device gives each device its own pair). A token is known only to its domain, so a
  token of another device instance is INVALID_ARGUMENT, and so is a prepared model of another device at allocate.
- A token stays valid while its DriverBuffer object lives: the domain holds buffers weakly and a finalizer frees
  the token when the client drops its last reference. A buffer holds its prepared models weakly too (D3).
- Content is copy-on-write: a buffer's (dimensions, bytes) pair is an immutable snapshot replaced under a lock
  held only for the swap. Concurrent readers all see a whole snapshot; concurrent writers never crash or block,
  the last one wins (D19).
- Only executions that pass validation change a buffer: a request that is refused (wrong role, wrong model,
  aliasing, uninitialized input) leaves every buffer as it was. An execution that then fails, with any status
  including OUTPUT_INSUFFICIENT_SIZE, leaves every buffer it was to write uninitialized, as does a failed copyFrom
  (D17). An output whose actual shape conflicts with the buffer's allocated dimensions fails with GENERAL_FAILURE.
- copyTo checks the memory against the allocated size first (when that size is known), then the state, then
  against the current content's size: a wrong size is INVALID_ARGUMENT, an uninitialized buffer GENERAL_FAILURE.

| rule id | the claim |
|---|---|
| D15.malformed | allocate's arguments are the HAL structures |
| D15.no_roles | at least one input or output role |
| D15.model_index | every role's modelIndex names one of the prepared models |
| D15.foreign_prepared_model | every prepared model was prepared by this device |
| D15.io_index | every role's ioIndex is an input (output) of that model's main subgraph |
| D15.frequency | every frequency is in (0, 1] |
| D15.duplicate_role | no role (prepared model, direction, ioIndex) is given twice |
| D15.operand_mismatch | all role operands agree on type, scale, zero point and extra params |
| D15.dimensions_conflict | role operands' and the descriptor's dimensions merge (a scalar takes none) |
| D15.unsupported | GENERAL_FAILURE: types without storage, ranks or sizes above the driver's limits |
| D16.role | a request uses the buffer only in a role it was allocated for, with that prepared model |
| D16.dimensions | request dimensions agree with the buffer's |
| D17.uninitialized | GENERAL_FAILURE: an uninitialized buffer is not read (input, copyTo) |
| D18.memory_size | copyTo/copyFrom memory has exactly the buffer's byte size |
| D18.dimensions | copyFrom dimensions are fully specified and agree with the allocated ones |
"""

from __future__ import annotations

import math
import numbers
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from driver_under_test.errors import as_driver_error, failure, invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.pools import map_pool
from driver_under_test.validation import Limits
from driver_under_test.validation.operands import as_int, as_list, as_uint32, type_name
from harness.hal import (
    Buffer,
    BufferDesc,
    BufferRole,
    DriverBufferToken,
    ErrorStatus,
    Operand,
    Request,
    element_size,
    is_scalar_type,
    merge_dimensions,
    numpy_dtype,
)


class RoleModel(Protocol):
    """What a memory domain needs of a prepared model its buffers serve."""

    @property
    def memory_domain(self) -> MemoryDomain:
        """The memory domain of the device that prepared it."""
        ...

    def io_operands(self, is_output: bool) -> list[Operand]:
        """The operands of main's outputs (or inputs), in order."""
        ...


ROLE_CHECK_IGNORES_IO_INDEX = define(
    "role_check_ignores_io_index",
    "memory_domain",
    "Checks a driver buffer's role by prepared model and direction only: a buffer allocated for input 0 is "
    "accepted as input 1 (D16 says INVALID_ARGUMENT).",
).name
BUFFER_STAYS_INITIALIZED_AFTER_FAILURE = define(
    "buffer_stays_initialized_after_failure",
    "memory_domain",
    "A failed execution leaves the driver buffers it was to write initialized with their old content "
    "(D17 says uninitialized: reading them is GENERAL_FAILURE).",
).name
COPY_FROM_SKIPS_SIZE_CHECK = define(
    "copy_from_skips_size_check",
    "memory_domain",
    "copyFrom accepts a memory of the wrong size, copying min(sizes) bytes and zero-filling the rest "
    "(D18 says INVALID_ARGUMENT).",
).name

# Kinds copyTo/copyFrom accept (D18); the non-BLOB hardware buffer is optional and not offered.
COPY_MEMORY_KINDS = ("ashmem", "mmap_fd", "hardware_buffer_blob")
# Largest content one buffer may hold; larger allocations or outputs are unsupported (GENERAL_FAILURE).
MAX_BUFFER_BYTES = 1 << 28
# Most buffers one device keeps alive at once.
MAX_LIVE_BUFFERS = 1 << 16
# Tokens are the HAL's uint32 and never 0.
TOKEN_MAX = 2**32 - 1

# (prepared-model slot, is_output, ioIndex): a role with the prepared model named by its place in the buffer.
_RoleKey = tuple[int, bool, int]


def _known_product(dims: Sequence[int]) -> int:
    return math.prod(d for d in dims if d)


def _fully_specified(operand_type: int, dims: Sequence[int]) -> bool:
    return is_scalar_type(operand_type) or (bool(dims) and 0 not in dims)


@dataclass(frozen=True)
class BufferSpec:
    """What every role of a buffer agreed on at allocation, and the dimensions they and the descriptor fix."""

    type: int
    scale: float
    zero_point: int
    extra_params: object
    dimensions: tuple[int, ...]  # 0 = unknown dimension, empty = unknown rank (or a scalar)

    @property
    def scalar(self) -> bool:
        """True for a scalar operand type."""
        return is_scalar_type(self.type)

    def byte_size(self, dims: Sequence[int]) -> int:
        """Bytes of content with these (fully specified) dimensions."""
        return element_size(self.type) * (1 if self.scalar else math.prod(dims))

    def static_size(self) -> int | None:
        """The byte size fixed at allocation, or None while dimensions are unknown."""
        if not _fully_specified(self.type, self.dimensions):
            return None
        return self.byte_size(self.dimensions)


@dataclass(frozen=True)
class BufferState:
    """One immutable snapshot of a buffer's content: `data` None means uninitialized."""

    dimensions: tuple[int, ...]
    data: bytes | None = None


class MemoryDomain:
    """One device's live driver buffers by token; `token in domain` says whether this device handed it out."""

    def __init__(self, faults: FaultSet, limits: Limits) -> None:
        self.faults = faults
        self.limits = limits
        # Reentrant: a buffer's finalizer may run (through the garbage collector) while this thread holds it.
        self._lock = threading.RLock()
        self._buffers: dict[int, weakref.ref[DriverBuffer]] = {}
        self._next = 1
        # The prepared models of this device (D15: buffers serve only those).
        self._models: weakref.WeakSet[RoleModel] = weakref.WeakSet()

    def admit(self, model: RoleModel) -> None:
        """Count a prepared model of this device as one its buffers may serve."""
        with self._lock:
            self._models.add(model)

    def admits(self, model: object) -> bool:
        """True for a prepared model this device prepared (and admitted)."""
        try:
            with self._lock:
                return model in self._models
        except TypeError:  # an unhashable object is no prepared model of ours
            return False

    def __contains__(self, token: object) -> bool:
        return self.lookup(token) is not None

    def lookup(self, token: object) -> DriverBuffer | None:
        """The live buffer behind a token, or None."""
        with self._lock:
            ref = self._buffers.get(token)  # type: ignore[call-overload]
        return None if ref is None else ref()

    def register(self, buffer: DriverBuffer) -> int:
        """A fresh token for `buffer`, freed when the buffer object is collected."""
        with self._lock:
            if len(self._buffers) >= MAX_LIVE_BUFFERS:
                raise failure(f"this device already holds {MAX_LIVE_BUFFERS} buffers", "D15.unsupported")
            while self._next in self._buffers:
                self._advance()
            token = self._next
            self._advance()
            ref = weakref.ref(buffer)
            self._buffers[token] = ref
        weakref.finalize(buffer, self._forget, token, ref)
        return token

    def _advance(self) -> None:
        self._next = 1 if self._next >= TOKEN_MAX else self._next + 1

    def _forget(self, token: int, ref: weakref.ref) -> None:
        with self._lock:
            if self._buffers.get(token) is ref:
                del self._buffers[token]

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for ref in self._buffers.values() if ref() is not None)


class DriverBuffer(Buffer):
    """A driver-managed buffer (IBuffer): its agreed operand, its roles and its copy-on-write content."""

    def __init__(
        self, domain: MemoryDomain, spec: BufferSpec, models: Sequence[RoleModel], roles: set[_RoleKey]
    ) -> None:
        self.spec = spec
        self._faults = domain.faults
        self._max_rank = domain.limits.max_rank
        self._models = tuple(weakref.ref(m) for m in models)
        self._roles = frozenset(roles)
        self._lock = threading.Lock()
        self._state = BufferState(spec.dimensions)

    def __repr__(self) -> str:
        state = self.snapshot()
        return (
            f"DriverBuffer({type_name(self.spec.type)} {list(self.spec.dimensions)}, now {list(state.dimensions)}, "
            f"{'initialized' if state.data is not None else 'uninitialized'})"
        )

    # --- state ----------------------------------------------------------------------------------------

    def snapshot(self) -> BufferState:
        """The current content (dimensions and bytes), whole."""
        with self._lock:
            return self._state

    def store(self, dimensions: Sequence[int], data: bytes) -> None:
        """Replace the content: the buffer is initialized with these dimensions."""
        state = BufferState(tuple(int(d) for d in dimensions), bytes(data))
        with self._lock:
            self._state = state

    def invalidate(self) -> None:
        """Forget the content: the buffer is uninitialized, its dimensions back to the allocated ones."""
        state = BufferState(self.spec.dimensions)
        with self._lock:
            self._state = state

    # --- role checks (D16) ----------------------------------------------------------------------------

    def has_role(self, prepared_model: object, is_output: bool, io_index: int) -> bool:
        """True if the buffer was allocated for this input (output) of this prepared model."""
        any_index = self._faults.active(ROLE_CHECK_IGNORES_IO_INDEX)
        for slot, ref in enumerate(self._models):
            if ref() is prepared_model:
                return any(s == slot and o == is_output and (any_index or i == io_index) for s, o, i in self._roles)
        return False

    def _check_role(self, prepared_model: object, is_output: bool, io_index: int) -> None:
        if not self.has_role(prepared_model, is_output, io_index):
            side = "output" if is_output else "input"
            raise invalid(f"driver buffer used as {side} {io_index} of a prepared model it was not allocated for",
                          "D16.role")  # fmt: skip

    def check_input(self, prepared_model: object, io_index: int, dims: Sequence[int]) -> list[int]:
        """Validate a use as input `io_index`; the dimensions the input has (request, model and buffer merged)."""
        self._check_role(prepared_model, False, io_index)
        state = self.snapshot()
        if state.data is None:
            raise failure(f"input {io_index} reads an uninitialized driver buffer", "D17.uninitialized")
        merged = merge_dimensions(dims, state.dimensions)
        if merged is None:
            raise invalid(f"input {io_index} dimensions {list(dims)} conflict with the driver buffer's "
                          f"{list(state.dimensions)}", "D16.dimensions")  # fmt: skip
        return merged

    def check_output(self, prepared_model: object, io_index: int, dims: Sequence[int], fenced: bool) -> None:
        """Validate a use as output `io_index` whose request and model dimensions merge to `dims`."""
        self._check_role(prepared_model, True, io_index)
        merged = merge_dimensions(dims, self.spec.dimensions)
        if merged is None:
            raise invalid(f"output {io_index} dimensions {list(dims)} conflict with the driver buffer's "
                          f"{list(self.spec.dimensions)}", "D16.dimensions")  # fmt: skip
        if fenced and not _fully_specified(self.spec.type, merged):
            raise invalid(f"output {io_index} of a fenced execution writes a driver buffer of unspecified "
                          f"dimensions {merged}", "V37.fenced_output_unspecified")  # fmt: skip

    # --- execution ------------------------------------------------------------------------------------

    def read_input(self, io_index: int, dims: Sequence[int]) -> BufferState:
        """The content to read as input `io_index` (validated with `dims`, which it must still agree with)."""
        state = self.snapshot()
        if state.data is None:
            raise failure(f"input {io_index} reads an uninitialized driver buffer", "D17.uninitialized")
        if merge_dimensions(dims, state.dimensions) is None:
            raise invalid(f"input {io_index}: the driver buffer now has dimensions {list(state.dimensions)}",
                          "D16.dimensions")  # fmt: skip
        return state

    def check_result_shape(self, io_index: int, actual: Sequence[int]) -> None:
        """GENERAL_FAILURE if an output of this shape cannot be stored in the buffer."""
        if merge_dimensions(actual, self.spec.dimensions) is None:
            raise failure(f"output {io_index} has shape {list(actual)}, which the driver buffer allocated with "
                          f"{list(self.spec.dimensions)} cannot hold", "D16.dimensions")  # fmt: skip
        if self.spec.byte_size(actual) > MAX_BUFFER_BYTES:
            raise failure(f"output {io_index} of shape {list(actual)} is above this driver's buffer limit",
                          "D15.unsupported")  # fmt: skip

    # --- IBuffer --------------------------------------------------------------------------------------

    def copy_to(self, dst: object) -> ErrorStatus:
        """IBuffer::copyTo: INVALID_ARGUMENT for a wrong-size memory, GENERAL_FAILURE if uninitialized."""
        try:
            self._copy_to(dst)
        except Exception as e:  # the HAL boundary: statuses, never exceptions
            return as_driver_error(e).status
        return ErrorStatus.NONE

    def copy_from(self, src: object, dimensions: Sequence[int]) -> ErrorStatus:
        """IBuffer::copyFrom: INVALID_ARGUMENT for a wrong size or dimensions conflicting with known ones."""
        try:
            self._copy_from(src, dimensions)
        except Exception as e:
            self.invalidate()  # D17: a failed copyFrom leaves the buffer uninitialized
            return as_driver_error(e).status
        return ErrorStatus.NONE

    def _copy_to(self, dst: object) -> None:
        mapping = map_pool(dst, COPY_MEMORY_KINDS, writable=True)
        try:
            static = self.spec.static_size()
            if static is not None and mapping.size != static:
                raise invalid(f"copyTo memory has {mapping.size} bytes; the buffer has {static}", "D18.memory_size")
            state = self.snapshot()
            if state.data is None:
                raise failure("copyTo from an uninitialized driver buffer", "D17.uninitialized")
            if mapping.size != len(state.data):
                raise invalid(f"copyTo memory has {mapping.size} bytes; the buffer holds {len(state.data)}",
                              "D18.memory_size")  # fmt: skip
            mapping.data[:] = np.frombuffer(state.data, dtype=np.uint8)
        finally:
            mapping.close()

    def _copy_dimensions(self, dimensions: object) -> list[int]:
        """The dimensions copyFrom gives the content: `dimensions` merged with the allocated ones."""
        raw = as_list(dimensions, "copyFrom dimensions", "D18.dimensions")
        if len(raw) > self._max_rank:
            raise invalid(f"copyFrom gives rank {len(raw)}, above any operand's", "D18.dimensions")
        given = [as_uint32(d, f"copyFrom dimension {k}", "D18.dimensions") for k, d in enumerate(raw)]
        if given and 0 in given:
            raise invalid(f"copyFrom dimensions {given} leave a dimension unspecified", "D18.dimensions")
        if given and self.spec.scalar:
            raise invalid(f"copyFrom gives dimensions {given} to a scalar buffer", "D18.dimensions")
        merged = merge_dimensions(self.spec.dimensions, given)
        if merged is None:
            raise invalid(f"copyFrom dimensions {given} conflict with the buffer's {list(self.spec.dimensions)}",
                          "D18.dimensions")  # fmt: skip
        if not _fully_specified(self.spec.type, merged):
            raise invalid(f"copyFrom leaves the buffer's dimensions {merged} unspecified", "D18.dimensions")
        if self.spec.byte_size(merged) > MAX_BUFFER_BYTES:
            raise failure(f"copyFrom dimensions {merged} are above this driver's buffer limit", "D15.unsupported")
        return merged

    def _copy_from(self, src: object, dimensions: object) -> None:
        dims = self._copy_dimensions(dimensions)
        size = self.spec.byte_size(dims)
        mapping = map_pool(src, COPY_MEMORY_KINDS, writable=False)
        try:
            if mapping.size != size:
                if not self._faults.active(COPY_FROM_SKIPS_SIZE_CHECK):
                    raise invalid(f"copyFrom memory has {mapping.size} bytes; dimensions {dims} need {size}",
                                  "D18.memory_size")  # fmt: skip
                # The planted bug: the sizes are never compared, the copy just stops at the shorter one.
                n = min(mapping.size, size)
                data = mapping.read(0, n) + bytes(size - n)
            else:
                data = mapping.read(0, size)
        finally:
            mapping.close()
        self.store(dims, data)


# --- allocate (D15) -----------------------------------------------------------------------------------


def _check_frequency(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) <= 1.0:
        raise invalid(f"{what} has frequency {value!r}; it must be in (0, 1]", "D15.frequency")


def _same_operand(a: Operand, b: Operand) -> bool:
    return (
        int(a.type) == int(b.type)
        and a.scale == b.scale
        and a.zero_point == b.zero_point
        and a.extra_params == b.extra_params
    )


def _prepared_models(domain: MemoryDomain, prepared_models: object) -> list[RoleModel]:
    models = as_list(prepared_models, "allocate prepared models", "D15.malformed")
    for k, pm in enumerate(models):
        if not domain.admits(pm):
            raise invalid(f"prepared model {k} was not prepared by this device", "D15.foreign_prepared_model")
    return list(models)  # type: ignore[arg-type]


def _role_operands(
    models: list[RoleModel], input_roles: object, output_roles: object
) -> tuple[list[Operand], set[_RoleKey], list[RoleModel]]:
    """The operand of every role, the role keys, and the distinct prepared models the keys' slots index."""
    distinct: list[RoleModel] = []
    slot_of: list[int] = []
    for pm in models:
        slot = next((s for s, other in enumerate(distinct) if other is pm), None)
        if slot is None:
            slot = len(distinct)
            distinct.append(pm)
        slot_of.append(slot)
    operands: list[Operand] = []
    keys: set[_RoleKey] = set()
    for is_output, roles in ((False, input_roles), (True, output_roles)):
        side = "output" if is_output else "input"
        for k, role in enumerate(as_list(roles, f"allocate {side} roles", "D15.malformed")):
            what = f"{side} role {k}"
            if not isinstance(role, BufferRole):
                raise invalid(f"{what} is not a BufferRole", "D15.malformed")
            model_index = as_int(role.model_index, f"{what} modelIndex", "D15.model_index")
            io_index = as_int(role.io_index, f"{what} ioIndex", "D15.io_index")
            if not 0 <= model_index < len(models):
                raise invalid(f"{what} names prepared model {model_index} of {len(models)}", "D15.model_index")
            _check_frequency(role.frequency, what)
            io_operands = models[model_index].io_operands(is_output)
            if not 0 <= io_index < len(io_operands):
                raise invalid(f"{what} names {side} {io_index}; the model has {len(io_operands)}", "D15.io_index")
            key = (slot_of[model_index], is_output, io_index)
            if key in keys:
                raise invalid(f"{what} repeats an earlier role of the same prepared model", "D15.duplicate_role")
            keys.add(key)
            operands.append(io_operands[io_index])
    if not operands:
        raise invalid("allocate needs at least one input or output role", "D15.no_roles")
    return operands, keys, distinct


def _spec(desc: object, operands: list[Operand], limits: Limits) -> BufferSpec:
    """The operand every role agrees on, with the descriptor's and the roles' dimensions merged."""
    if not isinstance(desc, BufferDesc):
        raise invalid("the buffer descriptor is not a BufferDesc", "D15.malformed")
    raw = as_list(desc.dimensions, "descriptor dimensions", "D15.malformed")
    if len(raw) > limits.max_rank:
        raise failure(f"descriptor rank {len(raw)} is above this driver's limit of {limits.max_rank}",
                      "D15.unsupported")  # fmt: skip
    dims: list[int] = [as_uint32(d, f"descriptor dimension {k}", "D15.malformed") for k, d in enumerate(raw)]
    first = operands[0]
    for k, operand in enumerate(operands[1:], start=1):
        if not _same_operand(first, operand):
            raise invalid(f"role operand {k} differs from role operand 0 in type, scale, zero point or extra "
                          "params", "D15.operand_mismatch")  # fmt: skip
    operand_type = int(first.type)
    if is_scalar_type(operand_type) and dims:
        raise invalid(f"descriptor dimensions {dims} for a {type_name(operand_type)} scalar", "D15.dimensions_conflict")
    for k, operand in enumerate(operands):
        merged = merge_dimensions(dims, list(operand.dimensions))
        if merged is None:
            raise invalid(f"role operand {k} dimensions {list(operand.dimensions)} conflict with {dims}",
                          "D15.dimensions_conflict")  # fmt: skip
        dims = merged
    try:
        numpy_dtype(operand_type)
    except ValueError:
        raise failure(f"buffers of type {type_name(operand_type)} are not supported", "D15.unsupported") from None
    if element_size(operand_type) * _known_product(dims) > MAX_BUFFER_BYTES:
        raise failure(f"a {type_name(operand_type)} buffer of dimensions {dims} is not supported", "D15.unsupported")
    return BufferSpec(operand_type, float(first.scale), int(first.zero_point), first.extra_params, tuple(dims))


def allocate(
    domain: MemoryDomain,
    desc: BufferDesc,
    prepared_models: Sequence[object],
    input_roles: Sequence[BufferRole],
    output_roles: Sequence[BufferRole],
) -> tuple[ErrorStatus, DriverBuffer | None, int]:
    """IDevice::allocate on `domain`: (NONE, buffer, token > 0), or (status, None, 0)."""
    try:
        models = _prepared_models(domain, prepared_models)
        operands, roles, distinct = _role_operands(models, input_roles, output_roles)
        spec = _spec(desc, operands, domain.limits)
        buffer = DriverBuffer(domain, spec, distinct, roles)
        token = domain.register(buffer)
    except Exception as e:  # the HAL boundary: statuses, never exceptions
        return as_driver_error(e).status, None, 0
    return ErrorStatus.NONE, buffer, token


# --- requests (D16, D17) ------------------------------------------------------------------------------


def request_buffers(domain: MemoryDomain, request: Request) -> dict[int, DriverBuffer]:
    """The live buffer behind each driver-buffer pool of a request, by pool index; INVALID_ARGUMENT if unknown."""
    buffers = {}
    for k, pool in enumerate(request.pools):
        if isinstance(pool, DriverBufferToken):
            buffer = domain.lookup(pool.token)
            if buffer is None:
                raise invalid(f"request pool {k} names driver buffer token {pool.token}, unknown to this device",
                              "V35.unknown_buffer_token")  # fmt: skip
            buffers[k] = buffer
    return buffers


def check_request(
    prepared_model: RoleModel, request: Request, input_dims: list[list[int]], *, fenced: bool
) -> list[list[int]]:
    """Validate every driver-buffer argument of a (validated) request; return the inputs' dimensions.

    Inputs read from a buffer take its current dimensions; outputs must agree with its allocated ones.
    """
    buffers = request_buffers(prepared_model.memory_domain, request)
    if not buffers:
        return input_dims
    dims = list(input_dims)
    for i, arg in enumerate(request.inputs):
        if not arg.has_no_value and arg.location.pool_index in buffers:
            dims[i] = buffers[arg.location.pool_index].check_input(prepared_model, i, input_dims[i])
    operands = prepared_model.io_operands(True)
    for j, arg in enumerate(request.outputs):
        if not arg.has_no_value and arg.location.pool_index in buffers:
            wanted = merge_dimensions(list(operands[j].dimensions), list(arg.dimensions)) or []
            buffers[arg.location.pool_index].check_output(prepared_model, j, wanted, fenced)
    return dims


def forget_outputs(domain: MemoryDomain, request: Request) -> None:
    """After a failed execution: every buffer the request was to write becomes uninitialized (D17)."""
    if domain.faults.active(BUFFER_STAYS_INITIALIZED_AFTER_FAILURE):
        return
    for arg in request.outputs:
        if arg.has_no_value or not 0 <= arg.location.pool_index < len(request.pools):
            continue
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, DriverBufferToken):
            buffer = domain.lookup(pool.token)
            if buffer is not None:
                buffer.invalidate()
