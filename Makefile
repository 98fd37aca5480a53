# One command sets everything up and runs the suite: `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the dependency declaration changes or a package is added (the editable finder maps packages
# at install time).
PACKAGES := $(shell find harness driver_under_test -name __init__.py -not -path '*/__pycache__/*')
$(STAMP): pyproject.toml $(PACKAGES) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,litert,onnxruntime]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

# A short campaign against the bundled driver (CAMPAIGN_SECONDS of fuzzing, then triage, corpus merge, coverage
# and the report, whose location is printed). Nightly: a longer --budget-seconds, see README.
CAMPAIGN_SECONDS ?= 180
.PHONY: campaign corpus-zips package-fuzzers
campaign: $(STAMP)
	$(BIN)/nnfuzz campaign --budget-seconds $(CAMPAIGN_SECONDS) --fail-on never

# Seed corpus zips and dictionaries for ClusterFuzzLite / OSS-Fuzz, next to the fuzz scripts (build outputs).
corpus-zips: $(STAMP)
	$(BIN)/python -m harness.campaign.assets --out fuzz

# The fuzz scripts packaged as ClusterFuzzLite / OSS-Fuzz package them (PyInstaller --onefile and a wrapper, as the
# image's compile_python_fuzzer does, with the flags of .clusterfuzzlite/build.sh), each run for a few hundred
# inputs; build time, size and the run of each in build/fuzzers/package.json; then the package tests on them.
# PyInstaller is not a dependency of the project: this installs it into .venv.
PYINSTALLER_VERSION ?= 6.22.3
FUZZER_RUNS ?= 300
package-fuzzers: $(STAMP)
	$(BIN)/python -m pip install --quiet 'pyinstaller==$(PYINSTALLER_VERSION)'
	$(BIN)/python -m harness.campaign.package --out build/fuzzers --runs $(FUZZER_RUNS)
	NNFUZZ_PACKAGED_DIR=build/fuzzers $(BIN)/python -m pytest -m package tests/campaign/test_package.py
