//go:build !withlock_waitunsubscribed

package main

// brokenWaitUnsubscribed is true only in the deliberately broken build the
// scorecard's negative control uses (waitsub_on.go).
const brokenWaitUnsubscribed = false
