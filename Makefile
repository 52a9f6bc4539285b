# withlock: build, test and bench entry points. CI runs `make test` (see .ci/run).
#
#   make build       bin/withlock and bin/withlock-etcd (static release builds)
#   make install     make build, then install(1) both into $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local)
#   make man         bin/withlock.1
#   make test        gofmt check, go vet, go test -race -json ./... -> reports/test-report.{json,md}
#   make bench       interleaved comparison with flock, tini, timeout, go-floor, and each
#                    dependency's start-up cost -> table + reports/bench.json
#   make stress      integration scorecard at full counts (WITHLOCK_STRESS=1), up to 60 min
#   make fmt-check   gofmt -l must print nothing
#
# TEST_TAGS=etcd adds build-tagged tests (and vets the tagged files).

SHELL := bash
GO ?= go
TEST_TAGS ?=
TEST_TIMEOUT ?= 5m
TEST_FLAGS ?=
BENCH_FLAGS ?=
STRESS_FLAGS ?=
# Set BENCH_INSTALL=0 to stop `make bench` from apt-get installing a missing tini.
BENCH_INSTALL ?= 1

tags := $(if $(strip $(TEST_TAGS)),-tags '$(strip $(TEST_TAGS))')

PREFIX ?= /usr/local

.PHONY: build install man test vet fmt-check bench stress clean print-test-tags

# The release build: static (CGO_ENABLED=0: zerolog imports net, which
# otherwise links libc dynamically, ~0.6 ms per start) and without urfave/cli's
# man-page support (urfave_cli_no_docs: blackfriday's regexps cost ~0.5 ms per
# start). integration/bench builds with the same flags.
RELEASE_TAGS := urfave_cli_no_docs
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(RELEASE_TAGS)' -o bin/withlock ./cmd/withlock
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(RELEASE_TAGS),etcd' -o bin/withlock-etcd ./cmd/withlock

# install(1) writes the file with write(2): the kernel then caches it in large
# folios, and the binary starts ~0.1-0.2 ms faster than the linker's output
# left in bin/ (README, Performance: the page cache).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/withlock bin/withlock-etcd $(DESTDIR)$(PREFIX)/bin/

# withlock(1), generated from the cli definitions (needs the docs support).
man:
	@mkdir -p bin
	$(GO) run ./cmd/withlock gen-man > bin/withlock.1

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
	@if ! command -v tini >/dev/null; then \
		if [ "$(BENCH_INSTALL)" != 0 ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "== installing tini (BENCH_INSTALL=0 to skip)"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tini >/dev/null \
				|| echo "tini could not be installed: its column will say n/a"; \
		else \
			echo "tini not installed: its column will say n/a"; \
		fi; \
	fi
	$(GO) run -tags etcd ./integration/bench -json reports/bench.json $(BENCH_FLAGS)

stress:
	WITHLOCK_STRESS=1 $(GO) test $(tags) ./integration/ -run Scorecard -count=1 -timeout 60m $(STRESS_FLAGS)

clean:
	rm -rf bin reports

# for .ci/run, which checks go.sum with the same tags
print-test-tags:
	@echo '$(strip $(TEST_TAGS))'
