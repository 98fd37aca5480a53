"""Cross-engine agreement: the engines a driver runs on, given one execution, must end it the same way and compute
the same outputs within the HAL's tolerance of each output's type.

This judges engines against each other, not against the reference: it holds also where the reference does not
judge an output because it computes it ill-conditioned. Outputs whose values the HAL leaves to the implementation
(an LSTM's scratch buffer, and what is computed from it) are not compared: engines may rightly differ there.
Answers are grouped:
each engine joins the first group whose first member it agrees with; more than one group is a breach of
`engines.disagree`, whose details say which engines gave which values (and which group the reference sides with,
where it prescribes values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.hal import ErrorStatus, OperandType
from harness.oracle.accuracy import Comparison, compare
from harness.oracle.rules import Breach
from harness.oracle.verdict import define_rule

ENGINES_DISAGREE = define_rule(
    "engines.disagree",
    "the engines a driver runs on end one execution with the same status and the same output shapes and values, "
    "within the HAL's tolerance of each output's type, also where the reference computes them ill-conditioned "
    "(outputs whose values the HAL leaves to the implementation are not compared)",
)
_SHOWN = 8  # values of an output shown per group in the details


@dataclass(frozen=True)
class EngineAnswer:
    """How one engine ended an execution: its status and, with NONE, main's outputs (None: not readable)."""

    status: ErrorStatus
    outputs: tuple[np.ndarray | None, ...] = ()


@dataclass(frozen=True)
class Outputs:
    """What judging an output needs beyond the answers: its operand type, the operation writing it, the accuracy
    criterion of the model, the reference's value (None where the reference prescribes none), and the positions
    whose values the HAL leaves to the implementation (not compared)."""

    operand_types: Sequence[int]
    producers: Sequence[str]
    relaxed: bool = False
    quantized_operations: int = 1
    reference: Sequence[np.ndarray | None] = field(default_factory=tuple)
    implementation_defined: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Disagreement:
    """How the engines' answers differ: the breach of engines.disagree, the engines standing apart from the largest
    group, and the operation writing the output they differ on ("" for a difference of status)."""

    breach: Breach
    apart: tuple[str, ...]
    producer: str = ""


def judge_engines_agree(
    answers: Mapping[str, EngineAnswer], outputs: Outputs, families: Mapping[str, str] | None = None
) -> Breach | None:
    """The breach of engines.disagree for the first difference between the engines' answers (status, then each
    output in order), or None when they all agree (or fewer than two answered)."""
    found = disagreement(answers, outputs, families)
    return None if found is None else found.breach


def disagreement(
    answers: Mapping[str, EngineAnswer], outputs: Outputs, families: Mapping[str, str] | None = None
) -> Disagreement | None:
    """The first difference between the engines' answers (status, then each output in order), or None.

    `families` names the engine each answer comes from (kernel sets of one engine share a family; by default each
    answer is its own): who stands apart is decided by engines, not by how many kernel sets an engine has."""
    families = families or {}
    if len(answers) < 2:
        return None
    by_status: dict[ErrorStatus, list[str]] = {}
    for name, answer in answers.items():
        by_status.setdefault(answer.status, []).append(name)
    if len(by_status) > 1:
        parts = [f"{', '.join(names)}: {ErrorStatus(s).name}" for s, names in by_status.items()]
        odd = _odd([names for names in by_status.values()], families)
        breach = Breach(
            ENGINES_DISAGREE,
            f"engines end the execution differently ({'; '.join(parts)})",
            "; ".join(parts),
            locus=f"status ({', '.join(odd)})",
        )
        return Disagreement(breach, tuple(odd))
    if next(iter(by_status)) != ErrorStatus.NONE:
        return None
    for position, operand_type in enumerate(outputs.operand_types):
        if position in outputs.implementation_defined:
            continue
        found = _judge_output(answers, outputs, position, operand_type, families)
        if found is not None:
            return found
    return None


