package builtin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/extism"
	"github.com/toolhost/toolhost/plugin"
)

const testSecret = "s3cr3t-token-value"

// webServer is a real HTTP server on 127.0.0.1 with the pages the web
// tests fetch.
func webServer(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "method=%s test=%s auth=%s body=%s", r.Method, r.Header.Get("X-Test"), r.Header.Get("Authorization"), b)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/redir/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n <= 0 {
			http.Redirect(w, r, "/page.html", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/redir/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := strings.Repeat("x", 1<<20)
		for range 11 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00binary"))
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"a": [1, 2]}`)
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<html><head><title>Test Page</title><script>var x = "script text";</script></head>
<body><h1>Welcome</h1><p>See <a href="/docs/intro">the intro</a>.</p><ul><li>alpha</li><li>beta</li></ul></body></html>`)
	})
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) { // SearXNG
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "format", http.StatusForbidden)
			return
		}
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"query": %q, "results": [
			{"title": "First about %s", "url": "https://one.example/", "content": "The  first\nsnippet."},
			{"title": "Second", "url": "https://two.example/", "content": "Second snippet."},
			{"title": "Third", "url": "https://three.example/", "content": ""}]}`, q, q)
	})
	mux.HandleFunc("/brave/search", func(w http.ResponseWriter, r *http.Request) { // Brave Search API
		if r.Header.Get("X-Subscription-Token") != testSecret {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"type": "search", "web": {"results": [
			{"title": "Brave <strong>%s</strong>", "url": "https://brave.example/a", "description": "A <strong>bold</strong> snippet."},
			{"title": "Other", "url": "https://brave.example/b", "description": "More."}]}}`, r.URL.Query().Get("q"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return srv, port
}

// webSpec is a spec for one web tool allowed to reach hosts.
func webSpec(tool string, config map[string]string, hosts ...plugin.HostRule) plugin.Spec {
	return plugin.Spec{
		Name:         tool,
		Tier:         plugin.TierSideEffecting,
		Source:       plugin.Source{Kind: extism.Kind, Builtin: "web", Tool: tool, Config: config},
		Capabilities: plugin.Capabilities{Hosts: hosts},
	}
}

// webHost is a host whose secret TOKEN and BRAVE_KEY resolve to testSecret.
func webHost(t *testing.T, specs ...plugin.Spec) *plugin.Host {
	var grants plugin.Capabilities
	for _, s := range specs {
		grants.Hosts = append(grants.Hosts, s.Capabilities.Hosts...)
		grants.Secrets = append(grants.Secrets, s.Capabilities.Secrets...)
	}
	return newHostWith(t, plugin.Options{
		Grants: grants,
		Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) {
			return testSecret, nil
		}),
	}, specs...)
}

