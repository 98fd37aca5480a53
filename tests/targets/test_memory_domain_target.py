"""The memory_domain target: hand-written ADD cases (sums computed by hand), drivers that break one rule, the
planted memory-domain faults, and decoded cases on the fault-free driver."""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from driver_under_test import create_device
from harness.case import Case
from harness.gen.source import GenerationRejected
from harness.gen.sources import RandomSource
from harness.hal import Buffer, ErrorStatus, OperationType
from harness.oracle.verdict import RULES, Outcome
from harness.targets.base import TARGETS
from harness.targets.memory_domain import TARGET, MemoryDomainTarget
from tests.targets import fakes
from tests.targets.cases import ADD_INPUTS, add_model
from tests.verdicts import assert_passes

F32 = 3  # TENSOR_FLOAT32
ROLE = {"modelIndex": 0, "frequency": 1.0}
# a + b for the case inputs, and (a + b) + b: the buffer written by one execution, then read as input 0.
SUMS = [11.0, 22.0, 33.0, 44.0]


@pytest.fixture(scope="module")
def device():
    return create_device(faults=[])


def allocation(inputs=(0,), outputs=(0,), desc=(), dims=(2, 2), **broken) -> dict:
    """An allocation for add_model(): input and output roles on model 0."""
    d = {
        "desc": list(desc),
        "prepared": [{"model": 0}],
        "inputRoles": [{**ROLE, "ioIndex": i} for i in inputs],
        "outputRoles": [{**ROLE, "ioIndex": o} for o in outputs],
        "valid": not broken,
        "dimensions": list(dims),
        "operandType": F32,
        "mutation": broken.get("mutation"),
        "rule": broken.get("rule"),
    }
    return d


def case(steps: list[dict], alloc: dict | None = None, model: dict | None = None) -> Case:
    alloc = allocation() if alloc is None else alloc
    return Case(
        "memory_domain",
        add_model() if model is None else model,
        inputs=copy.deepcopy(ADD_INPUTS),
        execution={"measure": False},
        expect={"valid": alloc["valid"]},
        extras={"models": [], "allocation": alloc, "steps": steps},
    )


def write(path="sync", **extra) -> dict:
    return {"op": "execute", "model": 0, "path": path, "inputs": [], "outputs": [0], "dims": None, **extra}


def read(path="sync", io=0, **extra) -> dict:
    return {"op": "execute", "model": 0, "path": path, "inputs": [io], "outputs": [], "dims": None, **extra}


def copy_to(delta=0, kind="ashmem") -> dict:
    return {"op": "copyTo", "kind": kind, "sizeDelta": delta, "fallbackBytes": 16}


def copy_from(values=(5.0, 6.0, 7.0, 8.0), dims=(2, 2), delta=0, kind="mmap_fd") -> dict:
    return {"op": "copyFrom", "kind": kind, "dims": list(dims), "value": list(values), "sizeDelta": delta}


LIFE_CYCLE = [copy_to(), read(), *(write(p) for p in ("sync", "async", "fenced", "burst")), copy_to(), read("async")]
LIFE_CYCLE += [copy_from(), copy_to(kind="hardware_buffer_blob"), read("fenced"), copy_from(dims=()), read("burst")]


def test_the_target_is_registered_with_its_rules() -> None:
    assert TARGETS["memory_domain"] is TARGET
    for rule in (
        "allocate_validates_roles",
        "uninitialized_read_fails",
        "failed_execution_uninitializes",
        "copy_round_trips",
        "illegal_use_rejected",
        "values_match_reference",
    ):
        assert f"memory_domain.{rule}" in RULES


def test_a_buffer_life_cycle_passes_on_the_fault_free_driver(device) -> None:
    c = case(LIFE_CYCLE)
    assert_passes(TARGET.run(c, device), c)


