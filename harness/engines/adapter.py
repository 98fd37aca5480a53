"""Engine adapters: per engine model format, how to run a model bare on the engine and the reproducer script for it.

An adapter knows one engine's format ("tflite": LiteRT), the file name of a model in it, the engine's package, its
kernel sets (named as the driver names them) and the engine's part of the reproducer script (a module of this
package, `_<format>_script.py`). The reproducer script is that part and the part every engine shares
(`_script_check.py`) under a head; a bare run is the script's own child process, so what the harness sees and what
an engine's owner runs are the same code. Adapters are registered by format; a second one for a format is an
error at import time.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import ModuleType

import numpy as np

SCRIPT_MARK = "# --- script ---"
_HERE = Path(__file__).resolve().parent
_SHARED_PART = "_script_check.py"
DEFAULT_TIMEOUT_S = 60.0


class RunOutcome(StrEnum):
    """How a bare run of an engine model ended."""

    OUTPUTS = "outputs"  # the engine computed main's outputs
    CRASH = "crash"  # the child process was killed by a signal (e.g. SIGABRT)
    ERROR = "error"  # the engine raised (refused the model, failed to prepare or to run it)
    HANG = "hang"  # no answer within the time limit (the child was killed)


@dataclass(frozen=True)
class EngineRun:
    """One run of an engine model in a child process, on one kernel set."""

    kernel_set: str
    outcome: RunOutcome
    outputs: tuple[np.ndarray, ...] = ()  # OUTPUTS: main's outputs in order, as the engine gave them
    signal: int | None = None  # CRASH: the number of the signal that killed the child
    error: str = ""  # ERROR: what the engine raised; CRASH, HANG: what the child said last
    elapsed_s: float = 0.0

    @property
    def signal_name(self) -> str:
        """The crash's signal by name (SIGABRT), "" without a crash."""
        if self.signal is None:
            return ""
        try:
            import signal

            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"


class UnknownFormat(ValueError):
    """No adapter is registered for an engine model format."""