def _judge_output(
    answers: Mapping[str, EngineAnswer],
    outputs: Outputs,
    position: int,
    operand_type: int,
    families: Mapping[str, str],
) -> Disagreement | None:
    values = {name: _output(answer, position) for name, answer in answers.items()}
    values = {name: value for name, value in values.items() if value is not None}
    groups: list[list[str]] = []
    for name, value in values.items():
        for group in groups:
            if _agree(values[group[0]], value, operand_type, outputs).ok:
                group.append(name)
                break
        else:
            groups.append([name])
    if len(groups) < 2:
        return None
    producer = outputs.producers[position] if position < len(outputs.producers) else ""
    what = f"output {position} ({producer or 'a model input'}, {_type_name(operand_type)})"
    first, second = values[groups[0][0]], values[groups[1][0]]
    lines = [f"{', '.join(group)}: {_values(values[group[0]])}" for group in groups]
    lines.append(f"{groups[1][0]} against {groups[0][0]}: {_agree(first, second, operand_type, outputs).describe()}")
    reference = outputs.reference[position] if position < len(outputs.reference) else None
    if reference is None:
        lines.append("the reference prescribes no values for this output (unspecified or not computed)")
    else:
        siding = [g for g in groups if _agree(np.asarray(reference), values[g[0]], operand_type, outputs).ok]
        sides = " and ".join(", ".join(g) for g in siding) or "no group"
        lines.append(f"the reference ({_values(np.asarray(reference))}) agrees with {sides}")
    odd = _odd(groups, families)
    breach = Breach(
        ENGINES_DISAGREE,
        f"engines disagree on {what}: " + " | ".join(", ".join(g) for g in groups),
        "\n".join(lines),
        output=position,
        locus=f"{producer} ({', '.join(odd)})",
    )
    return Disagreement(breach, tuple(odd), producer)


def explained_by(
    runs: Sequence[Sequence[np.ndarray]], answers: Mapping[str, EngineAnswer], position: int, outputs: Outputs
) -> bool:
    """Every engine's value of output `position` lies, element by element and within tolerance, in the span of
    the values the runs give there (each run: all its outputs)."""
    operand_type = outputs.operand_types[position]
    candidates = [np.asarray(run[position]) for run in runs if position < len(run)]
    for answer in answers.values():
        value = _output(answer, position)
        if value is None:
            continue
        shaped = [c for c in candidates if c.shape == value.shape]
        if not shaped:
            return False
        stack = np.stack(shaped)
        with np.errstate(invalid="ignore"):
            nearest = np.clip(value, stack.min(axis=0), stack.max(axis=0)).astype(value.dtype)
        if not _agree(nearest, value, operand_type, outputs).ok:
            return False
    return True


def _output(answer: EngineAnswer, position: int) -> np.ndarray | None:
    if position >= len(answer.outputs):
        return None
    value = answer.outputs[position]
    return None if value is None else np.asarray(value)


def _agree(expected: np.ndarray, actual: np.ndarray, operand_type: int, outputs: Outputs) -> Comparison:
    return compare(expected, actual, operand_type, outputs.relaxed, quantized_operations=outputs.quantized_operations)


def _odd(groups: Sequence[Sequence[str]], families: Mapping[str, str]) -> list[str]:
    """The engines outside the group with the most distinct engines (the first of them on a tie), sorted: who stands
    apart. Three kernel sets of one engine agreeing outvote no other engine."""
    largest = max(range(len(groups)), key=lambda k: len({families.get(n, n) for n in groups[k]}))
    return sorted(name for k, group in enumerate(groups) if k != largest for name in group)


def _values(value: np.ndarray) -> str:
    flat = value.reshape(-1)
    shown = ", ".join(str(v) for v in flat[:_SHOWN].tolist())
    more = f", ... ({flat.size} values)" if flat.size > _SHOWN else ""
    return f"{list(value.shape)} [{shown}{more}]"


def _type_name(operand_type: int) -> str:
    try:
        return OperandType(operand_type).name
    except ValueError:
        return str(operand_type)
