"""The memory_domain target: driver-managed buffers (IDevice::allocate, IBuffer) through their life cycle.

A case is one or two generated models (the second may be the first prepared again), an allocation drawn by
harness.gen.roles (valid, or invalid and labelled with the D15 clause it breaks) and, for a valid one, steps:

- copyFrom: IBuffer::copyFrom of `value` with `dims` from a memory of `kind`, `sizeDelta` bytes off its size;
- copyTo: IBuffer::copyTo into a memory of `kind`, `sizeDelta` bytes off the content's size;
- execute: case model `model` on `path` with the buffer as the `inputs`/`outputs` io indexes it names, `dims` for
  the buffer's arguments; optionally a passed `deadline`, a too small regular output `smallOutput`, the prepared
  model the buffer was not allocated for (`prepared: other`) or a `token` naming no buffer.

`run` prepares the models, allocates and keeps a model of the buffer (D17/D18): uninitialized, initialized with a
known content, or either of the two where the HAL leaves it open (a request refused with INVALID_ARGUMENT may or
may not count as a failed execution). Every step is judged against it: illegal uses (D16) must be refused,
reads of an uninitialized buffer must fail, copies must check their memory, failed writes must leave the buffer
uninitialized, and what executions read from or write to the buffer must match the reference executor.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import model_from_json, pack, pool_from_json, to_json_values, unpack
from harness.gen.model import GeneratedModel, ModelConfig, generate_model
from harness.gen.roles import (
    INPUT,
    OUTPUT,
    Allocation,
    IoOperand,
    RolesConfig,
    break_roles,
    generate_roles,
    io_operands,
)
from harness.gen.source import GenerationRejected, Source, chance, weighted
from harness.hal import (
    NO_TIMING_INFO,
    BurstCallback,
    BurstContext,
    DataLocation,
    Deadline,
    Device,
    DriverBufferToken,
    Duration,
    ErrorStatus,
    ExecutionCallback,
    FencedExecutionCallback,
    MeasureTiming,
    Model,
    OutputShape,
    PreparedModel,
    Request,
    RequestArgument,
    SyncFence,
    Timing,
    element_size,
    has_unknown_dimensions,
    is_scalar_type,
    merge_dimensions,
    numpy_dtype,
)
from harness.hal.memory import Memory, MemoryKind
from harness.oracle.accuracy import compare
from harness.oracle.rules import (
    MISSED_DEADLINE,
    STATUS_EXPECTED,
    Breach,
    Expectation,
    judge_execution,
    judge_notes,
    judge_outputs,
    judge_supported_operations,
    judge_timing,
    judge_valid_preparation,
    verdict_of,
)
from harness.oracle.verdict import Verdict, define_rule
from harness.paths import PATHS, ExecutionArgs, Outcome
from harness.reference import ReferenceResult, judge_output_sizes, run_model, validate_model
from harness.targets._common import (
    DEFAULT_TIMEOUT_S,
    call,
    close_model_pools,
    guarded,
    inputs_from_json,
    prepare,
    status_of,
    supported_operations,
)
from harness.targets.base import Case, register_target
from harness.targets.execution import inputs_to_json, quantized_operations, unspecified_outputs

# --- Rules ----------------------------------------------------------------------------------------------------------

ALLOCATE_VALIDATES_ROLES = define_rule(
    "memory_domain.allocate_validates_roles",
    "allocate with roles or a descriptor that break D15 answers INVALID_ARGUMENT (GENERAL_FAILURE when the size "
    "is dynamic) with no buffer and token 0",
)
ALLOCATE_ACCEPTS_VALID_ROLES = define_rule(
    "memory_domain.allocate_accepts_valid_roles",
    "allocate with valid roles answers NONE with a buffer and a token > 0, or GENERAL_FAILURE (unsupported) with "
    "no buffer and token 0",
)
UNINITIALIZED_READ_FAILS = define_rule(
    "memory_domain.uninitialized_read_fails",
    "reading a buffer never initialized, as an execution input or with copyTo, is GENERAL_FAILURE",
)
FAILED_EXECUTION_UNINITIALIZES = define_rule(
    "memory_domain.failed_execution_uninitializes",
    "an execution that fails after accepting the buffer as an output leaves it uninitialized: reading it is "
    "GENERAL_FAILURE",
)
FAILED_COPY_UNINITIALIZES = define_rule(
    "memory_domain.failed_copy_uninitializes",
    "a failed copyFrom leaves the buffer uninitialized: reading it is GENERAL_FAILURE",
)
COPY_ROUND_TRIPS = define_rule(
    "memory_domain.copy_round_trips",
    "copyFrom of a right-size memory with agreeing dimensions succeeds, and copyTo of the right size gives back "
    "exactly the bytes written",
)
COPY_VALIDATES_MEMORY = define_rule(
    "memory_domain.copy_validates_memory",
    "copyFrom and copyTo with a memory of the wrong size, or copyFrom with dimensions that are not fully specified "
    "or conflict with the buffer's, answer INVALID_ARGUMENT",
)
ILLEGAL_USE_REJECTED = define_rule(
    "memory_domain.illegal_use_rejected",
    "an execution using a buffer outside its roles, with another prepared model, as input and output or as two "
    "outputs, with conflicting dimensions or through an unknown token answers INVALID_ARGUMENT, no shapes, no timing",
)
VALUES_MATCH_REFERENCE = define_rule(
    "memory_domain.values_match_reference",
    "executions reading or writing a buffer produce the reference's values: in their outputs and in the buffer",
)

# --- The case ------------------------------------------------------------------------------------------------------

COPY_KINDS = (MemoryKind.ASHMEM.value, MemoryKind.MMAP_FD.value, MemoryKind.HARDWARE_BUFFER_BLOB.value)
_U32 = 1 << 32
# Tokens naming no buffer: 0 is never a token; the largest u32 is one no small test reaches.
BAD_TOKENS = {"zero": 0, "unknown": _U32 - 1}
# (kind, weight) of the steps decode draws.
DEFAULT_STEPS: tuple[tuple[str, float], ...] = (
    ("copy_from", 3.0),
    ("copy_to", 3.0),
    ("write", 3.0),
    ("read", 3.0),
    ("write_failing", 1.5),
    ("copy_from_bad_size", 1.0),
    ("copy_from_bad_dims", 1.0),
    ("copy_to_bad_size", 1.0),
    ("wrong_role", 1.5),
    ("wrong_model", 0.7),
    ("input_and_output", 0.7),
    ("two_outputs", 0.5),
    ("bad_token", 0.5),
    ("conflicting_dims", 1.0),
)
# Weight factors of step kinds while decode expects the buffer to be uninitialized.
_UNINITIALIZED_BIAS = {"copy_from": 2.0, "write": 2.0, "read": 0.5, "copy_to": 0.5}
# What the second case model is: none, the first one prepared again, or another generated model.
DEFAULT_SECOND_MODEL: tuple[tuple[str, float], ...] = (("none", 0.5), ("same", 0.3), ("other", 0.2))


@dataclass
class MemoryDomainTarget:
    """Fuzz target for memory domains: allocate, copies and executions through driver-managed buffers."""

    name: str = "memory_domain"
    # Small models without control flow: here a model only feeds and drains the buffer (IF and WHILE are the
    # execution target's business).
    model_config: ModelConfig = field(default_factory=lambda: ModelConfig(max_operations=2, control_flow=False))
    roles_config: RolesConfig = field(default_factory=RolesConfig)
    timeout_s: float = DEFAULT_TIMEOUT_S
    paths: tuple[str, ...] = tuple(PATHS)
    max_steps: int = 8
    invalid_probability: float = 0.25  # the allocation is broken by one D15 mutation (and no steps follow)
    second_model: tuple[tuple[str, float], ...] = DEFAULT_SECOND_MODEL
    steps: tuple[tuple[str, float], ...] = DEFAULT_STEPS

    def decode(self, source: Source) -> Case:
        """Generated models, an allocation and, when it is valid, the steps to run on the buffer."""
        generated = [generate_model(source, self.model_config)]
        try:
            second = weighted(source, self.second_model)
            models_json: list[dict] = []
            if second == "same":
                generated.append(generated[0])
                models_json.append({"sameAs": 0})
            elif second == "other":
                try:
                    generated.append(generate_model(source, self.model_config))
                except GenerationRejected:
                    pass
                else:
                    models_json.append(
                        {"model": generated[1].model_json, "inputs": inputs_to_json(generated[1].inputs)}
                    )
            models = [g.model for g in generated]
            allocation = generate_roles(
                source, models, self.roles_config, candidates=_candidates(generated), shapes=_shapes(generated)
            )
            if chance(source, self.invalid_probability):
                allocation = break_roles(source, models, allocation)
            steps = _Planner(source, generated, allocation, self.paths).draw(self.steps, self.max_steps)
            expect: dict = {"valid": allocation.valid}
            if not allocation.valid:
                expect.update(rule=allocation.rule, mutation=allocation.mutation)
            return Case(
                self.name,
                generated[0].model_json,
                inputs=inputs_to_json(generated[0].inputs),
                execution={"measure": False},
                expect=expect,
                extras={"models": models_json, "allocation": allocation.to_json(), "steps": steps},
            )
        finally:
            for g in {id(g): g for g in generated}.values():
                g.close()

    def run(self, case: Case, device: Device) -> Verdict:
        """Prepare, allocate and run the steps, each judged against the buffer's model and the reference."""
        models, inputs = _case_models(case)
        session = _Session(self, case, device, models, inputs)
        try:
            return guarded(self.name, session.run)
        finally:
            session.close()
            for model in models:
                close_model_pools(model)


