"""The validation target: getSupportedOperations and prepareModel on valid models and on V-catalogue mutations.

A case is a generated model, left valid, mutated into an invalid one (V1-V20, V23-V25), prepared with an
invalid preference or priority (V21, V22), or with one pool holding its constants made an unusual or malformed
memory handle (harness.gen.handles: a BLOB hardware buffer it must use, or one it must refuse, D13 and D25).
Mutations that break a rule of particular operations (a quantized bias's scale, a constant stride) find a place
only in the few models holding those operations, so an "operation" case draws one such mutation first and a model
made of its operations to apply it to.
The expectation comes from how the case was built (`case.expect`); when the driver disagrees with it, the reference
validator has the last word, so a mutation that happened to leave the model valid is never reported as a driver
failure. A model over a memory the driver must refuse is judged by judge_unusable_model_pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.case import Case, Live, close_model_pools, model_to_json, pools_from_json
from harness.gen.handles import change_model_pool
from harness.gen.model import GeneratedModel, ModelConfig, default_operations, generate_model
from harness.gen.mutations import Mutation, apply_mutation, apply_random, operation_mutations
from harness.gen.source import GenerationRejected, Source
from harness.hal import Device, Model, OperandLifeTime, Operation, Subgraph
from harness.oracle.rules import (
    Breach,
    judge_model_rejected,
    judge_preparation_rejected,
    judge_supported_operations,
    judge_unusable_model_pool,
    judge_valid_preparation,
    verdict_of,
)
from harness.oracle.verdict import Verdict
from harness.reference import validate_model, validate_preparation
from harness.targets._common import (
    DEFAULT_PREFERENCE,
    DEFAULT_PRIORITY,
    DEFAULT_TIMEOUT_S,
    guarded,
    prepare,
    supported_operations,
)
from harness.targets.base import register_target

# How often (out of 10) decode leaves the model valid, mutates the model (any model, or one made for a mutation
# of particular operations) or the preparation arguments, or changes a pool holding constants into an unusual
# memory handle.
DEFAULT_KINDS = ("valid", "valid", "model", "model", "model", "model", "model", "operation", "preparation", "pool")


@dataclass
class ValidationTarget:
    """Fuzz target for model validation and preparation."""

    name: str = "validation"
    config: ModelConfig = field(default_factory=ModelConfig)
    timeout_s: float = DEFAULT_TIMEOUT_S
    # Drawn uniformly (repeat to weigh): "valid", "model", "operation", "preparation" or "pool" (valid when no pool
    # holds constants).
    kinds: tuple[str, ...] = DEFAULT_KINDS

    def decode(self, source: Source) -> Case:
        """A generated model, valid, mutated (model or preparation arguments) or over an unusual pool."""
        generated = generate_model(source, self.config)
        kind = source.choice(self.kinds)
        execution = {"preference": DEFAULT_PREFERENCE, "priority": DEFAULT_PRIORITY}
        changed = change_model_pool(generated.model, source) if kind == "pool" else None
        if changed is not None:
            change, index, model = changed
            generated.close()
            expect = {"valid": True, "kind": "pool", "pool": index, "handle": change.name, "rule": change.rule}
            expect["memory"] = change.in_model
            return Case(self.name, execution=execution, expect=expect, live=Live(model))
        if kind in ("valid", "pool"):
            return Case(self.name, execution=execution, expect={"valid": True}, live=Live(generated.model))
        if kind == "operation":
            kind = "model"  # judged as any invalid model
            generated, (mutation, model) = self._operation_mutation(generated, source)
        elif kind == "model":
            mutation, model = apply_random("model", generated.model, source)
        if kind == "model":
            if _reference_regions(model) != _reference_regions(generated.model):
                # The mutation moved constants in the pools: what runs is what the JSON replays, made from pools that
                # hold exactly the values the JSON gives (the old ones also hold bytes no operand refers to now).
                old, model = model, replace(model, pools=pools_from_json(model_to_json(model)))
                close_model_pools(old)
                generated.close()
        else:
            mutation, arguments = apply_random("preparation", None, source)
            execution.update(_preparation_arguments(arguments))
            model = generated.model
        expect = {"valid": False, "kind": kind, "mutation": mutation.name, "rule": mutation.v}
        return Case(self.name, execution=execution, expect=expect, live=Live(model))

    def _operation_mutation(
        self, generated: GeneratedModel, source: Source
    ) -> tuple[GeneratedModel, tuple[Mutation, Model]]:
        """A mutation of particular operations, applied to a model made of them (in place of `generated`); any
        model mutation when the drawn one finds no place (a float or per-channel typing, say)."""
        m: Mutation = source.choice(operation_mutations())
        operations = m.operations.intersection(self.config.operations or default_operations())
        if not operations:
            return generated, apply_random("model", generated.model, source)
        generated.close()
        made = generate_model(source, replace(self.config, operations=operations))
        try:
            return made, (m, apply_mutation(m, made.model, source))
        except GenerationRejected:
            return made, apply_random("model", made.model, source)

    def run(self, case: Case, device: Device) -> Verdict:
        """getSupportedOperations and prepareModel on the case's model, judged against its expectation."""
        model = case.materialized().model
        return guarded(self.name, lambda: self._judge(case, model, device))

    def _judge(self, case: Case, model: Model, device: Device) -> Verdict:
        preference = int(case.execution.get("preference", DEFAULT_PREFERENCE))
        priority = int(case.execution.get("priority", DEFAULT_PRIORITY))
        status, flags = supported_operations(device, model)
        preparation = prepare(device, model, preference=preference, priority=priority, timeout_s=self.timeout_s)
        if case.expect.get("memory") == "refused":
            p = preparation
            readers = pool_readers(model, int(case.expect["pool"]))
            count = len(model.main.operations)
            finding = judge_unusable_model_pool(status, flags, readers, count, p.launch, p.status, p.prepared)
            return verdict_of([finding] if finding else [], self.name)
        kind = case.expect.get("kind") if not case.expect.get("valid", True) else None
        finding, unsupported = _judge_as(kind, model, status, flags, preparation)
        extras: dict = {"unsupported": True} if unsupported else {}
        if finding is not None:
            # The case's expectation is the generator's intent; the reference validator decides when they differ.
            actual = _validator_kind(model, preference, priority)
            if actual != kind:
                extras["disputed"] = f"built as {kind or 'valid'}, the reference validator says {actual or 'valid'}"
                finding, unsupported = _judge_as(actual, model, status, flags, preparation)
                if unsupported:
                    extras["unsupported"] = True
        return verdict_of([finding] if finding else [], self.name, **extras)


