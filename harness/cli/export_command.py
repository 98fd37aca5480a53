"""`nnfuzz export FINDING`: a finding on a driver over an engine, as a standalone reproducer for the engine's owner
(the engine model, inputs, expected outputs with their tolerances, repro.py and a README written as a bug report)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.options import Misuse, command, names, parse
from harness.drivers import DEFAULT_DRIVER
from harness.runner.libfuzzer import DRIVER_ENV, FAULTS_ENV

if TYPE_CHECKING:
    from harness.campaign import Finding
    from harness.case import Case
    from harness.engines import Origin
    from harness.hal import EngineModel

EXIT_REPRODUCES, EXIT_NOT_ON_ENGINE = 0, 1
EXPORT_DIR = "export"  # the default folder, inside the finding's folder
EXPORTS = Path("runs") / "exports"  # the default parent for a finding whose folder is gone


def build_parser() -> argparse.ArgumentParser:
    """The options of the export command."""
    parser = argparse.ArgumentParser(
        prog="nnfuzz export",
        description="Write a folder an engine's owner can use alone: the finding's model in the engine's own format "
        "(model.tflite, model.onnx), its inputs and the expected outputs (inputs.npz, expected.npz, tolerance.json: "
        "expected from nnfuzz's reference, with the HAL's tolerance), repro.py (needs only the engine's package and "
        "numpy; exits 1 while the bug is present), README.md (a bug report) and case.json. The model is run bare on "
        "each of the engine's kernel sets first, and the folder says which show the bug. Exit 0 when the engine alone "
        "shows it on the reproducer's kernel set, 1 when it does not (the folder is written all the same), 2 on "
        "misuse.",
    )
    parser.add_argument(
        "finding",
        metavar="FINDING",
        help="a finding folder, a case JSON (or a finding's input.bin), or a signature (prefix) in the findings "
        "database",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=f"where to write the folder (default: {EXPORT_DIR}/ in the finding's folder, or runs/exports/SIGNATURE)",
    )
    parser.add_argument(
        "--driver",
        metavar="MODULE:FACTORY",
        help=f"the driver whose device gives the engine model (default: the finding's, else {DRIVER_ENV} or "
        f"{DEFAULT_DRIVER})",
    )
    parser.add_argument(
        "--faults", help="faults to start the driver with, a,b (default: the finding's, else NNFUZZ_FAULTS)"
    )
    parser.add_argument(
        "--kernels", metavar="K", help="the reproducer's default kernel set (default: the one the driver runs on)"
    )
    parser.add_argument(
        "--db", type=Path, metavar="PATH", help="findings database (default NNFUZZ_FINDINGS_DB or runs/findings.sqlite)"
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="time limit of a bare run (default 60)"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the export's summary to OUT")
    return parser


@dataclass
class _Source:
    """What to export: the case, where it came from, and the default folder; `fallback`, the case the finding's
    raw input decodes to, when its stored case is a reduced one."""

    case: Case
    origin: Origin
    out: Path
    fallback: Case | None = None


def _exportable(source: _Source, device: object) -> tuple[EngineModel, Case]:
    """The engine model of the source's case, or of its fallback when the reduced case cannot be exported (a
    reduction that dropped input values)."""
    from harness.engines import NotExportable, engine_inputs, engine_model_of

    try:
        engine_inputs(source.case)
        return engine_model_of(source.case, device), source.case
    except NotExportable as exc:
        if source.fallback is None:
            raise
        print(f"note: the finding's reduced case cannot be exported ({exc}); exporting its raw input's case")
        source.case.close()
        source.case = source.fallback
        return engine_model_of(source.case, device), source.case


@command("export")
def main_export(argv: list[str]) -> int:
    """Run the command."""
    from harness.drivers import create_device
    from harness.engines import NotExportable, UnknownFormat, export_case

    args = parse(build_parser(), argv)
    source = _source(args.finding, args.db)
    origin = source.origin
    driver = args.driver or origin.driver or os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER
    faults = names(args.faults) if args.faults is not None else list(origin.faults)
    if args.faults is None and not origin.signature:
        faults = names(os.environ.get(FAULTS_ENV, ""))
    out = args.out or source.out
    _check_out(out)
    device = create_device(driver, faults=faults)
    case = source.case
    try:
        engine_model, case = _exportable(source, device)
        export = export_case(
            case,
            engine_model,
            out,
            kernel_set=args.kernels,
            origin=replace(origin, driver=driver, faults=tuple(faults)),
            timeout_s=args.timeout,
        )
    except (NotExportable, UnknownFormat) as exc:
        raise Misuse(f"{args.finding}: {exc}") from None
    except ValueError as exc:  # an unknown kernel set, a case the reference cannot read
        raise Misuse(str(exc)) from None
    finally:
        case.close()
    summary = export.to_json()
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"{export.title}")
    for run in export.bare.runs.values():
        print(f"  {run.describe()}")
    print(f"wrote {out}: {', '.join(export.files)}")
    print(f"summary: {out / 'export.json'}")
    print(f"run it: python {out / 'repro.py'}   (needs only numpy and {export.engine.split()[0]})")
    if not export.reproduces:
        showing = ", ".join(export.bare.showing()) or "none"
        print(
            f"note: the engine alone computes the expected values on the {export.kernel_set} kernel set (kernel sets "
            f"that show a bug: {showing}); repro.py exits 0 there, so the bug is not in the engine's run of this model"
        )
        return EXIT_NOT_ON_ENGINE
    return EXIT_REPRODUCES


def _source(finding: str, db: Path | None) -> _Source:
    """The case a FINDING argument names: a finding folder, a case or input file, or a signature in the database."""
    from harness.campaign.finding import FINDING_FILE, INPUT_FILE, FindingFormatError, read_folder

    path = Path(finding)
    try:
        if path.is_dir():
            if not (path / FINDING_FILE).is_file():
                raise Misuse(f"{path} is a folder without {FINDING_FILE}: pass a finding folder or a case JSON")
            found = read_folder(path, content=True)
            return _Source(_case_of(found), _origin(found, str(path)), path / EXPORT_DIR, _raw_case_of(found))
        if path.is_file():
            if path.name == FINDING_FILE:
                return _source(str(path.parent), db)
            folder = path.parent
            found = read_folder(folder, content=False) if (folder / FINDING_FILE).is_file() else None
            target = found.target_ref if found is not None and path.name == INPUT_FILE else None
            case = _load(path, target)
            origin = _origin(found, str(folder)) if found is not None else _origin(None, "")
            return _Source(case, origin, folder / EXPORT_DIR)
    except (FindingFormatError, OSError, json.JSONDecodeError) as exc:
        raise Misuse(f"{finding}: {exc}") from None
    return _from_db(finding, db)


def _from_db(signature: str, db: Path | None) -> _Source:
    from harness.campaign import FindingsDB, FindingsDBError, default_db_path

    path = db or default_db_path()
    if not path.is_file():
        raise Misuse(f"{signature} is no finding folder or case file, and there is no findings database at {path}")
    try:
        records = FindingsDB(path).records()
    except FindingsDBError as exc:
        raise Misuse(str(exc)) from None
    matches = [r for r in records if r.finding.signature.startswith(signature)]
    if len(matches) != 1:
        raise Misuse(
            f"{signature} is no finding folder or case file, and {len(matches)} findings of {path} match it "
            "(see nnfuzz findings)"
        )
    found = matches[0].finding
    folder = Path(found.folder) if found.folder else None
    out = folder / EXPORT_DIR if folder is not None and folder.is_dir() else EXPORTS / found.signature
    return _Source(_case_of(found), _origin(found, found.folder), out, _raw_case_of(found))


def _case_of(found: Finding) -> Case:
    """A finding's case: its case JSON, else its input bytes decoded by its target."""
    from harness.case import Case

    if found.case is not None:
        return Case.from_json(found.case)
    if found.input is not None:
        from harness.runner.execute import decode_bytes, resolve_target

        case = decode_bytes(resolve_target(found.target_ref), found.input)
        if case is not None:
            return case
    raise Misuse(f"finding {found.signature} has no case to export (its input decodes to none)")


