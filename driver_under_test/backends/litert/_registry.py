"""The table of translation rules: one rule per HAL operation, registered by a decorator.

A rule is a function that writes the TFLite operators of one HAL operation (its docstring gives the HAL operand
order it consumes and how it maps), plus the conditions under which it can: the operand types it accepts
(`types`, checked on input 0 unless `type_input` says otherwise), the inputs that must be constants because they
become builtin options or shape the translation (`params`: position -> role; every scalar input is one unless
listed in `runtime_scalars`), and a `check` for everything else (layouts,
values, ranks, LiteRT kernel limits). `unsupported_reason` reports the first condition that fails. A rule with
`half` computes TENSOR_FLOAT16 operands in float32 (LiteRT has no float16 kernel for it): the Op it sees, in the
support check and in the translation, is widened (see _graph), so `types` names float32 for both.

Registering a second rule for an operation, or a rule for an operation declared in UNSUPPORTED, is an error at
import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from driver_under_test.backends.litert._graph import Op
from harness.hal import OperationType

Emit = Callable[[Op], None]
Check = Callable[[Op], "str | None"]


@dataclass(frozen=True)
class Rule:
    """How one HAL operation becomes TFLite operators, and when it can."""

    op: OperationType
    emit: Emit
    types: frozenset[int] | None = None  # accepted operand types of input `type_input` (None: any mapped type)
    type_input: int = 0
    # Inputs that must be constant: position -> role. Every scalar input must be constant too (it becomes an
    # option) unless listed in runtime_scalars (a scalar the rule feeds as a 0-d tensor).
    params: Mapping[int, str] = field(default_factory=dict)
    runtime_scalars: frozenset[int] = frozenset()
    check: Check | None = None
    # Roles of the inputs when they depend on the operation's form (explicit or implicit padding...).
    roles: Callable[[Op], Mapping[int, str]] | None = None
    half: bool = False  # float16 operands computed in float32

    def widens(self, op: Op) -> bool:
        """True when the rule computes this operation's float16 operands in float32."""
        return self.half and op.has_half()

    def role(self, op: Op, position: int) -> str:
        """The role of input `position` for messages ("parameter" when unnamed)."""
        named = dict(self.params)
        if self.roles is not None:
            named.update(self.roles(op))
        return named.get(position, "parameter")

    @property
    def doc(self) -> str:
        """The rule's documentation: HAL operand order and mapping."""
        return self.emit.__doc__ or ""


RULES: dict[OperationType, Rule] = {}

# Operations this backend decided it cannot map onto LiteRT builtins, with the reason.
UNSUPPORTED: dict[OperationType, str] = {}


def declare_unsupported(op: OperationType, reason: str) -> None:
    """Record that `op` cannot be mapped (an error if a rule exists or it was already declared)."""
    if op in UNSUPPORTED or op in RULES:
        raise RuntimeError(f"{op.name} declared unsupported twice, or it also has a rule")
    UNSUPPORTED[op] = reason


def rule(
    ops: OperationType | Iterable[OperationType],
    *,
    types: Iterable[int] | None = None,
    type_input: int = 0,
    params: Mapping[int, str] | None = None,
    runtime_scalars: Iterable[int] = (),
    check: Check | None = None,
    roles: Callable[[Op], Mapping[int, str]] | None = None,
    half: bool = False,
) -> Callable[[Emit], Emit]:
    """Register the decorated function as the translation rule of `ops` (one or several operations)."""
    op_list = [ops] if isinstance(ops, OperationType) else list(ops)

    def register(emit: Emit) -> Emit:
        for op in op_list:
            if op in RULES:
                raise RuntimeError(f"a second translation rule for {op.name}: {emit.__qualname__}")
            if op in UNSUPPORTED:
                raise RuntimeError(f"{op.name} is declared unsupported and has a rule: {emit.__qualname__}")
            RULES[op] = Rule(
                op=op,
                emit=emit,
                types=None if types is None else frozenset(int(t) for t in types),
                type_input=type_input,
                params=dict(params or {}),
                runtime_scalars=frozenset(runtime_scalars),
                check=check,
                roles=roles,
                half=half,
            )
        return emit

    return register
