"""Sampling mutants of a package's source: every mutation the operators make, drawn with a seed, each one edit of
one file that can be written into a copy of the package and shown as a unified diff."""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import importlib.util
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.mutants.operators import OPERATORS, Edit, Operator, apply, edits

# The catalogue of planted faults is metadata, not driver behaviour; the LiteRT backend is not what the default
# driver spec runs, so its mutants could only survive (pass --exclude to choose otherwise).
# The fault catalogue, and the backends the bundled driver's default spec never runs (LiteRT, ONNX Runtime and the
# module only those two share): their mutants would all survive as unreachable.
DEFAULT_EXCLUDE = ("faults.py", "backends/litert/*", "backends/onnxruntime/*", "backends/_operation.py")


class SampleError(ValueError):
    """A sample that cannot be drawn (no such package, nothing to mutate, a bad size)."""


@dataclass(frozen=True)
class Mutant:
    """One mutation of one file of a package."""

    id: str  # its place in the sample: M001, M002, ...
    package: str  # the package's import name
    path: str  # the file, relative to the package's folder, with / separators
    edit: Edit

    @property
    def key(self) -> str:
        """A name that stays the same across samples while the file does: path:line:col:operator:replacement."""
        e = self.edit
        return f"{self.package}/{self.path}:{e.line}:{e.col}:{e.operator}:{e.after}"

    @property
    def location(self) -> str:
        """file:line."""
        return f"{self.package}/{self.path}:{self.edit.line}"

    def mutated_source(self, root: Path) -> str:
        """The mutated text of the file, from the package folder `root`."""
        return apply((root / self.path).read_text(), self.edit)

    def diff(self, root: Path) -> str:
        """The mutation as a unified diff against the package folder `root`."""
        name = f"{self.package}/{self.path}"
        before = (root / self.path).read_text().splitlines(keepends=True)
        after = self.mutated_source(root).splitlines(keepends=True)
        return "".join(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", n=2))

    def write_copy(self, root: Path, dest: Path) -> Path:
        """Copy the package folder `root` into the folder `dest` (as dest/<package>) with this mutation made."""
        copy = dest / self.package
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (copy / self.path).write_text(self.mutated_source(root))
        return copy


def package_root(driver_spec: str) -> tuple[str, Path]:
    """The top-level package a driver spec's factory lives in, and its source folder (found, not imported)."""
    package = driver_spec.partition(":")[0].split(".")[0]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SampleError(f"{package!r} (of the driver spec {driver_spec!r}) is not an importable package")
    return package, Path(next(iter(spec.submodule_search_locations)))


def package_files(root: Path, exclude: Sequence[str] = DEFAULT_EXCLUDE) -> list[str]:
    """The package's Python files (relative, / separators, sorted) that no exclude pattern matches."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return [f for f in files if not any(fnmatch.fnmatch(f, pattern) for pattern in exclude)]


def fingerprint(root: Path, files: Sequence[str]) -> str:
    """A digest of the files' contents: the same seed draws the same sample exactly when this is the same."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def all_mutations(
    root: Path, files: Sequence[str], operators: Sequence[Operator] = OPERATORS
) -> list[tuple[str, Edit]]:
    """Every (file, edit) the operators make in the files, in file then source order."""
    return [(name, edit) for name in files for edit in edits((root / name).read_text(), tuple(operators))]


def sample(
    package: str,
    root: Path,
    count: int,
    seed: int,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    operators: Sequence[Operator] = OPERATORS,
) -> list[Mutant]:
    """`count` distinct mutants of the package folder `root`, drawn uniformly with `seed` (same seed, same files:
    same sample), in the order drawn."""
    if count <= 0:
        raise SampleError(f"the number of mutants must be positive, not {count}")
    if not root.is_dir():
        raise SampleError(f"{root} is not a package folder")
    files = package_files(root, exclude)
    population = all_mutations(root, files, operators)
    if not population:
        raise SampleError(f"no mutation applies to {package} (files {len(files)}, excluded {list(exclude)})")
    if count > len(population):
        raise SampleError(f"{count} mutants asked for, but {package} has only {len(population)}")
    drawn = random.Random(seed).sample(range(len(population)), count)
    width = max(3, len(str(count)))
    return [
        Mutant(f"M{i + 1:0{width}d}", package, population[k][0], population[k][1]) for i, k in enumerate(drawn)
    ]
