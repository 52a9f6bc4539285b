package cpupin

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/testenv"
)

// The pin changes the whole process, so it is tested in a child: the test
// binary run again with helperVar set.
const helperVar = "CPUPIN_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperVar) == "1" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper pins itself, starts more threads, then prints every thread's
// allowed CPUs, GOMAXPROCS, and what a child forked inside Unpinned is
// allowed.
func helper() {
	Start()
	done := make(chan struct{})
	for range 4 { // threads made after Start must inherit the pin
		go func() {
			runtime.LockOSThread()
			<-done
		}()
	}
	runtime.LockOSThread()
	// As if this were a thread sysmon cloned after slowSysmon: a slack of
	// its own, which the child must not inherit.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 2_000_000, 0, 0, 0)
	forker := unix.Gettid()
	var child, childSlack []byte
	var err error
	Unpinned(func() {
		child, err = exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
		if err == nil {
			childSlack, err = exec.Command("cat", "/proc/self/timerslack_ns").Output()
		}
	})
	if err != nil {
		os.Stdout.WriteString("child error: " + err.Error() + "\n")
		os.Exit(1)
	}
	var out strings.Builder
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		status, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status")
		if err != nil {
			continue // a thread that just ended
		}
		slack, err := os.ReadFile("/proc/" + t.Name() + "/timerslack_ns")
		if err != nil {
			slack = []byte("?") // another thread's needs CAP_SYS_NICE
		}
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "Cpus_allowed_list:") {
				out.WriteString("thread " + strings.TrimSpace(strings.TrimPrefix(line, "Cpus_allowed_list:")) +
					" " + t.Name() + " " + strings.TrimSpace(string(slack)) + "\n")
			}
		}
	}
	out.WriteString("pid " + itoa(os.Getpid()) + "\n")
	out.WriteString("forker " + itoa(forker) + "\n")
	out.WriteString("childslack " + strings.TrimSpace(string(childSlack)) + "\n")
	out.WriteString("gomaxprocs " + itoa(runtime.GOMAXPROCS(0)) + "\n")
	out.WriteString("child " + strings.TrimSpace(strings.TrimPrefix(string(child), "Cpus_allowed_list:")) + "\n")
	os.Stdout.WriteString(out.String())
	close(done)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestStartPinsEveryThreadButNotTheChild(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine.Count() < 2 {
		t.Skipf("this process may use %d CPU: nothing to pin", mine.Count())
	}
	want, err := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	wantChild := strings.TrimSpace(strings.TrimPrefix(string(want), "Cpus_allowed_list:"))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperVar+"=1", "GORACE="+testenv.GORACE())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	threads, pinnedTo := 0, ""
	slackOf := map[int]string{}
	pid, forker, childSlack := 0, 0, ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		field := strings.Fields(line)
		switch field[0] {
		case "thread":
			threads++
			if pinnedTo == "" {
				pinnedTo = field[1]
			}
			if field[1] != pinnedTo || strings.ContainsAny(field[1], ",-") {
				t.Errorf("threads on different CPU sets (%s, %s): want all on one CPU\n%s", pinnedTo, field[1], out)
			}
			tid, _ := strconv.Atoi(field[2])
			slackOf[tid] = field[3]
		case "pid":
			pid, _ = strconv.Atoi(field[1])
		case "childslack":
			childSlack = field[1]
		case "forker":
			forker, _ = strconv.Atoi(field[1])
		case "gomaxprocs":
			if field[1] != "1" {
				t.Errorf("GOMAXPROCS = %s after Start, want 1", field[1])
			}
		case "child":
			if field[1] != wantChild {
				t.Errorf("child forked inside Unpinned may use CPUs %s, want the original %s", field[1], wantChild)
			}
		}
	}
	if threads < 5 {
		t.Errorf("saw %d threads, want at least the 4 locked ones and main:\n%s", threads, out)
	}

	// The timer slack. The child keeps the slack the helper started with
	// (ours), though it is forked from a thread with a slack of its own.
	// With CAP_SYS_NICE, which reading another thread's slack needs too,
	// the lowest thread id above the pid (sysmon) has 1 ms and the main
	// thread the start's.
	start := strings.TrimSpace(readFile(t, "/proc/self/timerslack_ns"))
	if childSlack != start {
		t.Errorf("child forked inside Unpinned has timer slack %s, want the start's %s\n%s", childSlack, start, out)
	}
	if !hasSysNice(t) {
		return
	}
	sysmon := 0
	for tid := range slackOf {
		if tid > pid && (sysmon == 0 || tid < sysmon) {
			sysmon = tid
		}
	}
	if want := strconv.Itoa(sysmonSlack); slackOf[sysmon] != want {
		t.Errorf("thread %d (sysmon) has timer slack %s, want %s\n%s", sysmon, slackOf[sysmon], want, out)
	}
	if forker != pid && slackOf[pid] != start { // the forking thread set its own on purpose
		t.Errorf("main thread's slack %s, want the start's %s\n%s", slackOf[pid], start, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hasSysNice reports whether this process (and so the helper it starts)
// has CAP_SYS_NICE in its effective set.
func hasSysNice(t *testing.T) bool {
	for _, line := range strings.Split(readFile(t, "/proc/self/status"), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<unix.CAP_SYS_NICE) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// threads reads /proc/self/task whole: it names this thread, the main
// thread and six more kept alive by locked goroutines, once each.
func TestThreadsListsEveryTask(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	locked := make(chan int)
	for range 6 {
		go func() {
			runtime.LockOSThread()
			locked <- unix.Gettid()
			<-done
		}()
	}
	want := []int{os.Getpid()}
	for range 6 {
		want = append(want, <-locked)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	want = append(want, unix.Gettid())
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, tid := range tids {
		if tid <= 0 || seen[tid] {
			t.Fatalf("tid %d listed twice or invalid: %v", tid, tids)
		}
		seen[tid] = true
	}
	for _, tid := range want {
		if !seen[tid] {
			t.Fatalf("threads() = %v lacks %d (want all of %v)", tids, tid, want)
		}
	}
}
