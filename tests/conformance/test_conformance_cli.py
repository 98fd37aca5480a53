"""`nnfuzz conformance` options, exit codes and outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.case import vector_files
from harness.cli.conformance_command import main_conformance


def v1_0() -> str:
    return str(next(p for p in vector_files() if p.name == "aosp_cts_v1_0.jsonl.gz"))


def test_passing_run_exits_0_prints_the_table_and_writes_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "sub" / "report.json"
    code = main_conformance(["--vectors", v1_0(), "--only", "add", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.out
    data = json.loads(out.read_text())
    # v1_0 names containing "add": add, add_broadcast_quant8, add_quant8 and their dynamic-output-shape variants.
    assert data["total"] == 6 and data["passed"] == 6
    assert "ADD" in captured.out and "total" in captured.out
    assert "[6/6]" in captured.err


def test_a_failing_driver_exits_1(capsys) -> None:
    driver = "tests.conformance.conformance_fakes:create_corrupting_device"
    code = main_conformance(["--driver", driver, "--vectors", v1_0(), "--only", "add_dynamic"])
    captured = capsys.readouterr()
    assert code == 1
    # The fake adds 1 to the first float32 element: far beyond the float32 tolerance.
    assert "FAILED add_dynamic_output_shape [accuracy.float32]" in captured.out


@pytest.mark.parametrize(
    "argv",
    [["--driver", "no_such_module_anywhere:create"], ["--vectors", "does/not/exist.jsonl.gz"], ["--bogus"]],
)
def test_misuse_exits_2(argv: list[str], capsys) -> None:
    assert main_conformance(argv) == 2
