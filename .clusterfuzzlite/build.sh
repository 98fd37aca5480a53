#!/bin/bash -eu
# Builds every Atheris script of fuzz/ as a ClusterFuzzLite / OSS-Fuzz fuzzer, run in the builder image with
# $SRC/nnfuzz as the working directory and $OUT as the output folder. For each fuzz/fuzz_<target>.py it leaves in
# $OUT the fuzzer `fuzz_<target>`, its seed corpus `fuzz_<target>_seed_corpus.zip` (corpus/<target>) and its
# dictionary `fuzz_<target>.dict`; the same fuzzers then serve the batch, prune, coverage and code-change modes.
#
# PIP and COMPILE_PYTHON_FUZZER name the tools to use (the image's pip3 and compile_python_fuzzer by default), so
# the steps can be tried outside the image.

PIP=${PIP:-pip3}
COMPILE_PYTHON_FUZZER=${COMPILE_PYTHON_FUZZER:-compile_python_fuzzer}
PYTHON=${PYTHON:-python3}

# The image's Atheris is the one built for its Python: install the project and its other dependencies around it.
$PIP install numpy hypothesis coverage
$PIP install --no-deps .

# The targets load the driver by a module:factory string and the driver registers its kernels on import: bundle
# both packages whole, since PyInstaller only follows static imports.
for fuzzer in fuzz/fuzz_*.py; do
  $COMPILE_PYTHON_FUZZER "$fuzzer" \
    --collect-submodules=harness \
    --collect-submodules=driver_under_test \
    --paths="$PWD/fuzz"
done

# Seed corpora and dictionaries, next to the fuzzers.
$PYTHON -m harness.campaign.assets --out "$OUT"
