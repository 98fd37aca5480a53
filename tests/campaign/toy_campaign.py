"""Toy campaigns for the tests: the settings, and a process running one that prints its events as JSON lines.

`python -m tests.campaign.toy_campaign OUT DB CORPUS BUDGET [FAULT,...]` runs (or resumes) a campaign of the toy
target in OUT and prints each event as one JSON line on stdout, flushed, so a test can kill it at a chosen point.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from harness.campaign import CampaignConfig, TargetSpec, run_campaign
from tests.campaign import toy

HERE = Path(__file__).resolve().parent
SPEC = TargetSpec(toy.TARGET_REF, "toy_sum", HERE / "fuzz_toy.py")
SEEDS = (b"\x02\x01\x02", b"\x03\x05\x06\x07", b"\x01\x09")


def seed_corpus(root: Path) -> Path:
    """A corpus root holding a few passing seeds for the toy target."""
    folder = root / "toy_sum"
    folder.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(SEEDS):
        (folder / f"seed{i}").write_bytes(data)
    return root


def config(
    out: Path, db: Path, corpus: Path, budget_s: float, faults: list[str], jobs: int = 2, work: Path | None = None
) -> CampaignConfig:
    """A toy campaign's settings: short samples, short minimization; its working corpus in `work` (shared) or in
    the run folder."""
    return CampaignConfig(
        targets=[SPEC],
        out_dir=out,
        budget_s=budget_s,
        jobs=jobs,
        driver=toy.SPEC,
        faults=faults,
        corpus_root=corpus,
        work_corpus=work,
        db_path=db,
        timeout_s=5,
        # A cap, not a duration: reduction stops as soon as nothing smaller fails, within seconds on a quiet
        # machine; the margin keeps a loaded machine from cutting it short.
        minimize_s=20.0,
        sample_s=0.5,
    )


def _print(event: object) -> None:
    line = {"event": type(event).__name__, **dataclasses.asdict(event)}
    print(json.dumps(line, default=lambda v: v.hex() if isinstance(v, bytes) else str(v)), flush=True)


def main(argv: list[str]) -> None:
    out, db, corpus, budget = Path(argv[0]), Path(argv[1]), Path(argv[2]), float(argv[3])
    faults = [f for f in (argv[4] if len(argv) > 4 else "").split(",") if f]
    run_campaign(config(out, db, corpus, budget, faults), _print)


if __name__ == "__main__":
    main(sys.argv[1:])