def _judge_as(
    kind: str | None, model: Model, status: object, flags: list[bool], preparation: object
) -> tuple[Breach | None, bool]:
    """(finding, unsupported) for a case that is valid (None), an invalid model or invalid preparation arguments."""
    p = preparation
    if kind == "model":
        return judge_model_rejected(status, flags, p.launch, p.status, p.prepared), False  # type: ignore[attr-defined]
    finding = judge_supported_operations(status, flags, len(model.main.operations))  # type: ignore[arg-type]
    if finding is not None:
        return finding, False
    if kind == "preparation":
        return judge_preparation_rejected(p.launch, p.status, p.prepared), False  # type: ignore[attr-defined]
    return judge_valid_preparation(p.launch, p.status, p.prepared, all(flags))  # type: ignore[attr-defined]


def pool_readers(model: Model, pool: int) -> list[int]:
    """The operations of main that read a constant in `pool`, themselves or through the subgraphs they reference."""

    def reads(graph: Subgraph, operation: Operation, seen: set[int]) -> bool:
        for i in operation.inputs:
            operand = graph.operands[i]
            if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE and operand.location.pool_index == pool:
                return True
            if operand.lifetime == OperandLifeTime.SUBGRAPH and operand.location.offset not in seen:
                seen.add(operand.location.offset)
                sub = model.referenced[operand.location.offset]
                if any(reads(sub, op, seen) for op in sub.operations):
                    return True
        return False

    return [k for k, op in enumerate(model.main.operations) if reads(model.main, op, set())]


def _validator_kind(model: Model, preference: int, priority: int) -> str | None:
    if validate_model(model):
        return "model"
    if validate_preparation(preference, priority):
        return "preparation"
    return None


def _reference_regions(model: Model) -> set[tuple[int, int, int, int]]:
    """(pool identity, pool, offset, length) of every CONSTANT_REFERENCE operand."""
    return {
        (
            id(model.pools[o.location.pool_index]) if 0 <= o.location.pool_index < len(model.pools) else -1,
            o.location.pool_index,
            o.location.offset,
            o.location.length,
        )
        for graph in (model.main, *model.referenced)
        for o in graph.operands
        if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE
    }


def _preparation_arguments(arguments: object) -> dict:
    """The preference and priority a preparation mutation produced, as case.execution keys."""
    if isinstance(arguments, dict):
        return {k: int(arguments[k]) for k in ("preference", "priority") if k in arguments}
    preference, priority = arguments  # type: ignore[misc]
    return {"preference": int(preference), "priority": int(priority)}


TARGET = register_target(ValidationTarget())
