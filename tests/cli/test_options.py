"""The options the commands share: --driver and --faults with their defaults, libFuzzer flags after `--`, and misuse
ending a command with exit code 2."""

from __future__ import annotations

import argparse

import pytest

from harness.cli import (
    bench_command,
    campaign_command,
    conformance_command,
    evaluate_command,
    fuzz_command,
    repro_command,
)
from harness.cli.options import Misuse, command, libfuzzer_flags, names, parse
from harness.drivers import DEFAULT_DRIVER, DriverSpecError, load_factory

FROM_ENVIRONMENT = {"fuzz": fuzz_command, "campaign": campaign_command, "repro": repro_command}
ARGS = {"fuzz": ["validation"], "repro": ["case.json"], "campaign": []}


@pytest.mark.parametrize("name", sorted(FROM_ENVIRONMENT))
def test_the_fuzzing_commands_take_their_driver_and_faults_from_the_environment(name: str, monkeypatch) -> None:
    monkeypatch.setenv("NNFUZZ_DRIVER", "pkg:factory")
    monkeypatch.setenv("NNFUZZ_FAULTS", "a,b")
    args = FROM_ENVIRONMENT[name].build_parser().parse_args(ARGS[name])
    assert (args.driver, names(args.faults)) == ("pkg:factory", ["a", "b"])
    monkeypatch.delenv("NNFUZZ_DRIVER")
    monkeypatch.delenv("NNFUZZ_FAULTS")
    args = FROM_ENVIRONMENT[name].build_parser().parse_args([*ARGS[name], "--driver", "x:y", "--faults", "c"])
    assert (args.driver, names(args.faults)) == ("x:y", ["c"])
    assert FROM_ENVIRONMENT[name].build_parser().parse_args(ARGS[name]).driver == DEFAULT_DRIVER


def test_bench_and_evaluate_run_the_default_driver_and_conformance_the_reference(monkeypatch) -> None:
    monkeypatch.setenv("NNFUZZ_DRIVER", "pkg:factory")
    assert bench_command.build_parser().parse_args([]).driver == DEFAULT_DRIVER
    assert evaluate_command.build_parser().parse_args([]).driver == DEFAULT_DRIVER
    assert conformance_command.build_parser().parse_args([]).driver is None


def test_names_and_libfuzzer_flags_are_split_one_way() -> None:
    assert names(" a, b,,c ") == ["a", "b", "c"] and names(["a,b", "c"]) == ["a", "b", "c"] and names(None) == []
    assert libfuzzer_flags(["t", "--x", "--", "-max_len=9", "--"]) == (["t", "--x"], ["-max_len=9", "--"])
    assert libfuzzer_flags(["t"]) == (["t"], [])


def test_a_command_ends_misuse_with_its_reason_and_exit_code_2(capsys) -> None:
    parser = argparse.ArgumentParser(prog="nnfuzz toy")
    parser.add_argument("--spec")

    @command("toy")
    def main(argv: list[str]) -> int:
        args = parse(parser, argv)
        if args.spec == "misuse":
            raise Misuse("say what to change")
        load_factory(args.spec or DEFAULT_DRIVER)
        return 0

    assert main([]) == 0
    assert main(["--help"]) == 0
    assert main(["--no-such-option"]) == 2 and "unrecognized arguments" in capsys.readouterr().err
    assert main(["--spec", "misuse"]) == 2 and capsys.readouterr().err == "nnfuzz toy: say what to change\n"
    with pytest.raises(DriverSpecError):
        load_factory("not a spec")
    assert main(["--spec", "not a spec"]) == 2 and "not of the form module:factory" in capsys.readouterr().err
