"""Known divergences: documented differences between a real engine and the HAL, one entry each.

A finding on a driver over an engine that matches an entry is a *divergence*: labelled, kept and counted apart
from new bugs, never dropped. Each entry says which engine and kernel sets show it, under which condition, what the
HAL says and what the engine does, and carries a reduced model that shows it (its test replays that model on every
kernel set, so an engine release that changes the behaviour makes the entry fail rather than go stale).

`nature` tells what to do about it: "bug" (the engine contradicts the HAL and its own definition: report it to the
engine's owners), "gap" (the engine lacks a kernel or a parameter range the HAL allows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness.hal import Model, OperandLifeTime, OperationType
from harness.oracle.verdict import Verdict

# Rules under which an execution that should succeed shows up as failed or different between paths.
_STATUS_RULES = frozenset(
    {"status.expected", "paths.agree", "burst.matches_synchronous", "cache.untouched_cache_round_trips"}
)
_CONSTANT = frozenset({OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE})


@dataclass(frozen=True)
class Sighting:
    """What a divergence is matched against: a (reduced) finding's model and verdict, and where it showed."""

    engine: str  # the engine's distribution name, e.g. "ai-edge-litert"
    kernel_set: str  # the kernel set of the driver variant it showed on, e.g. "xnnpack"
    model: Model
    verdict: Verdict


@dataclass(frozen=True)
class Divergence:
    """One documented difference between an engine and the HAL."""

    id: str
    engine: str
    kernel_sets: frozenset[str]
    operation: OperationType
    nature: str  # "bug" or "gap"
    condition: str  # when it shows
    hal: str  # what the HAL says
    behaviour: str  # what the engine does
    matches: Callable[[Sighting], bool] = field(repr=False)
    # A reduced case showing it: the model JSON of the case format and its input values, run by the execution
    # target on each kernel set of the engine by the registry's test.
    example: dict = field(repr=False, default_factory=dict)

    def to_json(self) -> dict:
        """The entry for reports (without its matcher and example)."""
        return {
            "id": self.id,
            "engine": self.engine,
            "kernel_sets": sorted(self.kernel_sets),
            "operation": self.operation.name,
            "nature": self.nature,
            "condition": self.condition,
            "hal": self.hal,
            "behaviour": self.behaviour,
        }


DIVERGENCES: dict[str, Divergence] = {}


def register(divergence: Divergence) -> Divergence:
    """Add an entry; a second entry of one id is an error."""
    if divergence.id in DIVERGENCES:
        raise RuntimeError(f"divergence {divergence.id!r} registered twice")
    DIVERGENCES[divergence.id] = divergence
    return divergence


def matching(sighting: Sighting) -> Divergence | None:
    """The registered divergence a sighting shows, if any."""
    for divergence in DIVERGENCES.values():
        if (
            divergence.engine == sighting.engine
            and sighting.kernel_set in divergence.kernel_sets
            and divergence.matches(sighting)
        ):
            return divergence
    return None


def _operations(model: Model, op: OperationType) -> list:
    return [o for g in (model.main, *model.referenced) for o in g.operations if o.type == op]


def _constant_input(model: Model, op: OperationType) -> bool:
    """Some operation of type `op` in main reads a constant as its first input."""
    main = model.main
    return any(main.operands[o.inputs[0]].lifetime in _CONSTANT for o in main.operations if o.type == op and o.inputs)


