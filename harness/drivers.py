"""Loading a driver from a `module:factory` spec: the only way the harness reaches a driver."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harness.hal import Device

DEFAULT_DRIVER = "driver_under_test:create_device"


class DriverSpecError(ValueError):
    """A driver spec that does not name a loadable factory (harness misuse: exit code 2)."""


def load_factory(spec: str = DEFAULT_DRIVER) -> Callable[..., Device]:
    """The factory a `module:factory` spec names."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise DriverSpecError(f"driver spec {spec!r} is not of the form module:factory (e.g. {DEFAULT_DRIVER})")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise DriverSpecError(f"driver spec {spec!r}: cannot import {module_name}: {e}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise DriverSpecError(f"driver spec {spec!r}: {module_name} has no callable {attr!r}")
    return factory


def create_device(spec: str = DEFAULT_DRIVER, **kwargs: object) -> Device:
    """A device from a driver spec; the factory must return a harness.hal.Device."""
    factory = load_factory(spec)
    try:
        device = factory(**kwargs)
    except ImportError as e:  # a driver whose engine is not installed: its message says how to install it
        raise DriverSpecError(f"driver spec {spec!r}: {e}") from None
    if not isinstance(device, Device):
        raise DriverSpecError(f"driver spec {spec!r} returned {type(device).__name__}, not a harness.hal.Device")
    return device


def variants(spec: str) -> dict[str, str]:
    """The variants a driver's module declares (`VARIANTS`: name -> driver spec), {} when it declares none.

    A driver that runs on several backends or kernel sets lists them so that a finding can be replayed on each;
    the spec's own entry is among them.
    """
    module_name, _, _ = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise DriverSpecError(f"driver spec {spec!r}: cannot import {module_name}: {e}") from None
    declared = getattr(module, "VARIANTS", None)
    return {str(k): str(v) for k, v in declared.items()} if isinstance(declared, dict) else {}
