"""LiteRT behind the driver's HAL plumbing: the device variants, support from the translation, translation when
first needed, the flatbuffer in the model cache, and a clear error when LiteRT is missing."""

from __future__ import annotations

import os

import numpy as np
import pytest

import driver_under_test
from driver_under_test.backends.litert import backend as litert_backend
from harness.case import model_from_json, simple_request
from harness.drivers import DriverSpecError, create_device
from harness.hal import CacheHandle, ErrorStatus, MeasureTiming
from harness.targets import prepare
from tests.driver.models import add_model

A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B = np.array([[10.0, 20.0], [30.0, 40.0]], np.float32)
SPECS = {
    "optimized": "driver_under_test:create_litert_device",
    "xnnpack": "driver_under_test:create_litert_xnnpack_device",
    "reference": "driver_under_test:create_litert_reference_device",
}


def _run(prepared, model) -> np.ndarray:
    with simple_request(model, [A, B], [16]) as built:
        status, shapes, _ = prepared.execute_synchronously(built.request, MeasureTiming.NO, None, None)
        assert status == ErrorStatus.NONE
        return built.read_output(0, shapes[0].dimensions)


@pytest.mark.parametrize("kernel_set", sorted(SPECS))
def test_each_variant_is_a_driver_spec_that_names_its_engine_and_kernels(kernel_set: str) -> None:
    device = create_device(SPECS[kernel_set])
    status, version = device.get_version_string()
    assert status == ErrorStatus.NONE and f"litert-{kernel_set}" in version and "ai-edge-litert" in version
    model = add_model()
    p = prepare(device, model)
    assert p.status == ErrorStatus.NONE
    np.testing.assert_array_equal(_run(p.prepared, model), A + B)


