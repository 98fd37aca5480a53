"""The driver's kernels. Every non-private module of this package registers its kernels on import."""

import importlib
import pkgutil

from driver_under_test.backends.numpy.kernels.registry import KernelEntry, OpCall, Tensor, implemented, kernel, lookup

_INFRASTRUCTURE = {"registry", "common"}
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name not in _INFRASTRUCTURE:
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["KernelEntry", "OpCall", "Tensor", "implemented", "kernel", "lookup"]
