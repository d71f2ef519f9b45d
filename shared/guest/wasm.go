//go:build wasip1

package guest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"unsafe"

	pdk "github.com/extism/go-pdk"
)

// The fast I/O handshake (docs/wasm.md). This module exports
// toolhost_fast_io_v1; toolhost sees the export when it loads the module and
// then calls list_tools and call_tool with an empty Extism input, the real
// input on stdin, and takes the output from stdout. Other Extism hosts
// always pass call_tool its input, so an empty input means toolhost. Asking
// costs one host call per call and nothing while the module initialises
// (an initialiser that calls the host cannot be snapshotted,
// docs/snapshot.md).

//go:wasmexport toolhost_fast_io_v1
func fastIOMarker() {}

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

func fastIO() bool { return extismInputLength() == 0 }

// input returns the export's input by the fastest path available.
func input(fast bool) []byte {
	if fast {
		b, err := io.ReadAll(os.Stdin)
		if err == nil {
			return b
		}
	}
	return pdk.Input()
}

// output sets the export's output by the fastest path available. On the
// fast path the Extism output stays empty, which tells the host to take
// stdout.
func output(fast bool, b []byte) {
	if fast && len(b) > 0 {
		if _, err := os.Stdout.Write(b); err == nil {
			return
		}
	}
	pdk.Output(b)
}

//go:wasmexport list_tools
func listToolsExport() int32 {
	output(fastIO(), ListTools())
	return 0
}

//go:wasmexport call_tool
func callToolExport() int32 {
	fast := fastIO()
	res, err := callTool(input(fast))
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	var out []byte
	if fast {
		out, err = EncodeFast(res)
	} else {
		out, err = json.Marshal(res)
	}
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	output(fast, out)
	return 0
}

// Log writes a log entry through the host (capped per call by the host,
// with the call's secrets redacted). toolhost also passes it to the caller:
// an MCP client receives it as notifications/message, at the level it
// asked for with logging/setLevel.
func Log(level pdk.LogLevel, msg string) { pdk.Log(level, msg) }

//go:wasmimport extism:host/user toolhost_progress
func hostProgress(progress, total float64, msg unsafe.Pointer, msgLen uint32) int32

// Progress reports how far the current call is: progress out of total (0
// when the total is unknown), with an optional message. An MCP client that
// asked for progress receives notifications/progress; the host drops
// progress that does not increase and caps how many one call sends. A
// module that calls it imports toolhost_progress, which only toolhost
// provides.
func Progress(progress, total float64, message string) {
	var p unsafe.Pointer
	if len(message) > 0 {
		p = unsafe.Pointer(unsafe.StringData(message))
	}
	hostProgress(progress, total, p, uint32(len(message)))
}

//go:wasmimport extism:host/user toolhost_http_request
func hostHTTP(uint64) uint64

//go:wasmimport extism:host/user toolhost_invoke
func hostInvoke(uint64) uint64

func hostCall(f func(uint64) uint64, in any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	mem := pdk.AllocateBytes(b)
	defer mem.Free()
	off := f(mem.Offset())
	if off == 0 {
		return fmt.Errorf("host returned nothing")
	}
	rm := pdk.FindMemory(off)
	defer rm.Free()
	return json.Unmarshal(rm.ReadBytes(), out)
}

// HTTPRequest is an outgoing request. Header values may name secrets the
// tool was granted as $NAME; the host substitutes them. The guest never sees
// the values.
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	// TimeoutMS bounds this request below the call's deadline (0: none);
	// when it passes, the error's code is TOOL_EXECUTION_TIMEOUT.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// HTTPResponse is the host's answer. Secret values in it are redacted.
// The host follows at most 5 redirects, checking each against the tool's
// allowlist.
type HTTPResponse struct {
	Status int `json:"status,omitempty"`
	// URL is the final URL, after redirects.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	Error   string            `json:"error,omitempty"`
	Code    string            `json:"code,omitempty"`
}

// Fetch sends an HTTP request through the host, which enforces the tool's
// network allowlist. A refused or failed request is an error carrying the
// host's code (CAPABILITY_DENIED, LIMIT_EXCEEDED, ...).
func Fetch(req HTTPRequest) (*HTTPResponse, error) {
	var resp HTTPResponse
	if err := hostCall(hostHTTP, req, &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return &resp, fmt.Errorf("%s: %s", resp.Code, resp.Error)
	}
	return &resp, nil
}

// Invoke calls another tool through the host's pipeline; the callee's own
// policy applies.
func Invoke(name string, arguments any) (*Result, error) {
	args, err := json.Marshal(arguments)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result *Result `json:"result"`
		Error  string  `json:"error"`
		Code   string  `json:"code"`
	}
	if err := hostCall(hostInvoke, map[string]any{"name": name, "arguments": json.RawMessage(args)}, &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("%s: %s", resp.Code, resp.Error)
	}
	return resp.Result, nil
}
