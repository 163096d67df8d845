# Thin wrapper over CMake: `make demo` runs the main job, `make test` runs
# every test under AddressSanitizer + UndefinedBehaviorSanitizer. Both
# install missing Debian packages first (`make deps`).

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

# Debian packages the build, the tests and the demo need. kubectl 1.32 is
# part of the machine image (not a Debian package); deps only checks it.
DEPS_PKGS := gcc make cmake pkg-config libcurl4-openssl-dev libjansson-dev \
             libuv1-dev libhiredis-dev libyaml-dev libmicrohttpd-dev \
             libcmocka-dev uthash-dev libssl-dev zlib1g-dev openssl redis-server prometheus \
             gnuplot-nox curl python3-kubernetes

# node and npm for the official JavaScript client (tests/integ/clients,
# installed there by npm ci from the committed package-lock.json): its
# models are also what the build generates gpuq-sim's OpenAPI schemas
# from (sim/openapi_gen.mjs). A node already on PATH (e.g. a newer one
# that brings its own npm) is used as it is.
NODE_PKGS := nodejs npm

# make fuzz needs clang and libFuzzer as well; make test does not (it
# replays the fuzz corpora with gcc), so these stay out of DEPS_PKGS.
FUZZ_PKGS := clang libclang-rt-14-dev
# bench/sim_cost counts gpuq-sim's instructions with valgrind's callgrind;
# nothing else needs it (make deps-bench).
BENCH_PKGS := valgrind

.PHONY: all deps deps-fuzz deps-bench build build-asan test fuzz demo clean

all: build

deps-fuzz: PKGS = $(DEPS_PKGS) $(FUZZ_PKGS)
deps-fuzz: install-pkgs
deps-bench: PKGS = $(DEPS_PKGS) $(BENCH_PKGS)
deps-bench: install-pkgs
deps: PKGS = $(DEPS_PKGS) $(if $(shell command -v npm),,$(NODE_PKGS))
deps: install-pkgs
	@if [ ! -f tests/integ/clients/node_modules/.package-lock.json ] || \
	    [ tests/integ/clients/package-lock.json -nt \
	      tests/integ/clients/node_modules/.package-lock.json ]; then \
	  echo "make deps: npm ci in tests/integ/clients"; \
	  (cd tests/integ/clients && npm ci --no-audit --no-fund --loglevel=error); \
	fi

.PHONY: install-pkgs
install-pkgs:
	@missing=""; \
	for p in $(PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  sudo=""; [ "$$(id -u)" -ne 0 ] && sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq \
	    --no-install-recommends $$missing; \
	fi; \
	command -v kubectl >/dev/null || \
	  echo "make deps: warning: kubectl not found on PATH (tests that drive kubectl need it)"

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGQ_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The release build is compiled too, so -O2 -Werror stays clean; the tests
# run on the sanitizer build.
# The scenario suite runs after the rest, alone: its checks are at virtual
# times (100x), and kubectl hooks and the controller slowed down by the
# other tests beside it can miss them (a hook once took 1.2 real s).
test: build build-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -LE scenario
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -L scenario

# Every libFuzzer harness of tests/fuzz, built with clang in $(FUZZ_BUILD)
# and run one at a time for FUZZ_SECONDS each over a copy of its corpus;
# fails on any crash, leak or sanitizer report (tests/fuzz/run.sh; the
# executions per target go to $(FUZZ_BUILD)/fuzz/report.txt). Pick targets
# with FUZZ_TARGETS="yaml pod".
fuzz: deps-fuzz
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGQ_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target gq_fuzz_all
	tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Options: make demo TRACE=... SPEED=... CLUSTER=... EVENTS=... OUT=...
# (see demo/run.sh).
demo: build
	@TRACE="$(TRACE)" SPEED="$(SPEED)" CLUSTER="$(CLUSTER)" EVENTS="$(EVENTS)" \
	  OUT="$(OUT)" BUILD="$(BUILD)" ./demo/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
