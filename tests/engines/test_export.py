"""Exporting a case as a standalone reproducer: the folder's files, and its repro.py run as an engine's owner runs
it (a separate process): exit 1 with the mismatch printed while the bug is present, 0 on a correct model, and a
crash reported with its signal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from driver_under_test import create_litert_device
from harness.case import Case
from harness.engines import EXPORT_FILES, Origin, engine_model_of, export_case
from harness.hal import OperandType as T
from tests.engines.planted import aborting_device, add_case, wrong_operation_device


def _repro(folder: Path, *args: str) -> subprocess.CompletedProcess:
    # Run from elsewhere, as a copy of the folder would be: the script finds its files next to itself.
    return subprocess.run(
        [sys.executable, str(folder / "repro.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder.parent,
    )


def test_a_wrong_result_is_exported_and_its_reproducer_exits_1_printing_the_mismatch(tmp_path: Path) -> None:
    case = add_case()
    origin = Origin(signature="feedc0de", target="execution", outcome="FAILURE", rule="accuracy.float32")
    export = export_case(case, engine_model_of(case, wrong_operation_device()), tmp_path / "x", origin=origin)
    folder = export.folder
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.tflite", *EXPORT_FILES])
    assert export.reproduces and export.bare.showing() == ("optimized", "xnnpack", "reference")

    with np.load(folder / "inputs.npz") as inputs, np.load(folder / "expected.npz") as expected:
        assert inputs.files == ["input0", "input1"] and inputs["input0"].dtype == np.float32
        assert inputs["input0"].shape == (2, 3)
        np.testing.assert_array_equal(expected["output0"], inputs["input0"] + inputs["input1"])
    tolerance = json.loads((folder / "tolerance.json").read_text())
    assert tolerance["outputs"][0]["atol"] == 1e-5 and tolerance["outputs"][0]["compared"]
    assert Case.from_json(json.loads((folder / "case.json").read_text())) == case
    summary = json.loads((folder / "export.json").read_text())
    assert summary["reproduces"] and summary["origin"]["signature"] == "feedc0de"
    assert summary["bare_runs"]["optimized"]["outcome"] == "outputs"

    readme = (folder / "README.md").read_text()
    assert readme.startswith("# LiteRT (optimized kernels) gives wrong values for ADD (TENSOR_FLOAT32)")
    assert "output = input0 + input1" in readme  # the HAL rule, in words
    assert "atol 1e-05" in readme and "ai-edge-litert==" in readme and "numpy" in readme
    assert "BUILTIN_WITHOUT_DEFAULT_DELEGATES" in readme and "Finding `feedc0de`" in readme

    done = _repro(folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kernel set: optimized (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)" in done.stdout
    assert "6 of 6 elements out of tolerance" in done.stdout
    assert "worst at [1, 1]: expected 11, actual -1, error 12 > allowed 1.65565109e-05" in done.stdout
    assert "BUG PRESENT" in done.stdout and "exit 1: the bug is present (optimized)" in done.stdout
    assert "ai-edge-litert 2.3.0, numpy" in done.stdout

    done = _repro(folder, "--kernels", "reference")
    assert done.returncode == 1 and "BUILTIN_REF" in done.stdout


def test_a_correct_model_exports_a_reproducer_that_exits_0(tmp_path: Path) -> None:
    case = add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    engine_model = engine_model_of(case, create_litert_device(kernel_set="reference"))
    export = export_case(case, engine_model, tmp_path / "ok")
    assert not export.reproduces and export.kernel_set == "reference"
    done = _repro(export.folder, "--kernels", "each")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("OK: every output is within tolerance") == 3
    assert "exit 0: the engine computes the expected values" in done.stdout


def test_a_crash_is_reported_by_the_reproducer_with_its_signal(tmp_path: Path) -> None:
    case = add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    export = export_case(case, engine_model_of(case, aborting_device()), tmp_path / "crash", kernel_set="reference")
    assert export.reproduces and export.title.startswith("LiteRT (reference kernels) is killed by SIGABRT")
    done = _repro(export.folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CRASH: the engine was killed by signal 6 (SIGABRT)" in done.stdout
    assert "SIGABRT" in (export.folder / "README.md").read_text()
