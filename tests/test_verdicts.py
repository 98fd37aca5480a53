"""The tests' verdict assertion: a failing verdict's message ends with the command that replays its saved case."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.oracle.verdict import SUCCESS, Outcome, Verdict
from harness.runner.replay import load_input
from tests import verdicts
from tests.targets.cases import validation_case


def test_a_failing_verdict_saves_its_case_and_says_how_to_reproduce_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(verdicts, "FAILING_CASES", tmp_path / "failing-cases")
    case = validation_case()
    verdicts.assert_passes(SUCCESS, case)  # a pass says nothing and saves nothing
    assert not (tmp_path / "failing-cases").exists()
    verdict = Verdict(Outcome.FAILURE, "status.valid_model_accepted", "a valid model was refused", "NONE expected")
    with pytest.raises(AssertionError) as failure:
        verdicts.assert_passes(verdict, case)
    message = str(failure.value)
    assert message.startswith("FAILURE [status.valid_model_accepted]: a valid model was refused\nNONE expected")
    [saved] = (tmp_path / "failing-cases").iterdir()
    assert saved.name == f"validation-{verdict.signature}.json"
    assert message.splitlines()[-1] == f"Reproduce with: nnfuzz repro {saved} --target validation"
    assert load_input(saved).case.to_json() == case.to_json()
