# Stockade — the two commands of the README's Quick start, and their parts.
#   make run      install missing packages, build, start stockade on the current directory
#                 (stdout carries only the MCP protocol: everything else goes to stderr)
#   make test     install missing packages, build, run every test (ends with ctest's summary)
#   make build    leaves build/stockade
#   make install  a release build (build-release/, only what ships), then stockade, its man pages,
#                 completions, systemd unit and example into $(PREFIX) (/usr/local; DESTDIR too)
#   make uninstall  removes what the last `make install` put (build-release/install_manifest.txt)
#   make deb      the Debian package of the release build: build-release/stockade_*.deb
SHELL := /bin/bash
BUILD_DIR ?= build
FUZZ_DIR ?= build-fuzz
JOBS ?= $(shell nproc)
RELEASE_DIR ?= build-release
BUILD_TYPE ?= RelWithDebInfo
PACKAGES := $(shell sed -e 's/\#.*//' debian-packages.txt)
# The release build needs only the list's first section, up to its "## tests" line.
BUILD_PACKAGES := $(shell sed -e '/^\#\# tests/,$$d' -e 's/\#.*//' debian-packages.txt)
DEPS_STAMP := $(BUILD_DIR)/.deps-installed
RELEASE_DEPS_STAMP := $(RELEASE_DIR)/.deps-installed
PREFIX ?= /usr/local

.PHONY: all deps release-deps e2e-deps agents-deps conformance-deps build release run install \
        uninstall deb test unit integration podman image e2e agents fuzz-build bench format tidy clean

all: build

# Installs only what is missing, so a machine that has everything never needs root or apt.
#   $(call install-missing,PACKAGES,STAMP)
define install-missing
	@missing=$$(dpkg-query -W -f='$${db:Status-Abbrev} $${Package}\n' $(1) 2>/dev/null \
	    | awk '$$1 == "ii" {print $$2}' | sort | comm -13 - <(printf '%s\n' $(1) | sort)); \
	if [ -n "$$missing" ]; then \
	    echo "make: installing missing Debian packages:" $$missing; \
	    if [ "$$(id -u)" != 0 ]; then echo "make: run as root (or install them yourself): apt-get install" $$missing >&2; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p $(dir $(2)) && touch $(2)
endef
deps: $(DEPS_STAMP)
$(DEPS_STAMP): debian-packages.txt
	$(call install-missing,$(PACKAGES),$@)
release-deps: $(RELEASE_DEPS_STAMP)
$(RELEASE_DEPS_STAMP): debian-packages.txt
	$(call install-missing,$(BUILD_PACKAGES),$@)

$(BUILD_DIR)/CMakeCache.txt: $(DEPS_STAMP) CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

# An agent CLI may start `make run` as its MCP server: stdout is the protocol, so the install
# and the build write to stderr, and make itself prints nothing there.
run:
	@$(MAKE) --no-print-directory build >&2
	@exec $(BUILD_DIR)/stockade serve --workspace "$(CURDIR)"

# The release build: what ships and nothing else (no tests, fuzzers or benchmarks), at -O2 like
# the RelWithDebInfo tree the tests run, without its debug info.
$(RELEASE_DIR)/CMakeCache.txt: $(RELEASE_DEPS_STAMP) CMakeLists.txt
	cmake -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
	    -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DSTOCKADE_BUILD_TESTS=OFF

release: release-deps $(RELEASE_DIR)/CMakeCache.txt
	cmake --build $(RELEASE_DIR) -j $(JOBS)

# cmake --install honours DESTDIR and records every file in install_manifest.txt.
install: release
	DESTDIR="$(DESTDIR)" cmake --install $(RELEASE_DIR) --prefix $(PREFIX) --strip

# What the last install put (the manifest lists it without DESTDIR: give the same one), then
# the directory of ours it leaves (share/doc/stockade).
uninstall:
	@test -f $(RELEASE_DIR)/install_manifest.txt || { \
	    echo "make: no $(RELEASE_DIR)/install_manifest.txt: nothing installed from this tree" >&2; exit 1; }
	sed 's|^|$(DESTDIR)|' $(RELEASE_DIR)/install_manifest.txt | xargs -r -d '\n' rm -f --
	sed -n 's|\(/share/doc/stockade\)/.*|\1|p' $(RELEASE_DIR)/install_manifest.txt | sort -u \
	    | sed 's|^|$(DESTDIR)|' | xargs -r -d '\n' rm -rf --
	rm $(RELEASE_DIR)/install_manifest.txt

deb: release
	cd $(RELEASE_DIR) && cpack -G DEB
	@ls $(RELEASE_DIR)/stockade_*.deb

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

# The container image and what runs it (slow: two image builds from Debian's archive).
podman: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L podman --no-tests=error

# Stockade's container image as an OCI layout in build/oci (packaging/oci/build.sh).
image: build
	packaging/oci/build.sh --build-dir $(BUILD_DIR) --out $(BUILD_DIR)/oci

bench: build
	bench/startup.sh
	bench/tools.sh
	bench/exec.sh

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

tidy: build
	git ls-files '*.cc' | grep -v '^tests/' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(RELEASE_DIR)
