//go:build !withlock_slowsubscribe && !withlock_waitunsubscribed

package supervisor

import "time"

// subscribeDelay is zero except in the test builds that hold the signal
// subscription back (subscribe_on.go).
const subscribeDelay time.Duration = 0