def _candidates(generated: Sequence[GeneratedModel]) -> list[IoOperand]:
    """Operands a buffer's roles may name: any output, and the inputs generated with a value.

    An optional input generated without one would change the operation's semantics once the buffer gives it one.
    """
    found = []
    for io in io_operands([g.model for g in generated]):
        if io.direction == INPUT and generated[io.model_index].inputs[io.io_index] is None:
            continue
        found.append(io)
    return found


def _shapes(generated: Sequence[GeneratedModel]) -> dict[tuple[int, str, int], tuple[int, ...]]:
    """Actual value shapes of every model input (with a value) and output, by role key."""
    shapes = {}
    for k, g in enumerate(generated):
        for io, value in enumerate(g.inputs):
            if value is not None:
                shapes[(k, INPUT, io)] = tuple(np.shape(value))
        for io, value in enumerate(g.outputs):
            shapes[(k, OUTPUT, io)] = tuple(np.shape(value))
    return shapes


def _case_models(case: Case) -> tuple[list[Model], list[list[np.ndarray | None]]]:
    """The case's models (each built anew, so a repeated model gets pools of its own) and their input values."""
    model_jsons = [case.model]
    inputs_jsons = [case.inputs]
    for entry in case.extras.get("models", []):
        if "sameAs" in entry:
            k = int(entry["sameAs"])
            model_jsons.append(model_jsons[k])
            inputs_jsons.append(inputs_jsons[k])
        else:
            model_jsons.append(entry["model"])
            inputs_jsons.append(entry.get("inputs", []))
    models = [model_from_json(j) for j in model_jsons]
    return models, [inputs_from_json(i, m) for i, m in zip(inputs_jsons, models)]


# --- Drawing steps ----------------------------------------------------------------------------------------------------


