package testbuild

// BrokenSlots, set only in the negative-control build (build tag
// withlock_broken_slots), takes the exclusion out of semaphores and shared
// locks: every acquisition of a slot gets a lock of its own, and an
// exclusive holder does not wait for the slot holders. The scorecard's
// semaphore rows must then fail.
var BrokenSlots bool
