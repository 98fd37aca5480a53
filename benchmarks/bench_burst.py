#!/usr/bin/env python3
"""Bursts and fast message queues: what a burst saves per execution, and what the queue itself costs.

- burst vs executeSynchronously: the same small model (ADD of two 2x2 float32 tensors) and the same request run
  through one long-lived burst (pools cached after the first execution) and through executeSynchronously;
  median and 90th percentile latency of each and the ratio of the medians.
- FMQ round trip across processes: a forked child echoes one 32-byte element back through a second queue;
  median and 90th percentile round-trip time, both ends blocking on the event flags.
- FMQ throughput across processes: a forked child writes messages of 16 elements of 32 bytes (one typical
  request packet) through a 1024-element queue as fast as the parent drains them; messages and MB per second.

Prints a table; --json OUT also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from harness.case import model_from_json, simple_request
from harness.drivers import DEFAULT_DRIVER, create_device
from harness.hal import ErrorStatus, ExecutionPreference, MeasureTiming, PreparedModel, Priority
from harness.hal.burst_wire import DATUM_SIZE
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.hal.fmq import READER, WRITER, FastMessageQueue
from harness.paths.burst_client import BurstClient

SMALL_ADD = {
    "operands": [
        {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_INPUT", "scale": 0.0, "zeroPoint": 0},
        {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_INPUT", "scale": 0.0, "zeroPoint": 0},
        {"type": "INT32", "dimensions": [], "lifetime": "CONSTANT_COPY", "scale": 0.0, "zeroPoint": 0, "value": [0]},
        {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "lifetime": "SUBGRAPH_OUTPUT", "scale": 0.0, "zeroPoint": 0},
    ],
    "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
    "inputIndexes": [0, 1],
    "outputIndexes": [3],
}


def _percentiles_us(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": statistics.median(ordered) * 1e6,
        "p90_us": ordered[int(0.9 * (len(ordered) - 1))] * 1e6,
        "samples": len(ordered),
    }


def _timed(fn: Callable[[], None], repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _prepare(device) -> PreparedModel:
    callback = WaitablePreparedModelCallback()
    model = model_from_json(SMALL_ADD)
    device.prepare_model(model, ExecutionPreference.SUSTAINED_SPEED, Priority.MEDIUM, None, [], [], bytes(32), callback)
    status, pm = callback.result(60)
    if status != ErrorStatus.NONE or pm is None:
        raise SystemExit(f"driver could not prepare the model: {status.name}")
    return pm


def burst_vs_sync(driver: str, repeats: int) -> dict:
    """Latency of the same request through a burst and through executeSynchronously."""
    pm = _prepare(create_device(driver))
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    rb = simple_request(model_from_json(SMALL_ADD), [a, a], [16])

    def sync() -> None:
        if pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] != ErrorStatus.NONE:
            raise SystemExit("executeSynchronously failed")

    with BurstClient(pm) as client:

        def burst() -> None:
            if client.execute(rb.request, MeasureTiming.NO)[0] != ErrorStatus.NONE:
                raise SystemExit("burst execution failed")

        # Interleave the two so machine noise hits both alike.
        sync_times, burst_times = [], []
        for _ in range(10):
            sync_times += _timed(sync, repeats // 10, 5)
            burst_times += _timed(burst, repeats // 10, 5)
        if not np.array_equal(rb.read_output(0, [2, 2]), a + a):
            raise SystemExit("wrong output")
    rb.close()
    s, b = _percentiles_us(sync_times), _percentiles_us(burst_times)
    return {"sync": s, "burst": b, "burst_over_sync": b["median_us"] / s["median_us"]}


def _fork(body: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    return pid


def _reap(pid: int) -> None:
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("the benchmark's child process failed")


def fmq_round_trip(repeats: int) -> dict:
    """Round-trip time of one element through a forked echo process."""
    ping = FastMessageQueue.create(64, DATUM_SIZE)
    pong = FastMessageQueue.create(64, DATUM_SIZE)
    total = repeats + 100

    def echo() -> None:
        ping.claim(READER)
        pong.claim(WRITER)
        for _ in range(total):
            datum = ping.read(1, blocking=True, timeout=30)
            if datum is None or not pong.write(datum, blocking=True, timeout=30):
                raise SystemExit(1)

    pid = _fork(echo)
    ping.claim(WRITER)
    pong.claim(READER)
    message = bytes(range(DATUM_SIZE))

    def once() -> None:
        ping.write(message, blocking=True, timeout=30)
        if pong.read(1, blocking=True, timeout=30) != message:
            raise SystemExit("echo lost the message")

    times = _timed(once, repeats, 100)
    _reap(pid)
    ping.close()
    pong.close()
    return _percentiles_us(times)


def fmq_throughput(messages: int, elements_per_message: int = 16, capacity: int = 1024) -> dict:
    """Messages and bytes per second from a forked writer to this process."""
    queue = FastMessageQueue.create(capacity, DATUM_SIZE)
    message = bytes(elements_per_message * DATUM_SIZE)

    def writer() -> None:
        queue.claim(WRITER)
        for _ in range(messages):
            if not queue.write(message, blocking=True, timeout=30):
                raise SystemExit(1)

    queue.claim(READER)
    pid = _fork(writer)
    start = time.perf_counter()
    for _ in range(messages):
        if queue.read(elements_per_message, blocking=True, timeout=30) is None:
            raise SystemExit("the writer stopped")
    elapsed = time.perf_counter() - start
    _reap(pid)
    queue.close()
    return {
        "messages": messages,
        "message_bytes": len(message),
        "messages_per_s": messages / elapsed,
        "mb_per_s": messages * len(message) / elapsed / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements, print them and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--driver", default=DEFAULT_DRIVER, help="driver spec module:factory")
    parser.add_argument("--repeats", type=int, default=2000, help="timed executions / round trips (default 2000)")
    parser.add_argument("--messages", type=int, default=50000, help="messages for the throughput run (default 50000)")
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    repeats = max(10, args.repeats)

    print("burst vs executeSynchronously (ADD 2x2 float32) ...", flush=True)
    latency = burst_vs_sync(args.driver, repeats)
    print(f"  {'path':8} {'median us':>10} {'p90 us':>10}")
    for name in ("sync", "burst"):
        print(f"  {name:8} {latency[name]['median_us']:10.1f} {latency[name]['p90_us']:10.1f}")
    print(f"  burst / sync (medians): {latency['burst_over_sync']:.2f}", flush=True)

    print("FMQ round trip across processes (one 32-byte element each way) ...", flush=True)
    rtt = fmq_round_trip(repeats)
    print(f"  median {rtt['median_us']:.1f} us, p90 {rtt['p90_us']:.1f} us", flush=True)

    print(f"FMQ throughput across processes ({args.messages} messages of 16 x 32 bytes) ...", flush=True)
    tput = fmq_throughput(args.messages)
    print(f"  {tput['messages_per_s']:.0f} messages/s, {tput['mb_per_s']:.1f} MB/s", flush=True)

    if args.json:
        report = {
            "driver": args.driver,
            "repeats": repeats,
            "burst_vs_sync": latency,
            "fmq_round_trip": rtt,
            "fmq_throughput": tput,
        }
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
