// Command guest is a Go wasm guest (GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared) with a lot of state built during initialisation,
// used by the snapshot tests and benchmarks.
package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

func main() {}

var (
	inits   int
	table   = map[string]int{}
	squares []int64
	words   []string
	buf     []byte
)

func init() {
	inits++
	for i := 0; i < 2000; i++ {
		table["k"+strconv.Itoa(i)] = i * i
	}
	for i := int64(0); i < 4096; i++ {
		squares = append(squares, i*i)
	}
	words = strings.Fields("the quick brown fox jumps over the lazy dog")
	sort.Strings(words)
}

// inits reports how many times package initialisation ran.
//
//go:wasmexport inits
func initsCount() int32 { return int32(inits) }

//go:wasmexport lookup
func lookup(i int32) int64 {
	return int64(table["k"+strconv.Itoa(int(i))]) + squares[int(i)%len(squares)]
}

//go:wasmexport words
func wordsHash() int64 {
	var h int64
	for _, w := range words {
		for _, c := range w {
			h = h*31 + int64(c)
		}
	}
	return h
}

// work allocates, marshals JSON and returns a checksum.
//
//go:wasmexport work
func work(n int32) int64 {
	type rec struct {
		ID   int               `json:"id"`
		Tags map[string]string `json:"tags"`
	}
	var sum int64
	for i := 0; i < int(n); i++ {
		b, _ := json.Marshal(rec{ID: i, Tags: map[string]string{"a": strconv.Itoa(i)}})
		for _, c := range b {
			sum = sum*31 + int64(c)
		}
		buf = append(buf, b...)
	}
	return sum + int64(len(buf))
}

// sleepy sleeps briefly and reports whether the monotonic clock moved
// forward, which exercises the runtime's timers after a snapshot.
//
//go:wasmexport sleepy
func sleepy() int32 {
	t := time.Now()
	time.Sleep(time.Millisecond)
	if time.Since(t) >= time.Millisecond {
		return 1
	}
	return 0
}

// readfile returns the length of /data/in.txt, or -1.
//
//go:wasmexport readfile
func readfile() int32 {
	b, err := os.ReadFile("/data/in.txt")
	if err != nil {
		return -1
	}
	return int32(len(b))
}

// randv returns a value from the runtime-seeded generator.
//
//go:wasmexport randv
func randv() int64 { return rand.Int64() }

// envlen is the number of environment variables the guest sees.
//
//go:wasmexport envlen
func envlen() int32 { return int32(len(os.Environ())) }

// readroot reports whether the guest could list its root directory.
//
//go:wasmexport readroot
func readroot() int32 {
	if _, err := os.ReadDir("/"); err != nil {
		return 0
	}
	return 1
}

// heap returns the address of a fresh allocation, to check that the heap
// state carries over.
//
//go:wasmexport heap
func heap() int64 {
	b := make([]byte, 1<<16)
	return int64(uintptr(unsafe.Pointer(&b[0])))
}
