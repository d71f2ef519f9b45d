//go:build wasip1

// Command hostile is a test plugin for the extism adapter: well-behaved
// tools next to tools that loop, recurse, allocate, flood output and logs,
// escape mounts and reach for forbidden addresses.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	pdk "github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/shared/guest"
)

const anyObject = `{"type":"object"}`

//go:wasmimport extism:host/user toolhost_progress
func rawProgress(progress, total float64, msg, msgLen uint32) int32

var calls int // package state: must be 1 in every call if instances are fresh

type pathArgs struct {
	Path string `json:"path"`
	Data string `json:"data"`
}

type fetchArgs struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Count   int               `json:"count"`
}

type sizeArgs struct {
	N int `json:"n"`
}

func init() {
	guest.Register(
		batchTool(),
		configTool(),
		guest.Func("echo", "Returns its arguments.", anyObject, func(in map[string]any) (map[string]any, error) {
			return in, nil
		}),
		guest.Func("report", "Reports progress n times and logs each step; then passes a message outside its memory.", anyObject, func(in sizeArgs) (map[string]int32, error) {
			for i := 1; i <= in.N; i++ {
				guest.Progress(float64(i), float64(in.N), fmt.Sprintf("step %d", i))
				guest.Log(pdk.LogInfo, fmt.Sprintf("did step %d", i))
			}
			return map[string]int32{"bad_pointer": rawProgress(1, 1, 0xfffffff0, 64)}, nil
		}),
		guest.Func("state", "Counts calls in package state.", anyObject, func(struct{}) (map[string]int, error) {
			calls++
			return map[string]int{"calls": calls}, nil
		}),
		guest.Func("loop", "Spins forever.", anyObject, func(struct{}) (int, error) {
			n := 0
			for {
				n++
			}
		}),
		guest.Func("recurse", "Recurses without end.", anyObject, func(struct{}) (int, error) {
			return recurse(1), nil
		}),
		guest.Func("grow", "Allocates until stopped.", anyObject, func(struct{}) (int, error) {
			var keep [][]byte
			for {
				b := make([]byte, 8<<20)
				b[len(b)-1] = 1
				keep = append(keep, b)
			}
		}),
		guest.Func("bigout", "Writes n bytes of output (default 1 GiB).", anyObject, func(in sizeArgs) (string, error) {
			n := in.N
			if n == 0 {
				n = 1 << 30
			}
			chunk := []byte(strings.Repeat("x", 1<<20))
			for n > 0 {
				c := chunk
				if n < len(c) {
					c = c[:n]
				}
				os.Stdout.Write(c) // errors ignored on purpose: a hostile guest keeps going
				n -= len(c)
			}
			return "", nil
		}),
		guest.Tool{Name: "blob", Description: "Returns n bytes of text.", InputSchema: json.RawMessage(anyObject),
			Handler: func(c *guest.Call) (*guest.Result, error) {
				var in sizeArgs
				json.Unmarshal(c.Arguments, &in)
				return guest.Text(strings.Repeat("y", in.N)), nil
			}},
		guest.Func("phases", "Times the steps of producing n bytes of JSON output.", anyObject, func(in sizeArgs) (map[string]string, error) {
			t0 := time.Now()
			s := strings.Repeat("y", in.N)
			t1 := time.Now()
			b, _ := json.Marshal(guest.Text(s))
			t2 := time.Now()
			n := 0
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] == '"' || s[i] == '\\' || s[i] >= 0x80 {
					n++
				}
			}
			t3 := time.Now()
			q := strconv.Quote(s)
			t4 := time.Now()
			var v struct{ Text string }
			json.Unmarshal([]byte(`{"Text":"`+s+`"}`), &v)
			t5 := time.Now()
			return map[string]string{"repeat": t1.Sub(t0).String(), "marshal": t2.Sub(t1).String(), "loop": t3.Sub(t2).String(),
				"quote": t4.Sub(t3).String(), "unmarshal": t5.Sub(t4).String(), "len": fmt.Sprint(len(b), n, len(q))}, nil
		}),
		guest.Func("logspam", "Logs forever.", anyObject, func(struct{}) (int, error) {
			for i := 0; ; i++ {
				pdk.Log(pdk.LogInfo, fmt.Sprintf("line %d", i))
			}
		}),
		guest.Func("stderrspam", "Writes to stderr forever.", anyObject, func(struct{}) (int, error) {
			for i := 0; ; i++ {
				fmt.Fprintf(os.Stderr, "line %d\n", i)
			}
		}),
		guest.Func("log", "Logs one line.", anyObject, func(in struct{ Msg string }) (string, error) {
			pdk.Log(pdk.LogInfo, in.Msg)
			return "ok", nil
		}),
		guest.Func("read", "Reads a file.", anyObject, func(in pathArgs) (map[string]string, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return map[string]string{"error": err.Error()}, nil
			}
			return map[string]string{"content": string(b)}, nil
		}),
		guest.Func("write", "Writes a file.", anyObject, func(in pathArgs) (map[string]string, error) {
			if err := os.WriteFile(in.Path, []byte(in.Data), 0o644); err != nil {
				return map[string]string{"error": err.Error()}, nil
			}
			return map[string]string{"ok": "written"}, nil
		}),
		guest.Func("list", "Lists a directory.", anyObject, func(in pathArgs) (map[string]any, error) {
			ents, err := os.ReadDir(in.Path)
			if err != nil {
				return map[string]any{"error": err.Error()}, nil
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return map[string]any{"names": names}, nil
		}),
		guest.Func("env", "Reports the environment.", anyObject, func(struct{}) (map[string]any, error) {
			return map[string]any{"env": os.Environ()}, nil
		}),
		guest.Func("fetch", "Fetches a URL count times.", anyObject, func(in fetchArgs) (map[string]any, error) {
			if in.Count == 0 {
				in.Count = 1
			}
			var resp *guest.HTTPResponse
			var err error
			for i := 0; i < in.Count; i++ {
				resp, err = guest.Fetch(guest.HTTPRequest{Method: "GET", URL: in.URL, Headers: in.Headers})
				if err != nil {
					return map[string]any{"error": err.Error()}, nil
				}
			}
			return map[string]any{"status": resp.Status, "body": string(resp.Body), "headers": resp.Headers}, nil
		}),
		guest.Func("pdkfetch", "Fetches a URL with Extism's own http_request.", anyObject, func(in fetchArgs) (map[string]any, error) {
			req := pdk.NewHTTPRequest(pdk.MethodGet, in.URL)
			for k, v := range in.Headers {
				req.SetHeader(k, v)
			}
			r := req.Send()
			return map[string]any{"status": r.Status(), "body": string(r.Body()), "headers": r.Headers()}, nil
		}),
		guest.Func("invoke", "Invokes another tool (after burn rounds of arithmetic).", anyObject, func(in struct {
			Name  string          `json:"name"`
			Args  json.RawMessage `json:"args"`
			Count int             `json:"count"`
			Burn  int64           `json:"burn"`
		}) (map[string]any, error) {
			if in.Count == 0 {
				in.Count = 1
			}
			x := uint64(88172645463325252)
			for i := int64(0); i < in.Burn; i++ {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
			if x == 0 {
				return nil, fmt.Errorf("unreachable: xorshift never yields 0")
			}
			var res *guest.Result
			var err error
			for i := 0; i < in.Count; i++ {
				res, err = guest.Invoke(in.Name, in.Args)
				if err != nil {
					return map[string]any{"error": err.Error()}, nil
				}
			}
			return map[string]any{"result": res}, nil
		}),
		guest.Func("setvar", "Stores n bytes in an Extism variable.", anyObject, func(in sizeArgs) (string, error) {
			pdk.SetVar("v", make([]byte, in.N))
			return "ok", nil
		}),
		guest.Func("extismout", "Answers in its Extism output as well as on stdout.", anyObject, func(struct{}) (string, error) {
			pdk.OutputString(`{"content":[{"type":"text","text":"from the Extism output"}]}`)
			return "from stdout", nil
		}),
		guest.Func("client", "Asks the caller's client: a sample, a form, n samples in a row, an oversized request, or one at a bad offset.", anyObject, askClient),
		guest.Func("panic", "Panics.", anyObject, func(struct{}) (int, error) {
			panic("guest panic on purpose")
		}),
		guest.Func("fail", "Returns an error.", anyObject, func(struct{}) (int, error) {
			return 0, fmt.Errorf("failing on purpose")
		}),
		guest.Tool{Name: "typed", Description: "Returns structured content.",
			InputSchema:  json.RawMessage(anyObject),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
			Handler: func(c *guest.Call) (*guest.Result, error) {
				var in struct {
					Break bool `json:"break"`
				}
				json.Unmarshal(c.Arguments, &in)
				if in.Break {
					return &guest.Result{Content: []guest.Content{{Type: "text", Text: "broken"}}, StructuredContent: json.RawMessage(`{"n":"not a number"}`)}, nil
				}
				return &guest.Result{Content: []guest.Content{{Type: "text", Text: "7"}}, StructuredContent: json.RawMessage(`{"n":7}`)}, nil
			}},
	)
}