def _operand(type_: str, dims: list[int], lifetime: str, **more: object) -> dict:
    return {"type": type_, "dimensions": dims, "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime, **more}


register(
    Divergence(
        id="litert-xnnpack-constant-dequantize",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"xnnpack"}),
        operation=OperationType.DEQUANTIZE,
        nature="bug",
        condition="a DEQUANTIZE of a constant tensor, on an interpreter with the XNNPACK delegate",
        hal="DEQUANTIZE: output = (input - zeroPoint) * scale for every element; an execution of a valid model "
        "the device prepared succeeds (D5)",
        behaviour="the first invoke of the interpreter fails ('failed to setup XNNPACK runtime'); later invokes of "
        "the same interpreter succeed with the right values",
        matches=lambda s: s.verdict.rule in _STATUS_RULES and _constant_input(s.model, OperationType.DEQUANTIZE),
        example={
            "model": {
                "operands": [
                    _operand("TENSOR_QUANT8_ASYMM_SIGNED", [4], "CONSTANT_COPY", scale=0.5, value=[1, -2, 3, -4]),
                    _operand("TENSOR_FLOAT32", [4], "SUBGRAPH_OUTPUT"),
                ],
                "operations": [{"type": "DEQUANTIZE", "inputs": [0], "outputs": [1]}],
                "inputIndexes": [],
                "outputIndexes": [1],
            },
            "inputs": [],
        },
    )
)

register(
    Divergence(
        id="litert-reference-lrn-window",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"reference"}),
        operation=OperationType.LOCAL_RESPONSE_NORMALIZATION,
        nature="bug",
        condition="LOCAL_RESPONSE_NORMALIZATION with a radius that reaches past the channel (c + radius exists)",
        hal="LOCAL_RESPONSE_NORMALIZATION: sqr_sum[c] is the sum of input[c']^2 for c' in [c - radius, c + radius], "
        "both ends included (TFLite's own definition and its optimized kernel agree)",
        behaviour="the reference kernel sums over [c - radius, c + radius): channel c + radius is left out",
        matches=lambda s: s.verdict.rule is not None
        and s.verdict.rule.startswith("accuracy.")
        and s.verdict.locus == "LOCAL_RESPONSE_NORMALIZATION",
        example={
            "model": {
                "operands": [
                    _operand("TENSOR_FLOAT32", [1, 1, 1, 6], "SUBGRAPH_INPUT"),
                    _operand("INT32", [], "CONSTANT_COPY", value=[2]),
                    _operand("FLOAT32", [], "CONSTANT_COPY", value=[1.0]),
                    _operand("FLOAT32", [], "CONSTANT_COPY", value=[1.0]),
                    _operand("FLOAT32", [], "CONSTANT_COPY", value=[0.5]),
                    _operand("TENSOR_FLOAT32", [1, 1, 1, 6], "SUBGRAPH_OUTPUT"),
                ],
                "operations": [{"type": "LOCAL_RESPONSE_NORMALIZATION", "inputs": [0, 1, 2, 3, 4], "outputs": [5]}],
                "inputIndexes": [0],
                "outputIndexes": [5],
            },
            "inputs": [{"dimensions": [1, 1, 1, 6], "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}],
        },
    )
)

register(
    Divergence(
        id="litert-reference-no-elu",
        engine="ai-edge-litert",
        kernel_sets=frozenset({"reference"}),
        operation=OperationType.ELU,
        nature="gap",
        condition="ELU with alpha 1 (the translation maps it to the ELU builtin; other alphas are composed)",
        hal="ELU is an operation of the HAL 1.3 for TENSOR_FLOAT32 and TENSOR_FLOAT16",
        behaviour="the reference op resolver registers no ELU kernel: creating the interpreter fails ('Didn't find "
        "op for builtin opcode ELU')",
        matches=lambda s: s.verdict.rule in _STATUS_RULES and bool(_operations(s.model, OperationType.ELU)),
        example={
            "model": {
                "operands": [
                    _operand("TENSOR_FLOAT32", [4], "SUBGRAPH_INPUT"),
                    _operand("FLOAT32", [], "CONSTANT_COPY", value=[1.0]),
                    _operand("TENSOR_FLOAT32", [4], "SUBGRAPH_OUTPUT"),
                ],
                "operations": [{"type": "ELU", "inputs": [0, 1], "outputs": [2]}],
                "inputIndexes": [0],
                "outputIndexes": [2],
            },
            "inputs": [{"dimensions": [4], "value": [-2.0, -1.0, 0.0, 1.0]}],
        },
    )
)
