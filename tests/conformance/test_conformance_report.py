"""The conformance report's JSON structure and terminal table, from a few real cases with known outcomes."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from harness.case import load_vectors, vector_files
from harness.conformance import CaseResult, run_conformance
from harness.hal import OperationType


@pytest.fixture(scope="module")
def report():
    v1_0 = next(p for p in vector_files() if p.name == "aosp_cts_v1_0.jsonl.gz")
    add, mul = sorted(load_vectors([v1_0], names=["add", "mul"]), key=lambda c: c.name)
    wrong = copy.deepcopy(add)
    wrong.name = "add_with_a_wrong_expectation"
    wrong.examples[0].outputs[0] = wrong.examples[0].outputs[0] + np.float32(1)
    unknown = copy.deepcopy(mul)
    unknown.name = "mul_as_oem"
    unknown.model.main.operations[0].type = OperationType.OEM_OPERATION
    return run_conformance(cases=[add, mul, wrong, unknown])


def test_json_has_totals_groups_failures_and_skip_reasons(report) -> None:
    data = json.loads(json.dumps(report.to_json()))  # must survive a JSON round trip
    assert {"total", "passed", "failed", "skipped", "by_operation", "by_file", "failures", "skipped_reasons"} <= set(
        data
    )
    assert (data["total"], data["passed"], data["failed"], data["skipped"]) == (4, 2, 1, 1)
    assert data["by_operation"] == {
        "ADD": {"passed": 1, "failed": 1, "skipped": 0},
        "MUL": {"passed": 1, "failed": 0, "skipped": 0},
        "OEM_OPERATION": {"passed": 0, "failed": 0, "skipped": 1},
    }
    assert data["by_file"] == {"aosp_cts_v1_0.jsonl.gz": {"passed": 2, "failed": 1, "skipped": 1}}
    assert data["skipped_reasons"] == {"no reference kernel: OEM_OPERATION": 1}
    [failure] = data["failures"]
    assert set(failure) == {"name", "rule", "detail", "worst"}
    assert failure["name"] == "add_with_a_wrong_expectation"
    assert failure["rule"] == "accuracy.float32"
    # add: [1, 2] + [3, 4] = [4, 6] against the altered expectation [5, 7]: both elements are off by 1.
    assert failure["worst"]["error"] == 1.0 and failure["worst"]["index"] in ([0], [1])


def test_counts_add_up(report) -> None:
    data = report.to_json()
    assert data["passed"] + data["failed"] + data["skipped"] == data["total"]
    for group in ("by_operation", "by_file"):
        assert sum(sum(c.values()) for c in data[group].values()) == data["total"]


def test_table_has_a_row_per_operation_with_skip_reasons(report) -> None:
    lines = report.format_table().splitlines()
    assert lines[0].split()[:4] == ["operation", "passed", "failed", "skipped"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["ADD"].split()[1:4] == ["1", "1", "0"]
    assert "no reference kernel: OEM_OPERATION (1)" in rows["OEM_OPERATION"]
    assert rows["total"].split()[1:4] == ["2", "1", "1"]
    assert "add_with_a_wrong_expectation" in report.format_failures()


def test_a_case_result_must_carry_its_rule_or_reason() -> None:
    with pytest.raises(ValueError):
        CaseResult(name="x", file="f", operation="ADD", outcome="failed")
    with pytest.raises(ValueError):
        CaseResult(name="x", file="f", operation="ADD", outcome="skipped")
    with pytest.raises(ValueError):
        CaseResult(name="x", file="f", operation="ADD", outcome="maybe")
