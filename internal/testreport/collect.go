package main

import (
	"strings"
	"time"
)

// testState accumulates the events of one test (or subtest) of a package.
// With -count=N a test runs several times: each terminal event counts.
type testState struct {
	name                    string
	running                 bool
	passed, failed, skipped int
	elapsed                 float64
	output                  []string
}

// packageState accumulates the events of one package.
type packageState struct {
	name        string
	action      string // "pass", "fail" or "skip" once done; "" while running
	elapsed     float64
	failedBuild string
	output      []string // output not attributed to a test
	tests       map[string]*testState
	testOrder   []string
}

// collector turns the event stream into per-package state. onPackageDone is
// called as each package finishes, so progress shows while tests still run.
type collector struct {
	packages      map[string]*packageState
	packageOrder  []string
	buildOutput   map[string][]string // by ImportPath
	buildFailed   []string            // ImportPaths with a "build-fail" event, in order
	text          []string            // lines that were not JSON events
	first, last   time.Time
	onPackageDone func(*packageState)
}

func newCollector(onPackageDone func(*packageState)) *collector {
	return &collector{
		packages:      map[string]*packageState{},
		buildOutput:   map[string][]string{},
		onPackageDone: onPackageDone,
	}
}

func (c *collector) addText(line string) { c.text = append(c.text, line) }

func (c *collector) add(ev event) {
	c.noteTime(ev.Time)
	switch ev.Action {
	case "build-output":
		c.buildOutput[ev.ImportPath] = append(c.buildOutput[ev.ImportPath], ev.Output)
		return
	case "build-fail":
		c.buildFailed = append(c.buildFailed, ev.ImportPath)
		return
	}
	if ev.Package == "" {
		return
	}
	p := c.pkg(ev.Package)
	if ev.Test == "" {
		c.addPackageEvent(p, ev)
		return
	}
	p.addTestEvent(ev)
}

func (c *collector) noteTime(t time.Time) {
	if t.IsZero() {
		return
	}
	if c.first.IsZero() || t.Before(c.first) {
		c.first = t
	}
	if t.After(c.last) {
		c.last = t
	}
}

func (c *collector) pkg(name string) *packageState {
	p, ok := c.packages[name]
	if !ok {
		p = &packageState{name: name, tests: map[string]*testState{}}
		c.packages[name] = p
		c.packageOrder = append(c.packageOrder, name)
	}
	return p
}

func (c *collector) addPackageEvent(p *packageState, ev event) {
	switch ev.Action {
	case "output":
		p.output = append(p.output, ev.Output)
	case "pass", "fail", "skip":
		p.action = ev.Action
		p.elapsed = ev.Elapsed
		p.failedBuild = ev.FailedBuild
		if c.onPackageDone != nil {
			c.onPackageDone(p)
		}
	}
}

func (p *packageState) addTestEvent(ev event) {
	t, ok := p.tests[ev.Test]
	if !ok {
		t = &testState{name: ev.Test}
		p.tests[ev.Test] = t
		p.testOrder = append(p.testOrder, ev.Test)
	}
	switch ev.Action {
	case "run":
		t.running = true
	case "output":
		t.output = append(t.output, ev.Output)
	case "pass":
		t.passed++
	case "fail":
		t.failed++
	case "skip":
		t.skipped++
	}
	switch ev.Action {
	case "pass", "fail", "skip":
		t.running = false
		t.elapsed += ev.Elapsed
	}
}

// hasSubtests reports whether name has subtests in p.
func (p *packageState) hasSubtests(name string) bool {
	prefix := name + "/"
	for _, other := range p.testOrder {
		if strings.HasPrefix(other, prefix) {
			return true
		}
	}
	return false
}

// descendantFailed reports whether a subtest of name failed or did not finish.
func (p *packageState) descendantFailed(name string) bool {
	prefix := name + "/"
	for _, other := range p.testOrder {
		t := p.tests[other]
		if strings.HasPrefix(other, prefix) && (t.failed > 0 || t.running) {
			return true
		}
	}
	return false
}
