package main

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"time"
)

// event is one line of the `go test -json` stream (see `go doc cmd/test2json`).
// Build output arrives keyed by ImportPath (actions "build-output" and
// "build-fail"); a package whose build failed ends with a "fail" event whose
// FailedBuild names the import path that did not build.
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// maxLineBytes bounds one line of the stream; test2json splits longer output.
const maxLineBytes = 4 << 20

// readEvents calls onEvent for every JSON line of r and onText for every
// other line (for example a go command message that reached stdout).
func readEvents(r io.Reader, onEvent func(event), onText func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineBytes)
	for sc.Scan() {
		line := sc.Text()
		var ev event
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &ev) == nil && ev.Action != "" {
			onEvent(ev)
			continue
		}
		if strings.TrimSpace(line) != "" {
			onText(line)
		}
	}
	return sc.Err()
}
