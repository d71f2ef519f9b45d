package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/internal/netguard"
	"github.com/toolhost/toolhost/plugin"
)

// Host function names, imported by guests from module "extism:host/user".
const (
	hostHTTP   = "toolhost_http_request"
	hostInvoke = "toolhost_invoke"
)

// httpRequest is the JSON a guest passes to toolhost_http_request.
type httpRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	// TimeoutMS bounds this request (connect, redirects, body) below the
	// call's own deadline; 0 means only the call's deadline.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// httpResponse is what toolhost_http_request returns. Error is set (and
// Code with it) when the request was refused or failed.
type httpResponse struct {
	Status int `json:"status,omitempty"`
	// URL is the final URL, after redirects.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	Error   string            `json:"error,omitempty"`
	Code    plugin.Code       `json:"code,omitempty"`
}

// invokeRequest is the JSON a guest passes to toolhost_invoke.
type invokeRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// invokeResponse is what toolhost_invoke returns: the callee's result, or
// an error with its code.
type invokeResponse struct {
	Result *plugin.Result `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
	Code   plugin.Code    `json:"code,omitempty"`
}

// hostFunctionNames are the names hostFunctions defines, in
// extism:host/user: a guest importing any other name from there cannot be
// instantiated.
func hostFunctionNames() []string {
	return []string{hostHTTP, hostInvoke, hostFSSubmit, hostFSTake, hostConfigGet, hostProgress, hostSample, hostElicit, hostExtismHTTP, hostExtismStatus, hostExtismHeaders}
}

func hostFunctions() []extism.HostFunction {
	i64 := []extism.ValueType{extism.ValueTypeI64}
	i32 := extism.ValueTypeI32
	return append([]extism.HostFunction{
		extism.NewHostFunctionWithStack(hostHTTP, jsonHostFunc(doHTTP), i64, i64),
		extism.NewHostFunctionWithStack(hostInvoke, jsonHostFunc(doInvoke), i64, i64),
		extism.NewHostFunctionWithStack(hostFSSubmit, fsSubmit, []extism.ValueType{i32, i32, i32, i32, extism.ValueTypeI64, i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack(hostFSTake, fsTake, []extism.ValueType{i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack(hostConfigGet, configGet, []extism.ValueType{i32, i32, i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack(hostProgress, progress, []extism.ValueType{extism.ValueTypeF64, extism.ValueTypeF64, i32, i32}, []extism.ValueType{i32}),
	}, append(clientFunctions(), extismHTTPFunctions()...)...)
}

// jsonHostFunc adapts a JSON-in, JSON-out handler to an Extism host function.
func jsonHostFunc[In, Out any](h func(ctx context.Context, inst *instance, in *In) *Out) extism.HostFunctionStackCallback {
	return func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		inst := instanceFrom(ctx)
		if inst != nil {
			inst.stopIfOver()
		}
		raw, err := p.ReadBytes(stack[0])
		if err != nil {
			panic(fmt.Errorf("reading host function input: %w", err))
		}
		_ = p.Free(stack[0])
		var out any
		in := new(In)
		if inst == nil || inst.req == nil {
			out = map[string]string{"error": "host functions are not available during initialisation", "code": string(plugin.CodeCapabilityDenied)}
		} else if err := json.Unmarshal(raw, in); err != nil {
			out = map[string]string{"error": "malformed request: " + err.Error(), "code": string(plugin.CodeInvalidRequest)}
		} else {
			out = h(ctx, inst, in)
		}
		b, err := json.Marshal(out)
		if err != nil {
			panic(err)
		}
		off, err := p.WriteBytes(b)
		if err != nil {
			panic(fmt.Errorf("writing host function output: %w", err))
		}
		stack[0] = off
	}
}

func httpFail(code plugin.Code, format string, args ...any) *httpResponse {
	return &httpResponse{Code: code, Error: fmt.Sprintf(format, args...)}
}

// doHTTP performs one guest HTTP request through the guarded client.
func doHTTP(ctx context.Context, inst *instance, in *httpRequest) *httpResponse {
	t := inst.t
	inst.meter.Pause() // a guest waiting on the network needs no lane
	if len(inst.spec.Capabilities.Hosts) == 0 {
		return httpFail(plugin.CodeCapabilityDenied, "this tool has no network access")
	}
	lim := inst.limits
	count := func() bool {
		inst.httpCount++
		if inst.httpCount > lim.HTTPRequests {
			inst.abort(plugin.LimitError("http_requests", "the tool made more than %d HTTP requests", lim.HTTPRequests))
			return false
		}
		return true
	}
	if !count() {
		return httpFail(plugin.CodeLimitExceeded, "http_requests limit exceeded")
	}
	secrets := inst.req.Secrets
	u, err := url.Parse(in.URL)
	if err != nil {
		return httpFail(plugin.CodeInvalidRequest, "bad URL: %v", err)
	}
	if err := inst.guard.CheckURL(u); err != nil {
		return httpFail(plugin.CodeCapabilityDenied, "%v", err)
	}
	method := strings.ToUpper(in.Method)
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if len(in.Body) > 0 {
		body = bytes.NewReader(in.Body)
	}
	if in.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(in.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(netguard.WithGuard(ctx, inst.guard), method, u.String(), body)
	if err != nil {
		return httpFail(plugin.CodeInvalidRequest, "%v", err)
	}
	for k, v := range in.Headers {
		// The transport asks for gzip itself and decodes it; a body in an
		// encoding the host cannot decode could carry a secret past
		// redaction, so the guest may not ask for one.
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Accept-Encoding") {
			continue
		}
		req.Header.Set(k, secrets.Expand(v))
	}
	var limitHit *plugin.Error
	toolHeaders := make([]string, 0, len(in.Headers))
	for k := range in.Headers {
		toolHeaders = append(toolHeaders, k)
	}
	client := &http.Client{
		Transport: t.transport,
		CheckRedirect: inst.guard.CheckRedirect(func() error {
			if !count() {
				limitHit = plugin.LimitError("http_requests", "redirects")
				return limitHit
			}
			return nil
		}, toolHeaders),
	}
	resp, err := client.Do(req)
	if err != nil {
		if limitHit != nil {
			return httpFail(plugin.CodeLimitExceeded, "http_requests limit exceeded")
		}
		code := plugin.CodeToolExecutionFailed
		switch {
		case netguard.Refused(err):
			code = plugin.CodeCapabilityDenied
		case errors.Is(err, context.DeadlineExceeded) && in.TimeoutMS > 0:
			code = plugin.CodeToolExecutionTimeout
		}
		return httpFail(code, "%s", secrets.Redact(err.Error()))
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// Not decoded by the transport (which removes the header when it
		// decodes gzip): what it holds cannot be checked for secrets.
		return httpFail(plugin.CodeToolExecutionFailed, "the server answered with Content-Encoding %q, which the host cannot decode to redact secrets; the response was withheld", secrets.Redact(ce))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, lim.HTTPResponse+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && in.TimeoutMS > 0 {
			return httpFail(plugin.CodeToolExecutionTimeout, "reading response: %s", secrets.Redact(err.Error()))
		}
		return httpFail(plugin.CodeToolExecutionFailed, "reading response: %s", secrets.Redact(err.Error()))
	}
	if int64(len(b)) > lim.HTTPResponse {
		inst.abort(plugin.LimitError("http_response", "an HTTP response body exceeded the %s limit", plugin.FormatSize(lim.HTTPResponse)))
		return httpFail(plugin.CodeLimitExceeded, "http_response limit exceeded")
	}
	out := &httpResponse{Status: resp.StatusCode, URL: secrets.Redact(resp.Request.URL.String()), Headers: map[string]string{}, Body: secrets.RedactBytes(b)}
	for k, v := range resp.Header {
		out.Headers[k] = secrets.Redact(strings.Join(v, ", "))
	}
	return out
}

// doInvoke runs a nested tool call through the host pipeline.
func doInvoke(ctx context.Context, inst *instance, in *invokeRequest) *invokeResponse {
	if inst.req.Invoker == nil || !inst.spec.Capabilities.CanInvoke(in.Name) {
		return &invokeResponse{Code: plugin.CodeCapabilityDenied, Error: fmt.Sprintf("this tool may not invoke %q", in.Name)}
	}
	inst.invokes++
	if inst.invokes > inst.limits.ToolInvocations {
		inst.abort(plugin.LimitError("tool_invocations", "the tool invoked other tools more than %d times", inst.limits.ToolInvocations))
		return &invokeResponse{Code: plugin.CodeLimitExceeded, Error: "tool_invocations limit exceeded"}
	}
	inst.meter.Pause() // the nested call may need the lane this one holds
	res, err := inst.req.Invoker.Invoke(ctx, plugin.Call{Name: in.Name, Arguments: in.Arguments})
	if err != nil {
		return &invokeResponse{Code: plugin.CodeOf(err), Error: inst.req.Secrets.Redact(err.Error())}
	}
	return &invokeResponse{Result: res}
}