class _Planner:
    """Draws steps for a valid allocation, tracking the content shape it expects so that sizes come out right."""

    def __init__(
        self, source: Source, generated: Sequence[GeneratedModel], allocation: Allocation, paths: Sequence[str]
    ) -> None:
        self.src = source
        self.generated = generated
        self.allocation = allocation
        self.paths = tuple(paths)
        self.dims = list(allocation.dimensions or [])
        self.type = allocation.operand_type
        self.declared = _declared(allocation, len(generated))
        self.predicted: tuple[int, ...] | None = None  # content shape decode expects (None: not initialized)

    def draw(self, kinds: Sequence[tuple[str, float]], max_steps: int) -> list[dict]:
        """Up to max_steps steps (none for an invalid allocation)."""
        if not self.allocation.valid or self.type is None:
            return []
        steps = []
        for _ in range(self.src.integer(1, max(1, max_steps))):
            # While decode expects no content, initializing steps come first more often than reads.
            bias = _UNINITIALIZED_BIAS if self.predicted is None else {}
            kind = weighted(self.src, [(k, w * bias.get(k, 1.0)) for k, w in kinds])
            step = getattr(self, f"_{kind}")()
            if step is None:
                step = self._copy_to()
            steps.append(step)
            if self.src.exhausted:
                break
        return steps

    # -- helpers
    @property
    def scalar(self) -> bool:
        return is_scalar_type(self.type)

    @property
    def known(self) -> bool:
        """The allocated dimensions are all known (always so for a scalar)."""
        return self.scalar or not has_unknown_dimensions(self.dims)

    def _roles(self, direction: str) -> list[tuple[int, int]]:
        return [(k, io) for k, d in enumerate(self.declared) for io in sorted(d[direction])]

    def _path(self) -> str:
        return self.src.choice(self.paths)

    def _content(self) -> tuple[tuple[int, ...], np.ndarray]:
        """Dimensions and values to copy in: a role's actual value when one fits, else made up."""
        fitting = []
        for k, g in enumerate(self.generated):
            for io in sorted(self.declared[k][INPUT]):
                value = g.inputs[io]
                if value is not None and merge_dimensions(self.dims, np.shape(value)) is not None:
                    fitting.append(value)
            for io in sorted(self.declared[k][OUTPUT]):
                if io < len(g.outputs) and merge_dimensions(self.dims, np.shape(g.outputs[io])) is not None:
                    fitting.append(g.outputs[io])
        if self.scalar:
            fitting = [v for v in fitting if np.ndim(v) == 0]
        if fitting and (len(fitting) > 1 or not chance(self.src, 0.2)):
            value = np.asarray(self.src.choice(fitting))
            return tuple(np.shape(value)), value
        if self.scalar:
            dims: tuple[int, ...] = ()
        elif self.dims:
            dims = tuple(d or self.src.integer(1, 3) for d in self.dims)
        else:
            dims = tuple(self.src.integer(1, 3) for _ in range(self.src.integer(1, 3)))
        return dims, _made_up(self.src, self.type, dims)  # type: ignore[arg-type]

    def _size(self, dims: Sequence[int]) -> int:
        return element_size(self.type) * math.prod(dims)  # type: ignore[arg-type]

    def _execute(self, k: int, inputs: Sequence[int] = (), outputs: Sequence[int] = (), **extra: object) -> dict:
        step = {"op": "execute", "model": k, "path": self._path(), "inputs": list(inputs), "outputs": list(outputs)}
        step["dims"] = None
        step.update(extra)
        return step

    # -- step kinds (each returns a step, or None when the case offers no place for it)
    def _copy_from(self) -> dict:
        dims, value = self._content()
        given: list[int] = list(dims)
        if not self.scalar and self.known and chance(self.src, 0.3):
            given = []  # "the allocated dimensions"
        self.predicted = dims
        return _copy_from_step(self.src, given, value, 0)

    def _copy_from_bad_size(self) -> dict:
        dims, value = self._content()
        item = element_size(self.type)  # type: ignore[arg-type]
        nbytes = self._size(dims)
        deltas = [item, 3 * item, 1] + ([-item, -nbytes] if nbytes >= item else [])
        self.predicted = None
        return _copy_from_step(self.src, list(dims), value, self.src.choice(deltas))

    def _copy_from_bad_dims(self) -> dict | None:
        dims, value = self._content()
        if self.scalar:
            bad = [1] * self.src.integer(1, 2)
        else:
            ways = ["zero"] + ([] if self.known else ["empty"]) + (["conflict"] if self.dims else [])
            way = self.src.choice(ways)
            if way == "empty":
                bad = []
            elif way == "zero":
                bad = list(dims)
                bad[self.src.integer(0, len(bad) - 1)] = 0
            else:
                bad = _conflicting(self.src, self.dims)
        self.predicted = None
        return _copy_from_step(self.src, bad, value, 0)

    def _copy_to(self, delta: int = 0) -> dict:
        fallback = self._size(self.predicted) if self.predicted is not None else 64
        return {"op": "copyTo", "kind": self.src.choice(COPY_KINDS), "sizeDelta": delta, "fallbackBytes": fallback}

    def _copy_to_bad_size(self) -> dict:
        item = element_size(self.type)  # type: ignore[arg-type]
        return self._copy_to(self.src.choice((item, -item, 1, 4 * item)))

    def _write(self, failing: str | None = None) -> dict | None:
        roles = self._roles(OUTPUT)
        if not roles:
            return None
        k, io = self.src.choice(roles)
        step = self._execute(k, outputs=[io])
        if not failing:
            if not self.scalar and self.dims and chance(self.src, 0.25):
                step["dims"] = "allocated"
            outputs = self.generated[k].outputs
            self.predicted = tuple(np.shape(outputs[io])) if io < len(outputs) else None
            return step
        others = [j for j in range(len(self.generated[k].model.main.output_indexes)) if j != io]
        if failing == "small" and others:
            step["smallOutput"] = self.src.choice(others)
        else:
            step["deadline"] = "passed"
        self.predicted = None
        return step

    def _write_failing(self) -> dict | None:
        return self._write(self.src.choice(("small", "deadline")))

    def _read(self) -> dict | None:
        roles = self._roles(INPUT)
        if not roles:
            return None
        k, io = self.src.choice(roles)
        ios = [io]
        more = [j for j in sorted(self.declared[k][INPUT]) if j != io]
        if more and chance(self.src, 0.3):
            ios.append(self.src.choice(more))  # the same buffer as two inputs is fine (D16)
        step = self._execute(k, inputs=ios)
        if chance(self.src, 0.25):
            step["dims"] = "current"
        return step

    def _wrong_role(self) -> dict | None:
        # Undeclared io indexes, preferring the direction a declared role has on the same model (so that a
        # driver checking the model and direction but not the index lets it through).
        near, far = [], []
        for k, g in enumerate(self.generated):
            main = g.model.main
            for direction, count in ((INPUT, len(main.input_indexes)), (OUTPUT, len(main.output_indexes))):
                declared = self.declared[k][direction]
                for io in range(count):
                    if io not in declared:
                        (near if declared else far).append((k, direction, io))
        if not near and not far:
            return None
        k, direction, io = self.src.choice(near if near and (not far or chance(self.src, 0.8)) else far)
        ios = {"inputs": [io]} if direction == INPUT else {"outputs": [io]}
        return self._execute(k, misuse="wrong_role", **ios)  # type: ignore[arg-type]

    def _declared_use(self) -> tuple[int, dict]:
        roles = [(k, INPUT, io) for k, io in self._roles(INPUT)] + [(k, OUTPUT, io) for k, io in self._roles(OUTPUT)]
        k, direction, io = self.src.choice(roles)
        return k, ({"inputs": [io]} if direction == INPUT else {"outputs": [io]})

    def _wrong_model(self) -> dict:
        k, ios = self._declared_use()
        return self._execute(k, misuse="wrong_model", prepared="other", **ios)  # type: ignore[arg-type]

    def _bad_token(self) -> dict:
        k, ios = self._declared_use()
        token = self.src.choice(tuple(BAD_TOKENS))
        return self._execute(k, misuse="bad_token", token=token, **ios)  # type: ignore[arg-type]

    def _input_and_output(self) -> dict | None:
        both = [k for k, d in enumerate(self.declared) if d[INPUT] and d[OUTPUT]]
        if both:
            k = self.src.choice(both)
            i, o = self.src.choice(sorted(self.declared[k][INPUT])), self.src.choice(sorted(self.declared[k][OUTPUT]))
        else:
            k, ios = self._declared_use()
            main = self.generated[k].model.main
            if not main.input_indexes or not main.output_indexes:
                return None
            i = ios.get("inputs", [self.src.integer(0, len(main.input_indexes) - 1)])[0]
            o = ios.get("outputs", [self.src.integer(0, len(main.output_indexes) - 1)])[0]
        return self._execute(k, inputs=[i], outputs=[o], misuse="input_and_output")

    def _two_outputs(self) -> dict | None:
        many = [k for k, g in enumerate(self.generated) if len(g.model.main.output_indexes) > 1]
        if not many:
            return None
        k = self.src.choice(many)
        count = len(self.generated[k].model.main.output_indexes)
        declared = sorted(self.declared[k][OUTPUT])
        first = self.src.choice(declared) if declared else 0
        second = self.src.choice([j for j in range(count) if j != first])
        return self._execute(k, outputs=[first, second], misuse="two_outputs")

    def _conflicting_dims(self) -> dict | None:
        if self.scalar:
            return None
        k, ios = self._declared_use()
        if self.dims:
            dims = _conflicting(self.src, self.dims)
        elif "inputs" in ios and self.predicted:
            dims = _conflicting(self.src, list(self.predicted))
        else:
            return None
        return self._execute(k, misuse="conflicting_dims", dims=dims, **ios)  # type: ignore[arg-type]


