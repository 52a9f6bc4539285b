//go:build linux

package main

import (
	"math"
	"slices"
)

// summary is the median and range of a tool's samples.
type summary struct {
	n                int
	median, min, max float64
}

func summarize(samples []float64) summary {
	if len(samples) == 0 {
		return summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	mid := len(s) / 2
	median := s[mid]
	if len(s)%2 == 0 {
		median = (s[mid-1] + s[mid]) / 2
	}
	return summary{n: len(s), median: median, min: s[0], max: s[len(s)-1]}
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of samples.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
