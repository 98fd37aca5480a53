"""The request target's memory-handle cases: drawn, judged right on the bundled driver, and a driver that maps a
malformed hardware-buffer descriptor is caught."""

from __future__ import annotations

from collections import Counter

from harness.drivers import create_device
from harness.gen.sources import RandomSource
from harness.hal import ErrorStatus
from harness.targets import get_target

_SEEDS = range(0, 400)


def _handle_seeds(limit: int) -> dict[int, str]:
    target = get_target("request")
    found: dict[int, str] = {}
    for seed in _SEEDS:
        case = target.decode(RandomSource(seed))
        try:
            if case.expect.get("kind") == "handle":
                found[seed] = case.expect["mutation"]
        finally:
            case.close()
        if len(found) >= limit:
            break
    return found


def test_handle_cases_are_drawn_and_pass_on_the_bundled_driver() -> None:
    seeds = _handle_seeds(12)
    assert len(seeds) >= 12
    target, device = get_target("request"), create_device()
    for seed in seeds:
        case = target.decode(RandomSource(seed))
        try:
            verdict = target.run(case, device)
        finally:
            case.close()
        assert verdict.ok, (seed, verdict.rule, verdict.title)


def test_a_driver_using_a_bad_magic_or_version_is_caught() -> None:
    wanted = ("hardware_buffer_bad_magic", "hardware_buffer_bad_version")
    seeds = {s: m for s, m in _handle_seeds(40).items() if m in wanted}
    assert seeds
    target = get_target("request")
    device = create_device(faults=["hardware_buffer_header_unchecked"])
    rules = Counter()
    for seed in seeds:
        case = target.decode(RandomSource(seed))
        try:
            # An execution failing anyway (a run-time argument drawn out of range) cannot show the memory was used.
            rules[target.run(case, device).rule if case.reference().status == ErrorStatus.NONE else "fails anyway"] += 1
        finally:
            case.close()
    assert rules["memory.unusable_refused"] == len(seeds) - rules["fails anyway"] > 0, rules
