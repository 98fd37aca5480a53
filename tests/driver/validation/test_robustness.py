"""D25: whatever a client puts in a model or request, validation answers with a DriverError, never a crash."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver_under_test.errors import DriverError
from driver_under_test.validation import Limits, validate_model, validate_request
from harness.hal import DataLocation, Model, Request, RequestArgument
from harness.hal.memory import create_ashmem

from .builders import add_model, chain_model, if_model, per_channel_conv_model, while_model

NASTY = [None, -1, 0, 1, 2**31, 2**32, 2**64, -(2**63), 1.5, math.nan, math.inf, "7", b"\x00", [], [None], [-1],
         [2**40], True, object()]  # fmt: skip
BUILDERS: list[Callable[[], Model]] = [add_model, chain_model, if_model, while_model, per_channel_conv_model]


def _slots(root: object) -> list[tuple[object, object]]:
    """Every (container, key) under `root`: dataclass fields and list items, depth first."""
    found: list[tuple[object, object]] = []
    stack = [root]
    seen: set[int] = set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                found.append((obj, f.name))
                stack.append(getattr(obj, f.name))
        elif isinstance(obj, list):
            for i, item in enumerate(obj):
                found.append((obj, i))
                stack.append(item)
    return found


def _mutate(root: object, choice: int, value: object, action: int) -> None:
    value = copy.deepcopy(value)  # never share (and later grow) one of the NASTY lists
    slots = _slots(root)
    container, key = slots[choice % len(slots)]
    if isinstance(container, list) and action == 1:
        container.insert(int(key), value)  # type: ignore[call-overload]
    elif isinstance(container, list) and action == 2:
        del container[int(key)]  # type: ignore[call-overload]
    elif isinstance(container, list):
        container[int(key)] = value  # type: ignore[call-overload]
    else:
        object.__setattr__(container, str(key), value)


def _only_driver_errors(call: Callable[[], object]) -> None:
    try:
        call()
    except DriverError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    builder=st.sampled_from(BUILDERS),
    mutations=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(NASTY), st.integers(0, 2)), max_size=3),
)
def test_model_validation_only_ever_raises_driver_errors(
    builder: Callable[[], Model], mutations: list[tuple[int, object, int]]
) -> None:
    model = builder()
    for choice, value, action in mutations:
        _mutate(model, choice, value, action)
    _only_driver_errors(lambda: validate_model(model, Limits()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(NASTY), st.integers(0, 2)), max_size=3))
def test_request_validation_only_ever_raises_driver_errors(mutations: list[tuple[int, object, int]]) -> None:
    model = add_model()
    with create_ashmem(64) as memory:
        request = Request(
            inputs=[RequestArgument(location=DataLocation(0, off, 16)) for off in (0, 16)],
            outputs=[RequestArgument(location=DataLocation(0, 32, 16))],
            pools=[memory],
        )
        for choice, value, action in mutations:
            # Mutate the request only: its pools list holds the memory object itself, which is not a dataclass.
            _mutate(request, choice, value, action)
        _only_driver_errors(lambda: validate_request(model, request, limits=Limits(), fenced=True))
