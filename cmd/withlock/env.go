package main

import "strings"

// childEnv is base with add appended, and without any earlier setting of
// the variables add sets: a withlock nested in another's child must hand
// down its own WITHLOCK_RUN_ID, and for getenv the first of two equal keys
// wins.
func childEnv(base, add []string) []string {
	drop := make(map[string]bool, len(add))
	for _, kv := range add {
		key, _, _ := strings.Cut(kv, "=")
		drop[key] = true
	}
	env := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		if !drop[key] {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}
