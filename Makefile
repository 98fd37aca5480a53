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
	$(BIN)/python -m pip install --quiet -e '.[dev,litert]'
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
.PHONY: campaign corpus-zips
campaign: $(STAMP)
	$(BIN)/nnfuzz campaign --budget-seconds $(CAMPAIGN_SECONDS) --fail-on never

# Seed corpus zips and dictionaries for ClusterFuzzLite / OSS-Fuzz, next to the fuzz scripts (build outputs).
corpus-zips: $(STAMP)
	$(BIN)/python -m harness.campaign.assets --out fuzz
