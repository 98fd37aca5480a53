#!/bin/bash -eu
# Builds every Atheris script of fuzz/ as a ClusterFuzzLite / OSS-Fuzz fuzzer, run in the builder image with
# $SRC/nnfuzz as the working directory and $OUT as the output folder. For each fuzz/fuzz_<target>.py it leaves in
# $OUT the fuzzer `fuzz_<target>`, its seed corpus `fuzz_<target>_seed_corpus.zip` (corpus/<target>) and its
# dictionary `fuzz_<target>.dict`; the same fuzzers then serve the batch, prune, coverage and code-change modes.
#
# PIP and COMPILE_PYTHON_FUZZER name the tools to use (the image's pip3 and compile_python_fuzzer by default), so
# the steps can be tried outside the image; `make package-fuzzers` runs the same PyInstaller build here
# (harness/campaign/package.py, whose PYINSTALLER_FLAGS are the flags below) and runs each fuzzer.
#
# The fuzzers fuzz the driver named by NNFUZZ_DRIVER (or `--driver MODULE:FACTORY` among their arguments), the
# bundled one by default. NNFUZZ_LITERT=1 also bundles LiteRT, for the driver_under_test:create_litert_* variants.

PIP=${PIP:-pip3}
COMPILE_PYTHON_FUZZER=${COMPILE_PYTHON_FUZZER:-compile_python_fuzzer}
PYTHON=${PYTHON:-python3}

# The image's Atheris is the one built for its Python: install the project and its other dependencies around it.
$PIP install numpy hypothesis coverage
$PIP install --no-deps .

# The targets load the driver by a module:factory string and the driver registers its kernels on import: bundle
# both packages whole, since PyInstaller only follows static imports.
FLAGS=(--collect-submodules=harness --collect-submodules=driver_under_test "--paths=$PWD/fuzz")
if [ "${NNFUZZ_LITERT:-0}" = 1 ]; then
  $PIP install ai-edge-litert==2.3.0
  FLAGS+=(--collect-all=ai_edge_litert --copy-metadata=ai-edge-litert)
fi
for fuzzer in fuzz/fuzz_*.py; do
  $COMPILE_PYTHON_FUZZER "$fuzzer" "${FLAGS[@]}"
done

# Seed corpora and dictionaries, next to the fuzzers.
$PYTHON -m harness.campaign.assets --out "$OUT"
