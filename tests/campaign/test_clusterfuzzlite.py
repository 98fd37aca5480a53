"""The ClusterFuzzLite configuration: a Python project whose build script compiles every fuzz script and leaves
its seed corpus and dictionary in $OUT. Without a Docker engine, the script runs here with stand-ins for the
image's pip and compile_python_fuzzer that record how they were called."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.campaign.corpus import entries
from harness.campaign.package import pyinstaller_flags

ROOT = Path(__file__).resolve().parents[2]
CFL = ROOT / ".clusterfuzzlite"
SCRIPTS = sorted(p.stem for p in (ROOT / "fuzz").glob("fuzz_*.py"))


def test_the_project_is_python_built_from_the_python_base_image_with_the_build_script() -> None:
    assert (CFL / "project.yaml").read_text().split() == ["language:", "python"]
    docker = (CFL / "Dockerfile").read_text().splitlines()
    assert "FROM gcr.io/oss-fuzz-base/base-builder-python" in docker
    assert "COPY .clusterfuzzlite/build.sh $SRC/" in docker
    assert os.access(CFL / "build.sh", os.X_OK)


def _stand_in(path: Path, log: Path) -> str:
    path.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {log}\n')
    path.chmod(0o755)
    return str(path)


def _build(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str], Path]:
    """build.sh run here with stand-ins for pip and compile_python_fuzzer: the result, their calls, $OUT."""
    log, out = tmp_path / "calls.log", tmp_path / "out"
    out.mkdir()
    environment = dict(
        os.environ,
        OUT=str(out),
        SRC=str(tmp_path),
        PIP=_stand_in(tmp_path / "pip3", log),
        COMPILE_PYTHON_FUZZER=_stand_in(tmp_path / "compile_python_fuzzer", log),
        PYTHON=sys.executable,
    )
    environment.pop("NNFUZZ_LITERT", None)
    environment.update(env)
    result = subprocess.run(
        ["bash", str(CFL / "build.sh")], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    return result, (log.read_text().splitlines() if log.exists() else []), out


def test_the_build_compiles_every_fuzz_script_and_writes_their_seed_zips_and_dictionaries(tmp_path: Path) -> None:
    result, calls, out = _build(tmp_path)
    assert result.returncode == 0, result.stderr
    assert calls[:2] == ["pip3 install numpy hypothesis coverage", "pip3 install --no-deps ."]
    compiled = [c.split()[1] for c in calls if c.startswith("compile_python_fuzzer ")]
    assert compiled == [f"fuzz/{name}.py" for name in SCRIPTS]
    # The PyInstaller flags are those `make package-fuzzers` builds with (without LiteRT unless asked).
    flags = [c.split()[2:] for c in calls if c.startswith("compile_python_fuzzer ")]
    assert all(f == pyinstaller_flags(ROOT / "fuzz", litert=False) for f in flags)
    for name in SCRIPTS:
        corpus = entries(ROOT / "corpus" / name.removeprefix("fuzz_"))  # none yet for a brand-new target
        with zipfile.ZipFile(out / f"{name}_seed_corpus.zip") as archive:
            assert sorted(archive.namelist()) == corpus
        assert (out / f"{name}.dict").read_text().startswith("#")


def test_asked_for_litert_the_build_installs_it_and_bundles_it_for_the_litert_driver_variants(tmp_path: Path) -> None:
    result, calls, _ = _build(tmp_path, NNFUZZ_LITERT="1")
    assert result.returncode == 0, result.stderr
    assert "pip3 install ai-edge-litert==2.3.0" in calls
    flags = [c.split()[2:] for c in calls if c.startswith("compile_python_fuzzer ")]
    assert flags and all(f == pyinstaller_flags(ROOT / "fuzz", litert=True) for f in flags)
