"""Every candidate kind makes complete, valid cases that replay: the reference validator takes the model and the
request, the reference runs it to NONE, and the bundled driver executes it as the reference says."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

import driver_under_test
from harness.case import Case
from harness.gen.model import ModelConfig
from harness.gen.sources import RandomSource
from harness.hal import ErrorStatus
from harness.hal import OperationType as T
from harness.reduce import KINDS, TIERS, candidates, count_elements, reducible
from harness.reference import validate_model, validate_request
from harness.targets.execution import ExecutionTarget
from tests.reduce.planted import broadcast_case

# Operations the bundled driver and the reference agree on in every shape the reduction makes of them.
OPERATIONS = frozenset(
    {
        T.ADD, T.MUL, T.SUB, T.RELU, T.TANH, T.LOGISTIC, T.ABS, T.CONV_2D, T.DEPTHWISE_CONV_2D, T.FULLY_CONNECTED,
        T.AVERAGE_POOL_2D, T.MAX_POOL_2D, T.CONCATENATION, T.RESHAPE, T.SOFTMAX, T.QUANTIZE, T.DEQUANTIZE,
        T.TRANSPOSE, T.MEAN,
    }
)  # fmt: skip
TARGET = ExecutionTarget(
    model_config=ModelConfig(
        max_operations=4, control_flow=False, operations=OPERATIONS, quantized_bias=0.5, relaxed_probability=0.3
    )
)
ALL_KINDS = {kind for kinds in KINDS.values() for kind in kinds}
REPLAYS_PER_KIND = 3


def untidy_case() -> dict:
    """broadcast_case with an operand nothing reads and a model input no operation reads."""
    case = broadcast_case()
    model = case["model"]
    model["operands"] += [
        {"type": "TENSOR_FLOAT32", "dimensions": [2], "scale": 0.0, "zeroPoint": 0, "lifetime": "CONSTANT_COPY",
         "value": [1.0, 2.0]},
        {"type": "TENSOR_FLOAT32", "dimensions": [1], "scale": 0.0, "zeroPoint": 0, "lifetime": "SUBGRAPH_INPUT"},
    ]  # fmt: skip
    model["inputIndexes"].append(10)
    case["inputs"].append({"dimensions": [1], "value": [4.0]})
    case["request"]["pools"][0]["size"] = 48
    case["request"]["inputs"].append(
        {"hasNoValue": False, "poolIndex": 0, "offset": 40, "length": 4, "dimensions": [1]}
    )
    return case


def sample() -> Iterator[dict]:
    """The hand-made cases, then generated ones."""
    yield untidy_case()
    for seed in range(80):
        case = TARGET.decode(RandomSource(seed))
        try:
            yield case.to_json()
        finally:
            case.close()


@pytest.fixture(scope="module")
def device():
    return driver_under_test.create_device()


def test_every_kind_of_candidate_is_a_valid_case_that_replays(device) -> None:
    seen: Counter[str] = Counter()
    for case_json in sample():
        assert reducible(case_json)
        for candidate in candidates(case_json):
            assert candidate.kind in KINDS[candidate.tier]
            case = Case.from_json(candidate.case)
            try:
                live = case.materialized()
                assert validate_model(live.model) == [], candidate.what
                assert validate_request(live.model, live.request.request) == [], candidate.what
                reference = case.reference()
                assert reference.status == ErrorStatus.NONE and not reference.unspecified, candidate.what
                assert candidate.operations == len(candidate.case["model"]["operations"])
                if seen[candidate.kind] < REPLAYS_PER_KIND:
                    verdict = TARGET.run(case, device)
                    assert verdict.ok, (candidate.kind, candidate.what, verdict.title, verdict.details)
            finally:
                case.close()
            seen[candidate.kind] += 1
        if set(seen) >= ALL_KINDS:
            break
    assert sorted(ALL_KINDS - set(seen)) == []


def test_candidates_are_smaller_and_the_case_is_left_alone() -> None:
    case = broadcast_case()
    before = repr(case)
    found = list(candidates(case))
    assert repr(case) == before
    elements = count_elements(case["model"], {})
    assert found and all(c.operations < 5 or c.tier != "operations" for c in found)
    isolated = [c.case["model"]["operations"] for c in found if c.kind == "isolate" and c.operations == 1]
    assert sorted(ops[0]["type"] for ops in isolated) == ["ABS", "ADD", "LOGISTIC", "MUL", "RELU"]
    # The operations tier comes first, those removing the most operations first.
    tiers = [c.tier for c in found]
    assert tiers == sorted(tiers, key=TIERS.index) and tiers[0] == "request"
    operations = [c.operations for c in found if c.tier == "operations"]
    assert operations == sorted(operations) and elements > 0


def test_a_cut_operation_leaves_the_values_the_operations_after_it_saw() -> None:
    case = broadcast_case()
    [cut] = [c for c in candidates(case) if c.kind == "cut" and "cut operation 1 (MUL)" in c.what]
    # MUL is gone, and RELU, which only fed it: ADD reads a model input holding relu(x) * c, so its output is the
    # original ADD's.
    assert [op["type"] for op in cut.case["model"]["operations"]] == ["ADD", "LOGISTIC", "ABS"]
    original, reduced = Case.from_json(case), Case.from_json(cut.case)
    try:
        assert (original.reference().outputs[0] == reduced.reference().outputs[0]).all()
    finally:
        original.close()
        reduced.close()


def test_a_case_without_an_executed_model_has_no_candidates() -> None:
    case = broadcast_case()
    assert list(candidates({**case, "request": None})) == []
    assert not reducible({**case, "model": {**case["model"], "operandValues": ""}})
