"""The execution target names the operation behind a wrong output, so that campaigns keep distinct bugs apart."""

from __future__ import annotations

from harness.case import model_from_json
from harness.drivers import create_device
from harness.oracle.outputs import output_producer
from harness.runner.execute import decode_seed, resolve_target, run_case


def _operand(type_: str, dims: list[int], lifetime: str, value: list | None = None) -> dict:
    d = {"type": type_, "dimensions": dims, "lifetime": lifetime, "scale": 0.0, "zeroPoint": 0}
    if value is not None:
        d["value"] = value
    return d


def test_the_producer_of_an_output_is_the_operation_writing_it() -> None:
    model = model_from_json(
        {
            "operands": [
                _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT"),
                _operand("INT32", [], "CONSTANT_COPY", [0]),
                _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),
                _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),
            ],
            "operations": [
                {"type": "ADD", "inputs": [0, 0, 1], "outputs": [2]},
                {"type": "RELU", "inputs": [2], "outputs": [3]},
            ],
            "inputIndexes": [0],
            "outputIndexes": [3, 2],
        }
    )
    assert [output_producer(model, k) for k in (0, 1, 2)] == ["RELU", "ADD", ""]


def test_a_planted_pooling_bug_is_named_by_the_pooling_operation() -> None:
    # avg_pool_counts_padding divides border windows by the padded window size: the first case it breaks holds
    # an AVERAGE_POOL_2D, and its verdict names an operation of that case's graph.
    target = resolve_target("execution")
    device = create_device("driver_under_test:create_device", faults=["avg_pool_counts_padding"])
    for seed in range(3000):
        case = decode_seed(target, seed)
        if case is None:
            continue
        verdict = run_case(target, case, device).verdict
        if verdict.ok:
            continue
        operations = {op["type"] for op in case.model["operations"]}
        assert verdict.rule.startswith("accuracy.")
        assert verdict.locus in operations and "AVERAGE_POOL_2D" in operations
        assert verdict.to_json()["locus"] == verdict.locus
        return
    raise AssertionError("the planted pooling bug was not found in 3000 seeds")
