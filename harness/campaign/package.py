"""Packaging the fuzz scripts as OSS-Fuzz and ClusterFuzzLite do, and running the packages.

OSS-Fuzz's `compile_python_fuzzer fuzz/fuzz_<target>.py FLAGS...` (in the Python base builder image) runs
`pyinstaller --distpath $OUT --workpath W --onefile --name fuzz_<target>.pkg FLAGS... fuzz/fuzz_<target>.py` and
writes an executable wrapper `$OUT/fuzz_<target>` that runs the package with the arguments it is given (in the
image it also preloads the sanitizer runtime). `package_fuzzer` does the same here, with the same FLAGS as
.clusterfuzzlite/build.sh (`PYINSTALLER_FLAGS`; a test keeps the two equal), so a build can be tried and timed
without the image. `smoke_run` then runs a packaged fuzzer for a few hundred inputs from its
seeds, as the ClusterFuzzLite modes would start it, with the driver named by `--driver` (or NNFUZZ_DRIVER).

`python -m harness.campaign.package --out build/fuzzers [--targets T ...] [--runs 300] [--driver SPEC]` builds
and runs every fuzzer, printing progress, and writes OUT/package.json (build seconds, package size, the smoke run)
(`make package-fuzzers`). PyInstaller is not a dependency of the project: `pip install pyinstaller`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.runner.libfuzzer import CORPUS_DIR, FUZZ_DIR, REPO_ROOT

# What build.sh passes compile_python_fuzzer after the script. The targets reach the driver through a
# module:factory string and the driver registers its kernels on import: both packages are bundled whole, since
# PyInstaller only follows static imports. The scripts' shared module lives next to them.
PYINSTALLER_FLAGS = ("--collect-submodules=harness", "--collect-submodules=driver_under_test", "--paths={fuzz}")
# The LiteRT driver variants import LiteRT by name and read its version from its metadata: bundled whole when it is
# installed where the fuzzers are built (build.sh: NNFUZZ_LITERT=1), so `--driver ...create_litert_device` works.
LITERT_FLAGS = ("--collect-all=ai_edge_litert", "--copy-metadata=ai-edge-litert")
WRAPPER = """#!/bin/sh
# LLVMFuzzerTestOneInput for fuzzer detection.
this_dir=$(dirname "$0")
exec "$this_dir/{package}" "$@"
"""
DEFAULT_RUNS = 300
_STAT = re.compile(r"^stat::(?P<key>\w+):\s+(?P<value>\d+)", re.MULTILINE)


class PackagingError(RuntimeError):
    """PyInstaller is missing or failed (the message says which and where its log is)."""


def litert_installed() -> bool:
    """True when LiteRT can be bundled (it is installed here)."""
    return importlib.util.find_spec("ai_edge_litert") is not None


def pyinstaller_flags(fuzz_dir: Path = FUZZ_DIR, litert: bool | None = None) -> list[str]:
    """The flags build.sh gives compile_python_fuzzer, with the fuzz folder filled in; LiteRT's too when `litert`
    (default: when it is installed)."""
    flags = [flag.format(fuzz=fuzz_dir) for flag in PYINSTALLER_FLAGS]
    if litert_installed() if litert is None else litert:
        flags += LITERT_FLAGS
    return flags


def pyinstaller_command(script: Path, out: Path, work: Path, flags: Sequence[str]) -> list[str]:
    """compile_python_fuzzer's PyInstaller command line for one script."""
    return [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level=WARN",
        f"--distpath={out}",
        f"--workpath={work}",
        f"--specpath={work}",
        "--onefile",
        f"--name={script.stem}.pkg",
        *flags,
        str(script),
    ]


@dataclass
class SmokeRun:
    """A packaged fuzzer run for a few hundred inputs."""

    command: list[str]
    exit_code: int
    seconds: float
    execs: int
    driver: str
    log: str


