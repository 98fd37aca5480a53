#!/usr/bin/env python3
"""Compilation caching: time of prepareModelFromCache against prepareModel for the same model, as a ratio.

For each model the benchmark prints the median time of prepareModel without cache handles (the work caching
would save), of prepareModel that also writes the cache files, and of prepareModelFromCache reading them back,
then checks that the model prepared from cache computes what the freshly prepared one does. Models:
- fully_connected: one FULLY_CONNECTED with a 1024x1024 float32 weight (4 MiB, CONSTANT_REFERENCE in ashmem);
- conv: a 3x3 CONV_2D 256 -> 256 channels on 1x8x8x256 (2.25 MiB of filters, CONSTANT_COPY);
- add_chain: 100 chained ADDs, each with its own [1] constant (a structure-heavy model with tiny constants).
The cache files are regular files in a temporary folder, as a client would keep them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from harness.case import simple_request
from harness.drivers import DEFAULT_DRIVER, create_device
from harness.hal import (
    CacheHandle,
    DataLocation,
    Device,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    PreparedModel,
    Priority,
    Subgraph,
)
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.hal.memory import create_ashmem

F32 = OperandType.TENSOR_FLOAT32
LT = OperandLifeTime


def _int32(value_offset: int, consumers: int = 1) -> Operand:
    return Operand(
        OperandType.INT32, [], consumers, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, value_offset, 4)
    )


def fully_connected(rng: np.random.Generator) -> tuple[Model, list[np.ndarray]]:
    """out[1, 1024] = FULLY_CONNECTED(x[1, 1024], W[1024, 1024], b[1024]); W lives in an ashmem pool."""
    n = 1024
    weights = rng.uniform(-0.05, 0.05, (n, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    pool = create_ashmem(weights.nbytes + bias.nbytes)
    pool.write(0, weights.tobytes())
    pool.write(weights.nbytes, bias.tobytes())
    operands = [
        Operand(F32, [1, n], 1, lifetime=LT.SUBGRAPH_INPUT),
        Operand(F32, [n, n], 1, lifetime=LT.CONSTANT_REFERENCE, location=DataLocation(0, 0, weights.nbytes)),
        Operand(F32, [n], 1, lifetime=LT.CONSTANT_REFERENCE, location=DataLocation(0, weights.nbytes, bias.nbytes)),
        _int32(0),
        Operand(F32, [1, n], 0, lifetime=LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OperationType.FULLY_CONNECTED, [0, 1, 2, 3], [4])], [0], [4])
    model = Model(main=main, operand_values=struct.pack("<i", 0), pools=[pool])
    return model, [rng.uniform(-1, 1, (1, n)).astype(np.float32)]


def conv(rng: np.random.Generator) -> tuple[Model, list[np.ndarray]]:
    """A 3x3 SAME CONV_2D, 256 -> 256 channels, on 1x8x8x256; filters and bias are CONSTANT_COPY."""
    c = 256
    filters = rng.uniform(-0.05, 0.05, (c, 3, 3, c)).astype(np.float32)
    bias = rng.uniform(-1, 1, c).astype(np.float32)
    scalars = struct.pack("<5i", 1, 1, 1, 0, 0)  # padding SAME, stride 1, 1, no activation, (spare)
    values = scalars + filters.tobytes() + bias.tobytes()
    base = len(scalars)
    operands = [
        Operand(F32, [1, 8, 8, c], 1, lifetime=LT.SUBGRAPH_INPUT),
        Operand(F32, [c, 3, 3, c], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, base, filters.nbytes)),
        Operand(F32, [c], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, base + filters.nbytes, bias.nbytes)),
        _int32(0),
        _int32(4),
        _int32(8),
        _int32(12),
        Operand(F32, [1, 8, 8, c], 0, lifetime=LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OperationType.CONV_2D, [0, 1, 2, 3, 4, 5, 6], [7])], [0], [7])
    return Model(main=main, operand_values=values), [rng.uniform(-1, 1, (1, 8, 8, c)).astype(np.float32)]


def add_chain(rng: np.random.Generator, length: int = 100) -> tuple[Model, list[np.ndarray]]:
    """x -> ADD(., c_1) -> ... -> ADD(., c_length), each c_i a float32 [1] constant and one shared activation."""
    values = struct.pack("<i", 0) + rng.uniform(-1, 1, length).astype(np.float32).tobytes()
    operands = [_int32(0, consumers=length), Operand(F32, [1], 1, lifetime=LT.SUBGRAPH_INPUT)]
    ops = []
    for i in range(length):
        last = i == length - 1
        constant = Operand(F32, [1], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, 4 + 4 * i, 4))
        out = Operand(F32, [1], 0 if last else 1, lifetime=LT.SUBGRAPH_OUTPUT if last else LT.TEMPORARY_VARIABLE)
        operands += [constant, out]
        previous = 1 if i == 0 else len(operands) - 3
        ops.append(Operation(OperationType.ADD, [previous, len(operands) - 2, 0], [len(operands) - 1]))
    main = Subgraph(operands, ops, [1], [len(operands) - 1])
    return Model(main=main, operand_values=values), [rng.uniform(-1, 1, (1,)).astype(np.float32)]


MODELS: dict[str, Callable[[np.random.Generator], tuple[Model, list[np.ndarray]]]] = {
    "fully_connected": fully_connected,
    "conv": conv,
    "add_chain": add_chain,
}


def _wait(callback: WaitablePreparedModelCallback, what: str) -> PreparedModel:
    status, prepared = callback.result(120)
    if status != ErrorStatus.NONE or prepared is None:
        raise SystemExit(f"{what} failed: {status.name}")
    return prepared


class _CacheFiles:
    """One model cache and one data cache file per needed handle, reopened for every call as a client does."""

    def __init__(self, folder: str, name: str, counts: tuple[int, int]) -> None:
        self.paths = [
            [os.path.join(folder, f"{name}.{kind}{i}") for i in range(n)] for kind, n in zip(("model", "data"), counts)
        ]

    def handles(self) -> tuple[list[CacheHandle], list[CacheHandle], list[int]]:
        fds = [[os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in group] for group in self.paths]
        return [CacheHandle((fd,)) for fd in fds[0]], [CacheHandle((fd,)) for fd in fds[1]], fds[0] + fds[1]


def _median_ms(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _outputs(prepared: PreparedModel, model: Model, inputs: list[np.ndarray]) -> np.ndarray:
    out = model.main.operands[model.main.output_indexes[0]]
    with simple_request(model, inputs, [int(np.prod(out.dimensions)) * 4]) as rb:
        status, _, _ = prepared.execute_synchronously(rb.request, MeasureTiming.NO, None, None)
        if status != ErrorStatus.NONE:
            raise SystemExit(f"execution failed: {status.name}")
        return rb.read_output(0, out.dimensions).copy()


def bench_model(device: Device, model: Model, inputs: list[np.ndarray], files: _CacheFiles, repeats: int) -> dict:
    """Median prepare / prepare-and-save / prepare-from-cache times (ms) of one model and their ratios."""
    token = bytes(range(32))
    pref, prio = ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM

    def prepare() -> PreparedModel:
        cb = WaitablePreparedModelCallback()
        device.prepare_model(model, pref, prio, None, [], [], token, cb)
        return _wait(cb, "prepareModel")

    def prepare_and_save() -> PreparedModel:
        model_cache, data_cache, fds = files.handles()
        try:
            cb = WaitablePreparedModelCallback()
            device.prepare_model(model, pref, prio, None, model_cache, data_cache, token, cb)
            return _wait(cb, "prepareModel with cache handles")
        finally:
            for fd in fds:
                os.close(fd)

    def from_cache() -> PreparedModel:
        model_cache, data_cache, fds = files.handles()
        try:
            cb = WaitablePreparedModelCallback()
            device.prepare_model_from_cache(None, model_cache, data_cache, token, cb)
            return _wait(cb, "prepareModelFromCache")
        finally:
            for fd in fds:
                os.close(fd)

    fresh_ms = _median_ms(prepare, repeats)
    save_ms = _median_ms(prepare_and_save, repeats)
    cached_ms = _median_ms(from_cache, repeats)
    same = bool(np.array_equal(_outputs(prepare(), model, inputs), _outputs(from_cache(), model, inputs)))
    cache_bytes = sum(os.path.getsize(p) for group in files.paths for p in group)
    return {
        "prepare_ms": fresh_ms,
        "prepare_and_save_ms": save_ms,
        "from_cache_ms": cached_ms,
        "from_cache_over_prepare": cached_ms / fresh_ms,
        "cache_bytes": cache_bytes,
        "same_outputs": same,
    }


def main(argv: list[str] | None = None) -> int:
    """Print prepareModel and prepareModelFromCache median times per model and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--driver", default=DEFAULT_DRIVER, help="driver spec module:factory (must take cache_dir)")
    parser.add_argument("--repeats", type=int, default=9, help="timed runs per measure (median is reported)")
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
        device = create_device(args.driver, cache_dir=os.path.join(folder, "store"))
        status, n_model, n_data = device.get_number_of_cache_files_needed()
        if status != ErrorStatus.NONE or n_model + n_data == 0:
            raise SystemExit("the driver does not cache compilations")
        print(f"{'model':16} {'prepare ms':>11} {'+save ms':>9} {'from cache ms':>14} {'cache/prepare':>14} {'MiB':>6}")
        for name, build in MODELS.items():
            model, inputs = build(rng)
            row = bench_model(device, model, inputs, _CacheFiles(folder, name, (n_model, n_data)), args.repeats)
            for pool in model.pools:
                pool.close()
            rows[name] = row
            print(
                f"{name:16} {row['prepare_ms']:11.2f} {row['prepare_and_save_ms']:9.2f} {row['from_cache_ms']:14.2f} "
                f"{row['from_cache_over_prepare']:14.2f} {row['cache_bytes'] / 2**20:6.2f}"
                + ("" if row["same_outputs"] else "  OUTPUTS DIFFER"),
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"driver": args.driver, "repeats": args.repeats, "models": rows}, fh, indent=1)
    return 0 if all(r["same_outputs"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
