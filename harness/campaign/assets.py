"""Seed corpus zips and dictionaries for running the fuzz scripts under ClusterFuzzLite / OSS-Fuzz.

For every fuzz/fuzz_<target>.py: `<fuzzer>_seed_corpus.zip` (the files of corpus/<target>, flat, as OSS-Fuzz
unpacks them) and `<fuzzer>.dict` (libFuzzer dictionary syntax). The scripts decode their bytes with the
harness's byte Source, which reads integers little-endian and modulo their range and spreads floats over their
range: the tokens that help it most are the extremes of those readings (all-zero and all-one words, the
signed boundaries), which steer generation to the first and last choices of every draw.

`python -m harness.campaign.assets --out DIR` writes them (`make corpus-zips` writes them next to the scripts;
.clusterfuzzlite/build.sh writes them to $OUT). They are build outputs, not committed.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from harness.campaign.corpus import entries
from harness.runner.libfuzzer import CORPUS_DIR, FUZZ_DIR

# (name, bytes): little-endian extremes of 1-, 2-, 4- and 8-byte readings.
TOKENS: tuple[tuple[str, bytes], ...] = (
    ("zero_u16", bytes(2)),
    ("zero_u32", bytes(4)),
    ("zero_u64", bytes(8)),
    ("ones_u16", b"\xff" * 2),
    ("ones_u32", b"\xff" * 4),
    ("ones_u64", b"\xff" * 8),
    ("max_i16", (0x7FFF).to_bytes(2, "little")),
    ("min_i16", (0x8000).to_bytes(2, "little")),
    ("max_i32", (0x7FFFFFFF).to_bytes(4, "little")),
    ("min_i32", (0x80000000).to_bytes(4, "little")),
    ("one_u32", (1).to_bytes(4, "little")),
    ("byte_7f", b"\x7f"),
    ("byte_80", b"\x80"),
)


def fuzzer_names(fuzz_dir: Path = FUZZ_DIR) -> list[str]:
    """The fuzzers OSS-Fuzz builds: the fuzz scripts' names without .py."""
    return sorted(p.stem for p in fuzz_dir.glob("fuzz_*.py"))


def dictionary_text(tokens: tuple[tuple[str, bytes], ...] = TOKENS) -> str:
    """A libFuzzer dictionary: one `name="\\xNN..."` line per token."""
    lines = ["# Byte patterns at the extremes of the fuzz scripts' integer and float readings."]
    lines += [f'{name}="{_escaped(data)}"' for name, data in tokens]
    return "\n".join(lines) + "\n"


def _escaped(data: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in data)


def write_seed_zip(corpus: Path, destination: Path) -> int:
    """Zip a corpus folder's files (flat, sorted, fixed timestamps: the same corpus gives the same zip)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    names = entries(corpus)
    tmp = destination.with_name(destination.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (corpus / name).read_bytes())
    tmp.replace(destination)
    return len(names)


def write_assets(
    out: Path, corpus_root: Path = CORPUS_DIR, fuzz_dir: Path = FUZZ_DIR, say: Callable[[str], None] = print
) -> list[Path]:
    """Every fuzzer's seed zip and dictionary in `out`; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fuzzer in fuzzer_names(fuzz_dir):
        target = fuzzer.removeprefix("fuzz_")
        seed_zip = out / f"{fuzzer}_seed_corpus.zip"
        count = write_seed_zip(corpus_root / target, seed_zip)
        dictionary = out / f"{fuzzer}.dict"
        dictionary.write_text(dictionary_text())
        written += [seed_zip, dictionary]
        say(f"{fuzzer}: {seed_zip} ({count} seeds), {dictionary}")
    return written


def main(argv: list[str] | None = None) -> int:
    """Write the assets; 0."""
    parser = argparse.ArgumentParser(prog="python -m harness.campaign.assets", description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=FUZZ_DIR, help="output folder (default: fuzz/, next to the scripts)"
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="corpus root (default: corpus/)")
    parser.add_argument("--fuzz-dir", type=Path, default=FUZZ_DIR, help="where the fuzz scripts are (default: fuzz/)")
    args = parser.parse_args(argv)
    write_assets(args.out, args.corpus, args.fuzz_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
