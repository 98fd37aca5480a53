#!/usr/bin/env python3
"""Driver vs reference: time to execute the same models through driver_under_test (via the HAL) and through the
oracle's reference executor, printed as a table with the ratio, and as JSON with --json OUT.

Models: a convolution-heavy one (two 3x3 CONV_2D layers on 1x32x32x16), an elementwise one (a chain of ADD/MUL
on 256x256), and a quantized one (a quant8 CONV_2D then a quant8 ADD).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from harness.case import model_from_json, simple_request
from harness.drivers import DEFAULT_DRIVER, create_device
from harness.hal import ErrorStatus, ExecutionPreference, MeasureTiming, Model, Priority
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.reference import run_model


def _operand(
    type_: str, dims: list[int], lifetime: str, value: list | None = None, scale: float = 0.0, zero_point: int = 0
) -> dict:
    d = {"type": type_, "dimensions": dims, "lifetime": lifetime, "scale": scale, "zeroPoint": zero_point}
    if value is not None:
        d["value"] = value
    return d


def _int(v: int) -> dict:
    return _operand("INT32", [], "CONSTANT_COPY", [v])


def conv_model(rng: np.random.Generator) -> tuple[dict, list[np.ndarray]]:
    """Two 3x3 SAME CONV_2D layers, 16 -> 32 -> 32 channels, on 1x32x32x16 float32."""
    w1 = rng.uniform(-0.1, 0.1, (32, 3, 3, 16)).astype(np.float32)
    w2 = rng.uniform(-0.1, 0.1, (32, 3, 3, 32)).astype(np.float32)
    operands = [
        _operand("TENSOR_FLOAT32", [1, 32, 32, 16], "SUBGRAPH_INPUT"),
        _operand("TENSOR_FLOAT32", [32, 3, 3, 16], "CONSTANT_COPY", w1.ravel().tolist()),
        _operand("TENSOR_FLOAT32", [32], "CONSTANT_COPY", [0.0] * 32),
        _int(1),
        _int(1),
        _int(1),
        _int(1),  # implicit padding SAME, strides 1, 1, activation RELU
        _operand("TENSOR_FLOAT32", [1, 32, 32, 32], "TEMPORARY_VARIABLE"),
        _operand("TENSOR_FLOAT32", [32, 3, 3, 32], "CONSTANT_COPY", w2.ravel().tolist()),
        _operand("TENSOR_FLOAT32", [32], "CONSTANT_COPY", [0.01] * 32),
        _operand("TENSOR_FLOAT32", [1, 32, 32, 32], "SUBGRAPH_OUTPUT"),
    ]
    ops = [
        {"type": "CONV_2D", "inputs": [0, 1, 2, 3, 4, 5, 6], "outputs": [7]},
        {"type": "CONV_2D", "inputs": [7, 8, 9, 3, 4, 5, 6], "outputs": [10]},
    ]
    model = {"operands": operands, "operations": ops, "inputIndexes": [0], "outputIndexes": [10]}
    return model, [rng.uniform(-1, 1, (1, 32, 32, 16)).astype(np.float32)]


def elementwise_model(rng: np.random.Generator) -> tuple[dict, list[np.ndarray]]:
    """((a + b) * a - b) * b + a on 256x256 float32."""
    dims = [256, 256]
    operands = [
        _operand("TENSOR_FLOAT32", dims, "SUBGRAPH_INPUT"),
        _operand("TENSOR_FLOAT32", dims, "SUBGRAPH_INPUT"),
        _int(0),
        *[_operand("TENSOR_FLOAT32", dims, "TEMPORARY_VARIABLE") for _ in range(4)],
        _operand("TENSOR_FLOAT32", dims, "SUBGRAPH_OUTPUT"),
    ]
    ops = [
        {"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]},
        {"type": "MUL", "inputs": [3, 0, 2], "outputs": [4]},
        {"type": "SUB", "inputs": [4, 1, 2], "outputs": [5]},
        {"type": "MUL", "inputs": [5, 1, 2], "outputs": [6]},
        {"type": "ADD", "inputs": [6, 0, 2], "outputs": [7]},
    ]
    model = {"operands": operands, "operations": ops, "inputIndexes": [0, 1], "outputIndexes": [7]}
    return model, [rng.uniform(-1, 1, dims).astype(np.float32) for _ in range(2)]


def quant_model(rng: np.random.Generator) -> tuple[dict, list[np.ndarray]]:
    """A quant8 3x3 CONV_2D (1x32x32x16 -> 32 channels) followed by a quant8 ADD with a second input."""
    w = rng.integers(100, 156, (32, 3, 3, 16)).tolist()
    operands = [
        _operand("TENSOR_QUANT8_ASYMM", [1, 32, 32, 16], "SUBGRAPH_INPUT", scale=0.05, zero_point=128),
        _operand("TENSOR_QUANT8_ASYMM", [32, 3, 3, 16], "CONSTANT_COPY", np.ravel(w).tolist(), 0.01, 128),
        _operand("TENSOR_INT32", [32], "CONSTANT_COPY", [0] * 32, scale=0.0005),
        _int(1),
        _int(1),
        _int(1),
        _int(0),
        _operand("TENSOR_QUANT8_ASYMM", [1, 32, 32, 32], "TEMPORARY_VARIABLE", scale=0.1, zero_point=128),
        _operand("TENSOR_QUANT8_ASYMM", [1, 32, 32, 32], "SUBGRAPH_INPUT", scale=0.1, zero_point=128),
        _operand("TENSOR_QUANT8_ASYMM", [1, 32, 32, 32], "SUBGRAPH_OUTPUT", scale=0.2, zero_point=128),
    ]
    ops = [
        {"type": "CONV_2D", "inputs": [0, 1, 2, 3, 4, 5, 6], "outputs": [7]},
        {"type": "ADD", "inputs": [7, 8, 6], "outputs": [9]},
    ]
    model = {"operands": operands, "operations": ops, "inputIndexes": [0, 8], "outputIndexes": [9]}
    inputs = [
        rng.integers(0, 256, (1, 32, 32, 16)).astype(np.uint8),
        rng.integers(0, 256, (1, 32, 32, 32)).astype(np.uint8),
    ]
    return model, inputs


MODELS: dict[str, Callable[[np.random.Generator], tuple[dict, list[np.ndarray]]]] = {
    "convolution": conv_model,
    "elementwise": elementwise_model,
    "quantized": quant_model,
}


def _median_seconds(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _driver_runner(device, model: Model, inputs: list[np.ndarray], output_bytes: int) -> Callable[[], None]:
    callback = WaitablePreparedModelCallback()
    device.prepare_model(
        model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], bytes(32), callback
    )
    status, pm = callback.result(60)
    if status != ErrorStatus.NONE:
        raise SystemExit(f"driver could not prepare the model: {status.name}")
    rb = simple_request(model, inputs, [output_bytes])

    def run() -> None:
        status, _, _ = pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)
        if status != ErrorStatus.NONE:
            raise SystemExit(f"driver execution failed: {status.name}")

    return run


def main(argv: list[str] | None = None) -> int:
    """Print driver and reference median times per model and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--driver", default=DEFAULT_DRIVER, help="driver spec module:factory")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per model (median is reported)")
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    device = create_device(args.driver)
    rng = np.random.default_rng(0)
    rows = {}
    print(f"{'model':12} {'driver ms':>10} {'reference ms':>13} {'reference/driver':>17}")
    for name, build in MODELS.items():
        model_json, inputs = build(rng)
        model = model_from_json(model_json)
        reference = run_model(model, inputs)
        if reference.status != ErrorStatus.NONE:
            raise SystemExit(f"reference failed on {name}: {reference.message}")
        out_bytes = reference.outputs[0].nbytes
        ref_s = _median_seconds(lambda m=model, x=inputs: run_model(m, x), args.repeats)
        drv_s = _median_seconds(_driver_runner(device, model, inputs, out_bytes), args.repeats)
        rows[name] = {"driver_ms": drv_s * 1e3, "reference_ms": ref_s * 1e3, "reference_over_driver": ref_s / drv_s}
        print(f"{name:12} {drv_s * 1e3:10.2f} {ref_s * 1e3:13.2f} {ref_s / drv_s:17.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"driver": args.driver, "repeats": args.repeats, "models": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
