"""Helpers for the caching tests: cache files opened as a client would, saving, loading and running models."""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.case import simple_request
from harness.hal import (
    CacheHandle,
    DataLocation,
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

TOKEN = bytes(range(1, 33))
OTHER_TOKEN = bytes(range(101, 133))
F32 = OperandType.TENSOR_FLOAT32
LT = OperandLifeTime

# Access modes of the CompilationCachingTests: what a handle's descriptor is opened with.
READ_WRITE = os.O_RDWR | os.O_CREAT
READ_ONLY = os.O_RDONLY
WRITE_ONLY = os.O_WRONLY | os.O_CREAT


def chain_model(op: OperationType, length: int) -> Model:
    """input[1] -> op(., 1.0) -> ... (length times) -> output[1]: each step has its own constant 1.0 operand.

    With input 1.0, an ADD chain outputs length + 1 and a MUL chain outputs 1.0 (as in the HAL's caching tests).
    """
    values = struct.pack("<i", 0) + struct.pack(f"<{length}f", *([1.0] * length))
    operands = [
        Operand(OperandType.INT32, [], length, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
        Operand(F32, [1], 1, lifetime=LT.SUBGRAPH_INPUT),
    ]
    operations = []
    for i in range(length):
        last = i == length - 1
        operands.append(Operand(F32, [1], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, 4 + 4 * i, 4)))
        operands.append(
            Operand(F32, [1], 0 if last else 1, lifetime=LT.SUBGRAPH_OUTPUT if last else LT.TEMPORARY_VARIABLE)
        )
        previous = 1 if i == 0 else len(operands) - 3
        operations.append(Operation(op, [previous, len(operands) - 2, 0], [len(operands) - 1]))
    return Model(main=Subgraph(operands, operations, [1], [len(operands) - 1]), operand_values=values)


class CacheFiles:
    """One model cache and one data cache file on disk, opened anew for every call as a client does."""

    def __init__(self, folder: Path, name: str) -> None:
        self.model_path = folder / f"{name}.model"
        self.data_path = folder / f"{name}.data"
        for p in self.paths:
            p.touch()

    @property
    def paths(self) -> tuple[Path, Path]:
        """(model cache path, data cache path)."""
        return self.model_path, self.data_path

    def read(self) -> tuple[bytes, bytes]:
        """The two files' contents."""
        return self.model_path.read_bytes(), self.data_path.read_bytes()

    def write(self, model: bytes | None = None, data: bytes | None = None) -> None:
        """Replace one or both files' contents."""
        if model is not None:
            self.model_path.write_bytes(model)
        if data is not None:
            self.data_path.write_bytes(data)

    def copy_from(self, other: CacheFiles) -> None:
        """Overwrite both files with another model's cache files."""
        self.write(*other.read())


class Handles:
    """Cache handles over descriptors this object opens and closes: a context manager."""

    def __init__(self, model: Sequence[Sequence[Path]], data: Sequence[Sequence[Path]], modes=None, offset=0) -> None:
        self._fds: list[int] = []
        groups = [list(model), list(data)]
        modes = modes or [[READ_WRITE] * len(g) for g in groups]
        self.model_cache, self.data_cache = (
            [CacheHandle(tuple(self._open(p, mode) for p in paths), offset) for paths, mode in zip(group, group_modes)]
            for group, group_modes in zip(groups, modes)
        )

    def _open(self, path: Path, flags: int) -> int:
        fd = os.open(path, flags, 0o600)
        self._fds.append(fd)
        return fd

    @classmethod
    def of(cls, files: CacheFiles, model_mode: int = READ_WRITE, data_mode: int = READ_WRITE, offset=0) -> Handles:
        """Handles with one descriptor each over a pair of cache files."""
        return cls([[files.model_path]], [[files.data_path]], [[model_mode], [data_mode]], offset)

    def __enter__(self) -> Handles:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds:
            os.close(fd)


def prepare(device, model: Model, model_cache, data_cache, token: bytes = TOKEN) -> tuple:
    """(launch status, callback status, prepared model) of prepareModel with cache arguments."""
    callback = WaitablePreparedModelCallback()
    launch = device.prepare_model(
        model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, model_cache, data_cache, token, callback
    )
    status, prepared = callback.result(timeout=60)
    return launch, status, prepared


def save(device, model: Model, files: CacheFiles, token: bytes = TOKEN) -> PreparedModel:
    """Prepare `model` with read-write handles over `files`, asserting that preparation succeeded."""
    with Handles.of(files) as h:
        launch, status, prepared = prepare(device, model, h.model_cache, h.data_cache, token)
    assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE) and prepared is not None
    return prepared


def load_with(device, model_cache, data_cache, token: object = TOKEN, deadline=None) -> tuple:
    """(launch status, callback status, prepared model) of prepareModelFromCache."""
    callback = WaitablePreparedModelCallback()
    launch = device.prepare_model_from_cache(deadline, model_cache, data_cache, token, callback)
    status, prepared = callback.result(timeout=60)
    return launch, status, prepared


def load(device, files: CacheFiles, token: object = TOKEN, **kw) -> tuple[ErrorStatus, PreparedModel | None]:
    """(callback status, prepared model) of prepareModelFromCache over `files`; launch and callback must agree."""
    with Handles.of(files, **kw) as h:
        launch, status, prepared = load_with(device, h.model_cache, h.data_cache, token)
    assert launch in (ErrorStatus.NONE, status), (launch, status)
    assert (prepared is None) == (status != ErrorStatus.NONE), (status, prepared)
    return status, prepared


def run(prepared: PreparedModel, model: Model, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The outputs of one synchronous execution (output sizes from the model's declared dimensions)."""
    main = model.main
    # Outputs of these small models fit in 4 KiB whatever their (possibly unknown) dimensions.
    sizes = [4096] * len(main.output_indexes)
    with simple_request(model, list(inputs), sizes) as rb:
        status, shapes, _ = prepared.execute_synchronously(rb.request, MeasureTiming.NO, None, None)
        assert status == ErrorStatus.NONE, status
        return [rb.read_output(k, s.dimensions).copy() for k, s in enumerate(shapes)]


def f32(values) -> np.ndarray:
    """A float32 array."""
    return np.asarray(values, dtype=np.float32)


REJECTED = (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE)
