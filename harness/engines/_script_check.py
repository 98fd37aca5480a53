"""The part of a reproducer script every engine shares: run the model in a child process, compare each output with
the expected values under its tolerance, print actual against expected, exit 1 while the bug is present.

Everything below the `# --- script ---` line is copied into the repro.py an export writes, after the engine's part
(e.g. `_tflite_script.py`), whose names it uses: ENGINE, ENGINE_PACKAGE, ENGINE_MODULE, MODEL_FILE, KERNEL_SETS,
describe_kernels and run_model; the script's head defines DEFAULT_KERNELS. It may import only the standard library
and numpy. The comparison is the one of harness.oracle.accuracy (REQUIREMENTS O2), restated in numpy alone; a test
keeps the two in step.

The child protocol, which harness.engines also uses to run an engine model bare:
`python repro.py --child MODEL INPUTS.npz OUTPUTS.npz KERNELS` writes main's outputs to OUTPUTS.npz (output0,
output1, ...) and exits 0; when the engine raises, it writes the error text to OUTPUTS.npz.error and exits 3; a
crash ends the child with the signal that killed it.
"""
# ruff: noqa: F821  (the names of the engine's part and the script's head are defined where the script is composed)

# --- script ---
import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXIT_FIXED, EXIT_BUG_PRESENT, EXIT_MISUSE, EXIT_ENGINE_ERROR = 0, 1, 2, 3
SMALL = 16  # outputs of at most this many elements are printed whole
EACH = "each"  # --kernels EACH runs every kernel set in turn (not "all": ONNX Runtime has a level of that name)


def child(model_path, inputs_path, outputs_path, kernels):
    """Run the model once (in the child process) and write its outputs; 3 when the engine raises."""
    with open(model_path, "rb") as f:
        model = f.read()
    with np.load(inputs_path) as saved:
        inputs = [saved[f"input{k}"] for k in range(len(saved.files))]
    try:
        outputs = run_model(model, kernels, inputs)
    except Exception as exc:  # the engine refused or failed: reported, not a crash of this script
        with open(outputs_path + ".error", "w") as f:
            f.write(f"{type(exc).__name__}: {exc}")
        return EXIT_ENGINE_ERROR
    np.savez(outputs_path, **{f"output{k}": np.asarray(a) for k, a in enumerate(outputs)})
    return 0


def run_isolated(folder, kernels, timeout):
    """Run the model of `folder` in a child process: (outcome, outputs, signal number, text), the outcome one of
    "outputs", "crash" (the signal that killed the child), "error" (what the engine raised) or "hang"."""
    with tempfile.TemporaryDirectory() as tmp:
        outputs_path = os.path.join(tmp, "outputs.npz")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            os.path.join(folder, MODEL_FILE),
            os.path.join(folder, "inputs.npz"),
            outputs_path,
            kernels,
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "hang", [], None, f"no answer within {timeout:g} s (the child was killed)"
        if done.returncode < 0:
            number = -done.returncode
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            text = f"killed by signal {number} ({name})" + (f"; its last words:\n{tail}" if tail else "")
            return "crash", [], number, text
        if done.returncode == EXIT_ENGINE_ERROR and os.path.exists(outputs_path + ".error"):
            with open(outputs_path + ".error") as f:
                return "error", [], None, f.read()
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            return "error", [], None, f"the child exited with {done.returncode}: {tail}"
        with np.load(outputs_path) as saved:
            return "outputs", [saved[f"output{k}"] for k in range(len(saved.files))], None, ""


def as_float64(values, accuracy_class):
    """Values as float64; booleans by truth value (a stored 2 and a stored 1 both mean true)."""
    values = np.asarray(values)
    if accuracy_class == "bool":
        return (values.astype(np.float64) != 0).astype(np.float64)
    return values.astype(np.float64)


def fmt(value):
    """A number as the report prints it."""
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def check_output(expected, actual, spec):
    """(ok, lines) for one output: |actual - expected| <= atol + rtol * |expected| element by element."""
    if expected.shape != actual.shape:
        return False, [f"shape mismatch: expected {list(expected.shape)}, actual {list(actual.shape)}"]
    if not spec["compared"]:
        return True, [f"values not compared: {spec['reason']}"]
    cls, atol, rtol, skip_above = spec["class"], spec["atol"], spec["rtol"], spec["skip_above"]
    e, a = as_float64(expected, cls), as_float64(actual, cls)
    with np.errstate(all="ignore"):
        skip = np.zeros(e.shape, dtype=bool)
        if skip_above is not None:  # expected values NaN, infinite or beyond the limit are not compared
            skip = ~np.isfinite(e) | (np.abs(e) > skip_above)
        allowed = atol + rtol * np.abs(e)
        error = np.abs(a - e)
        bad = ~(error <= allowed) & ~skip  # a NaN error is out of tolerance
        excess = np.where(skip, -np.inf, np.where(np.isnan(error), np.inf, error - allowed))
    checked, mismatched = int(e.size - np.count_nonzero(skip)), int(np.count_nonzero(bad))
    skipped = f" ({e.size - checked} not compared: expected NaN, infinite or above {fmt(skip_above)})"
    skipped = skipped if checked < e.size else ""
    if mismatched:
        lines = [f"{mismatched} of {checked} elements out of tolerance{skipped}"]
    else:
        lines = [f"all {checked} elements within tolerance{skipped}"]
    if checked:
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), e.shape))
        relation = "<=" if error[index] <= allowed[index] else ">"
        lines.append(
            f"worst at {list(index)}: expected {fmt(expected[index].item())}, actual {fmt(actual[index].item())}, "
            f"error {fmt(float(error[index]))} {relation} allowed {fmt(float(allowed[index]))}"
        )
    if 0 < e.size <= SMALL:
        lines.append(f"expected: {expected.reshape(-1).tolist()}")
        lines.append(f"actual:   {actual.reshape(-1).tolist()}")
    return mismatched == 0, lines


