"""Cases with a planted bug for the reduction tests, and a target that always decodes to one (for triage tests).

`broadcast_case()` is a hand-made five-operation float model for the driver fault `broadcast_wrong_axis`: its ADD
adds a [3, 1] constant to a [3, 3] tensor, which the faulty driver broadcasts along the wrong axis; the ADD's result
is the first model output, so the finding's signature names ADD.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.case import Case
from harness.gen.source import Source
from harness.hal import Device
from harness.oracle.verdict import Verdict
from harness.runner import resolve_target


def _operand(dims: list[int], lifetime: str, value: list | None = None, kind: str = "TENSOR_FLOAT32") -> dict:
    operand = {"type": kind, "dimensions": dims, "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime}
    if value is not None:
        operand["value"] = value
    return operand


def broadcast_case() -> dict:
    """x -> RELU -> MUL(c) -> ADD(b [3, 1]) -> LOGISTIC, and ABS(x): outputs ADD, LOGISTIC, ABS."""
    x = [0.5, -1.0, 2.0, 1.5, 0.25, -0.5, 3.0, 1.0, 0.75]
    operands = [
        _operand([3, 3], "SUBGRAPH_INPUT"),  # 0 x
        _operand([3, 3], "TEMPORARY_VARIABLE"),  # 1 relu(x)
        _operand([3, 3], "CONSTANT_COPY", [1.0, 2.0, 0.5, 1.5, 1.0, 2.0, 0.5, 1.0, 1.5]),  # 2 c
        _operand([], "CONSTANT_COPY", [0], "INT32"),  # 3 no activation
        _operand([3, 3], "TEMPORARY_VARIABLE"),  # 4 relu(x) * c
        _operand([3, 1], "CONSTANT_COPY", [1.0, 2.0, 3.0]),  # 5 b
        _operand([3, 3], "SUBGRAPH_OUTPUT"),  # 6 relu(x) * c + b
        _operand([3, 3], "SUBGRAPH_OUTPUT"),  # 7 logistic
        _operand([3, 3], "SUBGRAPH_OUTPUT"),  # 8 abs(x)
    ]
    operations = [
        {"type": "RELU", "inputs": [0], "outputs": [1]},
        {"type": "MUL", "inputs": [1, 2, 3], "outputs": [4]},
        {"type": "ADD", "inputs": [4, 5, 3], "outputs": [6]},
        {"type": "LOGISTIC", "inputs": [6], "outputs": [7]},
        {"type": "ABS", "inputs": [0], "outputs": [8]},
    ]
    model = {
        "operands": operands,
        "operations": operations,
        "inputIndexes": [0],
        "outputIndexes": [6, 7, 8],
        "relaxComputationFloat32toFloat16": False,
    }
    request = {
        "pools": [{"kind": "ashmem", "size": 40}, {"kind": "mmap_fd", "size": 120}],
        "inputs": [{"hasNoValue": False, "poolIndex": 0, "offset": 0, "length": 36, "dimensions": [3, 3]}],
        "outputs": [
            {"hasNoValue": False, "poolIndex": 1, "offset": 0, "length": 36, "dimensions": []},
            {"hasNoValue": False, "poolIndex": 1, "offset": 40, "length": 36, "dimensions": [3, 3]},
            {"hasNoValue": False, "poolIndex": 1, "offset": 80, "length": 36, "dimensions": []},
        ],
    }
    return {
        "target": "execution",
        "model": model,
        "request": request,
        "inputs": [{"dimensions": [3, 3], "value": x}],
        "execution": {"measure": False, "deadlineNs": None, "loopTimeoutNs": None},
        "expect": {"valid": True, "insufficient": []},
        "extras": {},
        "version": 1,
    }


@dataclass
class PlantedTarget:
    """Decodes any input to broadcast_case(); runs it as the execution target does."""

    name: str = "planted"

    def decode(self, source: Source) -> Case:
        return Case.from_json(broadcast_case())

    def run(self, case: Case, device: Device) -> Verdict:
        return resolve_target("execution").run(case, device)


TARGET = PlantedTarget()
