# Stockade — the two commands of the README's Quick start, and their parts.
#   make run      install missing packages, build, start stockade on the current directory
#                 (stdout carries only the MCP protocol: everything else goes to stderr)
#   make test     install missing packages, build, run every test (ends with ctest's summary)
#   make build    leaves build/stockade
#   make install  puts stockade in $(PREFIX)/bin (PREFIX=/usr/local; DESTDIR for packaging)
SHELL := /bin/bash
BUILD_DIR ?= build
FUZZ_DIR ?= build-fuzz
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo
PACKAGES := $(shell sed -e 's/\#.*//' debian-packages.txt)
DEPS_STAMP := $(BUILD_DIR)/.deps-installed
PREFIX ?= /usr/local

.PHONY: all deps e2e-deps agents-deps conformance-deps build run install test unit integration e2e agents \
        fuzz-build bench format tidy clean

all: build

# Installs only what is missing, so a machine that has everything never needs root or apt.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): debian-packages.txt
	@missing=$$(dpkg-query -W -f='$${db:Status-Abbrev} $${Package}\n' $(PACKAGES) 2>/dev/null \
	    | awk '$$1 == "ii" {print $$2}' | sort | comm -13 - <(printf '%s\n' $(PACKAGES) | sort)); \
	if [ -n "$$missing" ]; then \
	    echo "make: installing missing Debian packages:" $$missing; \
	    if [ "$$(id -u)" != 0 ]; then echo "make: run as root (or install them yourself): apt-get install" $$missing >&2; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p $(BUILD_DIR) && touch $@

$(BUILD_DIR)/CMakeCache.txt: $(DEPS_STAMP) CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

# An agent CLI may start `make run` as its MCP server: stdout is the protocol, so the install
# and the build write to stderr, and make itself prints nothing there.
run:
	@$(MAKE) --no-print-directory build >&2
	@exec $(BUILD_DIR)/stockade serve --workspace "$(CURDIR)"

install: build
	install -D -m 0755 $(BUILD_DIR)/stockade $(DESTDIR)$(PREFIX)/bin/stockade

# Fuzz targets are built with clang-14's libFuzzer; their corpora replay under ctest in the
# main build (which links the same targets with a replay main()).
fuzz-build: deps
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOCKADE_FUZZ=ON \
	    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
	    -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target stockade_fuzzers

# The end-to-end suite drives `stockade serve` with the official MCP TypeScript SDK, installed
# from the npm registry at the versions pinned in tests/e2e/package-lock.json.
E2E_STAMP := tests/e2e/node_modules/.package-lock.json
e2e-deps: $(E2E_STAMP)
$(E2E_STAMP): tests/e2e/package-lock.json $(DEPS_STAMP)
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error

# The conformance suite (@modelcontextprotocol/conformance) runs against `stockade serve --http`
# on Node 22, which it needs; both come from the npm registry, pinned in
# tests/conformance/package-lock.json.
CONFORMANCE_STAMP := tests/conformance/node_modules/.package-lock.json
conformance-deps: $(CONFORMANCE_STAMP)
$(CONFORMANCE_STAMP): tests/conformance/package-lock.json $(DEPS_STAMP)
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error

# The agents suite drives the real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode), from
# the npm registry at the versions pinned in tests/agents/package-lock.json. `npm install`, not
# `npm ci`: the CLIs' native binaries are optional dependencies per platform, and a registry
# that lacks some platform's package (as ours lacks OpenCode's macOS and Windows builds) makes
# `npm ci` refuse the lock for missing entries, while `npm install` takes exactly the locked
# versions. The lock must come out unchanged.
AGENTS_STAMP := tests/agents/node_modules/.package-lock.json
agents-deps: $(AGENTS_STAMP)
$(AGENTS_STAMP): tests/agents/package-lock.json $(DEPS_STAMP)
	cp tests/agents/package-lock.json $(BUILD_DIR)/agents-package-lock.json
	cd tests/agents && npm install --no-audit --no-fund --loglevel=error
	@cmp -s tests/agents/package-lock.json $(BUILD_DIR)/agents-package-lock.json || { \
	    echo "make: npm changed tests/agents/package-lock.json: the pinned versions did not hold" >&2; \
	    exit 1; }

test: build e2e-deps agents-deps conformance-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600 --no-tests=error

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L unit --no-tests=error

e2e: build e2e-deps conformance-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -L e2e --no-tests=error

agents: build agents-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -L agents --no-tests=error

integration: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L 'integration|security' --no-tests=error

bench: build
	bench/startup.sh
	bench/tools.sh
	bench/exec.sh

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

tidy: build
	git ls-files '*.cc' | grep -v '^tests/' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR)
