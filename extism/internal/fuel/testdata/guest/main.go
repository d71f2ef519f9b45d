// Command guest is a Go wasm guest (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared)
// used by the fuel tests and benchmarks: a tight loop, recursion, and a
// JSON-heavy workload, each exported with //go:wasmexport.
package main

import (
	"encoding/json"
	"strconv"
)

func main() {}

// spin runs a tight integer loop n times.
//
//go:wasmexport spin
func spin(n int64) int64 {
	var x uint64 = 88172645463325252
	for i := int64(0); i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return int64(x)
}

// fib is deliberately recursive.
//
//go:wasmexport fib
func fib(n int32) int32 {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

type record struct {
	ID    int               `json:"id"`
	Name  string            `json:"name"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	Score float64           `json:"score"`
}

// jsonwork encodes and decodes a small document n times and returns a
// checksum of the output.
//
//go:wasmexport jsonwork
func jsonwork(n int32) int64 {
	var sum int64
	for i := int32(0); i < n; i++ {
		r := record{ID: int(i), Name: "tool-" + strconv.Itoa(int(i)), Tags: []string{"a", "b", "c"},
			Attrs: map[string]string{"k": "v", "x": strconv.Itoa(int(i) * 7)}, Score: float64(i) / 3}
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		var back record
		if err := json.Unmarshal(b, &back); err != nil {
			panic(err)
		}
		for _, c := range b {
			sum = sum*31 + int64(c)
		}
		sum += int64(back.ID) + int64(len(back.Attrs))
	}
	return sum
}

// dispatch calls one of several functions through a function value, which
// Go compiles to call_indirect.
//
//go:wasmexport dispatch
func dispatch(n int32) int64 {
	fs := []func(int64) int64{
		func(x int64) int64 { return x + 1 },
		func(x int64) int64 { return x * 3 },
		func(x int64) int64 { return x ^ 0x55 },
	}
	var acc int64
	for i := int32(0); i < n; i++ {
		acc = fs[int(i)%len(fs)](acc)
	}
	return acc
}
