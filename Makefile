# withlock: build, test, install and package entry points. CI runs `make test` (see .ci/run).
#
#   make build        bin/withlock and bin/withlock-metrics (static release build, version from git describe)
#   make build-etcd   bin/withlock-etcd, the etcd backend (a separate binary)
#   make install      withlock, withlock(1) and bash/zsh/fish completion into $(DESTDIR)$(PREFIX)
#                     (PREFIX=/usr/local; `make install PREFIX=/usr` puts it on cron's PATH)
#   make install-etcd withlock-etcd into $(DESTDIR)$(PREFIX)/bin
#   make deb          dist/withlock_*.deb and dist/withlock-etcd_*.deb (nfpm; /usr/bin/withlock)
#   make man          bin/withlock.1 (doc/withlock.1 with the version and date)
#   make completion   bin/completion/{withlock.bash,_withlock,withlock.fish} (withlock completion SHELL)
#   make test         gofmt check, go vet, go test -race -json ./... -> reports/test-report.{json,md}
#   make bench        interleaved comparison with go-floor (and -signals), flock, tini, timeout
#                     and the bars (PASS/FAIL) -> table + reports/bench.json; installs nothing:
#                     a missing peer is named with its package and shows n/a
#   make bench-vs     BASE=<commit> (default aedc642): start-up and hand-off of that commit's
#                     release build measured beside this one, interleaved, with issue 15's
#                     bars (≤ 1.05 × the baseline) -> table + reports/bench-vs.json
#   make stress       integration scorecard at full counts (WITHLOCK_STRESS=1), up to 60 min
#   make fmt-check    gofmt -l must print nothing
#
# TEST_TAGS=etcd adds build-tagged tests (and vets the tagged files).
# BIN and DIST move the build outputs and the packages (the packaging test
# builds into a temp dir).

SHELL := bash
GO ?= go
TEST_TAGS ?=
# A hang guard per test binary, not a speed target: integration/ and
# packaging/ (which builds both binaries, nfpm and the packages) each take
# minutes on a loaded 2-core machine or with a cold build cache.
TEST_TIMEOUT ?= 15m
TEST_FLAGS ?=
BENCH_FLAGS ?=
# bench-vs: the commit measured beside this one, and its sections and runs
# (a 5 % difference needs a few hundred hand-offs to show above the noise).
BASE ?= aedc642
BENCH_VS_FLAGS ?= -only overhead,handoff -n 400 -handoff-runs 400
STRESS_FLAGS ?=

tags := $(if $(strip $(TEST_TAGS)),-tags '$(strip $(TEST_TAGS))')

PREFIX ?= /usr/local
BIN ?= bin
DIST ?= dist

# The version --version prints; a plain `go build` reports the module
# version or the commit instead (cmd/withlock/version.go).
VERSION = $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)
# The commit's date, for the man page's footer (reproducible, unlike today).
MAN_DATE = $(shell git log -1 --format=%cs 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION)
# zsh's fpath has $(PREFIX)/share/zsh/site-functions for /usr/local; Debian's
# packages use /usr/share/zsh/vendor-completions (make deb).
ZSH_COMPLETION_DIR ?= $(PREFIX)/share/zsh/site-functions

.PHONY: build build-etcd install install-etcd man completion stage deb nfpm \
	test vet fmt-check bench bench-vs stress clean print-test-tags

# The release build: static (CGO_ENABLED=0: zerolog imports net, which
# otherwise links libc dynamically, ~0.6 ms per start). integration/bench
# builds with the same flags.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/withlock ./cmd/withlock
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/withlock-metrics ./cmd/withlock-metrics

build-etcd:
	CGO_ENABLED=0 $(GO) build -trimpath -tags etcd -ldflags '$(LDFLAGS)' -o $(BIN)/withlock-etcd ./cmd/withlock

# withlock(1): doc/withlock.1 with the version and the commit's date in its
# .TH line.
man:
	@mkdir -p $(BIN)
	sed '/^\.TH /c .TH WITHLOCK 1 $(MAN_DATE) "withlock $(VERSION)" "User Commands"' doc/withlock.1 > $(BIN)/withlock.1

completion: build
	@mkdir -p $(BIN)/completion
	$(BIN)/withlock completion bash > $(BIN)/completion/withlock.bash
	$(BIN)/withlock completion zsh > $(BIN)/completion/_withlock
	$(BIN)/withlock completion fish > $(BIN)/completion/withlock.fish

# install(1) writes the file with write(2): the kernel then caches it in large
# folios, and the binary starts ~0.1-0.2 ms faster than the linker's output
# left in bin/ (README, Performance: the page cache).
install: build man completion
	install -D -m 0755 $(BIN)/withlock $(DESTDIR)$(PREFIX)/bin/withlock
	install -D -m 0755 $(BIN)/withlock-metrics $(DESTDIR)$(PREFIX)/bin/withlock-metrics
	install -D -m 0644 $(BIN)/withlock.1 $(DESTDIR)$(PREFIX)/share/man/man1/withlock.1
	install -D -m 0644 $(BIN)/completion/withlock.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/withlock
	install -D -m 0644 $(BIN)/completion/_withlock $(DESTDIR)$(ZSH_COMPLETION_DIR)/_withlock
	install -D -m 0644 $(BIN)/completion/withlock.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/withlock.fish

