"""The memory_domain target: driver-managed buffers (IDevice::allocate, IBuffer) through their life cycle.

A case is one or two generated models (the second may be the first prepared again), an allocation drawn by
harness.gen.roles (valid, or invalid and labelled with the D15 clause it breaks) and, for a valid one, the steps
harness.gen.buffer_steps plans on the buffer: copies in and out, executions writing or reading it, and illegal
uses of it (the step format is described there).

`run` prepares the models, allocates and keeps the oracle's model of the buffer (harness.oracle.buffers: D17/D18):
uninitialized, initialized with a known content, or either of the two where the HAL leaves it open. Every step is
judged against it: illegal uses (D16) must be refused, reads of an uninitialized buffer must fail, copies must
check their memory, failed writes must leave the buffer uninitialized, and what executions read from or write to
the buffer must match the reference executor.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import (
    Case,
    Live,
    close_model_pools,
    inputs_from_json,
    inputs_to_json,
    model_from_json,
    pack,
    pool_from_json,
    unpack,
)
from harness.gen.buffer_steps import (
    BAD_TOKENS,
    DEFAULT_STEPS,
    declared_roles,
    plan_steps,
    role_candidates,
    value_shapes,
)
from harness.gen.model import ModelConfig, generate_model
from harness.gen.roles import INPUT, OUTPUT, Allocation, RolesConfig, break_roles, generate_roles
from harness.gen.source import GenerationRejected, Source, chance, weighted
from harness.hal import (
    DataLocation,
    Device,
    DriverBufferToken,
    ErrorStatus,
    Model,
    PreparedModel,
    Request,
    RequestArgument,
    element_size,
    has_unknown_dimensions,
    is_scalar_type,
    merge_dimensions,
    numpy_dtype,
)
from harness.hal.memory import Memory, MemoryKind
from harness.oracle.buffers import (
    INITIALIZED,
    UNINITIALIZED,
    BufferModel,
    LegalUse,
    illegal_uses,
    judge_allocation,
    judge_copy_from,
    judge_copy_to,
    judge_illegal_use,
    judge_legal_use,
    judge_uninitialized_read,
)
from harness.oracle.outputs import reference_is_stable
from harness.oracle.rules import Breach, judge_supported_operations, judge_valid_preparation, verdict_of
from harness.oracle.verdict import Verdict
from harness.paths import PATHS, ExecutionArgs
from harness.reference import ReferenceResult, run_model, validate_model
from harness.targets._common import (
    DEFAULT_TIMEOUT_S,
    call,
    guarded,
    prepare,
    prepared_invalid_model,
    status_of,
    supported_operations,
)
from harness.targets._foreign import ForeignPreparedModel
from harness.targets.base import register_target

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
                source,
                models,
                self.roles_config,
                candidates=role_candidates(generated),
                shapes=value_shapes(generated),
            )
            if chance(source, self.invalid_probability):
                allocation = break_roles(source, models, allocation)
            steps = plan_steps(source, generated, allocation, self.paths, self.steps, self.max_steps)
        except BaseException:
            for g in {id(g): g for g in generated}.values():
                g.close()
            raise
        # The other model lives in the extras as JSON (it is built anew for each run); the first is the case's.
        if len(generated) > 1 and generated[1] is not generated[0]:
            generated[1].close()
        expect: dict = {"valid": allocation.valid}
        if not allocation.valid:
            expect.update(rule=allocation.rule, mutation=allocation.mutation)
        return Case(
            self.name,
            execution={"measure": False},
            expect=expect,
            extras={"models": models_json, "allocation": allocation.to_json(), "steps": steps},
            live=Live(generated[0].model, generated[0].inputs),
        )

    def run(self, case: Case, device: Device) -> Verdict:
        """Prepare, allocate and run the steps, each judged against the buffer's model and the reference."""
        live = case.materialized()
        others = _other_models(case)
        models = [live.model, *(m for m, _ in others)]
        inputs = [live.inputs, *(i for _, i in others)]
        session = _Session(self, case, device, models, inputs)
        try:
            return guarded(self.name, session.run)
        finally:
            session.close()
            for model, _ in others:
                close_model_pools(model)


