"""Generated one-operation cases for the ONNX Runtime backend's tests: the harness's public generator and
reference (through the backend-independent helpers the LiteRT tests use), run through the translation and one
session per optimization level."""

from __future__ import annotations

import functools

import pytest

from harness.hal import ErrorStatus, Model, OperationType
from harness.reference import run_model
from tests.driver.backends.litert.cases import FLAVORS, Pick, constant_reader, flavor_of, generate, mismatches

SKIP_REASON = "ONNX Runtime is not installed (pip install 'nnfuzz[onnxruntime]')"


def require_onnxruntime() -> None:
    """Skip the calling test module when onnxruntime or onnx is missing."""
    pytest.importorskip("onnxruntime", reason=SKIP_REASON)
    pytest.importorskip("onnx", reason=SKIP_REASON)


def model_reason(model: Model) -> str | None:
    """The first unsupported_reason over main's operations (None: all supported)."""
    from driver_under_test.backends.onnxruntime import unsupported_reason

    read = constant_reader(model)
    for index in range(len(model.main.operations)):
        reason = unsupported_reason(model, 0, index, read)
        if reason is not None:
            return reason
    return None


@functools.cache
def picks(operation: OperationType, flavor: str, wanted: int, limit: int = 80) -> tuple[Pick, ...]:
    """The first `wanted` seeds whose model the backend supports and whose reference result the HAL specifies, and
    the reasons of the unsupported ones met on the way."""
    found: list[Pick] = []
    supported = 0
    for seed in range(limit):
        generated = generate(operation, flavor, seed)
        if generated is None or flavor_of(generated.model) != flavor:
            continue
        reason = model_reason(generated.model)
        if reason is None:
            result = run_model(generated.model, generated.inputs)
            if result.status != ErrorStatus.NONE or result.unspecified:
                continue
            supported += 1
        found.append(Pick(seed, reason))
        if supported >= wanted:
            break
    return tuple(found)


def supported_seeds(operation: OperationType, flavor: str, wanted: int) -> list[int]:
    """Seeds of supported cases."""
    return [p.seed for p in picks(operation, flavor, wanted) if p.reason is None]


def run_translated(model: Model, inputs, level: str) -> list:
    """The model's outputs from ONNX Runtime at `level`, as the backend runs it (inputs without a value are
    absent optional operands, run by the translation made without them)."""
    from driver_under_test.backends.onnxruntime import OrtProgram, translate

    absent = [k for k, value in enumerate(inputs) if value is None]
    onnx_model = translate(model, constant_reader(model), absent)
    return OrtProgram(onnx_model, level).run([value for value in inputs if value is not None])


def run_case(operation: OperationType, flavor: str, seed: int, level: str) -> list[str]:
    """Translate and run one generated case at one optimization level; the mismatches against the reference
    (empty: every output within the HAL's tolerance, or the reference is ill-conditioned there)."""
    generated = generate(operation, flavor, seed)
    assert generated is not None
    expected = run_model(generated.model, generated.inputs)
    assert expected.status == ErrorStatus.NONE and not expected.unspecified
    actual = run_translated(generated.model, generated.inputs, level)
    return mismatches(generated.model, generated.inputs, expected.outputs, actual)


__all__ = ["FLAVORS", "SKIP_REASON", "picks", "require_onnxruntime", "run_case", "run_translated", "supported_seeds"]
