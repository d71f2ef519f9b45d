package extism

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/extism/internal/wasmbin"
	"github.com/toolhost/toolhost/plugin"
)

// Extism's kernel offers guests its own HTTP client: http_request,
// http_status_code and http_headers in extism:host/env (pdk.NewHTTPRequest
// in the PDKs; third-party plugins such as hyper-mcp's use it). go-sdk
// serves them with http.DefaultClient and a host-name glob: no resolved
// address checks, no limits, no secrets. toolhost serves them instead,
// through the same guarded client as toolhost_http_request: at load, a
// module's imports of them are renamed to the host functions below
// (routeExtismHTTP), which keep Extism's semantics — the request JSON
// {url, method, headers}, the body at its own offset, the status and the
// lower-cased response headers of the last request — and trap, as
// Extism's do, on a request that fails; the call then ends with the
// failure's code (CAPABILITY_DENIED naming the host for a refusal).
const (
	hostExtismHTTP    = "toolhost_extism_http_request"
	hostExtismStatus  = "toolhost_extism_http_status_code"
	hostExtismHeaders = "toolhost_extism_http_headers"
)

// extismHTTPImports maps the kernel's HTTP functions to toolhost's.
var extismHTTPImports = map[string]string{
	"http_request":     hostExtismHTTP,
	"http_status_code": hostExtismStatus,
	"http_headers":     hostExtismHeaders,
}

// usesExtismHTTP reports whether the module imports any of the kernel's
// HTTP functions.
func (m *moduleInfo) usesExtismHTTP() bool {
	for _, im := range m.funcImports {
		if _, ok := extismHTTPImports[im.Name]; ok && im.Module == importKernel {
			return true
		}
	}
	return false
}

// routeExtismHTTP renames a module's imports of the kernel's HTTP
// functions to toolhost's. Only names change: indices and types stay.
func routeExtismHTTP(b []byte) ([]byte, error) {
	m, err := wasmbin.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	sec, ok := m.Find(wasmbin.SectionImport)
	if !ok {
		return b, nil
	}
	imports, err := wasmbin.DecodeImports(sec)
	if err != nil {
		return nil, fmt.Errorf("%w: import section: %v", errMalformed, err)
	}
	for i, im := range imports {
		if to, ok := extismHTTPImports[im.Name]; ok && im.Module == importKernel && im.Kind == wasmbin.KindFunc {
			imports[i].Module, imports[i].Name = importUser, to
		}
	}
	m.Set(wasmbin.SectionImport, wasmbin.EncodeImports(imports))
	return m.Encode(), nil
}

// extismHTTPState is the last Extism HTTP response of an instance.
type extismHTTPState struct {
	status  int32
	headers map[string]string
}

// extismRequest is the JSON of Extism's http_request.
type extismRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

func extismHTTPFunctions() []extism.HostFunction {
	i64 := extism.ValueTypeI64
	return []extism.HostFunction{
		extism.NewHostFunctionWithStack(hostExtismHTTP, extismHTTPRequest, []extism.ValueType{i64, i64}, []extism.ValueType{i64}),
		extism.NewHostFunctionWithStack(hostExtismStatus, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			var status int32
			if inst := instanceFrom(ctx); inst != nil {
				status = inst.extismHTTP.status
			}
			stack[0] = uint64(uint32(status))
		}, nil, []extism.ValueType{extism.ValueTypeI32}),
		extism.NewHostFunctionWithStack(hostExtismHeaders, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
			stack[0] = 0
			inst := instanceFrom(ctx)
			if inst == nil || inst.extismHTTP.headers == nil {
				return
			}
			b, err := json.Marshal(inst.extismHTTP.headers)
			if err != nil {
				panic(err)
			}
			off, err := p.WriteBytes(b)
			if err != nil {
				panic(fmt.Errorf("writing the response headers: %w", err))
			}
			stack[0] = off
		}, nil, []extism.ValueType{i64}),
	}
}

// errExtismHTTP is the trap of a failed Extism http_request; the call's
// error is the one recorded with abort.
var errExtismHTTP = errors.New("Extism http_request failed")

// extismHTTPRequest serves Extism's http_request(request, body) -> body
// through doHTTP.
func extismHTTPRequest(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst == nil || inst.req == nil {
		panic(errors.New("Extism http_request is not available during initialisation"))
	}
	inst.extismHTTP = extismHTTPState{}
	fail := func(code plugin.Code, format string, args ...any) {
		inst.abort(&plugin.Error{Code: code, Message: "Extism http_request: " + fmt.Sprintf(format, args...)})
		panic(errExtismHTTP)
	}
	raw, err := p.ReadBytes(stack[0])
	if err != nil {
		fail(plugin.CodeToolExecutionFailed, "reading the request: %v", err)
	}
	_ = p.Free(stack[0])
	var in extismRequest
	if err := json.Unmarshal(raw, &in); err != nil {
		fail(plugin.CodeInvalidRequest, "malformed request: %v", err)
	}
	var body []byte
	if stack[1] != 0 {
		if body, err = p.ReadBytes(stack[1]); err != nil {
			fail(plugin.CodeToolExecutionFailed, "reading the request body: %v", err)
		}
		_ = p.Free(stack[1])
	}
	resp := doHTTP(ctx, inst, &httpRequest{Method: in.Method, URL: in.URL, Headers: in.Headers, Body: body})
	if resp.Error != "" {
		fail(resp.Code, "%s", resp.Error)
	}
	st := extismHTTPState{status: int32(resp.Status), headers: make(map[string]string, len(resp.Headers))}
	for k, v := range resp.Headers {
		st.headers[strings.ToLower(k)] = v
	}
	inst.extismHTTP = st
	stack[0] = 0
	if len(resp.Body) > 0 {
		off, err := p.WriteBytes(resp.Body)
		if err != nil {
			fail(plugin.CodeToolExecutionFailed, "writing the response body: %v", err)
		}
		stack[0] = off
	}
}