def load_expected(folder):
    """tolerance.json and the expected outputs."""
    with open(os.path.join(folder, "tolerance.json")) as f:
        tolerance = json.load(f)
    with np.load(os.path.join(folder, "expected.npz")) as saved:
        expected = {name: saved[name] for name in saved.files}
    return tolerance, expected


def check_kernels(folder, kernels, tolerance, expected, timeout):
    """Run and judge one kernel set; True while the bug is present."""
    print(f"\n== {ENGINE} kernel set: {describe_kernels(kernels)}")
    outcome, outputs, _, text = run_isolated(folder, kernels, timeout)
    if outcome == "crash":
        print(f"CRASH: the engine was {text}")
        return True
    if outcome == "hang":
        print(f"HANG: {text}")
        return True
    if outcome == "error" and not tolerance["compared"]:
        print(f"the engine raised {text}; {tolerance['note']}")
        return False
    if outcome == "error":
        print(f"ERROR: the engine raised {text}")
        return True
    specs = tolerance["outputs"]
    if len(outputs) != len(specs):
        print(f"WRONG OUTPUT COUNT: the model gave {len(outputs)} outputs, {len(specs)} expected")
        return True
    present = False
    for spec, actual in zip(specs, outputs):
        name = spec["name"]
        bound = f"|actual - expected| <= {fmt(spec['atol'])} + {fmt(spec['rtol'])} * |expected|"
        print(f"output {spec['output']} ({spec['type']} {spec['shape']}; allowed {bound}):")
        if name not in expected:
            print(f"  values not compared: {spec['reason']}")
            continue
        ok, lines = check_output(expected[name], actual, spec)
        for line in lines:
            print(f"  {line}")
        present |= not ok
    if present:
        print(f"BUG PRESENT: some output differs from the expected values on {kernels} kernels")
    elif tolerance["compared"]:
        print(f"OK: every output is within tolerance on {kernels} kernels")
    else:
        print(f"no crash (nothing else is checked: {tolerance['note']})")
    return present


def versions():
    """The engine package, numpy and Python versions."""
    try:
        engine = importlib.metadata.version(ENGINE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        engine = "not installed"
    python = f"{platform.python_version()} ({platform.machine()}, {platform.system()})"
    return f"{ENGINE_PACKAGE} {engine}, numpy {np.__version__}, Python {python}"


def main(argv=None):
    """The reproducer: exit 1 while the bug is present, 0 once it is fixed, 2 on misuse."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--kernels",
        choices=[*KERNEL_SETS, EACH],
        default=DEFAULT_KERNELS,
        help=f"the kernel set to run (default: {DEFAULT_KERNELS}, where the bug was found); {EACH}: each in turn",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the model may run (default 60)")
    parser.add_argument("--child", nargs=4, metavar=("MODEL", "INPUTS", "OUTPUTS", "KERNELS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    if importlib.util.find_spec(ENGINE_MODULE) is None:
        print(f"{ENGINE_PACKAGE} is not installed: pip install {ENGINE_PACKAGE} numpy", file=sys.stderr)
        return EXIT_MISUSE
    try:
        tolerance, expected = load_expected(HERE)
    except OSError as exc:
        print(f"cannot read the reproducer's files next to this script: {exc}", file=sys.stderr)
        return EXIT_MISUSE
    print(f"{ENGINE} reproducer: {MODEL_FILE}; {versions()}")
    print(f"criterion: {tolerance['criterion']}")
    kernel_sets = list(KERNEL_SETS) if args.kernels == EACH else [args.kernels]
    present = [k for k in kernel_sets if check_kernels(HERE, k, tolerance, expected, args.timeout)]
    print()
    if present:
        print(f"exit 1: the bug is present ({', '.join(present)})")
        return EXIT_BUG_PRESENT
    print("exit 0: the engine computes the expected values")
    return EXIT_FIXED