//go:wasmimport extism:host/user toolhost_sample
func rawSample(uint64) uint64

type clientArgs struct {
	Mode   string          `json:"mode"`
	Prompt string          `json:"prompt"`
	Schema json.RawMessage `json:"schema"`
	N      int             `json:"n"`
}

// askClient reports what the client answered, or the error's code, limit
// and message, as structured content.
func askClient(in clientArgs) (map[string]any, error) {
	out := map[string]any{}
	fail := func(err error) map[string]any {
		if ce, ok := err.(*guest.ClientError); ok {
			out["code"], out["limit"], out["error"] = ce.Code, ce.Limit, ce.Message
		} else {
			out["error"] = err.Error()
		}
		return out
	}
	switch in.Mode {
	case "sample", "big":
		prompt := in.Prompt
		if in.Mode == "big" {
			prompt = strings.Repeat("x", in.N)
		}
		res, err := guest.Sample(guest.SampleRequest{Messages: []guest.SamplingMessage{guest.UserText(prompt)}, MaxTokens: 100})
		if err != nil {
			return fail(err), nil
		}
		out["role"], out["text"], out["model"], out["stop"] = res.Role, res.Content.Text, res.Model, res.StopReason
	case "elicit":
		res, err := guest.Elicit(guest.ElicitRequest{Message: in.Prompt, RequestedSchema: in.Schema})
		if err != nil {
			return fail(err), nil
		}
		out["action"], out["content"] = res.Action, res.Content
	case "flood":
		for i := 0; i < in.N; i++ {
			if _, err := guest.Sample(guest.SampleRequest{Messages: []guest.SamplingMessage{guest.UserText(strconv.Itoa(i))}, MaxTokens: 1}); err != nil {
				out["asked"] = i
				return fail(err), nil
			}
		}
		out["asked"] = in.N
	case "bad_offset", "truncated":
		// A request at an offset that is no block, or one whose JSON
		// ends early: the answer is an error, read as the guest library
		// would.
		var off uint64 = 0xfffffff0
		if in.Mode == "truncated" {
			m := pdk.AllocateString(`{"messages":[{"role":"user","content":{"type":"text","text":"hi`)
			off = m.Offset()
		}
		off = rawSample(off)
		if off == 0 {
			return nil, fmt.Errorf("no answer")
		}
		m := pdk.FindMemory(off)
		var a guest.ClientError
		if err := json.Unmarshal(m.ReadBytes(), &a); err != nil {
			return nil, err
		}
		return fail(&a), nil
	default:
		return nil, fmt.Errorf("unknown mode %q", in.Mode)
	}
	return out, nil
}

//go:noinline
func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func main() {}
