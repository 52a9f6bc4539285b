//go:build withlock_slowsubscribe || withlock_waitunsubscribed

package supervisor

import "time"

// subscribeDelay holds the signal subscription back, so a test can see
// what a signal does before it is in place (a negative-control build;
// never a release build).
const subscribeDelay = 300 * time.Millisecond
