"""Coverage over time: the corpus replayed in the order it was found; the last point agrees with coverage.py's own
totals; an input that kills the replaying process is left out instead of losing the measurement."""

from __future__ import annotations

import json

from harness.campaign.coverage_replay import measure_coverage, package_of
from tests.campaign import toy


def test_the_measured_package_is_the_driver_factorys_top_level_package() -> None:
    assert package_of("driver_under_test:create_device") == "driver_under_test"
    assert package_of("vendor.nn.hal:make") == "vendor"


def test_points_grow_with_time_and_the_last_matches_coverage_pys_report_even_past_a_crashing_input(tmp_path):
    files = {
        "empty": (0.0, b""),
        "small": (0.0, b"\x02\x01\x02"),
        "abort": (1.0, b"\x02\xab\xcd"),  # values [0xAB, 0xCD]: the abort_on_ab fault kills the process
        "wraps": (2.0, b"\x03\x07\xff\xff"),  # values [7, 255, 255]: the other branch of toy_sum
    }
    inputs = []
    for name, (t, data) in files.items():
        (tmp_path / name).write_bytes(data)
        inputs.append((t, toy.TARGET_REF, tmp_path / name))
    out = tmp_path / "coverage"
    result = measure_coverage(inputs, [0.0, 1.0, 2.0], toy.SPEC, ["abort_on_ab", "sum_wraps"], out, limit_s=120)
    assert result.ok and "1 input(s) left out" in result.detail and "abort" in result.detail
    assert [(p.t, p.inputs) for p in result.points] == [(0.0, 2), (1.0, 2), (2.0, 3)]
    covered = [p.branches_covered for p in result.points]
    assert covered == sorted(covered) and covered[-1] > covered[0]
    totals = json.loads((out / "coverage.json").read_text())["totals"]
    assert (result.points[-1].branches_covered, result.branches_total) == (
        totals["covered_branches"],
        totals["num_branches"],
    )
    assert result.points[-1].lines_covered == totals["covered_lines"]
    assert (out / ".coverage").is_file()
