#!/usr/bin/env python3
"""LiteRT backend costs per generated model: translation to a flatbuffer, interpreter creation (with tensor
allocation) on each kernel set, and one run; medians over many models, printed as a table and as JSON with
--json OUT.

Models: supported one-operation models of every translated operation, and random models of up to N operations
(--max-operations), from the harness's model generator (seeded, so every run measures the same models).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from driver_under_test.backends.litert import RULES, KernelSet, LiteRTProgram, translate, unsupported_reason
from harness.gen import GenerationRejected, ModelConfig, RandomSource, generate_model
from harness.hal import Model, OperandLifeTime, numpy_dtype


def constant_reader(model: Model):
    """The ConstantReader of a model built in memory."""

    def read(subgraph: int, index: int) -> np.ndarray:
        graph = model.main if subgraph == 0 else model.referenced[subgraph - 1]
        operand = graph.operands[index]
        loc = operand.location
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            raw = model.operand_values[loc.offset : loc.offset + loc.length]
        else:
            raw = model.pools[loc.pool_index].read(loc.offset, loc.length)
        return np.frombuffer(bytes(raw), dtype=numpy_dtype(operand.type)).reshape(operand.dimensions)

    return read


def supported_models(max_operations: int, count: int) -> list:
    """`count` generated models whose every operation the backend translates."""
    config = ModelConfig(operations=frozenset(int(o) for o in RULES), max_operations=max_operations)
    found = []
    seed = 0
    while len(found) < count and seed < 50 * count:
        seed += 1
        try:
            generated = generate_model(RandomSource(seed), config)
        except GenerationRejected:
            continue
        model, read = generated.model, constant_reader(generated.model)
        if all(unsupported_reason(model, 0, k, read) is None for k in range(len(model.main.operations))):
            found.append(generated)
    return found


def measure(models: list, repeat: int) -> dict:
    """Median microseconds of translation, program creation per kernel set and one run (XNNPACK excluded from
    the run: the delegate's first run also builds its runtime)."""
    translate_us, create_us, run_us = [], {k: [] for k in KernelSet}, []
    operations = []
    for generated in models:
        model, read = generated.model, constant_reader(generated.model)
        operations.append(len(model.main.operations))
        # Inputs given no value are absent optional operands: the backend runs the translation made without them.
        absent = [k for k, value in enumerate(generated.inputs) if value is None]
        inputs = [value for value in generated.inputs if value is not None]
        start = time.perf_counter()
        for _ in range(repeat):
            flatbuffer = translate(model, read, absent)
        translate_us.append((time.perf_counter() - start) / repeat * 1e6)
        for kernel_set in KernelSet:
            start = time.perf_counter()
            for _ in range(repeat):
                program = LiteRTProgram(flatbuffer, kernel_set)
            create_us[kernel_set].append((time.perf_counter() - start) / repeat * 1e6)
        program = LiteRTProgram(flatbuffer, KernelSet.OPTIMIZED)
        try:
            program.run(inputs)
        except Exception:  # noqa: BLE001  (a model LiteRT refuses is measured for translation and creation only)
            continue
        start = time.perf_counter()
        for _ in range(repeat):
            program.run(inputs)
        run_us.append((time.perf_counter() - start) / repeat * 1e6)
    return {
        "models": len(models),
        "mean_operations": statistics.fmean(operations) if operations else 0,
        "translate_us": statistics.median(translate_us),
        "create_us": {str(k): statistics.median(v) for k, v in create_us.items()},
        "run_us_optimized": statistics.median(run_us) if run_us else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--max-operations", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    results = {}
    for label, max_ops in (("1 operation", 1), (f"up to {args.max_operations} operations", args.max_operations)):
        results[label] = measure(supported_models(max_ops, args.models), args.repeat)
    for label, r in results.items():
        created = ", ".join(f"{k} {v:.0f}" for k, v in r["create_us"].items())
        print(
            f"{label}: {r['models']} models ({r['mean_operations']:.1f} operations on average): translate "
            f"{r['translate_us']:.0f} us, create+allocate {created} us, run (optimized) {r['run_us_optimized']:.0f} us"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
