"""driver_under_test: an NN HAL 1.3-style driver, the system nnfuzz hunts bugs in.

It imports nothing of the harness but `harness.hal`. Start it with `create_device(faults=[...], **options)`: its
prepared models run on the driver's own numpy kernels. The same HAL plumbing over LiteRT (`pip install
'nnfuzz[litert]'`): `create_litert_device` (optimized kernels), `create_litert_xnnpack_device`,
`create_litert_reference_device`, each a driver spec of its own (`--driver driver_under_test:create_litert_device`).
Over ONNX Runtime (`pip install 'nnfuzz[onnxruntime]'`): `create_onnxruntime_device` (graph optimization level
all, ONNX Runtime's default; `level=` picks another) and one factory per level (`create_onnxruntime_disabled_device`,
`create_onnxruntime_basic_device`, `create_onnxruntime_extended_device`).
"""

from __future__ import annotations

from collections.abc import Iterable

# Every module that defines faults is imported here, so the catalogue is complete whatever is used first (the
# numpy backend's kernels plant faults too).
from driver_under_test import burst, cache, memory_domain  # noqa: F401
from driver_under_test.backends import numpy  # noqa: F401
from driver_under_test.device import DriverDevice
from driver_under_test.faults import CATALOGUE, resolve
from driver_under_test.options import build_options


def create_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """A new device; `faults` names catalogued faults (default: NNFUZZ_FAULTS), `options` set DeviceOptions."""
    return DriverDevice(build_options(**options), resolve(faults))


def create_litert_device(
    faults: Iterable[str] | None = None, kernel_set: str = "optimized", **options: object
) -> DriverDevice:
    """A new device whose prepared models run on LiteRT with `kernel_set` (optimized, xnnpack or reference)."""
    return create_device(faults, backend="litert", backend_options={"kernel_set": kernel_set}, **options)


def create_litert_xnnpack_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """create_litert_device with LiteRT's optimized kernels and the XNNPACK delegate."""
    return create_litert_device(faults, "xnnpack", **options)


def create_litert_reference_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """create_litert_device with LiteRT's reference kernels."""
    return create_litert_device(faults, "reference", **options)


def create_onnxruntime_device(
    faults: Iterable[str] | None = None, level: str = "all", **options: object
) -> DriverDevice:
    """A new device whose prepared models run on ONNX Runtime at graph optimization `level` (disabled, basic,
    extended or all)."""
    return create_device(faults, backend="onnxruntime", backend_options={"level": level}, **options)


def create_onnxruntime_disabled_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """create_onnxruntime_device with every graph optimization disabled."""
    return create_onnxruntime_device(faults, "disabled", **options)


def create_onnxruntime_basic_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """create_onnxruntime_device with the basic graph optimizations."""
    return create_onnxruntime_device(faults, "basic", **options)


def create_onnxruntime_extended_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """create_onnxruntime_device with the extended graph optimizations (fusions, QDQ groups)."""
    return create_onnxruntime_device(faults, "extended", **options)


# The variants of this driver by backend name: the same HAL plumbing over each backend and kernel set. nnfuzz
# replays an engine finding on the other variants to tell the engine's bug from the plumbing's or the translation's.
VARIANTS = {
    "numpy": "driver_under_test:create_device",
    "litert-optimized": "driver_under_test:create_litert_device",
    "litert-xnnpack": "driver_under_test:create_litert_xnnpack_device",
    "litert-reference": "driver_under_test:create_litert_reference_device",
    "onnxruntime-all": "driver_under_test:create_onnxruntime_device",
    "onnxruntime-extended": "driver_under_test:create_onnxruntime_extended_device",
    "onnxruntime-basic": "driver_under_test:create_onnxruntime_basic_device",
    "onnxruntime-disabled": "driver_under_test:create_onnxruntime_disabled_device",
}

__all__ = [
    "CATALOGUE",
    "VARIANTS",
    "DriverDevice",
    "create_device",
    "create_litert_device",
    "create_litert_reference_device",
    "create_litert_xnnpack_device",
    "create_onnxruntime_basic_device",
    "create_onnxruntime_device",
    "create_onnxruntime_disabled_device",
    "create_onnxruntime_extended_device",
]
