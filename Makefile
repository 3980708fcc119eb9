# swift-ble-host: every target installs what it needs on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
SWIFTFLAGS := -Xswiftc -warnings-as-errors
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := libbluetooth-dev libssl-dev pkg-config tshark bluez tmux libmosquitto-dev mosquitto mosquitto-clients libyaml-dev openssl zsh
# The kernel tier's VM (scripts/kernel-vm would install them itself, inside a test's time limit).
APT_PACKAGES += qemu-system-x86 linux-image-amd64 busybox-static cpio
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Seconds each fuzz target runs in `make test` (make fuzz runs longer).
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_SECONDS ?= 300

.PHONY: all deps apt venv build test test-swift test-fuzz test-examples test-vm demo bench fuzz soak clean docs install api-baseline

all: build

# Debian packages (only those missing) and the Python venv with the Bumble peer.
deps: apt venv

apt:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(VENV)/.stamp

$(VENV)/.stamp: Fixtures/peers/requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r Fixtures/peers/requirements.txt
	touch $@

build: apt
	$(SWIFT) build $(SWIFTFLAGS)

# The whole suite: byte fixtures, replay, in-process virtual controller, Bumble virtual radio,
# the CLI, fuzz smoke runs, the Examples package and the real-kernel tier under qemu.
# scripts/test-all builds once, checks the public API against api/ and the runner itself, then
# runs the lanes at the same time (units, gateway, radio, kernel, fuzz, examples; logs in
# .build/test-logs). Within a lane tests run one at a time: on a 2-core machine the
# cooperative thread pool has two threads, and the tests that wait on subprocesses (Bumble,
# qemu, the ble binary) would otherwise starve the rest; each lane is its own process.
# scripts/run-tests kills a lane and names the test when one test runs longer than
# BLE_TEST_TIMEOUT seconds (600 here: the kernel tier's one VM run took 236-300+ s on a slow
# day; default 300) or the lane longer than BLE_TEST_RUN_TIMEOUT (2400);
# scripts/test-run-tests checks that it does (about 10 s).
test: deps
	BLE_PYTHON=$(abspath $(PY)) BLE_KERNEL_VM=1 BLE_TEST_TIMEOUT=600 SWIFT=$(SWIFT) FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) scripts/test-all

# The public API of every library module, rewritten into api/<Module>.txt from the build (make
# test fails with a diff when the API and api/ differ; commit api/ with a meant change).
api-baseline: apt
	$(SWIFT) build $(SWIFTFLAGS)
	SWIFT=$(SWIFT) scripts/api-baseline --write

test-swift: deps
	$(SWIFT) build --build-tests $(SWIFTFLAGS)
	SWIFT=$(SWIFT) scripts/api-baseline
	SWIFT=$(SWIFT) scripts/test-run-tests
	BLE_PYTHON=$(abspath $(PY)) BLE_KERNEL_VM=1 BLE_TEST_TIMEOUT=600 SWIFT=$(SWIFT) scripts/run-tests --skip-build --no-parallel

# Examples/: a package that uses this one by path, as an application would; its tests run
# on the public fakes.
test-examples: apt
	cd Examples && $(SWIFT) build --build-tests $(SWIFTFLAGS) && $(SWIFT) test --skip-build

# Every libFuzzer target for a short smoke run (make fuzz runs longer).
test-fuzz: apt
	scripts/fuzz run --seconds $(FUZZ_SMOKE_SECONDS)

fuzz: apt
	scripts/fuzz run --seconds $(FUZZ_SECONDS)

# The long soak (100,000 in-process cycles, 1,000 against the Bumble radio); make test runs a
# short one. Counts: make soak SOAK_ARGS="--vc 10000 --radio 100".
soak: deps
	BLE_PYTHON=$(abspath $(PY)) scripts/soak $(SOAK_ARGS)

# The main job on the bundled virtual radio (no hardware needed).
demo: deps build
	BLE_PYTHON=$(abspath $(PY)) scripts/demo

# The DocC catalogs (BLECore, ATT, GATTClient, BLETestSupport) as a static site in
# .build/docs/site, with the toolchain's own docc (scripts/docs).
docs: apt
	SWIFT=$(SWIFT) scripts/docs

clean:
	rm -rf .build Examples/.build $(VENV)

# Installs ble, its man page and bash/zsh completions under $(DESTDIR)$(PREFIX). Builds a
# release binary first unless BLE_BIN names one (CLIPackagingTests passes the debug build).
PREFIX ?= /usr/local
install:
	@if [ -z "$(BLE_BIN)" ]; then $(SWIFT) build -c release --product ble $(SWIFTFLAGS); fi
	bin="$(BLE_BIN)"; [ -n "$$bin" ] || bin="$$($(SWIFT) build -c release --show-bin-path)/ble"; \
	install -Dm755 "$$bin" "$(DESTDIR)$(PREFIX)/bin/ble"
	install -Dm644 docs/ble.1 "$(DESTDIR)$(PREFIX)/share/man/man1/ble.1"
	install -Dm644 completions/ble.bash "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/ble"
	install -Dm644 completions/_ble "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ble"

# Benchmarks (release build), side by side with Bumble on the same bytes; prints JSON.
bench: deps
	$(SWIFT) build -c release --product Benchmarks $(SWIFTFLAGS)
	$(SWIFT) build -c release --product ble $(SWIFTFLAGS)
	test -x .build/bench-venv/bin/python || python3 -m venv .build/bench-venv
	.build/bench-venv/bin/python -m pip install -q -r Benchmarks/requirements-theengs.txt
	.build/release/Benchmarks --python $(abspath $(PY)) --theengs-python $(abspath .build/bench-venv/bin/python)
