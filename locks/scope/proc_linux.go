package scope

import "github.com/withlock/withlock/locks"

// processAlive judges a registry holder: alive unless its pid is dead,
// a zombie, or reused (see ProcessLiveness).
func processAlive(pid int, start uint64) bool {
	return locks.ProcessLiveness(pid, start) == locks.Alive
}
