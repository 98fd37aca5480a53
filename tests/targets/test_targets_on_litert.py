"""Every target runs on the driver over LiteRT as on the numpy driver: seeded cases pass, are unsupported (the
translation refuses them), or show a registered known divergence of the engine."""

from __future__ import annotations

import pytest

from harness.drivers import create_device
from harness.gen import GenerationRejected, RandomSource
from harness.oracle.divergences import label
from harness.targets import TARGETS
from tests.verdicts import assert_passes

LITERT = "driver_under_test:create_litert_device"
SEEDS = range(40)


@pytest.fixture(scope="module")
def litert():
    return create_device(LITERT)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeded_cases_pass_on_litert(litert, name: str) -> None:
    target, judged = TARGETS[name], 0
    for seed in SEEDS:
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        verdict = label(target.run(case, litert), case.executed_model(), litert.engine_identity())
        assert_passes(verdict, case)
        judged += not verdict.extras.get("unsupported")
        case.close()
    assert judged >= len(SEEDS) // 4, f"only {judged} of {len(SEEDS)} {name} cases were supported on LiteRT"
