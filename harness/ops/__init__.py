"""The operation catalogue: per HAL operation its signatures, shape rules, reference kernel and hints.

Every module of this package (other than private `_` modules) is a family of operations that registers
its OpSpecs on import; importing the package imports them all.
"""

import importlib
import pkgutil

from harness.ops.registry import (
    Arg,
    KernelContext,
    LoopTimeoutError,
    OpSpec,
    ShapeContext,
    Signature,
    all_specs,
    get,
    register,
)

_INFRASTRUCTURE = {"registry", "common"}
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name not in _INFRASTRUCTURE:
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Arg",
    "KernelContext",
    "LoopTimeoutError",
    "OpSpec",
    "ShapeContext",
    "Signature",
    "all_specs",
    "get",
    "register",
]