install-etcd: build-etcd
	install -D -m 0755 $(BIN)/withlock-etcd $(DESTDIR)$(PREFIX)/bin/withlock-etcd

# Debian packages. nfpm comes from packaging/tools, a module of its own, so
# the main go.mod stays withlock's; its go.sum pins every module nfpm is
# built from. The tree the packages are made of is staged in $(BIN)/stage
# (Debian's layout: /usr/bin, a gzip'd man page, zsh's vendor-completions).
DEB_VERSION = $(shell packaging/deb-version)
DEB_ARCH = $(shell $(GO) env GOARCH)
DEB_MAINTAINER ?= withlock maintainers <maintainers@withlock.invalid>
STAGE := $(abspath $(BIN))/stage
NFPM := $(abspath $(BIN))/nfpm

nfpm:
	$(GO) -C packaging/tools build -o $(NFPM) github.com/goreleaser/nfpm/v2/cmd/nfpm

stage: build build-etcd man completion
	rm -rf $(STAGE)
	$(MAKE) --no-print-directory install install-etcd DESTDIR=$(STAGE) PREFIX=/usr \
		ZSH_COMPLETION_DIR=/usr/share/zsh/vendor-completions
	gzip -9n $(STAGE)/usr/share/man/man1/withlock.1

deb: nfpm stage
	@mkdir -p $(DIST)
	@test -n '$(DEB_VERSION)' || { echo "make deb: no version (set DEB_VERSION)" >&2; exit 1; }
	export DEB_VERSION='$(DEB_VERSION)' DEB_ARCH='$(DEB_ARCH)' DEB_MAINTAINER='$(DEB_MAINTAINER)' STAGE='$(STAGE)' \
		SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s); \
	$(NFPM) package --config packaging/withlock.yaml --packager deb --target $(DIST)/ && \
	$(NFPM) package --config packaging/withlock-etcd.yaml --packager deb --target $(DIST)/

# Every step runs even when an earlier one fails, so one CI run shows all
# problems; testreport counts a failed step as an error and exits non-zero.
# go test's own exit status reaches testreport through a file written before
# the stream ends. The last line printed is "N passed, N failed, N skipped".
test:
	@mkdir -p reports bin
	@start=$$(date +%s.%N); fmt_status=0; vet_status=0; \
	echo "== gofmt -l"; \
	$(MAKE) --no-print-directory -s fmt-check || fmt_status=$$?; \
	echo "== go vet ./...$(if $(tags), $(tags))"; \
	$(GO) vet $(tags) ./... || vet_status=$$?; \
	$(GO) build -o bin/testreport ./internal/testreport || exit 1; \
	echo "== go test -race ./...$(if $(tags), $(tags)) (raw stream: reports/test.json)"; \
	{ $(GO) test -race -json -timeout $(TEST_TIMEOUT) $(tags) $(TEST_FLAGS) ./...; echo $$? > reports/go-test.status; } \
		| tee reports/test.json \
		| bin/testreport -out reports -start "$$start" \
			-step "gofmt=$$fmt_status" -step "go vet=$$vet_status" \
			-go-test-status reports/go-test.status

vet:
	$(GO) vet $(tags) ./...

# find … -exec keeps gofmt from reading stdin when there are no files.
fmt-check:
	@out=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -exec gofmt -l {} +); \
	if [ -n "$$out" ]; then echo "gofmt would reformat:"; echo "$$out"; exit 1; fi

bench:
	@mkdir -p reports
	$(GO) run -tags etcd ./integration/bench -json reports/bench.json $(BENCH_FLAGS)

# The baseline is built from `git archive BASE` in a temp dir, as a release
# build (static, -trimpath, version stamped), like the build under test.
bench-vs:
	@mkdir -p reports
	@base=$$(mktemp -d) && trap 'rm -rf "$$base"' EXIT && \
	git archive --format=tar $(BASE) | tar -x -C "$$base" && \
	(cd "$$base" && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-X main.version=baseline' -o withlock-baseline ./cmd/withlock) && \
	echo "bench-vs: baseline $(BASE) ($$(git rev-parse --short $(BASE)))" && \
	$(GO) run ./integration/bench -json reports/bench-vs.json -baseline "$$base/withlock-baseline" $(BENCH_VS_FLAGS)

stress:
	WITHLOCK_STRESS=1 $(GO) test $(tags) ./integration/ -run Scorecard -count=1 -timeout 60m $(STRESS_FLAGS)

clean:
	rm -rf $(BIN) reports $(DIST)

# for .ci/run, which checks go.sum with the same tags
print-test-tags:
	@echo '$(strip $(TEST_TAGS))'
