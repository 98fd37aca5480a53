"""OrtProgram: one ONNX Runtime InferenceSession over one translated model, run with HAL-shaped values, and
stopped when it runs past a time limit."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from driver_under_test.backends.onnxruntime._engine import OptLevel, make_session, runtime

# ONNX Runtime's input type strings -> the numpy dtype it takes.
_INPUT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(uint16)": np.uint16,
    "tensor(bool)": np.bool_,
}


class RunStopped(Exception):
    """A run was terminated because it lasted longer than its time limit."""


class OrtProgram:
    """One session over one serialized ONNX model, safe for concurrent executions (a lock around each run, so
    that what the session keeps between runs is never shared by two). Building it creates the session: ONNX
    Runtime checks the model and its kernels then; whatever it raises propagates."""

    def __init__(self, model: bytes, level: OptLevel = OptLevel.ALL, threads: int = 1) -> None:
        self.level = OptLevel(level)
        self._session = make_session(model, self.level, threads)
        self._inputs = [(i.name, np.dtype(_INPUT_DTYPES[i.type])) for i in self._session.get_inputs()]
        self._outputs = [o.name for o in self._session.get_outputs()]
        self._lock = threading.Lock()

    @property
    def input_count(self) -> int:
        """How many inputs main takes."""
        return len(self._inputs)

    def run(self, inputs: Sequence[np.ndarray], limit_ns: int | None = None) -> list[np.ndarray]:
        """Main's outputs for main's inputs (arrays in HAL storage dtypes and actual shapes); RunStopped when the
        run lasts longer than `limit_ns` (None: no limit)."""
        if len(inputs) != len(self._inputs):
            raise ValueError(f"main takes {len(self._inputs)} inputs, {len(inputs)} given")
        feeds = {}
        for (name, dtype), value in zip(self._inputs, inputs):
            if value is None:
                raise ValueError(f"input {name} has no value; an execution without it needs its own translation")
            feeds[name] = np.asarray(value, dtype=dtype)
        with self._lock:
            if limit_ns is None:
                return [np.asarray(v) for v in self._session.run(self._outputs, feeds)]
            return self._run_limited(feeds, limit_ns)

    def _run_limited(self, feeds: dict, limit_ns: int) -> list[np.ndarray]:
        # ONNX Runtime checks a run's terminate flag between kernels, inside Loop and Scan bodies too, and gives up
        # the run when it is set: a timer on another thread sets it once the limit has passed.
        options = runtime().RunOptions()
        stopped = threading.Event()

        def stop() -> None:
            stopped.set()
            options.terminate = True

        timer = threading.Timer(max(limit_ns, 0) / 1e9, stop)
        timer.daemon = True
        timer.start()
        try:
            results = self._session.run(self._outputs, feeds, options)
        except Exception as exc:
            if stopped.is_set():
                raise RunStopped(f"the run was terminated after {limit_ns} ns") from exc
            raise
        finally:
            timer.cancel()
        return [np.asarray(v) for v in results]
