"""The Atheris scripts: the shape OSS-Fuzz expects, and a short run on the fault-free driver that finds nothing."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "fuzz").glob("fuzz_*.py"))
NAMES = [p.stem.removeprefix("fuzz_") for p in SCRIPTS]


def test_there_is_a_script_for_each_of_the_first_three_targets() -> None:
    assert {"validation", "execution", "request"} <= set(NAMES)


@pytest.mark.parametrize("script", SCRIPTS, ids=NAMES)
def test_a_script_is_executable_with_a_docstring_instrumented_imports_and_a_main_guard(script: Path) -> None:
    text = script.read_text()
    tree = ast.parse(text)
    assert text.startswith("#!/usr/bin/env python3\n")
    assert os.access(script, os.X_OK)  # -fork and -jobs re-execute argv[0]
    assert (ast.get_docstring(tree) or "").startswith("Fuzzes ")
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"TestOneInput", "main"} <= functions
    withs = [n for n in tree.body if isinstance(n, ast.With)]
    assert any("instrument_imports" in ast.unparse(w.items[0].context_expr) for w in withs)
    assert any("driver_under_test" in ast.unparse(w) for w in withs)
    assert ast.unparse(tree.body[-1]).startswith("if __name__ == '__main__':")


def _fuzz(script: Path, *args: str, driver: str | None = None, faults: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, NNFUZZ_FAULTS=faults, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("NNFUZZ_DRIVER", None)
    if driver:
        env["NNFUZZ_DRIVER"] = driver
    return subprocess.run(
        [str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False
    )


@pytest.mark.parametrize("name", ["validation", "execution", "request"])
def test_a_short_run_on_the_fault_free_driver_exits_0(name: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    result = _fuzz(
        ROOT / "fuzz" / f"fuzz_{name}.py",
        "-runs=200",
        "-seed=1",
        f"-artifact_prefix={tmp_path}/",
        str(corpus),
        f"corpus/{name}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done 200 runs" in result.stderr
    assert not list(tmp_path.glob("crash-*"))


def test_a_crashing_driver_is_a_libfuzzer_crash_with_its_input_saved(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    result = _fuzz(
        ROOT / "fuzz" / "fuzz_validation.py",
        "-runs=50",
        f"-artifact_prefix={tmp_path}/",
        str(corpus),
        "corpus/validation",
        driver="tests.runner.bad_drivers:crashing_device",
    )
    assert result.returncode != 0
    assert "deadly signal" in result.stderr
    assert len(list(tmp_path.glob("crash-*"))) == 1


def _common_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_common", ROOT / "fuzz" / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_driver_and_faults_options_leave_argv_for_libfuzzer_and_the_environment_for_its_children() -> None:
    common = _common_module()
    env: dict[str, str] = {}
    argv = ["fuzz_x.py", "corpus", "--driver", "m:f", "-runs=5", "--faults=a,b", "-seed=1"]
    assert common.take_options(argv, env) == ["fuzz_x.py", "corpus", "-runs=5", "-seed=1"]
    assert env == {"NNFUZZ_DRIVER": "m:f", "NNFUZZ_FAULTS": "a,b"}
    assert common.take_options(["--driver=m:f"], env) == ["--driver=m:f"]  # argv[0] is the program


def test_a_driver_named_on_the_command_line_is_the_one_fuzzed_and_a_bad_one_is_exit_code_2(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    script = ROOT / "fuzz" / "fuzz_validation.py"
    crash = _fuzz(script, "-runs=50", f"-artifact_prefix={tmp_path}/", str(corpus), "corpus/validation",
                  "--driver=tests.runner.bad_drivers:crashing_device")  # fmt: skip
    assert crash.returncode != 0 and "deadly signal" in crash.stderr
    bad = _fuzz(script, "-runs=1", str(corpus), "--driver", "no_such_module:create")
    assert bad.returncode == 2 and "fuzz_validation.py: driver spec 'no_such_module:create'" in bad.stderr
