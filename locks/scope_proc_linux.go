package locks

// scopeProcessAlive judges a registry holder: alive unless its pid is dead,
// a zombie, or reused (see ProcessLiveness).
func scopeProcessAlive(pid int, start uint64) bool {
	return ProcessLiveness(pid, start) == Alive
}