func TestHTTPRequest(t *testing.T) {
	srv, port := webServer(t)
	local := plugin.HostRule{Host: "127.0.0.1", Port: port}
	spec := webSpec("http.request", nil, local, plugin.HostRule{Host: "localhost", Port: port})
	spec.Capabilities.Secrets = []string{"TOKEN"}
	closed := webSpec("http.request.none", nil)
	closed.Source.Tool = "http.request"
	h := webHost(t, spec, closed)
	u := func(p string) string { return srv.URL + p }
	args := func(kv ...any) string {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return jsonArgs(t, m)
	}
	probe := check{tool: "http.request", args: args("url", u("/text")), want: []string{"hello"}}
	cases := []check{
		{name: "get", tool: "http.request", args: args("url", u("/text")),
			want: []string{"HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 5\n\nhello"}},
		{name: "post with headers and a secret", tool: "http.request",
			args: args("url", u("/echo"), "method", "POST", "headers", map[string]string{"X-Test": "yes", "Authorization": "Bearer $TOKEN"}, "body", "payload"),
			want: []string{"method=POST test=yes auth=Bearer [REDACTED:TOKEN] body=payload"}, notWant: []string{testSecret}},
		{name: "not found is an answer", tool: "http.request", args: args("url", u("/missing")), want: []string{"HTTP 404 Not Found"}},
		{name: "five redirects", tool: "http.request", args: args("url", u("/redir/4")), want: []string{"HTTP 200 OK\nURL: " + u("/page.html")}},
		{name: "six redirects", tool: "http.request", args: args("url", u("/redir/5")), code: plugin.CodeToolExecutionFailed, want: []string{"stopped after 5 redirects"}},
		{name: "redirect to a host not allowed", tool: "http.request", args: args("url", u("/away?to=http://example.com/")), code: plugin.CodeCapabilityDenied},
		{name: "redirect to another local port", tool: "http.request", args: args("url", u("/away?to=http://127.0.0.1:1/")), code: plugin.CodeCapabilityDenied},
		{name: "redirect to another scheme", tool: "http.request", args: args("url", u("/away?to=file:///etc/passwd")), code: plugin.CodeCapabilityDenied, want: []string{"redirect refused", "only http and https"}},
		{name: "binary body", tool: "http.request", args: args("url", u("/image.png")), want: []string{"Content-Type: image/png", "Binary body, 16 bytes"}},
		{name: "head", tool: "http.request", args: args("url", u("/text"), "method", "HEAD"), want: []string{"HTTP 200 OK", "Content-Length: 0"}},
		{name: "timeout", tool: "http.request", args: args("url", u("/slow"), "timeout", 1), code: plugin.CodeToolExecutionTimeout},
		{name: "response over 10 MiB", tool: "http.request", args: args("url", u("/big")), code: plugin.CodeLimitExceeded, want: []string{"HTTP response body exceeded the 10MiB limit"}},
		{name: "file scheme", tool: "http.request", args: args("url", "file:///etc/passwd"), code: plugin.CodeInvalidRequest, want: []string{"only http and https"}},
		{name: "ftp scheme", tool: "http.request", args: args("url", "ftp://127.0.0.1/"), code: plugin.CodeInvalidRequest},
		{name: "no host", tool: "http.request", args: args("url", "http:///x"), code: plugin.CodeInvalidRequest},
		{name: "host not allowed", tool: "http.request", args: args("url", "http://example.com/"), code: plugin.CodeCapabilityDenied},
		{name: "other port not allowed", tool: "http.request", args: args("url", "http://127.0.0.1:1/"), code: plugin.CodeCapabilityDenied},
		{name: "name resolving to a private address", tool: "http.request", args: args("url", fmt.Sprintf("http://localhost:%d/text", port)), code: plugin.CodeCapabilityDenied},
		{name: "private address", tool: "http.request", args: args("url", "http://10.0.0.1/"), code: plugin.CodeCapabilityDenied},
		{name: "metadata address", tool: "http.request", args: args("url", "http://169.254.169.254/latest/meta-data/"), code: plugin.CodeCapabilityDenied},
		{name: "numeric host trick", tool: "http.request", args: args("url", "http://2130706433/"), code: plugin.CodeCapabilityDenied},
		{name: "credentials in URL", tool: "http.request", args: args("url", "http://user:pw@127.0.0.1:"+strconv.Itoa(port)+"/text"), code: plugin.CodeCapabilityDenied},
		{name: "header injection", tool: "http.request", args: args("url", u("/text"), "headers", map[string]string{"X-A": "v\r\nX-B: w"}), code: plugin.CodeInvalidRequest},
		{name: "bad method", tool: "http.request", args: args("url", u("/text"), "method", "TRACE"), code: plugin.CodeInvalidRequest},
		{name: "timeout out of range", tool: "http.request", args: args("url", u("/text"), "timeout", 9999), code: plugin.CodeInvalidRequest},
		{name: "no network granted", tool: "http.request.none", args: args("url", u("/text")), code: plugin.CodeCapabilityDenied},
		{name: "null byte", tool: "http.request", args: args("url", u("/text\x00")), code: plugin.CodeInvalidRequest},
	}
	runChecks(t, h, probe, cases)
}