def test_dynamic_buffers_pass(device) -> None:
    steps = [write(), copy_to(), read(), copy_from(dims=(4, 1)), copy_to(), write("async"), copy_to()]
    model = add_model(out_dims=[0, 0])
    c = case(steps, allocation(inputs=(), desc=(), dims=(0, 0)), model)
    assert_passes(TARGET.run(c, device), c)


# (steps, a fault that must make them fail, the rule it breaks)
HAND_CASES = {
    "wrong io": ([copy_from(), read(io=1)], "role_check_ignores_io_index", "memory_domain.illegal_use_rejected"),
    "wrong model": ([copy_from(), write(prepared="other"), copy_to()], None, None),
    "in and out": ([copy_from(), {**read(), "outputs": [0]}, copy_to()], None, None),
    "bad tokens": ([copy_from(), read(token="zero"), read(token="unknown")], None, None),
    "dims": ([copy_from(), read(dims=[2, 3]), write(dims=[4]), copy_to()], None, None),
    "size": ([copy_from(delta=4), copy_to()], "copy_from_skips_size_check", "memory_domain.copy_validates_memory"),
    "copy dims": (
        [copy_from(dims=(2, 0)), copy_from(dims=(2,)), copy_from(dims=(4, 1)), copy_to(delta=-4)],
        None,
        None,
    ),
    "failed write": (
        [copy_from(), write(deadline="passed"), copy_to(), read()],
        "buffer_stays_initialized_after_failure",
        "memory_domain.failed_execution_uninitializes",
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_CASES))
def test_illegal_uses_and_failures_pass_on_the_fault_free_driver(device, name) -> None:
    steps, fault, rule = HAND_CASES[name]
    c = case(steps)
    assert_passes(TARGET.run(c, device), c)
    if fault is not None:
        assert TARGET.run(case(steps), create_device(faults=[fault])).rule == rule


# --- drivers that break one rule ---------------------------------------------------------------------------------


class WrapsBuffer(fakes.Delegating):
    """allocate hands out the real buffer inside `wrapper` (the token stays the real one)."""

    def __init__(self, inner, wrapper) -> None:
        super().__init__(inner)
        self.wrapper = wrapper

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        status, buffer, token = self.inner.allocate(desc, prepared_models, input_roles, output_roles)
        return status, None if buffer is None else self.wrapper(buffer), token


class DelegatingBuffer(Buffer):
    def __init__(self, inner) -> None:
        self.inner = inner

    def copy_to(self, dst):
        return self.inner.copy_to(dst)

    def copy_from(self, src, dimensions):
        return self.inner.copy_from(src, dimensions)


class CorruptsCopyTo(DelegatingBuffer):
    """copyTo flips a bit of the first float's exponent."""

    def copy_to(self, dst):
        status = self.inner.copy_to(dst)
        if status == ErrorStatus.NONE and dst.size >= 4:
            dst.write(3, bytes([dst.read(3, 1)[0] ^ 0x40]))
        return status


class ClaimsInitialized(DelegatingBuffer):
    """copyTo of an uninitialized buffer answers NONE (with zeros)."""

    def copy_to(self, dst):
        status = self.inner.copy_to(dst)
        return ErrorStatus.NONE if status == ErrorStatus.GENERAL_FAILURE else status


class CopyFromSkipsChecks(DelegatingBuffer):
    """copyFrom answers NONE whatever the memory, without copying anything."""

    def copy_from(self, src, dimensions):
        self.inner.copy_from(src, dimensions)
        return ErrorStatus.NONE


class AllocatesAnything(fakes.Delegating):
    """allocate answers NONE with a buffer and a token, whatever the roles."""

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        return ErrorStatus.NONE, DelegatingBuffer(None), 7


class AllocatesNothing(fakes.Delegating):
    """allocate is unsupported: GENERAL_FAILURE, no buffer, token 0."""

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        return ErrorStatus.GENERAL_FAILURE, None, 0


class TokenZero(fakes.Delegating):
    """allocate succeeds with token 0."""

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        status, buffer, _ = self.inner.allocate(desc, prepared_models, input_roles, output_roles)
        return status, buffer, 0


