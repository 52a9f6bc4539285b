package supervisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peakRSSKiB runs argv to completion and returns the largest VmHWM (peak
// resident set of its own address space, in KiB) read from /proc while it
// ran. ru_maxrss would not do: it keeps the high-water mark of the forked
// copy of this test binary from before exec.
func peakRSSKiB(b *testing.B, argv ...string) int64 {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("%v: %v", argv, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("%v: %v", argv, err)
			}
			return peak
		case <-tick.C:
			peak = max(peak, vmHWM(status))
		}
	}
}

// vmHWM reads the VmHWM line of a /proc status file; 0 if unreadable.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkPeakRSS builds testdata/supervisor/rssprobe (NotifyAsync + Run, as
// withlock run uses them), has it supervise `sleep 1`, and reports its peak
// RSS next to Debian's tini doing the same, when tini is installed.
// Target: at most 8 MiB.
func BenchmarkPeakRSS(b *testing.B) {
	probe := filepath.Join(b.TempDir(), "rssprobe")
	build := exec.Command("go", "build", "-o", probe, "../testdata/supervisor/rssprobe")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build probe: %v\n%s", err, out)
	}
	tini, tiniErr := exec.LookPath("tini")
	var probeKiB, tiniKiB int64
	for b.Loop() {
		probeKiB = max(probeKiB, peakRSSKiB(b, probe, "sleep", "1"))
		if tiniErr == nil {
			tiniKiB = max(tiniKiB, peakRSSKiB(b, tini, "-s", "-g", "--", "sleep", "1"))
		}
	}
	b.ReportMetric(float64(probeKiB), "supervisor-peak-KiB")
	if tiniErr == nil {
		b.ReportMetric(float64(tiniKiB), "tini-peak-KiB")
	}
	if probeKiB > 8<<10 {
		b.Errorf("supervisor peak RSS %d KiB, target at most 8 MiB", probeKiB)
	}
}
