// Package testprom reads the Prometheus text format in tests as a scraper
// would: `promtool check metrics` (Debian's prometheus package) must accept
// it, lint included, and python3-prometheus-client's parser gives its
// samples. .ci/run installs both; a test without them skips, naming why.
package testprom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parser prints the samples of the text on stdin, one JSON list.
const parser = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
print(json.dumps([[s.name, s.labels, s.value] for fam in text_string_to_metric_families(sys.stdin.read()) for s in fam.samples]))
`

// python is Debian's python3, where python3-prometheus-client is (a
// python3 earlier in PATH may lack it).
func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// Require skips t unless promtool and python3-prometheus-client are there.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skipf("promtool is not installed (.ci/run installs Debian's prometheus): %v", err)
	}
	if out, err := exec.Command(python(), "-c", "import prometheus_client").CombinedOutput(); err != nil {
		t.Skipf("python3-prometheus-client is not installed (.ci/run installs it): %v %s", err, out)
	}
}

// Parse is Check's samples of text; it fails t when text is refused.
func Parse(t testing.TB, text string) map[string]float64 {
	t.Helper()
	Require(t)
	samples, err := Check(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return samples
}

// Check runs text through `promtool check metrics`, then the Python
// parser, and returns its samples as Key(name, labels) -> value; an error
// says which refused it and why.
func Check(text string) (map[string]float64, error) {
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("promtool check metrics refused the text: %v: %s", err, out)
	}
	cmd = exec.Command(python(), "-c", parser)
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the Prometheus Python parser refused the text: %v: %s", err, stderr.Bytes())
	}
	var list [][3]json.RawMessage
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("parser output %q: %v", out, err)
	}
	samples := map[string]float64{}
	for _, s := range list {
		var name string
		var labels map[string]string
		var value float64
		if err := errors.Join(json.Unmarshal(s[0], &name), json.Unmarshal(s[1], &labels), json.Unmarshal(s[2], &value)); err != nil {
			return nil, fmt.Errorf("parser sample %s: %v", s, err)
		}
		samples[Key(name, labels)] = value
	}
	return samples, nil
}

// Key names a sample: name{label="value",...}, labels sorted, values
// quoted as Go does.
func Key(name string, labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Problems says how the samples got differ from want, and which samples
// named in recent (times, epoch seconds) are missing or not within the
// last minute; none: they agree.
func Problems(got, want map[string]float64, recent ...string) []string {
	var problems []string
	for key, w := range want {
		if v, ok := got[key]; !ok || v != w {
			problems = append(problems, fmt.Sprintf("%s = %v (present %v), want %v", key, v, ok, w))
		}
	}
	now := float64(time.Now().UnixNano()) / 1e9
	for _, key := range recent {
		if v, ok := got[key]; !ok || v < now-60 || v > now+1 {
			problems = append(problems, fmt.Sprintf("%s = %v (present %v), want a time within the last minute (now %v)", key, v, ok, now))
		}
	}
	slices.Sort(problems)
	return problems
}
