"""What a translating backend (LiteRT, ONNX Runtime) prepares: a model translated into the engine's format when
first needed, and the engine's program over it, made at the first execution.

The translation with every input present is the model cache's artifact (a program loaded from the cache starts
with it, so preparing from cache does not translate again). A model input may be an optional operand that an
execution gives no value; an engine's graph cannot leave an input out at run time, so such an execution runs
another translation, made without those inputs the first time an execution omits them, with a program of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import numpy as np

from driver_under_test.backends import ConstantReader
from harness.hal import Model

Runner = TypeVar("Runner")
# (model, constants, positions of main's inputs an execution omits) -> the model in the engine's format
Translate = Callable[[Model, ConstantReader, tuple[int, ...]], bytes]


class TranslatedProgram(Generic[Runner]):
    """A model, its translations by absent inputs and the engine programs over them, each made once, on first use;
    safe for concurrent executions (the engine's program guards its own runs)."""

    def __init__(
        self,
        model: Model,
        constants: ConstantReader,
        translate: Translate,
        open_program: Callable[[bytes], Runner],
        artifact: bytes | None = None,
    ) -> None:
        self._model = model
        self._constants = constants
        self._translate = translate
        self._open = open_program
        self._complete = artifact  # the translation with every input present (None: not made yet)
        self._programs: dict[tuple[int, ...], Runner] = {}  # absent input positions -> the engine's program
        self._lock = threading.Lock()

    @property
    def artifact(self) -> bytes:
        """The translation with every input present (made now if it was not yet)."""
        with self._lock:
            return self._translated(())

    def _translated(self, absent: tuple[int, ...]) -> bytes:
        if absent:
            return self._translate(self._model, self._constants, absent)
        if self._complete is None:
            self._complete = self._translate(self._model, self._constants, ())
        return self._complete

    def program_for(self, inputs: Sequence[np.ndarray | None]) -> tuple[Runner, list[np.ndarray]]:
        """The engine's program for an execution with these inputs (None: absent), and the inputs it takes."""
        absent = tuple(k for k, value in enumerate(inputs) if value is None)
        with self._lock:
            program = self._programs.get(absent)
            if program is None:
                program = self._programs[absent] = self._open(self._translated(absent))
        return program, [value for value in inputs if value is not None]
