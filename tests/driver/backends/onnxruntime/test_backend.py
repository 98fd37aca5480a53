"""ONNX Runtime behind the driver's HAL plumbing: the device variants, support from the translation, the ONNX
model in the model cache, and a clear error when ONNX Runtime is missing."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.driver.backends.onnxruntime.cases import require_onnxruntime, run_translated

require_onnxruntime()

import driver_under_test  # noqa: E402
from driver_under_test.backends.onnxruntime import backend as ort_backend  # noqa: E402
from harness.case import model_from_json, simple_request  # noqa: E402
from harness.drivers import DriverSpecError, create_device  # noqa: E402
from harness.hal import CacheHandle, ErrorStatus, MeasureTiming  # noqa: E402
from harness.hal.callbacks import WaitablePreparedModelCallback  # noqa: E402
from harness.targets import prepare  # noqa: E402
from tests.driver.models import add_model  # noqa: E402

A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B = np.array([[10.0, 20.0], [30.0, 40.0]], np.float32)
SPECS = {
    "all": "driver_under_test:create_onnxruntime_device",
    "extended": "driver_under_test:create_onnxruntime_extended_device",
    "basic": "driver_under_test:create_onnxruntime_basic_device",
    "disabled": "driver_under_test:create_onnxruntime_disabled_device",
}


def _run(prepared, model) -> np.ndarray:
    with simple_request(model, [A, B], [16]) as built:
        status, shapes, _ = prepared.execute_synchronously(built.request, MeasureTiming.NO, None, None)
        assert status == ErrorStatus.NONE
        return built.read_output(0, shapes[0].dimensions)


@pytest.mark.parametrize("level", sorted(SPECS))
def test_each_variant_is_a_driver_spec_that_names_its_engine_and_level(level: str) -> None:
    device = create_device(SPECS[level])
    status, version = device.get_version_string()
    assert status == ErrorStatus.NONE and f"onnxruntime-{level}" in version and "onnxruntime 1." in version
    model = add_model()
    p = prepare(device, model)
    assert p.status == ErrorStatus.NONE
    np.testing.assert_array_equal(_run(p.prepared, model), A + B)


def _operand(type_: str, dims, lifetime: str) -> dict:
    return {"type": type_, "dimensions": dims, "lifetime": lifetime}


def test_get_supported_operations_refuses_what_the_translation_cannot_take() -> None:
    # Operation 0 (ADD) is translated; operation 1 (HASHTABLE_LOOKUP) is declared unsupported; operation 2 (ADD
    # with its activation given at run time) cannot become a node attribute.
    model_json = {
        "operands": [
            _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT"),  # 0
            {**_operand("INT32", [], "CONSTANT_COPY"), "value": [0]},  # 1
            _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),  # 2
            _operand("TENSOR_INT32", [2], "SUBGRAPH_INPUT"),  # 3 lookups
            _operand("TENSOR_INT32", [3], "SUBGRAPH_INPUT"),  # 4 keys
            _operand("TENSOR_FLOAT32", [3, 1], "SUBGRAPH_INPUT"),  # 5 values
            _operand("TENSOR_FLOAT32", [2, 1], "SUBGRAPH_OUTPUT"),  # 6
            {**_operand("TENSOR_QUANT8_ASYMM", [2], "SUBGRAPH_OUTPUT"), "scale": 1.0},  # 7 hits
            _operand("INT32", [], "SUBGRAPH_INPUT"),  # 8 activation at run time
            _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),  # 9
        ],
        "operations": [
            {"type": "ADD", "inputs": [0, 0, 1], "outputs": [2]},
            {"type": "HASHTABLE_LOOKUP", "inputs": [3, 4, 5], "outputs": [6, 7]},
            {"type": "ADD", "inputs": [0, 0, 8], "outputs": [9]},
        ],
        "inputIndexes": [0, 3, 4, 5, 8],
        "outputIndexes": [2, 6, 7, 9],
    }
    model = model_from_json(model_json)
    assert driver_under_test.create_device().get_supported_operations(model) == (ErrorStatus.NONE, [True] * 3)
    device = driver_under_test.create_onnxruntime_device()
    assert device.get_supported_operations(model) == (ErrorStatus.NONE, [True, False, False])
    p = prepare(device, model)
    assert p.status == ErrorStatus.GENERAL_FAILURE and p.prepared is None


def test_preparation_does_not_translate_and_executions_translate_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = ort_backend.translate

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ort_backend, "translate", counting)
    model = add_model()
    p = prepare(driver_under_test.create_onnxruntime_device(), model)
    assert p.status == ErrorStatus.NONE and calls == []
    for _ in range(3):
        np.testing.assert_array_equal(_run(p.prepared, model), A + B)
    assert calls == [1]


def _files(tmp_path, name: str) -> tuple[list[CacheHandle], list[CacheHandle]]:
    fds = [os.open(tmp_path / f"{name}.{kind}", os.O_RDWR | os.O_CREAT, 0o600) for kind in ("model", "data")]
    return [CacheHandle((fds[0],), 0)], [CacheHandle((fds[1],), 0)]


def test_the_model_cache_holds_the_onnx_model_and_prepares_without_translating(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx

    device = driver_under_test.create_onnxruntime_device(cache_dir=str(tmp_path / "store"))
    model, token = add_model(), bytes(range(32))
    handles = _files(tmp_path, "saved")
    callback = WaitablePreparedModelCallback()
    device.prepare_model(model, 1, 1, None, handles[0], handles[1], token, callback)
    assert callback.result(10.0)[0] == ErrorStatus.NONE
    saved = (tmp_path / "saved.model").read_bytes()
    assert b"nnfuzz_hal_model" in saved  # the translated ONNX graph's name
    monkeypatch.setattr(ort_backend, "translate", lambda *a: pytest.fail("translated again"))
    callback = WaitablePreparedModelCallback()
    device.prepare_model_from_cache(None, handles[0], handles[1], token, callback)
    status, cached = callback.result(10.0)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(_run(cached, model), A + B)
    monkeypatch.undo()  # exporting translates the model anew
    exported = device.export_engine_model(model)[1]
    assert exported is not None and exported.format == "onnx"
    graph = onnx.load_from_string(exported.data).graph
    assert [n.op_type for n in graph.node] == ["Add", "Identity"]  # ADD, then its activation NONE


def test_a_cache_of_another_backend_does_not_prepare(tmp_path) -> None:
    store = str(tmp_path / "store")
    handles = _files(tmp_path, "numpy")
    token = bytes(32)
    callback = WaitablePreparedModelCallback()
    driver_under_test.create_device(cache_dir=store).prepare_model(
        add_model(), 1, 1, None, handles[0], handles[1], token, callback
    )
    assert callback.result(10.0)[0] == ErrorStatus.NONE
    callback = WaitablePreparedModelCallback()
    ort = driver_under_test.create_onnxruntime_device(cache_dir=store)
    ort.prepare_model_from_cache(None, handles[0], handles[1], token, callback)
    assert callback.result(10.0) == (ErrorStatus.GENERAL_FAILURE, None)


def test_an_onnxruntime_driver_without_onnxruntime_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    from driver_under_test.backends.onnxruntime import _engine

    real = importlib.import_module

    def without_onnxruntime(name: str, *args):
        if name.split(".")[0] in ("onnxruntime", "onnx"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(_engine.importlib, "import_module", without_onnxruntime)
    monkeypatch.setattr(
        _engine.importlib.metadata,
        "version",
        lambda name: (_ for _ in ()).throw(importlib.metadata.PackageNotFoundError(name)),
    )
    with pytest.raises(_engine.OnnxRuntimeMissing, match=r"pip install 'nnfuzz\[onnxruntime\]'"):
        _engine.onnx()
    with pytest.raises(DriverSpecError, match=r"nnfuzz\[onnxruntime\]"):
        create_device("driver_under_test:create_onnxruntime_device")


@pytest.mark.parametrize(("alpha", "beta", "supported"), [(1e-4, 0.75, True), (0.0, 0.75, False), (1.0, -0.5, False)])
def test_lrn_is_refused_where_onnx_runtimes_kernel_refuses_alpha_or_beta(alpha: float, beta: float, supported: bool):
    def scalar(type_: str, value: float) -> dict:
        return {**_operand(type_, [], "CONSTANT_COPY"), "value": [value]}

    model = model_from_json(
        {
            "operands": [
                _operand("TENSOR_FLOAT32", [1, 1, 1, 3], "SUBGRAPH_INPUT"),
                scalar("INT32", 1),
                scalar("FLOAT32", 1.0),
                scalar("FLOAT32", alpha),
                scalar("FLOAT32", beta),
                _operand("TENSOR_FLOAT32", [1, 1, 1, 3], "SUBGRAPH_OUTPUT"),
            ],
            "operations": [{"type": "LOCAL_RESPONSE_NORMALIZATION", "inputs": [0, 1, 2, 3, 4], "outputs": [5]}],
            "inputIndexes": [0],
            "outputIndexes": [5],
        }
    )
    # The HAL bounds neither: the driver's own kernels run every one of these models.
    assert driver_under_test.create_device().get_supported_operations(model) == (ErrorStatus.NONE, [True])
    device = driver_under_test.create_onnxruntime_device()
    assert device.get_supported_operations(model) == (ErrorStatus.NONE, [supported])


def test_int32_div_rounds_toward_negative_infinity_up_to_the_limits_of_int32() -> None:
    # Found by a campaign: the quotient was once computed as (a - floor_mod(a, b)) / b, which overflows near
    # INT32_MIN (-2147483648 / 7 came out positive).
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    a = np.array([low, low, high, high, -7, 7, -1, low + 1, 0], np.int32)
    b = np.array([7, 2, -7, 3, 2, -2, 5, -3, -4], np.int32)
    model = model_from_json(
        {
            "operands": [
                _operand("TENSOR_INT32", [9], "SUBGRAPH_INPUT"),
                _operand("TENSOR_INT32", [9], "SUBGRAPH_INPUT"),
                {**_operand("INT32", [], "CONSTANT_COPY"), "value": [0]},
                _operand("TENSOR_INT32", [9], "SUBGRAPH_OUTPUT"),
            ],
            "operations": [{"type": "DIV", "inputs": [0, 1, 2], "outputs": [3]}],
            "inputIndexes": [0, 1],
            "outputIndexes": [3],
        }
    )
    # Floor division in exact integers (Python's //), written out for the values above.
    expected = np.array([int(x) // int(y) for x, y in zip(a.tolist(), b.tolist())], np.int32)
    assert expected.tolist()[:2] == [-306783379, -1073741824]
    for level in ("disabled", "all"):
        (got,) = run_translated(model, [a, b], level)
        np.testing.assert_array_equal(got, expected, err_msg=level)


@pytest.mark.parametrize(
    ("type_", "quant", "stored", "expected"),
    [
        ("TENSOR_FLOAT32", {}, [0.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.6, 0.8]),
        ("TENSOR_FLOAT16", {}, [0.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.6, 0.8]),
        # Centred integers 0, 0 | 3, 4 at a scale so small that an epsilon in real values would swamp the norm.
        ("TENSOR_QUANT8_ASYMM", {"scale": 1e-10, "zeroPoint": 100}, [100, 100, 103, 104], [128, 128, 205, 230]),
    ],
)
def test_l2_normalization_of_an_all_zero_slice_is_zero(type_: str, quant: dict, stored: list, expected: list) -> None:
    # Found by a campaign: x / sqrt(sum(x^2)) gave 0 / 0 (NaN) where the HAL's reference divides by its epsilon.
    out_quant = {"scale": 1.0 / 128, "zeroPoint": 128} if quant else {}
    model = model_from_json(
        {
            "operands": [
                {**_operand(type_, [2, 2], "SUBGRAPH_INPUT"), **quant},
                {**_operand(type_, [2, 2], "SUBGRAPH_OUTPUT"), **out_quant},
            ],
            "operations": [{"type": "L2_NORMALIZATION", "inputs": [0], "outputs": [1]}],
            "inputIndexes": [0],
            "outputIndexes": [1],
        }
    )
    dtype = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16, "TENSOR_QUANT8_ASYMM": np.uint8}[type_]
    for level in ("disabled", "all"):
        (got,) = run_translated(model, [np.array(stored, dtype).reshape(2, 2)], level)
        np.testing.assert_allclose(np.asarray(got, np.float64).reshape(-1), expected, atol=2e-3, err_msg=level)
