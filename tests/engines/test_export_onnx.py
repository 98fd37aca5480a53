"""Exporting a case run on ONNX Runtime: the folder holds model.onnx, and its repro.py, run as an engine's owner runs
it, exits 1 on the levels where ONNX Runtime diverges from the HAL and 0 where it computes the expected values; in a
fresh virtual environment with only ONNX Runtime and numpy installed too (slow: it installs them)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.case import Case
from harness.drivers import create_device
from harness.engines import EXPORT_FILES, Origin, engine_model_of, export_case
from harness.hal import OperandType as T
from tests.engines.onnx_cases import ORT, ORT_EXTENDED, qdq_s8_case
from tests.engines.planted import add_case


def _repro(folder: Path, *args: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    # Run from elsewhere, as a copy of the folder would be: the script finds its files next to itself.
    return subprocess.run(
        [python, str(folder / "repro.py"), *args], capture_output=True, text=True, timeout=300, cwd=folder.parent
    )


@pytest.fixture(scope="module")
def diverging(tmp_path_factory: pytest.TempPathFactory):
    """The export of the QDQ int8 divergence's example, found on the extended level."""
    case = qdq_s8_case()
    origin = Origin(signature="0dd5", target="execution", outcome="FAILURE", rule="execution.valid_request_succeeds")
    engine_model = engine_model_of(case, create_device(ORT_EXTENDED))
    export = export_case(case, engine_model, tmp_path_factory.mktemp("qdq") / "export", origin=origin)
    yield export
    case.close()


@pytest.fixture(scope="module")
def correct(tmp_path_factory: pytest.TempPathFactory):
    """The export of an ADD ONNX Runtime computes right, from the device at the default level (all)."""
    case = add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    export = export_case(case, engine_model_of(case, create_device(ORT)), tmp_path_factory.mktemp("add") / "export")
    yield export
    case.close()


def test_a_divergence_is_exported_as_model_onnx_showing_on_the_levels_that_rewrite_qdq(diverging) -> None:
    folder = diverging.folder
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.onnx", *EXPORT_FILES])
    assert (diverging.format, diverging.kernel_set, diverging.device_kernel_set) == ("onnx", "extended", "extended")
    assert diverging.reproduces and diverging.bare.showing() == ("all", "extended")
    assert diverging.engine.startswith("onnxruntime ")
    with np.load(folder / "inputs.npz") as inputs:
        assert inputs.files == ["input0"] and inputs["input0"].dtype == np.int8
        assert inputs["input0"].tolist() == [[49, -43], [7, -54]]
    with np.load(folder / "expected.npz") as expected:
        assert expected["output0"].dtype == np.int8 and expected["output0"].shape == (2, 4)
    summary = json.loads((folder / "export.json").read_text())
    assert summary["format"] == "onnx" and summary["showing"] == ["all", "extended"]
    assert summary["bare_runs"]["disabled"]["matches"] and summary["bare_runs"]["extended"]["outcome"] == "error"
    assert (
        Case.from_json(json.loads((folder / "case.json").read_text())).to_json()["model"]["operations"][0]["type"]
        == "FULLY_CONNECTED"
    )

    readme = (folder / "README.md").read_text()
    assert readme.startswith("# ONNX Runtime (extended kernels) refuses a valid model of FULLY_CONNECTED")
    assert "pip install onnxruntime==" in readme and "ORT_ENABLE_EXTENDED" in readme
    assert "node 4: Gemm {transB: 1}" in readme  # the ONNX model in ONNX's terms (the onnx package)
    assert "Finding `0dd5`" in readme


def test_the_reproducer_of_a_divergence_exits_1_where_onnx_runtime_diverges_and_0_where_not(diverging) -> None:
    done = _repro(diverging.folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ONNX Runtime kernel set: extended (GraphOptimizationLevel.ORT_ENABLE_EXTENDED)" in done.stdout
    assert "ERROR: the engine raised" in done.stdout and "does not match y_zero_point type UINT8" in done.stdout
    assert "exit 1: the bug is present (extended)" in done.stdout

    done = _repro(diverging.folder, "--kernels", "each")
    assert done.returncode == 1 and "exit 1: the bug is present (all, extended)" in done.stdout
    for level in ("disabled", "basic"):
        done = _repro(diverging.folder, "--kernels", level)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "all 8 elements within tolerance" in done.stdout


def test_a_model_onnx_runtime_computes_right_exports_a_reproducer_that_exits_0(correct) -> None:
    assert not correct.reproduces and correct.kernel_set == "all" and correct.bare.showing() == ()
    done = _repro(correct.folder)  # the "all" level alone, not every level in turn
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("OK: every output is within tolerance") == 1
    done = _repro(correct.folder, "--kernels", "each")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("OK: every output is within tolerance") == 4


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Python of a new virtual environment with only ONNX Runtime and numpy (this environment's versions)."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    wanted = [f"{name}=={importlib.metadata.version(name)}" for name in ("onnxruntime", "numpy")]
    done = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *wanted],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install {' '.join(wanted)} into a new virtual environment: {done.stderr[-500:]}")
    return python


@pytest.mark.slow
def test_the_reproducers_need_nothing_but_onnx_runtime_and_numpy(fresh_python: str, diverging, correct) -> None:
    listed = subprocess.run([fresh_python, "-m", "pip", "list"], capture_output=True, text=True, check=True)
    assert "onnx " not in listed.stdout and "nnfuzz" not in listed.stdout
    done = _repro(diverging.folder, python=fresh_python)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "exit 1: the bug is present (extended)" in done.stdout
    done = _repro(correct.folder, "--kernels", "each", python=fresh_python)
    assert done.returncode == 0, done.stdout + done.stderr