def _declared(allocation: Allocation, count: int) -> list[dict[str, set[int]]]:
    """Per case model, the io indexes of each direction the buffer has a role for (on its own prepared model)."""
    declared: list[dict[str, set[int]]] = [{INPUT: set(), OUTPUT: set()} for _ in range(count)]
    for direction in (INPUT, OUTPUT):
        for role in allocation.roles(direction):
            index = int(role["modelIndex"])
            if 0 <= index < len(allocation.prepared) and "model" in allocation.prepared[index]:
                declared[int(allocation.prepared[index]["model"])][direction].add(int(role["ioIndex"]))
    return declared


def _copy_from_step(source: Source, dims: list[int], value: np.ndarray, delta: int) -> dict:
    return {
        "op": "copyFrom",
        "kind": source.choice(COPY_KINDS),
        "dims": [int(d) for d in dims],
        "value": to_json_values(value),
        "sizeDelta": int(delta),
    }


def _conflicting(source: Source, dims: Sequence[int]) -> list[int]:
    """Dimensions that cannot merge with `dims` (of known rank): another rank, or another value of a known one."""
    known = [i for i, d in enumerate(dims) if d]
    way = source.choice(["longer", *(["shorter"] if len(dims) > 1 else []), *(["value"] if known else [])])
    if way == "longer":
        return [*dims, source.integer(1, 3)]
    if way == "shorter":
        return list(dims[:-1])
    out = list(dims)
    i = source.choice(known)
    out[i] = dims[i] + source.integer(1, 3)
    return out


def _made_up(source: Source, operand_type: int, dims: Sequence[int]) -> np.ndarray:
    """Values of an operand type for a copy, when no role's value fits the buffer."""
    dtype = numpy_dtype(operand_type)
    count = math.prod(dims)
    if dtype.kind == "f":
        width = 16 if dtype.itemsize == 2 else 32
        flat = np.array([source.floats(-4.0, 4.0, width=width) for _ in range(count)], dtype=dtype)
    elif dtype.kind == "b":
        flat = np.array([source.boolean() for _ in range(count)], dtype=dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        flat = np.array([source.integer(lo, hi) for _ in range(count)], dtype=dtype)
    return flat.reshape(tuple(dims))


# --- Running a case ------------------------------------------------------------------------------------------------

INIT, UNINIT, MAYBE = "initialized", "uninitialized", "initialized or not"
NEVER_WRITTEN, FAILED_EXECUTION, FAILED_COPY = "never written", "failed execution", "failed copyFrom"
_UNINITIALIZED_RULES = {
    NEVER_WRITTEN: UNINITIALIZED_READ_FAILS,
    FAILED_EXECUTION: FAILED_EXECUTION_UNINITIALIZES,
    FAILED_COPY: FAILED_COPY_UNINITIALIZES,
}
_DATA_FAILURES = frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})
# An output whose actual shape the buffer's allocated dimensions cannot hold: the execution fails (D18).
_WRONG_SHAPE = frozenset(
    {ErrorStatus.GENERAL_FAILURE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, ErrorStatus.INVALID_ARGUMENT}
)


@dataclass
class Content:
    """What a buffer holds: its dimensions and values (None: not judged), bit-exact or the reference's."""

    dims: tuple[int, ...]
    value: np.ndarray | None
    exact: bool
    relaxed: bool = False
    quantized_operations: int = 1  # of the model that computed it (the random-graph criterion for quantized values)


@dataclass
class BufferModel:
    """The oracle's model of one driver buffer (D17, D18): allocated dimensions, state and content."""

    allocated: list[int]
    operand_type: int
    state: str = UNINIT
    content: Content | None = None
    reason: str = NEVER_WRITTEN  # why it is uninitialized

    @property
    def scalar(self) -> bool:
        return is_scalar_type(self.operand_type)

    def byte_size(self, dims: Sequence[int]) -> int:
        """Bytes of a content of these dimensions."""
        return element_size(self.operand_type) * (1 if self.scalar else math.prod(dims))

    @property
    def allocated_size(self) -> int | None:
        """Bytes the allocated dimensions fix, when they are all known."""
        if self.scalar:
            return element_size(self.operand_type)
        return None if has_unknown_dimensions(self.allocated) else self.byte_size(self.allocated)

    def write(self, content: Content) -> None:
        """A successful copyFrom or execution wrote it."""
        self.state, self.content = INIT, content

    def fail(self, reason: str) -> None:
        """A failed copyFrom or execution: uninitialized (D17)."""
        self.state, self.content, self.reason = UNINIT, None, reason

    def unsure(self) -> None:
        """An outcome the HAL leaves open: initialized as before, or uninitialized."""
        if self.state == INIT:
            self.state = MAYBE

    def resolve(self, initialized: bool) -> None:
        """A read told whether it is initialized."""
        if self.state == MAYBE:
            if initialized:
                self.state = INIT
            else:
                self.fail(FAILED_EXECUTION)

    def describe(self) -> str:
        """One line for a finding's details."""
        content = "" if self.content is None else f", content {list(self.content.dims)}"
        why = f" ({self.reason})" if self.state == UNINIT else ""
        return f"buffer: allocated dimensions {self.allocated}, {self.state}{why}{content}"


