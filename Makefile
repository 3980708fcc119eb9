# swift-ble-host: every target installs what it needs on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
SWIFTFLAGS := -Xswiftc -warnings-as-errors
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := libbluetooth-dev libssl-dev pkg-config tshark bluez tmux libmosquitto-dev mosquitto mosquitto-clients libyaml-dev openssl zsh libstdc++-12-dev time dpkg-dev libcap2-bin
# DebianAptInstallTests' fresh Debian root (scripts/debian-root).
APT_PACKAGES += debootstrap
# The kernel tier's VM (scripts/kernel-vm would install them itself, inside a test's time limit).
APT_PACKAGES += qemu-system-x86 linux-image-amd64 busybox-static cpio
# BlueZ's own btgatt-client, the kernel tier's independent GATT client (scripts/btgatt-client-path).
APT_PACKAGES += bluez-source
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Seconds each fuzz target runs in `make fuzz` (make test runs each a fixed number of times: scripts/fuzz list).
FUZZ_SECONDS ?= 300

.PHONY: all deps apt venv build test test-swift test-fuzz test-examples test-vm demo bench fuzz soak clean docs install api-baseline dist deb

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
# scripts/test-all builds once, checks the runner itself, then runs the lanes at the same time
# (fuzz, kernel, kernel2, radio, cli, examples, gateway, package, units, api: the public API
# against api/; fuzz and examples start with the build; logs in .build/test-logs). Within a lane tests run one at a time: on a 2-core machine the
# cooperative thread pool has two threads, and the tests that wait on subprocesses (Bumble,
# qemu, the ble binary) would otherwise starve the rest; each lane is its own process.
# scripts/run-tests kills a lane and names the test when one test runs longer than
# BLE_TEST_TIMEOUT seconds (600 here: the kernel tier's one VM run took 236-300+ s on a slow
# day; default 300) or the lane longer than BLE_TEST_RUN_TIMEOUT (2400);
# scripts/test-run-tests checks that it does (about 10 s).
test: deps
	BLE_PYTHON=$(abspath $(PY)) BLE_KERNEL_VM=1 BLE_TEST_TIMEOUT=600 SWIFT=$(SWIFT) scripts/test-all

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

# Every libFuzzer target for a short smoke run: its corpus and a fixed number of runs (make fuzz runs longer).
test-fuzz: apt
	scripts/fuzz smoke

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

# Release builds of the shipped binary (make dist, make bench) link the Swift runtime in
# (--static-swift-stdlib), and its own C++ and unwinder libraries too: the linker searches
# STATIC_CXX first, a directory holding only the compiler's libstdc++.a, and libgcc_eh.a takes
# the place of libgcc_s. --no-export-dynamic takes back the toolchain's -export-dynamic: nothing
# loads into `ble` that would look its symbols up (0.8 MB of symbol tables). The toolchain's
# lld packs the relative relocations of the position-independent binary (-z
# pack-relative-relocs, DT_RELR, glibc 2.36): 1.2 MB of .rela.dyn become 11 KB.
STATIC_CXX := $(abspath .build/static-libstdc++)
RELEASE_STATIC := -c release --static-swift-stdlib -Xswiftc -L$(STATIC_CXX) -Xlinker -l:libgcc_eh.a -Xlinker --no-export-dynamic
RELEASE_STATIC += -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs

# Benchmarks (release build), side by side with Bumble on the same bytes; prints JSON.
# Both static (RELEASE_STATIC, as make dist builds ble), so the gateway rows measure the
# binary that ships and the two builds share one .build/release. TheengsDecoder, the sensor
# rows' peer, goes into a venv of its own.
bench: deps $(STATIC_CXX)/libstdc++.a
	$(SWIFT) build $(RELEASE_STATIC) --product Benchmarks $(SWIFTFLAGS)
	$(SWIFT) build $(RELEASE_STATIC) --product ble $(SWIFTFLAGS)
	test -x .build/bench-venv/bin/python || python3 -m venv .build/bench-venv
	.build/bench-venv/bin/python -m pip install -q -r Benchmarks/requirements-theengs.txt
	.build/release/Benchmarks --python $(abspath $(PY)) --theengs-python $(abspath .build/bench-venv/bin/python)

# dist/ble: the release `ble` with the Swift runtime linked in (--static-swift-stdlib) and
# stripped. scripts/check-footprint refuses it when it links full Foundation or ICU, needs a
# shared library beyond libc, libbluetooth, libcrypto, libmosquitto and libyaml, or is larger
# than DIST_MAX_BYTES.
DIST_MAX_BYTES ?= 20000000
$(STATIC_CXX)/libstdc++.a:
	mkdir -p $(STATIC_CXX)
	a="$$(cc -print-file-name=libstdc++.a)"; [ -f "$$a" ] || { echo "no libstdc++.a (apt-get install libstdc++-12-dev)" >&2; exit 1; }; ln -sf "$$a" $@

dist: apt $(STATIC_CXX)/libstdc++.a
	$(SWIFT) build $(RELEASE_STATIC) --product ble $(SWIFTFLAGS)
	bin="$$($(SWIFT) build $(RELEASE_STATIC) --show-bin-path)/ble"; \
	scripts/check-footprint "$$bin" $(DIST_MAX_BYTES) && strip -o dist/ble "$$bin"

# dist/ble_<version>_<arch>.deb (scripts/make-deb: binary, man page, completions, the systemd
# unit, a sample config; postinst sets the binary's capabilities). Packages dist/ble (make dist
# first) unless BLE_BIN names another binary; DEB_DIR sets where the package goes.
DEB_DIR ?= dist
deb:
	@if [ -z "$(BLE_BIN)" ]; then $(MAKE) --no-print-directory dist; fi
	scripts/make-deb "$(or $(BLE_BIN),dist/ble)" "$(DEB_DIR)"

# The benchmarks of BASE (a git ref) and of this tree in one run, rounds alternating base and
# head (scripts/bench-compare; BENCH_COMPARE_ARGS e.g. "--rounds 3 --quick --rows w1,gateway").
.PHONY: bench-compare
bench-compare: apt $(STATIC_CXX)/libstdc++.a
	@[ -n "$(BASE)" ] || { echo "usage: make bench-compare BASE=<git ref>" >&2; exit 2; }
	BENCH_BUILD_FLAGS="$(RELEASE_STATIC)" SWIFT=$(SWIFT) scripts/bench-compare "$(BASE)" $(BENCH_COMPARE_ARGS)