@dataclass
class Packaged:
    """One packaged fuzzer: how long PyInstaller took, how big the package is, and its smoke run."""

    fuzzer: str
    package: str
    wrapper: str
    build_seconds: float
    size_bytes: int
    flags: list[str] = field(default_factory=list)
    smoke: SmokeRun | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Built, and its smoke run (if any) ran its inputs and found nothing."""
        return not self.errors and (self.smoke is None or self.smoke.exit_code == 0)


def package_fuzzer(script: Path, out: Path, work: Path, flags: Sequence[str] | None = None) -> Packaged:
    """Build fuzz_<target>.pkg and its wrapper fuzz_<target> in `out`, as compile_python_fuzzer does."""
    try:
        import PyInstaller  # noqa: F401 - only to say clearly when it is missing
    except ImportError:
        raise PackagingError(
            "PyInstaller is not installed: pip install pyinstaller (make package-fuzzers does)"
        ) from None
    out.mkdir(parents=True, exist_ok=True)
    work = work / script.stem
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    flags = list(flags) if flags is not None else pyinstaller_flags()
    command = pyinstaller_command(script, out, work, flags)
    log = work / "pyinstaller.log"
    started = time.monotonic()
    with open(log, "w") as f:
        code = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, cwd=REPO_ROOT, check=False).returncode
    seconds = time.monotonic() - started
    package = out / f"{script.stem}.pkg"
    if code != 0 or not package.is_file():
        raise PackagingError(f"PyInstaller failed on {script} (exit code {code}; see {log})")
    wrapper = out / script.stem
    wrapper.write_text(WRAPPER.format(package=package.name))
    wrapper.chmod(0o755)
    return Packaged(script.stem, str(package), str(wrapper), round(seconds, 1), package.stat().st_size, flags)


def smoke_run(
    wrapper: Path,
    seeds: Path,
    runs: int = DEFAULT_RUNS,
    driver: str | None = None,
    faults: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout_s: float = 600.0,
) -> SmokeRun:
    """Run a packaged fuzzer for `runs` inputs from a scratch corpus and the seeds (read only), in a scratch folder.

    The driver, when given, is passed as `--driver` on the command line (faults as `--faults`), as a team would
    name another driver; otherwise the fuzzer reads NNFUZZ_DRIVER from `env` or uses the bundled one.
    """
    with tempfile.TemporaryDirectory(prefix="nnfuzz-smoke-") as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        command = [str(wrapper.resolve()), str(corpus)]
        if seeds.is_dir():
            command.append(str(seeds.resolve()))
        command += [f"-runs={runs}", f"-artifact_prefix={scratch}/", "-print_final_stats=1", "-timeout=60"]
        if driver:
            command.append(f"--driver={driver}")
        if faults:
            command.append(f"--faults={','.join(faults)}")
        environment = dict(os.environ if env is None else env)
        started = time.monotonic()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, errors="replace", cwd=scratch, env=environment,
                timeout=timeout_s, check=False,
            )  # fmt: skip
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = -9, f"{exc.stdout or ''}{exc.stderr or ''}\nstopped after {timeout_s} s"
        seconds = time.monotonic() - started
    stats = {m["key"]: int(m["value"]) for m in _STAT.finditer(output)}
    used = driver or environment.get("NNFUZZ_DRIVER") or "driver_under_test:create_device"
    return SmokeRun(command, code, round(seconds, 1), stats.get("number_of_executed_units", 0), used, output[-4000:])


def package_all(
    out: Path,
    targets: Sequence[str] | None = None,
    runs: int = DEFAULT_RUNS,
    driver: str | None = None,
    fuzz_dir: Path = FUZZ_DIR,
    corpus_root: Path = CORPUS_DIR,
    say: Callable[[str], None] = print,
    litert: bool | None = None,
) -> list[Packaged]:
    """Package every fuzz script (or those of `targets`) into `out` and smoke-run each; out/package.json."""
    scripts = sorted(fuzz_dir.glob("fuzz_*.py"))
    if targets:
        wanted = {f"fuzz_{t}" for t in targets}
        missing = wanted - {s.stem for s in scripts}
        if missing:
            raise PackagingError(f"no fuzz script for {', '.join(sorted(missing))}")
        scripts = [s for s in scripts if s.stem in wanted]
    work = out / ".work"
    done: list[Packaged] = []
    for i, script in enumerate(scripts, 1):
        say(f"[{i}/{len(scripts)}] {script.stem}: PyInstaller --onefile ...")
        packaged = package_fuzzer(script, out, work, pyinstaller_flags(fuzz_dir, litert))
        say(f"[{i}/{len(scripts)}] {script.stem}: built in {packaged.build_seconds:.0f} s, "
            f"{packaged.size_bytes / 2**20:.1f} MiB; running {runs} inputs ...")  # fmt: skip
        if runs > 0:
            seeds = corpus_root / script.stem.removeprefix("fuzz_")
            packaged.smoke = smoke_run(Path(packaged.wrapper), seeds, runs, driver)
            s = packaged.smoke
            how = "ok" if s.exit_code == 0 else f"exit code {s.exit_code}"
            say(f"[{i}/{len(scripts)}] {script.stem}: {s.execs} inputs in {s.seconds:.0f} s on {s.driver}: {how}")
        done.append(packaged)
        _write_report(out, done)
    return done


def _write_report(out: Path, done: list[Packaged]) -> None:
    rows = []
    for p in done:
        row = asdict(p)
        row["ok"] = p.ok
        rows.append(row)
    document = {"python": sys.version.split()[0], "pyinstaller": _pyinstaller_version(), "fuzzers": rows}
    document["litert_bundled"] = any("--collect-all=ai_edge_litert" in " ".join(r.get("flags", [])) for r in rows)
    (out / "package.json").write_text(json.dumps(document, indent=1) + "\n")


def _pyinstaller_version() -> str | None:
    try:
        from PyInstaller import __version__

        return __version__
    except ImportError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Package and smoke-run the fuzzers: 0 when all ran, 1 when one failed, 2 on misuse."""
    parser = argparse.ArgumentParser(prog="python -m harness.campaign.package", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "fuzzers", help="output folder")
    parser.add_argument("--targets", nargs="+", metavar="T", help="only these targets (default: every fuzz script)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"inputs per smoke run (default {DEFAULT_RUNS})")
    parser.add_argument("--driver", metavar="MODULE:FACTORY", help="driver for the smoke runs, given as --driver")
    parser.add_argument(
        "--litert",
        action=argparse.BooleanOptionalAction,
        help="bundle LiteRT for the create_litert_* drivers (default: when it is installed)",
    )
    args = parser.parse_args(argv)
    try:
        done = package_all(args.out.resolve(), args.targets, args.runs, args.driver, litert=args.litert)
    except PackagingError as exc:
        print(f"package: {exc}", file=sys.stderr)
        return 2
    for p in done:
        smoke = f"{p.smoke.execs} inputs, exit {p.smoke.exit_code}" if p.smoke else "not run"
        print(f"{p.fuzzer:22} {p.build_seconds:6.0f} s  {p.size_bytes / 2**20:6.1f} MiB  {smoke}")
    print(f"report: {args.out.resolve() / 'package.json'}")
    return 0 if all(p.ok for p in done) else 1


if __name__ == "__main__":
    sys.exit(main())