class ForeignPreparedModel(PreparedModel):
    """A prepared model the device under test did not make (as another device's would be): it runs nothing."""

    def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        callback: ExecutionCallback,
    ) -> ErrorStatus:
        """Refuses."""
        callback.notify(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO)
        return ErrorStatus.GENERAL_FAILURE

    def execute_synchronously(
        self, request: Request, measure: MeasureTiming, deadline: Deadline, loop_timeout_duration: Duration
    ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO

    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        timeout_after_fence: Duration,
    ) -> tuple[ErrorStatus, SyncFence | None, FencedExecutionCallback | None]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, None, None

    def configure_execution_burst(
        self, callback: BurstCallback, request_channel: object, result_channel: object
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """Refuses."""
        return ErrorStatus.GENERAL_FAILURE, None


class _Stop(Exception):
    """Ends a case early with this verdict."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.title)
        self.verdict = verdict


class _Session:
    """One case's run: prepared models, the buffer, the oracle's model of it, and the memories to close."""

    def __init__(
        self,
        target: MemoryDomainTarget,
        case: Case,
        device: Device,
        models: list[Model],
        inputs: list[list[np.ndarray | None]],
    ) -> None:
        self.target = target
        self.name = target.name
        self.case = case
        self.device = device
        self.models = models
        self.inputs = inputs
        self.allocation = Allocation.from_json(case.extras.get("allocation", {}))
        self.prepared: list[PreparedModel] = []
        self.supported: list[bool] = []
        self.others: dict[int, PreparedModel | None] = {}  # second preparations (prepared models not allocated for)
        self.buffer: object | None = None
        self.token = 0
        self.model: BufferModel | None = None
        self.memories: list[Memory] = []
        self.extras: dict = {}
        self.done = False

    def close(self) -> None:
        """Drop the buffer and close every memory this run created."""
        self.buffer = None
        for memory in self.memories:
            memory.close()
        self.memories.clear()

    def memory(self, kind: str, size: int) -> Memory:
        """A new zero-filled memory, closed with the session."""
        memory = pool_from_json({"kind": kind, "size": int(size)})
        self.memories.append(memory)
        return memory

    # -- the run
    def run(self) -> Verdict:
        """Prepare, allocate, then each step in turn until the first finding."""
        try:
            for model in self.models:
                self._prepare(model)
            finding = self._allocate()
            if finding is not None:
                return verdict_of([finding], self.name, step="allocate", **self.extras)
            if self.buffer is None:
                return verdict_of([], self.name, **self.extras)
            handlers: dict[str, Callable[[dict], Breach | None]] = {
                "copyFrom": self._copy_from,
                "copyTo": self._copy_to,
                "execute": self._execute,
            }
            for i, step in enumerate(self.case.extras.get("steps", [])):
                finding = handlers[step["op"]](step)
                if finding is not None:
                    return verdict_of([finding], self.name, step=i, op=step["op"], **self.extras)
                if self.done:
                    break
            return verdict_of([], self.name, **self.extras)
        except _Stop as stop:
            return stop.verdict

    def _prepare(self, model: Model) -> None:
        """Prepare one case model; a driver that refuses a valid model ends the case (as the execution target)."""
        status, flags = supported_operations(self.device, model)
        finding = judge_supported_operations(status, flags, len(model.main.operations))
        if finding is None:
            p = prepare(self.device, model, timeout_s=self.target.timeout_s)
            finding, unsupported = judge_valid_preparation(p.launch, p.status, p.prepared, all(flags))
            if unsupported:
                raise _Stop(verdict_of([], self.name, unsupported=True))
            if finding is None and p.prepared is not None:
                self.prepared.append(p.prepared)
                self.supported.append(all(flags))
                return
        if validate_model(model):
            raise _Stop(verdict_of([], self.name, disputed="built as valid, the reference validator says invalid"))
        raise _Stop(verdict_of([finding] if finding else [], self.name))

    def _other(self, k: int) -> PreparedModel | None:
        """Case model k prepared once more: a prepared model the buffer was not allocated for."""
        if k not in self.others:
            p = prepare(self.device, self.models[k], timeout_s=self.target.timeout_s)
            self.others[k] = p.prepared if p.status == ErrorStatus.NONE else None
        return self.others[k]

    # -- allocate (D15)
    def _allocate(self) -> Breach | None:
        a = self.allocation
        listed: list[PreparedModel] = [
            self.prepared[int(p["model"])] if "model" in p else ForeignPreparedModel() for p in a.prepared
        ]
        desc, input_roles, output_roles = a.hal()

        def ask() -> tuple[ErrorStatus, object | None, int]:
            status, buffer, token = self.device.allocate(desc, listed, input_roles, output_roles)
            return status_of(status), buffer, int(token)

        status, buffer, token = call("allocate", ask)
        answer = (
            f"allocate answered {status.name} with {'a buffer' if buffer is not None else 'no buffer'} and "
            f"token {token}"
        )
        details = f"desc {a.desc}, input roles {a.input_roles}, output roles {a.output_roles}, prepared {a.prepared}"
        if not a.valid:
            allowed = {ErrorStatus.INVALID_ARGUMENT}
            scalar = a.operand_type is not None and is_scalar_type(a.operand_type)
            if not scalar and (a.dimensions is None or has_unknown_dimensions(a.dimensions)):
                allowed.add(ErrorStatus.GENERAL_FAILURE)  # the size is dynamic: the driver may call it unsupported
            if status in allowed and buffer is None and token == 0:
                return None
            return Breach(ALLOCATE_VALIDATES_ROLES, f"{answer} for roles that break {a.rule} ({a.mutation})", details)
        if status == ErrorStatus.NONE and buffer is not None and 0 < token < _U32:
            self.buffer, self.token = buffer, token
            assert a.operand_type is not None and a.dimensions is not None
            self.model = BufferModel(list(a.dimensions), int(a.operand_type))
            return None
        if status == ErrorStatus.GENERAL_FAILURE and buffer is None and token == 0:
            self.extras["unsupported"] = True
            return None
        return Breach(ALLOCATE_ACCEPTS_VALID_ROLES, f"{answer} for valid roles", details)

    # -- copies (D17, D18)
    def _copy_from(self, step: dict) -> Breach | None:
        b = self.model
        assert b is not None
        raw = pack(step["value"], b.operand_type)
        size = max(0, len(raw) + int(step.get("sizeDelta", 0)))
        memory = self.memory(step.get("kind", "ashmem"), size)
        memory.write(0, raw[:size])
        given = [int(d) for d in step.get("dims", [])]
        problem, effective = self._copy_from_problem(given, size)
        status = call("copyFrom", lambda: status_of(self.buffer.copy_from(memory, given)))  # type: ignore[union-attr]
        what = f"copyFrom of {size} bytes with dimensions {given}"
        before = b.describe()
        if status != ErrorStatus.NONE:
            b.fail(FAILED_COPY)  # whatever the reason (D17)
        if problem is not None:
            if status == ErrorStatus.INVALID_ARGUMENT:
                return None
            return Breach(COPY_VALIDATES_MEMORY, f"{what} answered {status.name}: {problem}", before)
        if status != ErrorStatus.NONE:
            return Breach(COPY_ROUND_TRIPS, f"{what} answered {status.name} for a valid copy", before)
        b.write(Content(tuple(effective), unpack(raw, b.operand_type, effective), exact=True))
        return None

    def _copy_from_problem(self, given: list[int], size: int) -> tuple[str | None, list[int]]:
        """(why IBuffer::copyFrom must refuse these dimensions and this memory size, or None; effective dims)."""
        b = self.model
        assert b is not None
        if b.scalar:
            if given:
                return "a scalar buffer takes no dimensions", []
            effective: list[int] = []
        elif not given:
            if has_unknown_dimensions(b.allocated):
                return f"no dimensions for a buffer allocated with unknown ones {b.allocated}", []
            effective = list(b.allocated)
        elif 0 in given:
            return "dimensions given must be fully specified", []
        elif merge_dimensions(b.allocated, given) is None:
            return f"dimensions conflict with the allocated {b.allocated}", []
        else:
            effective = given
        needed = b.byte_size(effective)
        if size != needed:
            return f"the memory has {size} bytes, the dimensions need {needed}", []
        return None, effective

    def _copy_to(self, step: dict, peek: bool = False) -> Breach | None:
        b = self.model
        assert b is not None
        right = b.byte_size(b.content.dims) if b.content is not None else b.allocated_size
        base = right if right is not None else int(step.get("fallbackBytes", 64))
        size = max(0, base + int(step.get("sizeDelta", 0)))
        size_ok = None if right is None else size == right
        memory = self.memory(step.get("kind", "ashmem"), size)
        status = call("copyTo", lambda: status_of(self.buffer.copy_to(memory)))  # type: ignore[union-attr]
        what = f"copyTo of {size} bytes" + (" (reading the buffer back before an execution reads it)" if peek else "")
        allowed = _copy_to_statuses(b.state, size_ok)
        if status not in allowed:
            if b.state == UNINIT and status == ErrorStatus.NONE:
                rule = _UNINITIALIZED_RULES[b.reason]
            elif size_ok is False:
                rule = COPY_VALIDATES_MEMORY
            else:
                rule = COPY_ROUND_TRIPS
            expected = " or ".join(sorted(s.name for s in allowed))
            return Breach(rule, f"{what} answered {status.name}, expected {expected}", b.describe())
        if status != ErrorStatus.NONE:
            if status == ErrorStatus.GENERAL_FAILURE:
                b.resolve(False)
            return None
        b.resolve(True)
        content = b.content
        assert content is not None
        actual = unpack(memory.read(0, size), b.operand_type, content.dims)
        if content.value is not None:
            if content.exact:
                if actual.tobytes() != np.ascontiguousarray(content.value).tobytes():
                    return Breach(COPY_ROUND_TRIPS, f"{what} gave back other bytes than were written", b.describe())
            else:
                comparison = compare(
                    content.value,
                    actual,
                    b.operand_type,
                    content.relaxed,
                    quantized_operations=content.quantized_operations,
                )
                if not comparison.ok:
                    return Breach(
                        VALUES_MATCH_REFERENCE,
                        f"{what}: the buffer an execution wrote differs from the reference",
                        f"{comparison.describe()}; {b.describe()}",
                    )
        b.content = Content(content.dims, actual, exact=True)
        return None

    # -- executions (D16, D17, D18)
    def _execute(self, step: dict) -> Breach | None:
        b = self.model
        assert b is not None
        k = int(step["model"])
        model = self.models[k]
        # io indexes the model does not have are left out (decode draws none; a hand-edited case may).
        ins = [int(i) for i in step.get("inputs", []) if 0 <= int(i) < len(model.main.input_indexes)]
        outs = [int(o) for o in step.get("outputs", []) if 0 <= int(o) < len(model.main.output_indexes)]
        if not ins and not outs:
            return None
        own_model = step.get("prepared", "own") == "own"
        own_token = step.get("token", "own") == "own"
        prepared = self.prepared[k] if own_model else self._other(k)
        if prepared is None:
            return None  # a second preparation was refused: nothing to misuse
        dims = self._request_dims(step)
        illegal = self._illegal(k, own_model, own_token, ins, outs, dims)
        if not illegal and ins:
            finding = self._peek()
            if finding is not None:
                return finding
        path = self._path(step, model, outs, dims)
        request, read_output, lengths, reference = self._request(step, k, ins, outs, dims, own_token, illegal)
        deadline = time.monotonic_ns() - 1 if step.get("deadline") == "passed" else None
        args = ExecutionArgs(deadline=deadline, timeout_s=self.target.timeout_s)
        outcome = call(f"{path} execution", PATHS[path], prepared, request, args)
        if illegal:
            return self._judge_illegal(outcome, illegal, reads=own_token and bool(ins), writes=own_token and bool(outs))
        if ins and b.state == UNINIT:
            return self._judge_uninitialized_read(outcome, self._dims_unknown(model, ins, dims))
        return self._judge_legal(step, k, ins, outs, outcome, reference, lengths, read_output)

    def _request_dims(self, step: dict) -> list[int]:
        b = self.model
        assert b is not None
        dims = step.get("dims")
        if dims is None:
            return []
        if dims == "allocated":
            return list(b.allocated)
        if dims == "current":
            return list(b.content.dims) if b.content is not None else list(b.allocated)
        return [int(d) for d in dims]

    def _illegal(
        self, k: int, own_model: bool, own_token: bool, ins: list[int], outs: list[int], dims: list[int]
    ) -> list[str]:
        """Why D16 forbids this use of the buffer (empty when it is legal)."""
        b = self.model
        assert b is not None
        why = []
        if not own_token:
            why.append("a token that names no buffer")
        if not own_model:
            why.append("a prepared model the buffer was not allocated for")
        declared = _declared(self.allocation, len(self.models))[k]
        why += [f"input {io} is not a role of the buffer" for io in ins if io not in declared[INPUT]]
        why += [f"output {io} is not a role of the buffer" for io in outs if io not in declared[OUTPUT]]
        if ins and outs:
            why.append("the buffer is both an input and an output")
        if len(outs) > 1:
            why.append("the buffer is two outputs")
        if dims:
            main = self.models[k].main
            operands = [main.operands[main.input_indexes[i]] for i in ins] + [
                main.operands[main.output_indexes[o]] for o in outs
            ]
            if merge_dimensions(b.allocated, dims) is None:
                why.append(f"dimensions {dims} conflict with the buffer's {b.allocated}")
            elif any(merge_dimensions(op.dimensions, dims) is None for op in operands):
                why.append(f"dimensions {dims} conflict with the operand's")
            elif ins and b.content is not None and merge_dimensions(list(b.content.dims), dims) is None:
                why.append(f"dimensions {dims} conflict with the buffer's content {list(b.content.dims)}")
        return why

    def _peek(self) -> Breach | None:
        """Before an execution reads the buffer: learn its exact content (and whether it is initialized)."""
        b = self.model
        assert b is not None
        if b.state == UNINIT or (b.state == INIT and b.content is not None and b.content.exact):
            return None
        return self._copy_to({"kind": MemoryKind.ASHMEM.value, "sizeDelta": 0}, peek=True)

    def _path(self, step: dict, model: Model, outs: list[int], dims: list[int]) -> str:
        """The step's path; the fenced path only when every output is fully specified (V37), else sync."""
        path = step.get("path", "sync")
        if path != "fenced":
            return path
        b = self.model
        assert b is not None
        main = model.main
        for j, index in enumerate(main.output_indexes):
            operand = main.operands[index]
            if is_scalar_type(operand.type):
                continue
            known = list(operand.dimensions)
            if j in outs:
                known = merge_dimensions(merge_dimensions(known, dims) or known, b.allocated) or known
            if has_unknown_dimensions(known):
                return "sync"
        return path

    def _request(
        self, step: dict, k: int, ins: list[int], outs: list[int], dims: list[int], own_token: bool, illegal: list[str]
    ) -> tuple[Request, Callable[[int, Sequence[int]], np.ndarray], list[int | None], ReferenceResult | None]:
        """The request (regular arguments in one pool, the buffer by its token) and the reference's result."""
        b = self.model
        assert b is not None
        model = self.models[k]
        main = model.main
        values = list(self.inputs[k])
        reference = None
        if not illegal and not (ins and b.state == UNINIT):
            for io in ins:
                assert b.content is not None and b.content.value is not None
                values[io] = b.content.value
            reference = run_model(model, values)
        sizes = _output_sizes(model, reference)
        small = step.get("smallOutput")
        lengths: list[int | None] = []
        for j, size in enumerate(sizes):
            if j in outs:
                lengths.append(None)
            elif j == small:
                lengths.append(size // 2)
            else:
                lengths.append(size)
        token = self.token if own_token else BAD_TOKENS.get(str(step.get("token")), 0)
        chunks: list[tuple[int, bytes]] = []
        offset = 0

        def place(length: int) -> DataLocation:
            nonlocal offset
            at = offset
            offset = -(-(offset + length) // 8) * 8
            return DataLocation(0, at, length)

        in_args = []
        for i, (index, value) in enumerate(zip(main.input_indexes, self.inputs[k])):
            if i in ins:
                in_args.append(RequestArgument(False, DataLocation(1, 0, 0), list(dims)))
            elif value is None:
                in_args.append(RequestArgument(has_no_value=True))
            else:
                data = np.ascontiguousarray(value, dtype=numpy_dtype(main.operands[index].type)).tobytes()
                location = place(len(data))
                chunks.append((location.offset, data))
                in_args.append(RequestArgument(False, location, [int(d) for d in np.shape(value)]))
        out_args = []
        for j, length in enumerate(lengths):
            if j in outs:
                out_args.append(RequestArgument(False, DataLocation(1, 0, 0), list(dims)))
            else:
                out_args.append(RequestArgument(False, place(int(length or 0)), []))
        pool = self.memory(step.get("kind", MemoryKind.ASHMEM.value), max(offset, 1))
        for at, data in chunks:
            pool.write(at, data)
        request = Request(in_args, out_args, [pool, DriverBufferToken(token)])

        def read_output(j: int, shape: Sequence[int]) -> np.ndarray:
            operand_type = main.operands[main.output_indexes[j]].type
            loc = out_args[j].location
            nbytes = element_size(operand_type) * math.prod(shape)
            return unpack(pool.read(loc.offset, nbytes), operand_type, shape)

        return request, read_output, lengths, reference

    def _judge_illegal(self, outcome: Outcome, why: list[str], *, reads: bool, writes: bool) -> Breach | None:
        """D16: refused with INVALID_ARGUMENT (GENERAL_FAILURE too when it reads an uninitialized buffer)."""
        b = self.model
        assert b is not None
        allowed = {ErrorStatus.INVALID_ARGUMENT}
        if reads and b.state != INIT:
            allowed.add(ErrorStatus.GENERAL_FAILURE)
        before = b.describe()
        if writes:
            b.unsure()  # whether a refused request counts as a failed execution (D17) is left open
        title = f"{outcome.path} execution answered {outcome.status.name} for an illegal use: {why[0]}"
        if outcome.status not in allowed:
            return Breach(ILLEGAL_USE_REJECTED, title, "; ".join(why) + f"; {before}", path=outcome.path)
        if outcome.output_shapes:
            return Breach(ILLEGAL_USE_REJECTED, f"{title}, with output shapes", path=outcome.path)
        return judge_timing(outcome, False) or judge_notes(outcome)

    def _dims_unknown(self, model: Model, ins: list[int], dims: list[int]) -> bool:
        """Some input the buffer gives has dimensions that neither the model, the request nor the allocation know."""
        b = self.model
        assert b is not None
        main = model.main
        for io in ins:
            operand = main.operands[main.input_indexes[io]]
            if is_scalar_type(operand.type):
                continue
            known = merge_dimensions(merge_dimensions(operand.dimensions, dims) or [], b.allocated)
            if known is None or has_unknown_dimensions(known):
                return True
        return False

    def _judge_uninitialized_read(self, outcome: Outcome, dims_unknown: bool) -> Breach | None:
        """D17: a legal execution reading an uninitialized buffer is GENERAL_FAILURE.

        When the input's dimensions are known nowhere (the buffer has no content to give them), refusing the
        request as one with an input of unknown dimensions (V33, INVALID_ARGUMENT) is right as well.
        """
        b = self.model
        assert b is not None
        allowed = {ErrorStatus.GENERAL_FAILURE} | ({ErrorStatus.INVALID_ARGUMENT} if dims_unknown else set())
        if outcome.status not in allowed:
            return Breach(
                _UNINITIALIZED_RULES[b.reason],
                f"{outcome.path} execution read an uninitialized buffer and answered {outcome.status.name}",
                b.describe(),
                path=outcome.path,
            )
        if outcome.output_shapes:
            return Breach(
                UNINITIALIZED_READ_FAILS, f"{outcome.path}: output shapes with {outcome.status.name}", path=outcome.path
            )
        return judge_timing(outcome, False) or judge_notes(outcome)

    def _judge_legal(
        self,
        step: dict,
        k: int,
        ins: list[int],
        outs: list[int],
        outcome: Outcome,
        reference: ReferenceResult | None,
        lengths: list[int | None],
        read_output: Callable[[int, Sequence[int]], np.ndarray],
    ) -> Breach | None:
        """A legal use: the status, shapes and values the reference prescribes; then the buffer's new state."""
        b = self.model
        assert b is not None and reference is not None
        model = self.models[k]
        status = outcome.status
        allowed, expectation, why = self._allowed(step, k, outs, outcome.path, reference, lengths)
        if ins and status in _DATA_FAILURES and reference.status == ErrorStatus.NONE and self._unusual(k, ins):
            # The buffer gave an input other than the one the model was generated with: a driver may check
            # relations between inputs, or parameter ranges, that the reference does not. Reading left the buffer
            # as it was.
            self.extras["disputed"] = f"{status.name} for an input from the buffer the model was not generated with"
            return None
        before = b.describe()
        if outs:
            self._written(model, outs[0], status, status in allowed, reference)
        if expectation is not None:
            findings = judge_execution(outcome, expectation)
            if findings:
                return findings[0]
        else:
            if status not in allowed:
                names = " or ".join(sorted(s.name for s in allowed))
                return Breach(
                    STATUS_EXPECTED,
                    f"{outcome.path} execution answered {status.name}, expected {names}",
                    f"reference {reference.status.name}{why}; {before}",
                    path=outcome.path,
                )
            finding = judge_notes(outcome) or judge_timing(outcome, False)
            if finding is not None:
                return finding
            if status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE) and outcome.output_shapes:
                return Breach(STATUS_EXPECTED, f"{outcome.path}: output shapes with {status.name}", path=outcome.path)
        if status != ErrorStatus.NONE or expectation is None or expectation.status != ErrorStatus.NONE:
            return None
        return self._judge_values(model, outs, outcome.path, reference, read_output)

    def _unusual(self, k: int, ins: list[int]) -> bool:
        """The buffer's content is not the value model k's inputs `ins` were generated with."""
        b = self.model
        assert b is not None and b.content is not None and b.content.value is not None
        mine = np.ascontiguousarray(b.content.value)
        for io in ins:
            generated = self.inputs[k][io]
            if generated is None or np.shape(generated) != mine.shape:
                return True
            if np.ascontiguousarray(generated, dtype=mine.dtype).tobytes() != mine.tobytes():
                return True
        return False

    def _allowed(
        self, step: dict, k: int, outs: list[int], path: str, reference: ReferenceResult, lengths: list[int | None]
    ) -> tuple[set[ErrorStatus], Expectation | None, str]:
        """(statuses a legal execution may end with, the full expectation when the reference prescribes one, why)."""
        b = self.model
        assert b is not None
        model = self.models[k]
        fits = [
            _fits(b.allocated, np.shape(reference.outputs[o]))
            for o in outs
            if reference.status == ErrorStatus.NONE and not reference.unspecified
        ]
        unsupported = set() if self.supported[k] else {ErrorStatus.GENERAL_FAILURE}
        if step.get("deadline") == "passed":
            return set(MISSED_DEADLINE) | unsupported, None, " (the deadline had passed)"
        if reference.unspecified:
            self.done = True  # neither status nor content can be known: nothing after this is judged
            return set(ErrorStatus), None, " (unspecified)"
        if reference.status != ErrorStatus.NONE:
            return set(_DATA_FAILURES) | unsupported, None, ""
        if None in fits:
            # An empty output: its zero dimension also reads as "unknown" in the HAL, so whether the buffer's
            # allocated dimensions can hold it is open. Nothing after this is judged.
            self.done = True
            return {ErrorStatus.NONE} | _WRONG_SHAPE, None, " (an empty output)"
        if False in fits:
            return set(_WRONG_SHAPE) | unsupported, None, ", an output the buffer's dimensions cannot hold"
        expected_status, shapes = judge_output_sizes(model, lengths, reference.outputs)
        expectation = Expectation(
            status=expected_status,
            shapes=shapes,
            fully_specified=self._fully_specified(model, outs),
            unsupported_ok=not self.supported[k],
        )
        return set(expectation.acceptable(path)), expectation, ""

    def _written(self, model: Model, out: int, status: ErrorStatus, allowed: bool, reference: ReferenceResult) -> None:
        """The buffer's state after an execution that was to write it: written on NONE; after a failure
        uninitialized, unless the failure was INVALID_ARGUMENT (which may be a refusal that changes nothing)."""
        b = self.model
        assert b is not None
        if self.done:
            b.unsure()
        elif status == ErrorStatus.NONE and allowed:
            value = reference.outputs[out]
            judged = out not in unspecified_outputs(model)
            relaxed = model.relax_computation_float32_to_float16
            steps = quantized_operations(model)
            b.write(Content(tuple(np.shape(value)), value if judged else None, False, relaxed, steps))
        elif status == ErrorStatus.INVALID_ARGUMENT:
            b.unsure()
        else:
            b.fail(FAILED_EXECUTION)

    def _judge_values(
        self,
        model: Model,
        outs: list[int],
        path: str,
        reference: ReferenceResult,
        read_output: Callable[[int, Sequence[int]], np.ndarray],
    ) -> Breach | None:
        """O2 on the regular outputs of a successful execution (the buffer's are judged when read back)."""
        main = model.main
        expected = reference.outputs
        actual = [expected[j] if j in outs else read_output(j, np.shape(expected[j])) for j in range(len(expected))]
        finding = judge_outputs(
            path,
            actual,
            expected,
            [main.operands[index].type for index in main.output_indexes],
            model.relax_computation_float32_to_float16,
            ignore=unspecified_outputs(model) | set(outs),
            quantized_operations=quantized_operations(model),
        )
        if finding is None:
            return None
        return Breach(VALUES_MATCH_REFERENCE, f"{finding.title} ({finding.rule})", finding.details, path=path)

    def _fully_specified(self, model: Model, outs: list[int]) -> bool:
        """Every output's dimensions are known before the execution (the buffer's from its allocation)."""
        b = self.model
        assert b is not None
        main = model.main
        for j, index in enumerate(main.output_indexes):
            operand = main.operands[index]
            if is_scalar_type(operand.type):
                continue
            dims = merge_dimensions(operand.dimensions, b.allocated) if j in outs else list(operand.dimensions)
            if dims is None or has_unknown_dimensions(dims):
                return False
        return True


def _fits(allocated: Sequence[int], actual: Sequence[int]) -> bool | None:
    """Whether a buffer of these allocated dimensions holds an output of this actual shape (None: it is empty)."""
    if 0 in actual:
        return None
    if not allocated:
        return True
    return len(allocated) == len(actual) and all(a in (0, x) for a, x in zip(allocated, actual))


def _copy_to_statuses(state: str, size_ok: bool | None) -> frozenset[ErrorStatus]:
    """What copyTo may answer in this state with a memory of the right size (True), wrong (False) or unknowable."""
    if state == INIT:
        return frozenset({ErrorStatus.NONE if size_ok is not False else ErrorStatus.INVALID_ARGUMENT})
    if state == UNINIT:
        if size_ok is True:
            return frozenset({ErrorStatus.GENERAL_FAILURE})
        return frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})
    if size_ok is not False:
        return frozenset({ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE})
    return frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})


def _output_sizes(model: Model, reference: ReferenceResult | None) -> list[int]:
    """Bytes each main output needs: the reference's actual outputs, else the declared dimensions, else 64."""
    main = model.main
    sizes = []
    for j, index in enumerate(main.output_indexes):
        operand = main.operands[index]
        if reference is not None and reference.status == ErrorStatus.NONE and j < len(reference.outputs):
            sizes.append(element_size(operand.type) * math.prod(np.shape(reference.outputs[j])))
        elif is_scalar_type(operand.type):
            sizes.append(element_size(operand.type))
        elif not has_unknown_dimensions(operand.dimensions):
            sizes.append(element_size(operand.type) * math.prod(operand.dimensions))
        else:
            sizes.append(64)
    return sizes


TARGET = register_target(MemoryDomainTarget())

__all__ = ["TARGET", "BufferModel", "Content", "ForeignPreparedModel", "MemoryDomainTarget"]
