"""The table of translation rules: one rule per HAL operation, registered by a decorator.

A rule is a function that writes the ONNX nodes of one HAL operation (its docstring gives the HAL operand order it
consumes and how it maps), plus the conditions under which it can: the operand types it accepts (`types`, checked
on input `type_input`), the inputs that must be constants because they become node attributes or shape the
translation (`params`: position -> role; every scalar input is one unless listed in `runtime_scalars` or at or
after `runtime_from`), and a `check` for everything else (layouts, values, ranks, ONNX Runtime kernel limits).
`unsupported_reason` reports the first condition that fails.

Registering a second rule for an operation, or a rule for an operation declared in UNSUPPORTED, is an error at
import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from driver_under_test.backends.onnxruntime._graph import Op
from harness.hal import OperationType

Emit = Callable[[Op], None]
Check = Callable[[Op], "str | None"]


@dataclass(frozen=True)
class Rule:
    """How one HAL operation becomes ONNX nodes, and when it can."""

    op: OperationType
    emit: Emit
    types: frozenset[int] | None = None  # accepted operand types of input `type_input` (None: any mapped type)
    type_input: int = 0
    params: Mapping[int, str] = field(default_factory=dict)
    runtime_scalars: frozenset[int] = frozenset()
    runtime_from: int | None = None  # every input from this position on may be given at run time
    check: Check | None = None

    def runtime_scalar(self, position: int) -> bool:
        """True when scalar input `position` may be given at run time."""
        return position in self.runtime_scalars or (self.runtime_from is not None and position >= self.runtime_from)

    def role(self, position: int) -> str:
        """The role of input `position` for messages ("parameter" when unnamed)."""
        return self.params.get(position, "parameter")

    @property
    def doc(self) -> str:
        """The rule's documentation: HAL operand order and mapping."""
        return self.emit.__doc__ or ""


RULES: dict[OperationType, Rule] = {}

# Operations this backend decided it cannot map onto ONNX operators, with the reason.
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
    runtime_from: int | None = None,
    check: Check | None = None,
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
                runtime_from=runtime_from,
                check=check,
            )
        return emit

    return register
