package main

import (
	"slices"
	"strings"
)

// childEnv is base with add appended, and without any earlier setting of
// the variables add sets: a withlock nested in another's child must hand
// down its own WITHLOCK_RUN_ID, and for getenv the first of two equal keys
// wins.
func childEnv(base, add []string) []string {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		key, _, _ := strings.Cut(kv, "=")
		return slices.ContainsFunc(add, func(a string) bool { return strings.HasPrefix(a, key+"=") })
	})
	return append(env, add...)
}
