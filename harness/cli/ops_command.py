"""`nnfuzz ops`: what the operation catalogue knows about each HAL operation."""

from __future__ import annotations

import argparse
import json
import sys

from harness.hal import OperationType


def catalogue_rows() -> list[dict]:
    """One row per HAL operation: family, number of typings, shape rule and kernel presence."""
    from harness import ops

    rows = []
    for op in OperationType:
        spec = ops.get(op)
        rows.append(
            {
                "operation": op.name,
                "number": int(op),
                "family": spec.family if spec else None,
                "signatures": len(spec.signatures) if spec else 0,
                "shape_rule": bool(spec and spec.shape),
                "reference_kernel": bool(spec and spec.kernel),
            }
        )
    return rows


def main_ops(argv: list[str]) -> int:
    """List the catalogue as a table, or as JSON with --json."""
    parser = argparse.ArgumentParser(prog="nnfuzz ops", description=__doc__)
    parser.add_argument("--json", metavar="OUT", help="also write the table as JSON to OUT ('-' for stdout)")
    args = parser.parse_args(argv)
    rows = catalogue_rows()
    if args.json == "-":
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'operation':32} {'#':>5} {'family':14} {'typings':>7} shape kernel")
    for r in rows:
        print(
            f"{r['operation']:32} {r['number']:>5} {r['family'] or '-':14} {r['signatures']:>7} "
            f"{'yes' if r['shape_rule'] else 'no ':5} {'yes' if r['reference_kernel'] else 'no'}"
        )
    with_kernel = sum(r["reference_kernel"] for r in rows)
    print(f"{len(rows)} operations, {sum(r['signatures'] > 0 for r in rows)} catalogued, {with_kernel} with a kernel")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0
