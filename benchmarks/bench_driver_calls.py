#!/usr/bin/env python3
"""The driver's own cost per HAL call on generated models: what one fuzz case pays the driver, call by call.

- getSupportedOperations, validation alone, prepareModel (launch to callback) and compilation alone, on the
  models `generate_model` draws from seeds 1, 2, ... (those it rejects are skipped);
- the four execution paths of harness.paths (sync, async, fenced, burst: one burst per call) on prepared models
  and requests of the execution target's cases.

Each figure is the mean time per call over all inputs; the run is repeated and the median and the minimum of the
repeats are printed (the minimum is the least disturbed by other load). --json OUT also writes them as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from harness.drivers import DEFAULT_DRIVER, create_device
from harness.gen.model import generate_model
from harness.gen.sources import RandomSource
from harness.hal import Device, ErrorStatus, Model, PreparedModel, Request
from harness.paths import PATHS, ExecutionArgs
from harness.runner.execute import decode_seed, resolve_target
from harness.targets import prepare


def _models(count: int) -> list[Model]:
    models: list[Model] = []
    seed = 0
    while len(models) < count:
        seed += 1
        try:
            models.append(generate_model(RandomSource(seed)).model)
        except Exception:  # a rejected seed: take the next one
            continue
    return models


def _executions(device: Device, count: int) -> tuple[list[tuple[PreparedModel, Request]], list]:
    """Prepared models and requests of the execution target's cases, and what must stay alive with them."""
    target = resolve_target("execution")
    setups: list[tuple[PreparedModel, Request]] = []
    keep: list = []
    seed = 0
    while len(setups) < count:
        seed += 1
        case = decode_seed(target, seed)
        if case is None or case.request is None:
            continue
        live = case.materialized()
        preparation = prepare(device, live.model, preference=1, priority=1)
        if preparation.status != ErrorStatus.NONE or preparation.prepared is None:
            continue
        keep.append(case)  # the case keeps its model, request and memories alive
        setups.append((preparation.prepared, live.request.request))  # type: ignore[union-attr]
    return setups, keep


def _time(call: Callable[[object], object], inputs: Sequence[object], repeats: int) -> dict[str, float]:
    per_call = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        for item in inputs:
            call(item)
        per_call.append((time.perf_counter() - start) / len(inputs) * 1e6)
    return {"median_us": statistics.median(per_call), "min_us": min(per_call), "calls": len(inputs)}


def main(argv: list[str] | None = None) -> int:
    """Print the table (and write JSON if asked)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=1500, help="generated models for the model calls")
    parser.add_argument("--executions", type=int, default=300, help="execution-target cases for the paths")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--driver", default=DEFAULT_DRIVER)
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    device = create_device(args.driver, faults=[])
    models = _models(args.models)
    rows: dict[str, dict[str, float]] = {}
    rows["getSupportedOperations"] = _time(device.get_supported_operations, models, args.repeats)
    rows["prepareModel"] = _time(lambda m: prepare(device, m, preference=1, priority=1), models, args.repeats)
    if args.driver == DEFAULT_DRIVER:
        from driver_under_test.validation import validate_model

        limits, faults = device.options.limits, device.faults  # type: ignore[attr-defined]
        rows["validation only"] = _time(lambda m: validate_model(m, limits, faults), models, args.repeats)
        rows["compilation only"] = _time(lambda m: device.compile(m, None), models, args.repeats)  # type: ignore[attr-defined]
    setups, _keep = _executions(device, args.executions)
    execution = ExecutionArgs()
    for name, path in PATHS.items():
        rows[f"{name} execution"] = _time(lambda s, p=path: p(s[0], s[1], execution), setups, args.repeats)

    print(f"{'call':26s} {'median':>10s} {'min':>10s} {'calls':>7s}")
    for name, row in rows.items():
        print(f"{name:26s} {row['median_us']:8.1f}us {row['min_us']:8.1f}us {row['calls']:7d}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"driver": args.driver, "repeats": args.repeats, "calls": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
