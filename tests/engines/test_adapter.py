"""Engine adapters: the registry, the reproducer script (what it imports, how it compares), and bare runs in a
child process (outputs, crash with its signal, error, hang)."""

from __future__ import annotations

import ast
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.engines import EngineAdapter, RunOutcome, UnknownFormat, adapter_for, register_adapter
from harness.engines.adapter import _load_script
from harness.engines.onnx import ONNX_RUNTIME
from harness.engines.tflite import LITERT
from harness.hal import OperandType as T
from harness.oracle.accuracy import SKIP_ABOVE, compare, tolerance_for

SCRIPT_ALLOWED = set(sys.stdlib_module_names) | {"numpy", "ai_edge_litert"}


def _fake_adapter(tmp_path: Path, body: str) -> EngineAdapter:
    """An adapter whose engine part runs `body` (Python, with model, kernels, inputs) instead of an engine."""
    part = tmp_path / "_fake_script.py"
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    part.write_text(
        "# --- script ---\n"
        'ENGINE, ENGINE_PACKAGE, ENGINE_MODULE, MODEL_FILE = "Fake", "numpy", "numpy", "model.fake"\n'
        'KERNEL_SETS = {"plain": "PLAIN"}\n\n\n'
        "def describe_kernels(kernels):\n    return kernels\n\n\n"
        f"def run_model(model, kernels, inputs):\n    import os, signal, time\n{indented}\n"
    )
    return EngineAdapter("fake", "Fake", "numpy", "numpy", "model.fake", ("plain",), str(part))


def test_the_registry_knows_tflite_and_onnx_and_refuses_an_unknown_format_or_a_second_adapter() -> None:
    assert adapter_for("tflite") is LITERT and adapter_for("onnx") is ONNX_RUNTIME
    assert LITERT.file_name == "model.tflite" and LITERT.kernel_sets == ("optimized", "xnnpack", "reference")
    assert ONNX_RUNTIME.file_name == "model.onnx" and ONNX_RUNTIME.package == "onnxruntime"
    # Other tests may register adapters of their own: the known formats listed include onnx and tflite.
    with pytest.raises(UnknownFormat, match=r"'coreml' \(known: .*onnx, .*tflite"):
        adapter_for("coreml")
    with pytest.raises(ValueError, match="registered already"):
        register_adapter(LITERT)
    with pytest.raises(ValueError, match="no kernel set 'fast'"):
        LITERT.check_kernel_set("fast")


def test_onnx_runtime_kernel_sets_are_the_optimization_levels_as_the_driver_names_them() -> None:
    from driver_under_test.backends.onnxruntime import OptLevel

    # The driver's own names (its device factories take them as `level`), the default level first.
    assert ONNX_RUNTIME.kernel_sets == ("all", "extended", "basic", "disabled")
    assert set(ONNX_RUNTIME.kernel_sets) == {level.value for level in OptLevel}
    assert set(ONNX_RUNTIME.kernel_set_names) == set(ONNX_RUNTIME.kernel_sets)


def _imported(script: str) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    return imported


def test_the_reproducer_imports_only_the_engine_numpy_and_the_standard_library() -> None:
    imported = _imported(LITERT.script("xnnpack", "a title"))
    assert imported <= SCRIPT_ALLOWED and {"numpy", "ai_edge_litert"} <= imported
    assert "DEFAULT_KERNELS = 'xnnpack'" in LITERT.script("xnnpack")
    assert LITERT.requirement("2.3.0") == "ai-edge-litert==2.3.0"
    imported = _imported(ONNX_RUNTIME.script("extended", "a title"))
    assert imported <= set(sys.stdlib_module_names) | {"numpy", "onnxruntime"}
    assert {"numpy", "onnxruntime"} <= imported
    assert ONNX_RUNTIME.requirement("1.30.0") == "onnxruntime==1.30.0"


def test_every_kernel_set_in_turn_is_not_a_kernel_set_of_its_own(tmp_path: Path) -> None:
    # ONNX Runtime has a level named "all": `--kernels all` runs that level, `--kernels each` every one in turn.
    script = tmp_path / "repro.py"
    script.write_text(ONNX_RUNTIME.script("all"))
    module = _load_script(script)
    assert module.EACH not in module.KERNEL_SETS and "all" in module.KERNEL_SETS
    assert module.DEFAULT_KERNELS == "all"


def _spec(operand_type: int, relaxed: bool = False, steps: int = 1) -> dict:
    atol, rtol = tolerance_for(operand_type, relaxed, steps)
    cls = {T.TENSOR_FLOAT32: "float32", T.TENSOR_QUANT8_ASYMM: "quant8", T.TENSOR_BOOL8: "bool"}[operand_type]
    skip = SKIP_ABOVE if cls == "float32" else None
    return {"class": cls, "atol": atol, "rtol": rtol, "skip_above": skip, "compared": True, "reason": ""}


