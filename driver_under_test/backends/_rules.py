"""The rule table of a translating backend (LiteRT, ONNX Runtime), and the support check it answers with.

A rule is a function that writes one HAL operation in the engine's format (its docstring gives the HAL operand
order it consumes and how it maps), plus the conditions under which it can: the operand types it accepts
(`types`, checked on input `type_input`), the inputs that must be constants because they become options or
attributes or shape the translation (`params`: position -> role; every scalar input is one unless listed in
`runtime_scalars` or at or after `runtime_from`), and a `check` for everything else (layouts, values, ranks, the
engine's kernel limits). A rule with `half` computes TENSOR_FLOAT16 operands in float32 (the engine has no float16
kernel for it): the operation it sees, in the support check and in the translation, is widened (HalOperation).

`RuleTable.reason` reports the first condition that fails, or that no rule exists. Registering a second rule for
an operation, or a rule for an operation declared unsupported, is an error at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from driver_under_test.backends._operation import SCALARS, HalOperation, UnsupportedModel
from harness.hal import OperandLifeTime, OperandType, OperationType

NOT_YET = "no translation rule written yet"
Emit = Callable[[Any], None]  # the backend's Op -> None
Check = Callable[[Any], "str | None"]

_NO_VALUE = OperandLifeTime.NO_VALUE
_SUBGRAPH = OperandType.SUBGRAPH
_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


@dataclass(frozen=True)
class Rule:
    """How one HAL operation becomes the engine's operators, and when it can."""

    op: OperationType
    emit: Emit
    types: frozenset[int] | None = None  # accepted operand types of input `type_input` (None: any mapped type)
    type_input: int = 0
    params: Mapping[int, str] = field(default_factory=dict)
    runtime_scalars: frozenset[int] = frozenset()
    runtime_from: int | None = None  # every input from this position on may be given at run time
    check: Check | None = None
    # Roles of the inputs when they depend on the operation's form (explicit or implicit padding...).
    roles: Callable[[Any], Mapping[int, str]] | None = None
    half: bool = False  # float16 operands computed in float32

    def runtime_scalar(self, position: int) -> bool:
        """True when scalar input `position` may be given at run time."""
        return position in self.runtime_scalars or (self.runtime_from is not None and position >= self.runtime_from)

    def widens(self, op: HalOperation) -> bool:
        """True when the rule computes this operation's float16 operands in float32."""
        return self.half and op.has_half()

    def role(self, op: HalOperation, position: int) -> str:
        """The role of input `position` for messages ("parameter" when unnamed)."""
        named = dict(self.params)
        if self.roles is not None:
            named.update(self.roles(op))
        return named.get(position, "parameter")

    @property
    def doc(self) -> str:
        """The rule's documentation: HAL operand order and mapping."""
        return self.emit.__doc__ or ""


@dataclass
class RuleTable:
    """One backend's rules by HAL operation, the operations it cannot map, and how its engine names operand types.

    `type_names` maps each HAL operand type the engine has a tensor type for to that type's name; `unmapped` gives
    the reason for the types it has none for; `format` names the engine's model format in messages ("TFLite",
    "ONNX") and `constant_because` says why a parameter must be a constant there.
    """

    format: str
    type_names: Mapping[int, str]
    unmapped: Mapping[int, str]
    constant_because: str
    rules: dict[OperationType, Rule] = field(default_factory=dict)
    unsupported: dict[OperationType, str] = field(default_factory=dict)

    def declare_unsupported(self, op: OperationType, reason: str) -> None:
        """Record that `op` cannot be mapped (an error if a rule exists or it was already declared)."""
        if op in self.unsupported or op in self.rules:
            raise RuntimeError(f"{op.name} declared unsupported twice, or it also has a rule")
        self.unsupported[op] = reason

    def rule(
        self,
        ops: OperationType | Iterable[OperationType],
        *,
        types: Iterable[int] | None = None,
        type_input: int = 0,
        params: Mapping[int, str] | None = None,
        runtime_scalars: Iterable[int] = (),
        runtime_from: int | None = None,
        check: Check | None = None,
        roles: Callable[[Any], Mapping[int, str]] | None = None,
        half: bool = False,
    ) -> Callable[[Emit], Emit]:
        """Register the decorated function as the translation rule of `ops` (one or several operations)."""
        op_list = [ops] if isinstance(ops, OperationType) else list(ops)

        def register(emit: Emit) -> Emit:
            for op in op_list:
                if op in self.rules:
                    raise RuntimeError(f"a second translation rule for {op.name}: {emit.__qualname__}")
                if op in self.unsupported:
                    raise RuntimeError(f"{op.name} is declared unsupported and has a rule: {emit.__qualname__}")
                self.rules[op] = Rule(
                    op=op,
                    emit=emit,
                    types=None if types is None else frozenset(int(t) for t in types),
                    type_input=type_input,
                    params=dict(params or {}),
                    runtime_scalars=frozenset(runtime_scalars),
                    runtime_from=runtime_from,
                    check=check,
                    roles=roles,
                    half=half,
                )
            return emit

        return register

    def not_yet_written(self) -> frozenset[OperationType]:
        """The HAL operations with neither a rule nor a declared reason (refused as not written yet)."""
        return frozenset(op for op in OperationType if op not in self.rules and op not in self.unsupported)

    def _operand_reason(self, kind: OperationType, what: str, operand_type: int) -> str | None:
        if operand_type in self.unmapped:
            return f"{kind.name}: {what}: {self.unmapped[operand_type]}"
        if operand_type not in self.type_names:
            return f"{kind.name}: {what} has operand type {operand_type}, which has no {self.format} type"
        return None

    def reason(self, op: HalOperation) -> str | None:
        """Why the operation cannot be translated (None: it can); widens `op` when its rule computes float16 in
        float32."""
        try:
            kind = OperationType(op.operation.type)
        except ValueError:
            return f"operation type {op.operation.type} is not a HAL operation"
        if kind in self.unsupported:
            return f"{kind.name}: {self.unsupported[kind]}"
        found = self.rules.get(kind)
        if found is None:
            return f"{kind.name}: {NOT_YET}"
        op.wide = found.widens(op)
        operands = op.graph.operands
        for position, index in enumerate(op.operation.inputs):
            operand = operands[index]
            lifetime = operand.lifetime
            if lifetime == _NO_VALUE or operand.type == _SUBGRAPH:
                continue
            reason = self._operand_reason(kind, f"input {position}", operand.type)
            if reason is not None:
                return reason
            if lifetime not in _CONSTANT and (
                position in found.params or (operand.type in SCALARS and not found.runtime_scalar(position))
            ):
                return (
                    f"{kind.name}: input {position} ({found.role(op, position)}) is given at run time; the "
                    f"{self.format} translation needs it as a constant ({self.constant_because})"
                )
        for position, index in enumerate(op.operation.outputs):
            reason = self._operand_reason(kind, f"output {position}", operands[index].type)
            if reason is not None:
                return reason
        if found.types is not None and op.has(found.type_input):
            if op.in_type(found.type_input) not in found.types:
                t = op.operand(found.type_input).type
                name = OperandType(t).name if t in OperandType._value2member_map_ else t
                return (
                    f"{kind.name}: the {self.format} translation does not take operand type {name} "
                    f"(input {found.type_input})"
                )
        if found.check is not None:
            try:
                return found.check(op)
            except UnsupportedModel as exc:
                return str(exc)
        return None