func TestWebFetch(t *testing.T) {
	srv, port := webServer(t)
	h := webHost(t, webSpec("web.fetch", nil, plugin.HostRule{Host: "127.0.0.1", Port: port}))
	u := func(p string) string { return jsonArgs(t, map[string]string{"url": srv.URL + p}) }
	probe := check{tool: "web.fetch", args: u("/text"), want: []string{"hello"}}
	cases := []check{
		{name: "html as markdown", tool: "web.fetch", args: u("/page.html"),
			want:    []string{"Title: Test Page\nURL: " + srv.URL + "/page.html\nContent-Type: text/html\n\n# Welcome\n\nSee [the intro](" + srv.URL + "/docs/intro).\n\n- alpha\n- beta"},
			notWant: []string{"script text", "<p>"}},
		{name: "final URL after redirects", tool: "web.fetch", args: u("/redir/2"), want: []string{"URL: " + srv.URL + "/page.html\n"}},
		{name: "text as is", tool: "web.fetch", args: u("/text"), want: []string{"URL: " + srv.URL + "/text\nContent-Type: text/plain\n\nhello"}},
		{name: "json as is", tool: "web.fetch", args: u("/data.json"), want: []string{"\n\n{\"a\": [1, 2]}"}},
		{name: "binary", tool: "web.fetch", args: u("/image.png"), want: []string{"Binary content (image/png), 16 bytes"}},
		{name: "not found", tool: "web.fetch", args: u("/missing"), code: plugin.CodeToolExecutionFailed, want: []string{"HTTP 404 Not Found"}},
		{name: "too many redirects", tool: "web.fetch", args: u("/redir/9"), code: plugin.CodeToolExecutionFailed},
		{name: "other scheme", tool: "web.fetch", args: `{"url":"gopher://127.0.0.1/"}`, code: plugin.CodeInvalidRequest},
		{name: "host not allowed", tool: "web.fetch", args: `{"url":"https://example.org/"}`, code: plugin.CodeCapabilityDenied},
		{name: "private address", tool: "web.fetch", args: `{"url":"http://192.168.1.1/"}`, code: plugin.CodeCapabilityDenied},
		{name: "ipv6 loopback", tool: "web.fetch", args: `{"url":"http://[::1]:` + strconv.Itoa(port) + `/"}`, code: plugin.CodeCapabilityDenied},
		{name: "no url", tool: "web.fetch", args: `{}`, code: plugin.CodeInvalidRequest},
	}
	runChecks(t, h, probe, cases)
}

func TestWebSearch(t *testing.T) {
	srv, port := webServer(t)
	local := plugin.HostRule{Host: "127.0.0.1", Port: port}
	searx := webSpec("search.searx", map[string]string{"provider": "searxng", "endpoint": srv.URL}, local)
	searx.Source.Tool = "web.search"
	brave := webSpec("search.brave", map[string]string{"provider": "brave", "endpoint": srv.URL + "/brave/search", "api_key_secret": "BRAVE_KEY"}, local)
	brave.Source.Tool = "web.search"
	brave.Capabilities.Secrets = []string{"BRAVE_KEY"}
	nokey := webSpec("search.brave.nokey", map[string]string{"provider": "brave", "endpoint": srv.URL + "/brave/search", "api_key_secret": "WRONG"}, local)
	nokey.Source.Tool = "web.search"
	unconfigured := webSpec("search.none", nil, local)
	unconfigured.Source.Tool = "web.search"
	h := webHost(t, searx, brave, nokey, unconfigured)
	probe := check{tool: "search.searx", args: `{"query":"go"}`, want: []string{"First about go"}}
	cases := []check{
		{name: "searxng", tool: "search.searx", args: `{"query":"wasm tools"}`,
			want: []string{"1. First about wasm tools\n   https://one.example/\n   The first snippet.\n\n2. Second\n   https://two.example/\n   Second snippet.\n\n3. Third\n   https://three.example/"}},
		{name: "searxng count", tool: "search.searx", args: `{"query":"x","count":1}`, want: []string{"1. First about x"}, notWant: []string{"Second"}},
		{name: "brave with injected key", tool: "search.brave", args: `{"query":"rust"}`,
			want: []string{"1. Brave rust\n   https://brave.example/a\n   A bold snippet.\n\n2. Other"}},
		{name: "brave without the secret", tool: "search.brave.nokey", args: `{"query":"rust"}`, code: plugin.CodeToolExecutionFailed, want: []string{"HTTP 401"}},
		{name: "unconfigured", tool: "search.none", args: `{"query":"x"}`, code: plugin.CodeToolExecutionFailed, want: []string{"not configured"}},
		{name: "empty query", tool: "search.searx", args: `{"query":" "}`, code: plugin.CodeInvalidRequest},
		{name: "count too high", tool: "search.searx", args: `{"query":"x","count":99}`, code: plugin.CodeInvalidRequest},
	}
	runChecks(t, h, probe, cases)
}
