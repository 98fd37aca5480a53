"""Seed corpus zips and dictionaries for ClusterFuzzLite: the corpus files, flat; a dictionary libFuzzer reads."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.campaign.assets import TOKENS, dictionary_text, write_assets

HERE = Path(__file__).resolve().parent


def test_each_fuzz_script_gets_a_zip_of_its_corpus_and_a_dictionary(tmp_path: Path) -> None:
    fuzz_dir, corpus = tmp_path / "fuzz", tmp_path / "corpus"
    fuzz_dir.mkdir()
    (fuzz_dir / "fuzz_alpha.py").write_text("")
    (fuzz_dir / "_common.py").write_text("")
    (corpus / "alpha").mkdir(parents=True)
    (corpus / "alpha" / "one").write_bytes(b"\x01")
    (corpus / "alpha" / "two").write_bytes(b"\x02\x02")
    written = write_assets(tmp_path / "out", corpus, fuzz_dir, say=lambda s: None)
    assert sorted(p.name for p in written) == ["fuzz_alpha.dict", "fuzz_alpha_seed_corpus.zip"]
    with zipfile.ZipFile(tmp_path / "out" / "fuzz_alpha_seed_corpus.zip") as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == {"one": b"\x01", "two": b"\x02\x02"}
    # The same corpus gives the same bytes (fixed timestamps and order).
    first = (tmp_path / "out" / "fuzz_alpha_seed_corpus.zip").read_bytes()
    write_assets(tmp_path / "out", corpus, fuzz_dir, say=lambda s: None)
    assert (tmp_path / "out" / "fuzz_alpha_seed_corpus.zip").read_bytes() == first


def test_the_dictionary_spells_each_token_in_libfuzzer_syntax_and_libfuzzer_reads_it(tmp_path: Path) -> None:
    text = dictionary_text()
    assert 'max_i32="\\xff\\xff\\xff\\x7f"' in text.splitlines()
    path = tmp_path / "toy.dict"
    path.write_text(text)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", NNFUZZ_FAULTS="")
    result = subprocess.run(
        [str(HERE / "fuzz_toy.py"), f"-dict={path}", "-runs=10"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"Dictionary: {len(TOKENS)} entries" in result.stderr