@dataclass(frozen=True)
class EngineAdapter:
    """What nnfuzz needs of one engine model format: running a model bare, and writing a reproducer for it."""

    format: str  # the engine model format, as EngineModel.format names it ("tflite")
    engine: str  # the engine's name in reports ("LiteRT")
    package: str  # its distribution on the package registry ("ai-edge-litert")
    module: str  # what Python imports ("ai_edge_litert")
    file_name: str  # the model's file in a reproducer folder ("model.tflite")
    kernel_sets: tuple[str, ...]  # the engine's kernel sets, by the driver's names (the first is the default)
    script_part: str  # the engine's part of the reproducer script: a file of this package (or an absolute path)
    kernel_set_names: dict[str, str] = field(default_factory=dict)  # kernel set -> the engine's own name for it

    def requirement(self, version: str | None = None) -> str:
        """The requirement line of the engine's package ("ai-edge-litert==2.3.0"; the installed version when none
        is given, the bare name when it is not installed)."""
        version = version or self.installed_version()
        return f"{self.package}=={version}" if version else self.package

    def installed_version(self) -> str | None:
        """The version of the engine's package installed here, or None."""
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return None

    def check_kernel_set(self, kernel_set: str) -> str:
        """The kernel set if the engine has it; ValueError naming the ones it has otherwise."""
        if kernel_set not in self.kernel_sets:
            raise ValueError(f"{self.engine} has no kernel set {kernel_set!r}: {', '.join(self.kernel_sets)}")
        return kernel_set

    def script(self, default_kernels: str, title: str = "") -> str:
        """The reproducer script's source: needs only the engine's package and numpy; `--kernels` defaults to
        `default_kernels`."""
        self.check_kernel_set(default_kernels)
        title = title or f"{self.engine} reproducer"
        head = f'''#!/usr/bin/env python3
"""{title}

A standalone reproducer written by `nnfuzz export`: it needs only numpy and {self.package}
(pip install {self.requirement()} numpy). It runs {self.file_name} on inputs.npz in a child process (a crash is
reported with the signal that killed it), compares each output with expected.npz under tolerance.json, prints
actual against expected, and exits 1 while the bug is present, 0 once the engine computes the expected values
(2: misuse). Usage: python repro.py [--kernels {"|".join((*self.kernel_sets, "each"))}] [--timeout S]
"""

import numpy as np

DEFAULT_KERNELS = {default_kernels!r}  # the kernel set the bug was found on
'''
        parts = [_script_part(self.script_part), _script_part(_SHARED_PART)]
        tail = 'if __name__ == "__main__":\n    sys.exit(main())\n'
        return "\n\n".join([head.rstrip("\n"), *parts, tail])

    def run_bare(
        self,
        data: bytes,
        kernel_set: str,
        inputs: Sequence[np.ndarray],
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> EngineRun:
        """Run an engine model on one kernel set in a child process, outside any HAL plumbing."""
        return self.run_bare_each(data, (kernel_set,), inputs, timeout_s)[kernel_set]

    def run_bare_each(
        self,
        data: bytes,
        kernel_sets: Iterable[str],
        inputs: Sequence[np.ndarray],
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[str, EngineRun]:
        """run_bare on several kernel sets at once (one child process each), by kernel set."""
        kernel_sets = [self.check_kernel_set(k) for k in kernel_sets]
        with tempfile.TemporaryDirectory(prefix="nnfuzz-bare-") as tmp:
            folder = Path(tmp)
            script = folder / "repro.py"
            script.write_text(self.script(kernel_sets[0] if kernel_sets else self.kernel_sets[0]))
            (folder / self.file_name).write_bytes(data)
            np.savez(folder / "inputs.npz", **input_arrays(inputs))
            module = _load_script(script)
            runs: dict[str, EngineRun] = {}

            def run(kernel_set: str) -> None:
                started = time.perf_counter()
                outcome, outputs, signal, text = module.run_isolated(str(folder), kernel_set, timeout_s)
                runs[kernel_set] = EngineRun(
                    kernel_set,
                    RunOutcome(outcome),
                    tuple(outputs),
                    signal,
                    text,
                    time.perf_counter() - started,
                )

            threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in kernel_sets]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        return {k: runs[k] for k in kernel_sets}

    def describe_model(self, data: bytes) -> list[str]:
        """Lines describing the engine model in the engine's own terms (operators, tensors); [] when the adapter
        cannot read its format here."""
        return []


def input_arrays(inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Main's inputs as the reproducer's inputs.npz holds them: input0, input1, ... in order."""
    return {f"input{k}": np.asarray(a) for k, a in enumerate(inputs)}


def _script_part(name: str) -> str:
    text = (_HERE / name).read_text()  # an absolute name stays as it is
    _, mark, part = text.partition(SCRIPT_MARK + "\n")
    if not mark:
        raise RuntimeError(f"{name} has no {SCRIPT_MARK!r} line")
    return part.strip("\n")


def _load_script(path: Path) -> ModuleType:
    """A reproducer script as a module (its main does not run): its run_isolated is the bare run."""
    spec = importlib.util.spec_from_file_location(f"nnfuzz_repro_{os.getpid()}_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ADAPTERS: dict[str, EngineAdapter] = {}


def register_adapter(adapter: EngineAdapter) -> EngineAdapter:
    """Add an adapter; a second one for the same format is an error."""
    if adapter.format in _ADAPTERS:
        raise ValueError(f"an engine adapter for format {adapter.format!r} is registered already")
    _ADAPTERS[adapter.format] = adapter
    return adapter


def adapter_for(format_name: str) -> EngineAdapter:
    """The adapter of an engine model format; UnknownFormat naming the known ones otherwise."""
    try:
        return _ADAPTERS[format_name]
    except KeyError:
        known = ", ".join(sorted(_ADAPTERS)) or "none"
        raise UnknownFormat(f"no engine adapter for format {format_name!r} (known: {known})") from None


def adapters() -> dict[str, EngineAdapter]:
    """The registered adapters by format."""
    return dict(_ADAPTERS)
