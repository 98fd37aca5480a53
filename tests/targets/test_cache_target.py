"""The cache target on the real driver (each cache fault found with its rule, nothing on the fault-free driver)
and on small hand-written drivers that each break one caching rule."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from driver_under_test import create_device
from harness.case import Case, model_from_json
from harness.gen.cache_corruption import EXPECTATIONS, RACE, CacheCorruptionConfig
from harness.gen.source import GenerationRejected
from harness.gen.sources import BytesSource, RandomSource
from harness.hal import ErrorStatus
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.oracle.verdict import Outcome
from harness.targets import run_atheris_one
from harness.targets.cache import CacheTarget
from tests.targets.fakes import Delegating, _NullPreparedModel, sync_shifts_first_output
from tests.verdicts import assert_passes


@pytest.fixture
def clean(tmp_path):
    """A fault-free driver with its own cache store."""
    return create_device(faults=[], cache_dir=str(tmp_path / "clean"))


def only(*kinds: str) -> CacheTarget:
    """The cache target drawing only these corruption kinds."""
    return CacheTarget(corruption_config=CacheCorruptionConfig(kinds=kinds))


def run_seeds(target: CacheTarget, device, seeds: range) -> list[tuple[int, Case, object]]:
    results = []
    for seed in seeds:
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        results.append((seed, case, target.run(case, device)))
    return results


def test_the_fault_free_driver_passes_every_kind_of_corruption(clean) -> None:
    results = run_seeds(CacheTarget(), clean, range(250))
    for _, case, verdict in results:
        assert_passes(verdict, case)
    seen = Counter(v.extras.get("expect", "save") for _, _, v in results)
    # Every expectation the classifier knows comes up, so every judgement ran on the real driver.
    assert set(EXPECTATIONS) <= set(seen)


# (fault, corruption kinds, rule, seeds to try)
FAULTS = [
    ("cache_hash_checks_prefix", ("model", "other"), "cache.tampered_model_cache_refused", 100),
    ("cache_token_ignored", ("token", "other"), "cache.tampered_model_cache_refused", 100),
    ("cache_checked_on_file", ("race",), "cache.concurrent_rewrite_cannot_swap_model", 600),
]


@pytest.mark.parametrize(("fault", "kinds", "rule", "seeds"), FAULTS, ids=[f[0] for f in FAULTS])
def test_each_cache_fault_is_found_with_its_rule(clean, tmp_path, fault, kinds, rule, seeds) -> None:
    target = only(*kinds)
    faulty = create_device(faults=[fault], cache_dir=str(tmp_path / "faulty"))
    for seed, case, verdict in run_seeds(target, faulty, range(seeds)):
        if not verdict.ok:
            assert verdict.rule == rule, (seed, verdict.title)
            assert target.run(case, clean).ok, "the case also fails on the fault-free driver"
            return
    pytest.fail(f"{fault} not found in {seeds} seeds")


def test_a_race_on_the_fault_free_driver_gives_back_only_the_original_model(clean) -> None:
    results = run_seeds(only("race"), clean, range(40))
    assert all(v.ok for _, _, v in results)
    assert {v.extras["expect"] for _, _, v in results} == {RACE}


def test_a_driver_that_does_not_cache_needs_no_files_and_refuses_retrieval(tmp_path) -> None:
    device = create_device(faults=[], caching=False, cache_dir=str(tmp_path))
    assert device.get_number_of_cache_files_needed()[1:] == (0, 0)
    for _, _, verdict in run_seeds(CacheTarget(), device, range(20)):
        assert verdict.ok, verdict.title
        assert verdict.extras["caching"] == "unsupported"


class NoFilesButRetrieves(Delegating):
    """Needs no cache files, yet prepareModelFromCache delivers a model."""

    def get_number_of_cache_files_needed(self):
        return ErrorStatus.NONE, 0, 0

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback):
        callback.notify(ErrorStatus.NONE, _NullPreparedModel())
        return ErrorStatus.NONE


class TooManyFiles(Delegating):
    """Asks for more cache files than the HAL allows."""

    def get_number_of_cache_files_needed(self):
        return ErrorStatus.NONE, 33, 1


class FailsOnBadSaveHandles(Delegating):
    """prepareModel fails when a cache handle does not hold exactly one descriptor (it must ignore the cache)."""

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        if any(len(h.fds) != 1 for h in [*model_cache, *data_cache]):
            callback.notify(ErrorStatus.GENERAL_FAILURE, None)
            return ErrorStatus.GENERAL_FAILURE
        return super().prepare_model(model, preference, priority, deadline, model_cache, data_cache, token, callback)


class AcceptsAnyToken(Delegating):
    """prepareModelFromCache answers with a freshly compiled model whatever the files and token."""

    def __init__(self, inner, model) -> None:
        super().__init__(inner)
        self.model = model

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback):
        return self.inner.prepare_model(self.model, 1, 1, None, [], [], bytes(32), callback)


def first_failure(target: CacheTarget, device, seeds: int = 60):
    for _, _, verdict in run_seeds(target, device, range(seeds)):
        if not verdict.ok:
            return verdict
    return None


def test_a_driver_that_retrieves_without_needing_files_breaks_the_unsupported_rule(clean) -> None:
    verdict = first_failure(CacheTarget(), NoFilesButRetrieves(clean), 5)
    assert verdict.rule == "cache.unsupported_caching_refused"


def test_more_than_32_files_breaks_the_range_rule(clean) -> None:
    assert first_failure(CacheTarget(), TooManyFiles(clean), 5).rule == "cache.files_needed_in_range"


def test_failing_preparation_over_bad_save_handles_breaks_the_saving_rule(clean) -> None:
    target = CacheTarget(corruption_config=CacheCorruptionConfig(kinds=("save",)))
    verdict = first_failure(target, FailsOnBadSaveHandles(clean))
    assert verdict.rule == "cache.saving_problems_never_fail_preparation"


def test_a_driver_that_ignores_the_cache_files_is_caught_by_a_tampered_cache(clean) -> None:
    case = only("token").decode(RandomSource(3))
    device = AcceptsAnyToken(clean, model_from_json(case.model))
    verdict = only("token").run(case, device)
    assert verdict.outcome == Outcome.FAILURE
    assert verdict.rule == "cache.tampered_model_cache_refused"


class ShiftsModelsFromCache(Delegating):
    """Models prepared from the cache add 1000 to the first value of output 0 (directly prepared ones do not)."""

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback):
        inner = WaitablePreparedModelCallback()
        launch = self.inner.prepare_model_from_cache(deadline, model_cache, data_cache, token, inner)
        status, prepared = inner.result(10)
        callback.notify(status, None if prepared is None else sync_shifts_first_output(1000.0)(prepared))
        return launch


def test_a_model_from_the_cache_with_other_outputs_breaks_the_round_trip_rule(clean) -> None:
    verdicts = [v for _, _, v in run_seeds(only("untouched"), ShiftsModelsFromCache(clean), range(30)) if not v.ok]
    assert verdicts, "a model from the cache computing other outputs was not noticed"
    assert {v.rule for v in verdicts} == {"cache.untouched_cache_round_trips"}


def test_a_case_replays_from_its_json_on_a_new_target_and_device(tmp_path) -> None:
    first = create_device(faults=[], cache_dir=str(tmp_path / "a"))
    cases = (only("other").decode(RandomSource(seed)) for seed in range(100))
    # Another model's whole cache under this model's token: the token-blind driver prepares it.
    case = next(c for c in cases if c.extras["corruption"]["ops"] == [{"op": "use_other_cache"}])
    assert CacheTarget().run(case, first).ok
    replayed = Case.from_json(json.loads(case.dumps()))
    faulty = create_device(faults=["cache_token_ignored"], cache_dir=str(tmp_path / "b"))
    verdicts = {only("other").run(replayed, faulty).rule for _ in range(2)}
    assert verdicts == {"cache.tampered_model_cache_refused"}


def test_a_kept_save_is_reused_by_the_next_case_on_the_same_device(clean) -> None:
    target = only("untouched")
    case = target.decode(RandomSource(5))
    assert not target.run(case, clean).extras["reused"]
    assert target.run(case, clean).extras["reused"]


def test_fuzzer_bytes_run_quietly_on_the_fault_free_driver(clean) -> None:
    target = CacheTarget()
    for data in [b"", b"\x00" * 7, bytes(range(256)), b"\xff" * 64]:
        assert run_atheris_one(target, data, clean) is None
    assert target.decode(BytesSource(b"")).extras["corruption"]["kind"] == "untouched"
