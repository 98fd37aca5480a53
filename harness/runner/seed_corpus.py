"""Seed corpora for the fuzz scripts: random byte strings that decode to distinct cases and pass on a clean driver.

`python -m harness.runner.seed_corpus [--targets ...] [--count N] [--out corpus]` writes corpus/<target>/<sha1>
files (libFuzzer's naming). A seed that fails on the fault-free driver is left out (libFuzzer would stop on it
before fuzzing) and reported: it is a finding of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.drivers import DEFAULT_DRIVER, create_device
from harness.hal import Device
from harness.runner.execute import decode_bytes, registered_targets, resolve_target, run_case
from harness.runner.libfuzzer import CORPUS_DIR
from harness.targets.base import Target

DEFAULT_COUNT = 32
# Lengths spread from "runs out of choices early" to "room for a few operations".
LENGTHS = (8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass
class Seeds:
    """The inputs kept for one target, and those a clean driver fails on."""

    inputs: list[bytes] = field(default_factory=list)
    failing: list[tuple[bytes, str]] = field(default_factory=list)  # (input, rule)
    attempts: int = 0


def generate_seeds(target: Target, count: int, device: Device | None = None, seed: int = 0) -> Seeds:
    """Up to `count` random inputs decoding to distinct cases (that run clean on `device`, when given)."""
    rng = random.Random(seed * 1_000_003 + zlib.crc32(target.name.encode()))
    seeds = Seeds()
    seen: set[str] = set()
    while len(seeds.inputs) < count and seeds.attempts < count * 50:
        seeds.attempts += 1
        data = rng.randbytes(rng.choice(LENGTHS))
        case = decode_bytes(target, data)
        if case is None:
            continue
        key = json.dumps(case.to_json(), sort_keys=True, default=str)
        if key in seen:
            case.close()
            continue
        seen.add(key)
        if device is not None:
            verdict = run_case(target, case, device).verdict
            case.close()
            if not verdict.ok:
                seeds.failing.append((data, verdict.rule or ""))
                continue
        seeds.inputs.append(data)
    return seeds


def write_corpus(folder: Path, inputs: list[bytes]) -> list[Path]:
    """Write inputs as files named by their SHA-1; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for data in inputs:
        path = folder / hashlib.sha1(data).hexdigest()
        path.write_bytes(data)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Generate the seed corpora; 0 on success, 1 if a seed failed on the clean driver."""
    parser = argparse.ArgumentParser(prog="python -m harness.runner.seed_corpus", description=__doc__)
    parser.add_argument("--targets", nargs="+", help="targets (default: every registered target with a fuzz script)")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"seeds per target (default {DEFAULT_COUNT})")
    parser.add_argument("--out", type=Path, default=CORPUS_DIR, help="corpus root (default: the repository's corpus/)")
    parser.add_argument("--driver", default=DEFAULT_DRIVER, help="driver checked against (fault-free)")
    parser.add_argument("--no-check", action="store_true", help="keep seeds without running them on the driver")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--clean", action="store_true", help="remove a target's old seed files first")
    args = parser.parse_args(argv)
    from harness.runner.libfuzzer import FUZZ_DIR

    names = args.targets or sorted(t for t in registered_targets() if (FUZZ_DIR / f"fuzz_{t}.py").is_file())
    device = None if args.no_check else create_device(args.driver, faults=[])
    failed = False
    for name in names:
        target = resolve_target(name)
        seeds = generate_seeds(target, args.count, device, args.seed)
        folder = args.out / target.name
        if args.clean and folder.is_dir():
            for old in folder.iterdir():
                if old.is_file():
                    old.unlink()
        write_corpus(folder, seeds.inputs)
        out(f"{target.name}: {len(seeds.inputs)} seeds in {folder} ({seeds.attempts} inputs tried)")
        for data, rule in seeds.failing:
            failed = True
            out(f"  fails on the fault-free driver: [{rule}] input {data.hex()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
