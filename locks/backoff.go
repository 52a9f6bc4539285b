package locks

import (
	"math/rand/v2"
	"time"
)

// backoff doubles from min to max; every value carries ±25% jitter so
// waiters on one lock do not wake in step.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return jitter(b.cur)
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*3/4 + rand.N(d/2+1)
}