@pytest.mark.parametrize("seed", range(6))
def test_the_reproducer_judges_each_output_as_the_oracle_does(tmp_path: Path, seed: int) -> None:
    script = tmp_path / "repro.py"
    script.write_text(LITERT.script("optimized"))
    module = _load_script(script)
    rng = np.random.default_rng(seed)
    expected_f = rng.normal(0, 10, 40).astype(np.float32)
    expected_f[:3] = [np.nan, np.inf, 2e3]  # not compared
    actual_f = expected_f + rng.choice([0, 1e-6, 1e-3], 40).astype(np.float32)
    expected_q = rng.integers(0, 256, (4, 5), dtype=np.uint8)
    actual_q = np.clip(expected_q.astype(int) + rng.integers(-2, 3, (4, 5)), 0, 255).astype(np.uint8)
    expected_b = rng.integers(0, 2, 8).astype(np.bool_)
    actual_b = expected_b ^ (rng.random(8) < 0.2)
    for expected, actual, t in (
        (expected_f, actual_f, T.TENSOR_FLOAT32),
        (expected_q, actual_q, T.TENSOR_QUANT8_ASYMM),
        (expected_b, actual_b, T.TENSOR_BOOL8),
    ):
        ok, lines = module.check_output(expected, actual, _spec(t))
        oracle = compare(expected, actual, t)
        assert ok == oracle.ok
        if oracle.ok:
            assert lines[0].startswith(f"all {oracle.checked} elements within tolerance")
        else:
            assert lines[0].startswith(f"{oracle.mismatched} of {oracle.checked} elements out of tolerance")
        assert f"worst at {list(oracle.worst.index)}" in lines[1]
    ok, lines = module.check_output(expected_q, actual_q[:2], _spec(T.TENSOR_QUANT8_ASYMM))
    assert not ok and "shape mismatch" in lines[0]
    unspecified = {**_spec(T.TENSOR_QUANT8_ASYMM), "compared": False, "reason": "left to the implementation"}
    assert module.check_output(expected_q, actual_q, unspecified) == (
        True,
        ["values not compared: left to the implementation"],
    )


def test_a_bare_run_gives_the_outputs_in_order(tmp_path: Path) -> None:
    adapter = _fake_adapter(tmp_path, "return [inputs[0] + inputs[1], inputs[0] * 2]")
    run = adapter.run_bare(b"model", "plain", [np.arange(3, dtype=np.int32), np.ones(3, dtype=np.int32)])
    assert run.outcome == RunOutcome.OUTPUTS and run.signal is None
    assert [a.tolist() for a in run.outputs] == [[1, 2, 3], [0, 2, 4]]


def test_a_child_that_kills_itself_is_reported_with_its_signal(tmp_path: Path) -> None:
    adapter = _fake_adapter(tmp_path, "os.kill(os.getpid(), signal.SIGSEGV)")
    run = adapter.run_bare(b"model", "plain", [np.zeros(1, np.float32)])
    assert run.outcome == RunOutcome.CRASH
    assert run.signal == signal.SIGSEGV and run.signal_name == "SIGSEGV"


def test_an_engine_that_raises_is_an_error_with_its_text(tmp_path: Path) -> None:
    adapter = _fake_adapter(tmp_path, "raise RuntimeError('Failed to prepare node 3')")
    run = adapter.run_bare(b"model", "plain", [np.zeros(1, np.float32)])
    assert run.outcome == RunOutcome.ERROR and run.error == "RuntimeError: Failed to prepare node 3"


def test_an_engine_that_never_returns_is_a_hang(tmp_path: Path) -> None:
    adapter = _fake_adapter(tmp_path, "time.sleep(60)")
    run = adapter.run_bare(b"model", "plain", [np.zeros(1, np.float32)], timeout_s=1.0)
    assert run.outcome == RunOutcome.HANG and run.elapsed_s < 30


def test_litert_describes_a_model_in_its_own_terms() -> None:
    from tests.engines.planted import aborting_flatbuffer

    lines = LITERT.describe_model(aborting_flatbuffer())
    assert "  operator 0: ADD (version 1) {fusedActivationFunction: 0, potScaleInt16: True}" in lines
    assert "    in  t0 UINT8 [2, 3]" in lines


def test_onnx_runtime_describes_a_model_in_onnx_terms() -> None:
    from harness.drivers import create_device
    from harness.engines import engine_model_of
    from tests.engines.onnx_cases import ORT, qdq_s8_case

    case = qdq_s8_case()
    lines = ONNX_RUNTIME.describe_model(engine_model_of(case, create_device(ORT)).data)
    case.close()
    assert lines[0].startswith("ONNX IR version") and "ai.onnx 21" in lines[0]
    assert "inputs: operand0 INT8 [2, 2]" in lines and "outputs: operand4 INT8 [2, 4]" in lines
    assert "  in  operand1 INT8 [4, 2] constant [-25, 14, -35, -1, 20, -3, -70, -27]" in lines
    assert any(line.endswith(": Gemm {transB: 1}") for line in lines)
    assert ONNX_RUNTIME.describe_model(b"not an onnx model")[0].startswith("(the model cannot be read")
