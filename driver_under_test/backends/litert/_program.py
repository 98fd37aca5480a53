"""LiteRTProgram: one LiteRT interpreter over one translated flatbuffer, run with HAL-shaped inputs and outputs."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from driver_under_test.backends.litert._engine import KernelSet, make_interpreter


class LiteRTProgram:
    """One interpreter over one flatbuffer, safe for concurrent executions (a lock around resize/invoke/read).

    Building it creates the interpreter; the first run allocates its tensors for the actual input shapes (kernels
    check their operands then). Whatever LiteRT raises (a kernel refusing its operands in Prepare, a malformed
    file) propagates.
    """

    def __init__(self, flatbuffer: bytes, kernel_set: KernelSet = KernelSet.OPTIMIZED, threads: int = 1) -> None:
        self.kernel_set = KernelSet(kernel_set)
        self._flatbuffer = flatbuffer  # the interpreter reads constants in place: keep the bytes alive
        self._interpreter = make_interpreter(flatbuffer, self.kernel_set, threads)
        self._lock = threading.Lock()
        # Tensor indices cached once: the details calls cost about 10 us each.
        details = self._interpreter.get_input_details()
        self._inputs = [int(d["index"]) for d in details]
        self._input_dtypes = [np.dtype(d["dtype"]) for d in details]
        self._shapes: list[tuple[int, ...]] = [tuple(int(x) for x in d["shape"]) for d in details]
        self._outputs = [int(d["index"]) for d in self._interpreter.get_output_details()]
        # Tensors are allocated by the first run, for its actual input shapes: unknown input dimensions stand as 1
        # in the declared shapes, and preparing kernels on those placeholders could refuse shapes no execution will
        # have. (The driver builds a program at its first execution anyway.)
        self._allocated = False

    @property
    def input_count(self) -> int:
        """How many inputs main takes."""
        return len(self._inputs)

    @property
    def output_count(self) -> int:
        """How many outputs main gives."""
        return len(self._outputs)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        """Main's outputs for main's inputs (arrays in HAL storage dtypes and actual shapes; None = omitted input).

        Every input of the flatbuffer is read, so an input without a value (None) is refused with ValueError: an
        execution that omits optional inputs runs the translation made without them (translate's `absent`).
        """
        if len(inputs) != len(self._inputs):
            raise ValueError(f"main takes {len(self._inputs)} inputs, {len(inputs)} given")
        arrays = []
        for position, value in enumerate(inputs):
            if value is None:
                raise ValueError(
                    f"input {position} has no value; an execution without it needs the translation made without it"
                )
            # np.ascontiguousarray would turn a 0-d array (a scalar input) into a 1-d one.
            array = np.asarray(value, dtype=self._input_dtypes[position])
            arrays.append(array if array.flags.c_contiguous else array.copy())
        interpreter = self._interpreter
        with self._lock:
            resized = False
            for position, array in enumerate(arrays):
                if array.shape != self._shapes[position]:
                    interpreter.resize_tensor_input(self._inputs[position], list(array.shape))
                    self._shapes[position] = array.shape
                    resized = True
            if resized or not self._allocated:
                interpreter.allocate_tensors()
                self._allocated = True
            for index, array in zip(self._inputs, arrays):
                interpreter.set_tensor(index, array)
            interpreter.invoke()
            return [interpreter.get_tensor(index) for index in self._outputs]

