//go:build withlock_waitunsubscribed

package main

// brokenWaitUnsubscribed: this build lets a lock wait block before the
// signal subscription is in place (a negative control; never a release
// build).
const brokenWaitUnsubscribed = true