class AllocateRaises(fakes.Delegating):
    def allocate(self, desc, prepared_models, input_roles, output_roles):
        raise KeyError("role")


def test_a_corrupted_copy_of_a_written_buffer_breaks_values_match_reference(device) -> None:
    verdict = TARGET.run(case([write(), copy_to()]), WrapsBuffer(device, CorruptsCopyTo))
    assert (verdict.outcome, verdict.rule, verdict.extras["step"]) == (
        Outcome.FAILURE,
        "memory_domain.values_match_reference",
        1,
    )


def test_a_corrupted_copy_of_copied_bytes_breaks_copy_round_trips(device) -> None:
    verdict = TARGET.run(case([copy_from(), copy_to()]), WrapsBuffer(device, CorruptsCopyTo))
    assert verdict.rule == "memory_domain.copy_round_trips"


def test_reading_an_uninitialized_buffer_must_fail(device) -> None:
    verdict = TARGET.run(case([copy_to()]), WrapsBuffer(device, ClaimsInitialized))
    assert verdict.rule == "memory_domain.uninitialized_read_fails"
    after_failure = TARGET.run(
        case([write(), write(deadline="passed"), copy_to()]), WrapsBuffer(device, ClaimsInitialized)
    )
    assert (after_failure.rule, after_failure.extras["step"]) == ("memory_domain.failed_execution_uninitializes", 2)


def test_a_copy_from_that_skips_its_checks_breaks_copy_validates_memory(device) -> None:
    verdict = TARGET.run(case([copy_from(delta=4)]), WrapsBuffer(device, CopyFromSkipsChecks))
    assert verdict.rule == "memory_domain.copy_validates_memory"


def test_invalid_roles_must_be_refused(device) -> None:
    bad = allocation(mutation="frequency_zero", rule="D15.frequency")
    bad["inputRoles"][0]["frequency"] = 0.0
    assert TARGET.run(case([], bad), device).ok
    verdict = TARGET.run(case([], bad), AllocatesAnything(device))
    assert verdict.rule == "memory_domain.allocate_validates_roles"


def test_an_unsupported_allocation_is_not_a_finding(device) -> None:
    verdict = TARGET.run(case(LIFE_CYCLE), AllocatesNothing(device))
    assert verdict.ok and verdict.extras.get("unsupported") is True
    # ... but an invalid allocation of known size must still be INVALID_ARGUMENT
    bad = allocation(mutation="no_roles", rule="D15.roles_present", inputs=(), outputs=())
    assert TARGET.run(case([], bad), AllocatesNothing(device)).rule == "memory_domain.allocate_validates_roles"


def test_a_buffer_with_token_zero_breaks_allocate_accepts_valid_roles(device) -> None:
    assert TARGET.run(case([]), TokenZero(device)).rule == "memory_domain.allocate_accepts_valid_roles"


def test_an_exception_in_allocate_names_the_driver_frame(device) -> None:
    verdict = TARGET.run(case([]), AllocateRaises(device))
    assert verdict.rule == "driver.no_exception_escapes"
    assert verdict.frames[0] == "tests/targets/test_memory_domain_target.py:allocate"


# --- decoded cases --------------------------------------------------------------------------------------------------


def _decoded(seeds: range, target: MemoryDomainTarget = TARGET) -> list[tuple[int, Case]]:
    out = []
    for seed in seeds:
        try:
            out.append((seed, target.decode(RandomSource(seed))))
        except GenerationRejected:
            continue
    return out


@pytest.fixture(scope="module")
def decoded() -> list[tuple[int, Case]]:
    return _decoded(range(300))


def test_decoded_cases_pass_on_the_fault_free_driver_and_survive_json(device, decoded) -> None:
    assert len(decoded) > 250
    for _, c in decoded[:150]:
        text = json.dumps(c.to_json(), allow_nan=False)
        again = Case.from_json(json.loads(text))
        assert_passes(TARGET.run(again, device), again)


