"""Every target runs on the driver over each real engine (LiteRT's optimized kernels, ONNX Runtime at its default
level, all) as on the numpy driver: seeded cases pass, are unsupported (the translation refuses them), or show a
registered known divergence of the engine."""

from __future__ import annotations

import functools

import pytest

from harness.drivers import create_device
from harness.gen import GenerationRejected, RandomSource
from harness.oracle.divergences import label
from harness.targets import TARGETS
from tests.verdicts import assert_passes

# Engine name (for messages) -> driver spec.
ENGINES = {
    "LiteRT": "driver_under_test:create_litert_device",
    "ONNX Runtime": "driver_under_test:create_onnxruntime_device",
}
SEEDS = range(40)


@functools.cache
def _device(spec: str):
    return create_device(spec)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeded_cases_pass_on_each_engine(engine: str, name: str) -> None:
    device = _device(ENGINES[engine])
    target, judged = TARGETS[name], 0
    for seed in SEEDS:
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        verdict = label(target.run(case, device), case.executed_model(), device.engine_identity())
        assert_passes(verdict, case)
        judged += not verdict.extras.get("unsupported")
        case.close()
    assert judged >= len(SEEDS) // 4, f"only {judged} of {len(SEEDS)} {name} cases were supported on {engine}"