def test_an_operation_with_a_parameter_given_at_run_time_is_unsupported_on_litert_only() -> None:
    model_json = {
        "operands": [
            {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_INPUT"},
            {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_INPUT"},
            {"type": "INT32", "dimensions": [], "lifetime": "SUBGRAPH_INPUT"},  # the activation, given at run time
            {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_OUTPUT"},
        ],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0, 1, 2],
        "outputIndexes": [3],
    }
    model = model_from_json(model_json)
    assert driver_under_test.create_device().get_supported_operations(model) == (ErrorStatus.NONE, [True])
    litert = driver_under_test.create_litert_device()
    assert litert.get_supported_operations(model) == (ErrorStatus.NONE, [False])
    p = prepare(litert, model)
    assert p.status == ErrorStatus.GENERAL_FAILURE and p.prepared is None


def test_preparation_does_not_translate_and_executions_translate_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = litert_backend.translate

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(litert_backend, "translate", counting)
    device = driver_under_test.create_litert_device()
    model = add_model()
    p = prepare(device, model)
    assert p.status == ErrorStatus.NONE and calls == []
    for _ in range(3):
        np.testing.assert_array_equal(_run(p.prepared, model), A + B)
    assert calls == [1]


def _files(tmp_path, name: str) -> tuple[list[CacheHandle], list[CacheHandle]]:
    fds = [os.open(tmp_path / f"{name}.{kind}", os.O_RDWR | os.O_CREAT, 0o600) for kind in ("model", "data")]
    return [CacheHandle((fds[0],), 0)], [CacheHandle((fds[1],), 0)]


def _prepare_with_cache(device, model, handles, token: bytes):
    from harness.hal.callbacks import WaitablePreparedModelCallback

    callback = WaitablePreparedModelCallback()
    device.prepare_model(model, 1, 1, None, handles[0], handles[1], token, callback)
    return callback.result(10.0)


def _from_cache(device, handles, token: bytes):
    from harness.hal.callbacks import WaitablePreparedModelCallback

    callback = WaitablePreparedModelCallback()
    device.prepare_model_from_cache(None, handles[0], handles[1], token, callback)
    return callback.result(10.0)


def test_the_model_cache_holds_the_flatbuffer_and_prepares_without_translating(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = driver_under_test.create_litert_device(cache_dir=str(tmp_path / "store"))
    model, token = add_model(), bytes(range(32))
    handles = _files(tmp_path, "saved")
    status, prepared = _prepare_with_cache(device, model, handles, token)
    assert status == ErrorStatus.NONE
    model_cache = (tmp_path / "saved.model").read_bytes()
    assert b"TFL3" in model_cache  # the translated flatbuffer, file identifier and all
    monkeypatch.setattr(litert_backend, "translate", lambda *a: pytest.fail("translated again"))
    status, cached = _from_cache(device, handles, token)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(_run(cached, model), A + B)


def test_a_cache_of_another_backend_does_not_prepare(tmp_path) -> None:
    store = str(tmp_path / "store")
    numpy_device = driver_under_test.create_device(cache_dir=store)
    handles = _files(tmp_path, "numpy")
    token = bytes(32)
    assert _prepare_with_cache(numpy_device, add_model(), handles, token)[0] == ErrorStatus.NONE
    litert = driver_under_test.create_litert_device(cache_dir=store)
    assert _from_cache(litert, handles, token) == (ErrorStatus.GENERAL_FAILURE, None)


def test_a_litert_driver_without_litert_installed_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> str:
        raise litert_backend.LiteRTMissing("the LiteRT backend needs ai-edge-litert; pip install 'nnfuzz[litert]'")

    monkeypatch.setattr(litert_backend, "engine_version", missing)
    with pytest.raises(DriverSpecError, match=r"nnfuzz\[litert\]"):
        create_device("driver_under_test:create_litert_device")


def test_a_litert_device_exports_the_flatbuffer_it_runs_and_a_numpy_device_has_none() -> None:
    model = add_model()
    status, exported = driver_under_test.create_litert_xnnpack_device().export_engine_model(model)
    assert status == ErrorStatus.NONE and exported is not None
    assert (exported.format, exported.kernel_set) == ("tflite", "xnnpack")
    assert exported.engine.startswith("ai-edge-litert ") and exported.data[4:8] == b"TFL3"
    from driver_under_test.backends.litert import KernelSet, LiteRTProgram

    np.testing.assert_array_equal(LiteRTProgram(exported.data, KernelSet.REFERENCE).run([A, B])[0], A + B)
    assert driver_under_test.create_device().export_engine_model(model) == (ErrorStatus.GENERAL_FAILURE, None)


def test_the_driver_declares_its_variants_for_differential_runs() -> None:
    from harness.drivers import variants

    declared = variants("driver_under_test:create_litert_device")
    assert declared["litert-optimized"] == "driver_under_test:create_litert_device"
    for name, spec in declared.items():
        assert name in create_device(spec).get_version_string()[1]


def _batch_to_space_model():
    return model_from_json(
        {
            "operands": [
                {"type": "TENSOR_FLOAT32", "dimensions": [4, 1, 1, 1], "lifetime": "SUBGRAPH_INPUT"},
                {"type": "TENSOR_INT32", "dimensions": [2], "lifetime": "SUBGRAPH_INPUT"},  # the block shape
                {"type": "TENSOR_FLOAT32", "dimensions": [0, 0, 0, 0], "lifetime": "SUBGRAPH_OUTPUT"},
            ],
            "operations": [{"type": "BATCH_TO_SPACE_ND", "inputs": [0, 1], "outputs": [2]}],
            "inputIndexes": [0, 1],
            "outputIndexes": [2],
        }
    )


@pytest.mark.parametrize("kernel_set", sorted(SPECS))
@pytest.mark.parametrize(
    ("block", "status"),
    [((2, -7), ErrorStatus.INVALID_ARGUMENT), ((0, 2), ErrorStatus.INVALID_ARGUMENT), ((2, 2), ErrorStatus.NONE)],
)
def test_a_block_size_given_at_run_time_below_one_is_an_invalid_argument(
    kernel_set: str, block: tuple[int, int], status: ErrorStatus
) -> None:
    model = _batch_to_space_model()
    p = prepare(create_device(SPECS[kernel_set]), model)
    assert p.status == ErrorStatus.NONE
    x = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)
    with simple_request(model, [x, np.array(block, np.int32)], [16]) as built:
        answered, shapes, _ = p.prepared.execute_synchronously(built.request, MeasureTiming.NO, None, None)
        assert answered == status
        if status == ErrorStatus.NONE:
            np.testing.assert_array_equal(built.read_output(0, shapes[0].dimensions), x.reshape(1, 2, 2, 1))
