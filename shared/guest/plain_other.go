//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package guest

// plainRun returns 0: appendString examines every byte (see plain_le.go).
func plainRun(s string, i int) int { return 0 }