def _raw_case_of(found: Finding) -> Case | None:
    """The case a finding's raw input decodes to, when its stored case is another (a reduced one)."""
    if found.case is None or found.input is None:
        return None
    from harness.runner.execute import decode_bytes, resolve_target

    return decode_bytes(resolve_target(found.target_ref), found.input)


def _load(path: Path, target: str | None) -> Case:
    from harness.runner import UnknownTarget
    from harness.runner.replay import InputError, load_input

    try:
        saved = load_input(path, target)
    except (InputError, UnknownTarget, ValueError) as exc:
        raise Misuse(str(exc)) from None
    if saved.case is None:
        raise Misuse(f"{path}: the input decodes to no case (the generator rejects it); nothing to export")
    return saved.case


def _origin(found: Finding | None, folder: str) -> Origin:
    from harness.engines import Origin

    if found is None:
        return Origin(folder=folder)
    return Origin(
        signature=found.signature,
        target=found.target,
        outcome=found.outcome,
        rule=found.rule,
        title=found.title,
        details=found.details,
        driver=found.driver,
        faults=tuple(found.faults),
        folder=folder,
    )


def _check_out(out: Path) -> None:
    """The folder may be new, empty, or an earlier export (its files are replaced); nothing else is overwritten."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "export.json").is_file())):
        raise Misuse(f"{out} exists and is not an earlier export: choose another --out")