def test_decoded_cases_cover_allocations_steps_and_misuses(decoded) -> None:
    seen = Counter()
    for _, c in decoded:
        alloc = c.extras["allocation"]
        seen["valid" if alloc["valid"] else alloc["rule"]] += 1
        seen["two models"] += bool(c.extras["models"])
        for step in c.extras["steps"]:
            seen[step["op"]] += 1
            seen[step.get("misuse", "")] += 1
            seen[f"path {step.get('path')}"] += 1
            seen["deadline"] += "deadline" in step
            seen["small output"] += "smallOutput" in step
            seen["wrong size"] += bool(step.get("sizeDelta"))
    wanted = ["valid", "D15.roles_present", "D15.roles_unique", "D15.model_index", "D15.io_index", "D15.frequency"]
    wanted += ["D15.prepared_model_of_device", "D15.dimensions_compatible", "two models", "copyFrom", "copyTo"]
    wanted += ["execute", "wrong_role", "wrong_model", "input_and_output", "bad_token", "conflicting_dims"]
    wanted += ["path sync", "path async", "path fenced", "path burst", "deadline", "wrong size"]
    missing = [w for w in wanted if not seen[w]]
    assert not missing, (missing, seen)


# (fault, rules that report it)
FAULTS = [
    ("role_check_ignores_io_index", {"memory_domain.illegal_use_rejected"}),
    (
        "buffer_stays_initialized_after_failure",
        {"memory_domain.failed_execution_uninitializes", "memory_domain.failed_copy_uninitializes"},
    ),
    ("copy_from_skips_size_check", {"memory_domain.copy_validates_memory"}),
]


@pytest.mark.parametrize(("fault", "rules"), FAULTS, ids=[f for f, _ in FAULTS])
def test_each_memory_domain_fault_is_found_with_its_rule(device, decoded, fault, rules) -> None:
    faulty = create_device(faults=[fault])
    for seed, c in decoded:
        verdict = TARGET.run(c, faulty)
        if not verdict.ok and TARGET.run(c, device).ok:
            assert verdict.rule in rules, (seed, verdict.rule, verdict.title)
            return
    pytest.fail(f"{fault} not found in {len(decoded)} cases")


def test_a_finding_on_a_prepared_invalid_model_is_charged_as_the_acceptance(monkeypatch) -> None:
    # A campaign's case, minimized into a BOX_WITH_NMS_LIMIT whose output scores are quantized unlike its input
    # scores (zero point 0 against -67: the HAL wants them alike; the reference validator refuses it), which a
    # driver without V10.same_quantization prepares (the fault-free driver did, before it had it). A kernel that
    # writes the scores as stored in the input, ignoring the output's zero point, then writes a buffer that differs
    # from the reference: the verdict names the acceptance, not the values. (Its device buffer's batch indices are
    # [0, 0, 894, 894]: grouped in increasing order, so the reference judges the values.)
    from driver_under_test.backends.numpy.kernels import registry

    nms = registry.lookup(OperationType.BOX_WITH_NMS_LIMIT)
    assert nms is not None

    def scores_at_the_input_zero_point(call):
        scores, *rest = nms.fn(call)
        return [np.clip(scores.astype(np.int32) - 67, -128, 127).astype(scores.dtype), *rest]

    monkeypatch.setitem(
        registry._KERNELS, OperationType.BOX_WITH_NMS_LIMIT, replace(nms, fn=scores_at_the_input_zero_point)
    )
    path = Path(__file__).parent / "invalid_models" / "memory_domain-box-nms-scores-quantization.json"
    case = Case.from_json(json.loads(path.read_text()))
    verdict = TARGETS["memory_domain"].run(case, create_device(faults=["same_quantization_unchecked"]))
    assert verdict.rule == "status.invalid_model_rejected", verdict.rule
    assert "BOX_WITH_NMS_LIMIT" in verdict.details
    assert "memory_domain.values_match_reference" in verdict.details
