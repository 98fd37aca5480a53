"""Hand-written cases for the targets' tests, in the case format (expected results computed by hand)."""

from __future__ import annotations

import copy

from harness.case import Case


def tensor(dims: list[int], lifetime: str, type_: str = "TENSOR_FLOAT32", **extra: object) -> dict:
    """An operand of the case format."""
    return {"type": type_, "dimensions": list(dims), "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime, **extra}


def add_model(dims: list[int] = (2, 2), out_dims: list[int] | None = None) -> dict:
    """out = a + b (no activation), a and b model inputs."""
    dims = list(dims)
    return {
        "operands": [
            tensor(dims, "SUBGRAPH_INPUT"),
            tensor(dims, "SUBGRAPH_INPUT"),
            {
                "type": "INT32",
                "dimensions": [],
                "scale": 0.0,
                "zeroPoint": 0,
                "lifetime": "CONSTANT_COPY",
                "value": [0],
            },
            tensor(dims if out_dims is None else list(out_dims), "SUBGRAPH_OUTPUT"),
        ],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0, 1],
        "outputIndexes": [3],
        "relaxComputationFloat32toFloat16": False,
    }


def with_bad_scale(model: dict) -> dict:
    """The model with a non-zero scale on its first (float) operand: V4."""
    bad = copy.deepcopy(model)
    bad["operands"][0]["scale"] = 0.5
    return bad


def validation_case(
    model: dict | None = None, *, kind: str | None = None, preference: int = 1, priority: int = 1
) -> Case:
    """A validation case; kind None = valid, "model" = invalid model, "preparation" = invalid arguments."""
    expect = {"valid": True} if kind is None else {"valid": False, "kind": kind, "mutation": "by hand", "rule": "-"}
    execution = {"preference": preference, "priority": priority}
    return Case("validation", add_model() if model is None else model, execution=execution, expect=expect)


def add_request(out_length: int = 16, out_dims: list[int] | None = None) -> dict:
    """A request for add_model([2, 2]): both inputs in pool 0, the output in pool 1 with `out_length` bytes."""
    arg = {"hasNoValue": False, "poolIndex": 0, "length": 16, "dimensions": []}
    return {
        "pools": [{"kind": "ashmem", "size": 32}, {"kind": "mmap_fd", "size": max(out_length, 1)}],
        "inputs": [{**arg, "offset": 0}, {**arg, "offset": 16}],
        "outputs": [
            {"hasNoValue": False, "poolIndex": 1, "offset": 0, "length": out_length, "dimensions": out_dims or []}
        ],
    }


ADD_INPUTS = [
    {"dimensions": [2, 2], "value": [1.0, 2.0, 3.0, 4.0]},
    {"dimensions": [2, 2], "value": [10.0, 20.0, 30.0, 40.0]},
]


def execution_case(
    model: dict | None = None,
    request: dict | None = None,
    *,
    measure: bool = False,
    target: str = "execution",
    **expect,
) -> Case:
    """An execution (or request) case of ADD on 2x2 float32 inputs."""
    return Case(
        target,
        add_model() if model is None else model,
        request=add_request() if request is None else request,
        inputs=copy.deepcopy(ADD_INPUTS),
        execution={"measure": measure, "deadlineNs": None, "loopTimeoutNs": None},
        expect=expect or {"valid": True},
    )
