// Command rssprobe supervises its arguments through supervisor.Run the way
// withlock run does (NotifyAsync first, then Run) and exits with the result's
// status. BenchmarkPeakRSS builds it to measure the supervisor's peak RSS
// without the rest of withlock.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/withlock/withlock/supervisor"
)

func main() {
	sigs := supervisor.NotifyAsync()
	res, err := supervisor.Run(context.Background(), supervisor.Config{
		Argv: os.Args[1:], Signals: sigs, Grace: 10 * time.Second,
	})
	sigs.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(res.Status)
}
