"""The fuzz scripts packaged as OSS-Fuzz's compile_python_fuzzer packages them (PyInstaller --onefile and a wrapper),
and the packages run: a few hundred inputs each, with the driver named by --driver or NNFUZZ_DRIVER reachable, a
bundled one or one on disk.

The tests that build or run packages are marked `package` (left out of `make test`; `make package-fuzzers` builds
every fuzzer and runs them with NNFUZZ_PACKAGED_DIR naming the build). Without NNFUZZ_PACKAGED_DIR they build
fuzz_validation themselves, which needs PyInstaller (pip install pyinstaller).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.campaign.package import (
    PYINSTALLER_FLAGS,
    WRAPPER,
    package_fuzzer,
    pyinstaller_command,
    pyinstaller_flags,
    smoke_run,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGED_ENV = "NNFUZZ_PACKAGED_DIR"


def test_the_build_is_compile_python_fuzzers_pyinstaller_onefile_with_build_shs_flags(tmp_path: Path) -> None:
    script = ROOT / "fuzz" / "fuzz_request.py"
    command = pyinstaller_command(script, tmp_path / "out", tmp_path / "work", pyinstaller_flags(litert=False))
    assert command[1:3] == ["-m", "PyInstaller"] and "--onefile" in command
    assert f"--distpath={tmp_path / 'out'}" in command and f"--workpath={tmp_path / 'work'}" in command
    assert "--name=fuzz_request.pkg" in command and command[-1] == str(script)
    assert command[-4:-1] == [
        "--collect-submodules=harness",
        "--collect-submodules=driver_under_test",
        f"--paths={ROOT / 'fuzz'}",
    ]
    assert len(PYINSTALLER_FLAGS) == 3
    assert pyinstaller_flags(litert=True)[-2:] == ["--collect-all=ai_edge_litert", "--copy-metadata=ai-edge-litert"]
    wrapper = WRAPPER.format(package="fuzz_request.pkg")
    assert wrapper.startswith("#!/bin/sh\n# LLVMFuzzerTestOneInput") and '"$this_dir/fuzz_request.pkg" "$@"' in wrapper


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the packaged fuzzers: NNFUZZ_PACKAGED_DIR, or fuzz_validation built here."""
    if os.environ.get(PACKAGED_ENV):
        folder = Path(os.environ[PACKAGED_ENV])
        assert list(folder.glob("fuzz_*.pkg")), f"no packaged fuzzer in {folder}"
        return folder
    pytest.importorskip("PyInstaller", reason="PyInstaller builds the packages: pip install pyinstaller")
    out = tmp_path_factory.mktemp("fuzzers")
    package_fuzzer(ROOT / "fuzz" / "fuzz_validation.py", out, out / ".work")
    return out


def _wrappers(folder: Path) -> list[Path]:
    return sorted(p.with_suffix("") for p in folder.glob("fuzz_*.pkg"))


@pytest.mark.package
def test_every_packaged_fuzzer_runs_a_few_hundred_inputs_on_the_bundled_driver(packaged: Path) -> None:
    for wrapper in _wrappers(packaged):
        assert os.access(wrapper, os.X_OK)
        run = smoke_run(wrapper, ROOT / "corpus" / wrapper.name.removeprefix("fuzz_"), runs=300)
        assert run.exit_code == 0 and run.execs >= 300, run.log[-3000:]
        assert " cov: " in run.log  # the driver is instrumented: libFuzzer sees its coverage


@pytest.mark.package
def test_the_driver_named_by_option_or_environment_is_the_one_the_package_fuzzes(packaged: Path, tmp_path: Path):
    wrapper = packaged / "fuzz_validation"
    if not wrapper.exists():
        wrapper = _wrappers(packaged)[0]
    seeds = ROOT / "corpus" / wrapper.name.removeprefix("fuzz_")
    # A bundled driver with a planted fault, named on the command line: the fault is found.
    planted = smoke_run(
        wrapper, seeds, runs=5000, driver="driver_under_test:create_device", faults=["abort_on_unknown_operand_type"]
    )
    assert planted.exit_code != 0 and "deadly signal" in planted.log, planted.log[-3000:]
    # The same through NNFUZZ_DRIVER and NNFUZZ_FAULTS.
    env = dict(
        os.environ, NNFUZZ_DRIVER="driver_under_test:create_device", NNFUZZ_FAULTS="abort_on_unknown_operand_type"
    )
    assert "deadly signal" in smoke_run(wrapper, seeds, runs=5000, env=env).log
    # A driver that was not bundled, imported from a folder on disk.
    mark = tmp_path / "reached"
    (tmp_path / "outside_driver.py").write_text(
        "import os\n"
        "from driver_under_test import create_device\n\n\n"
        "def create(faults=None):\n"
        "    open(os.environ['NNFUZZ_TEST_MARK'], 'w').write('reached')\n"
        "    return create_device(faults=faults)\n"
    )
    env = dict(os.environ, NNFUZZ_DRIVER_PATH=str(tmp_path), NNFUZZ_TEST_MARK=str(mark))
    env.pop("NNFUZZ_DRIVER", None)
    outside = smoke_run(wrapper, seeds, runs=100, driver="outside_driver:create", env=env)
    assert outside.exit_code == 0 and outside.execs >= 100, outside.log[-3000:]
    assert mark.read_text() == "reached"