def _other_models(case: Case) -> list[tuple[Model, list[np.ndarray | None]]]:
    """The case's models besides its own (each built anew, so a repeated model gets pools of its own) and their
    input values."""
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
    others = []
    for model_json, inputs_json in zip(model_jsons[1:], inputs_jsons[1:]):
        model = model_from_json(model_json)
        others.append((model, inputs_from_json(inputs_json, model)))
    return others


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
            if self.model is None:
                return verdict_of([], self.name, **self.extras)
            handlers: dict[str, Callable[[dict], Breach | None]] = {
                "copyFrom": self._copy_from,
                "copyTo": self._copy_to,
                "execute": self._execute,
            }
            for i, step in enumerate(self.case.extras.get("steps", [])):
                finding = handlers[step["op"]](step)
                if finding is not None:
                    return self._on_prepared(verdict_of([finding], self.name, step=i, op=step["op"], **self.extras))
                if self.model.lost:
                    break  # the oracle can no longer follow the buffer: nothing after this is judged
            return verdict_of([], self.name, **self.extras)
        except _Stop as stop:
            return stop.verdict

    def _on_prepared(self, verdict: Verdict) -> Verdict:
        """A step's finding, or the acceptance of a case model the driver should have refused (every model here
        was prepared)."""
        for model in self.models:
            charged = prepared_invalid_model(verdict, model, self.name)
            if charged is not verdict:
                return charged
        return verdict

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
        finding = judge_allocation(
            status,
            buffer,
            token,
            valid=a.valid,
            operand_type=a.operand_type,
            dimensions=a.dimensions,
            broken=f"{a.rule} ({a.mutation})",
            details=f"desc {a.desc}, input roles {a.input_roles}, output roles {a.output_roles}, prepared {a.prepared}",
        )
        if finding is None and a.valid:
            if status == ErrorStatus.NONE:
                assert a.operand_type is not None and a.dimensions is not None
                self.buffer, self.token = buffer, token
                self.model = BufferModel(list(a.dimensions), int(a.operand_type))
            else:
                self.extras["unsupported"] = True
        return finding

    # -- copies (D17, D18)
    def _copy_from(self, step: dict) -> Breach | None:
        b = self.model
        assert b is not None
        raw = pack(step["value"], b.operand_type)
        size = max(0, len(raw) + int(step.get("sizeDelta", 0)))
        memory = self.memory(step.get("kind", "ashmem"), size)
        memory.write(0, raw[:size])
        given = [int(d) for d in step.get("dims", [])]
        status = call("copyFrom", lambda: status_of(self.buffer.copy_from(memory, given)))  # type: ignore[union-attr]
        return judge_copy_from(b, given, size, status, lambda dims: unpack(raw, b.operand_type, dims))

    def _copy_to(self, step: dict, peek: bool = False) -> Breach | None:
        b = self.model
        assert b is not None
        right = b.content_size
        base = right if right is not None else int(step.get("fallbackBytes", 64))
        size = max(0, base + int(step.get("sizeDelta", 0)))
        memory = self.memory(step.get("kind", "ashmem"), size)
        status = call("copyTo", lambda: status_of(self.buffer.copy_to(memory)))  # type: ignore[union-attr]
        return judge_copy_to(
            b, size, status, lambda dims: unpack(memory.read(0, size), b.operand_type, dims), peek=peek
        )

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
        roles = declared_roles(self.allocation, len(self.models))[k]
        illegal = illegal_uses(
            b,
            model,
            ins,
            outs,
            dims,
            input_roles=roles[INPUT],
            output_roles=roles[OUTPUT],
            own_model=own_model,
            own_token=own_token,
        )
        if not illegal and ins:
            finding = self._peek()
            if finding is not None:
                return finding
        path = self._path(step, model, outs, dims)
        request, read_output, lengths, reference, stable = self._request(step, k, ins, outs, dims, own_token, illegal)
        deadline = time.monotonic_ns() - 1 if step.get("deadline") == "passed" else None
        args = ExecutionArgs(deadline=deadline, timeout_s=self.target.timeout_s)
        outcome = call(f"{path} execution", PATHS[path], prepared, request, args)
        if illegal:
            return judge_illegal_use(
                b, outcome, illegal, reads=own_token and bool(ins), writes=own_token and bool(outs)
            )
        if ins and b.state == UNINITIALIZED:
            return judge_uninitialized_read(b, outcome, model, ins, dims)
        assert reference is not None
        use = LegalUse(
            model,
            ins,
            outs,
            reference,
            lengths,
            read_output,
            self.inputs[k],
            supported=self.supported[k],
            deadline_passed=step.get("deadline") == "passed",
            stable=stable,
        )
        finding, dispute = judge_legal_use(b, outcome, use)
        if dispute is not None:
            self.extras["disputed"] = dispute
        return finding

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

    def _peek(self) -> Breach | None:
        """Before an execution reads the buffer: learn its exact content (and whether it is initialized)."""
        b = self.model
        assert b is not None
        if b.state == UNINITIALIZED or (b.state == INITIALIZED and b.content is not None and b.content.exact):
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
    ) -> tuple[
        Request,
        Callable[[int, Sequence[int]], np.ndarray],
        list[int | None],
        ReferenceResult | None,
        Callable[[], bool],
    ]:
        """The request (regular arguments in one pool, the buffer by its token), the reference's result and whether
        that result is stable under the reference's probes (asked when needed)."""
        b = self.model
        assert b is not None
        model = self.models[k]
        main = model.main
        values = list(self.inputs[k])
        reference = None
        if not illegal and not (ins and b.state == UNINITIALIZED):
            for io in ins:
                assert b.content is not None and b.content.value is not None
                values[io] = b.content.value
            reference = run_model(model, values)

        def stable() -> bool:
            return reference is None or reference_is_stable(model, values, reference)

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

        return request, read_output, lengths, reference, stable


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

__all__ = ["TARGET", "MemoryDomainTarget"]
