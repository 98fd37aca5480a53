"""Bounded parameters a translating backend passes to its engine as tensors, checked when an execution gives them.

types.hal bounds the block sizes of SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND ("must be >= 1"). A constant outside
makes the model invalid; a value given at run time outside is an invalid input argument, which the execution
answers with INVALID_ARGUMENT, as the numpy kernels do. An engine's kernels only fail the run (LiteRT's invoke:
GENERAL_FAILURE), so a backend whose translation takes these parameters at run time (LiteRT's) checks them before
running the engine. Only main's inputs read directly by an operation of main are known before the run; a value
computed inside the model is the engine's to refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from driver_under_test.errors import invalid
from harness.hal import Model, OperandLifeTime, OperationType

_AT_LEAST_ONE = ("each >= 1", lambda values: bool(np.all(values >= 1)))
# Operation -> (input position, parameter name, (what each value must be, the test on the values)).
BOUNDED_TENSOR_PARAMETERS: dict[int, tuple[tuple[int, str, tuple[str, Callable[[np.ndarray], bool]]], ...]] = {
    int(OperationType.SPACE_TO_BATCH_ND): ((1, "block shape", _AT_LEAST_ONE),),
    int(OperationType.BATCH_TO_SPACE_ND): ((1, "block shape", _AT_LEAST_ONE),),
}


@dataclass(frozen=True)
class RunTimeParameter:
    """A bounded parameter of an operation of main that is one of main's inputs."""

    input_position: int  # its position among main's inputs
    operation: int  # the operation's index in main
    name: str
    must: str
    holds: Callable[[np.ndarray], bool]

    def check(self, value: np.ndarray | None) -> None:
        """Raise INVALID_ARGUMENT when the given value lies outside the parameter's domain."""
        if value is not None and not self.holds(np.asarray(value)):
            raise invalid(
                f"operation {self.operation} {self.name} (main input {self.input_position}) must be {self.must}, "
                f"got {np.asarray(value).tolist()}",
                "exec.block_size",
            )


def run_time_parameters(model: Model) -> tuple[RunTimeParameter, ...]:
    """The bounded tensor parameters of main's operations that main's inputs give."""
    main = model.main
    positions = {index: k for k, index in enumerate(main.input_indexes)}
    found = []
    for number, op in enumerate(main.operations):
        for at, name, (must, holds) in BOUNDED_TENSOR_PARAMETERS.get(int(op.type), ()):
            index = op.inputs[at] if at < len(op.inputs) else None
            if index in positions and main.operands[index].lifetime == OperandLifeTime.SUBGRAPH_INPUT:
                found.append(RunTimeParameter(positions[index], number, name, must, holds))
    return tuple(found)


def check_run_time(parameters: Sequence[RunTimeParameter], inputs: Sequence[np.ndarray | None]) -> None:
    """Raise INVALID_ARGUMENT for the first run-time parameter whose given value lies outside its domain."""
    for parameter in parameters:
        parameter.check(inputs[parameter.input_position])
