package extism

import (
	"compress/flate"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// testServer is a real HTTP server on 127.0.0.1.
func testServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, int) {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	var port int
	fmt.Sscan(u.Port(), &port)
	return s, port
}

func rule(t *testing.T, s string) plugin.HostRule {
	t.Helper()
	r, err := plugin.ParseHostRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fetch calls the hostile guest's fetch tool and returns its structured
// output.
func fetch(t *testing.T, a *Adapter, hosts []plugin.HostRule, secrets map[string]string, args map[string]any) (map[string]any, error) {
	t.Helper()
	sp := guestSpec("hostile", "fetch")
	sp.Capabilities.Hosts = hosts
	for n := range secrets {
		sp.Capabilities.Secrets = append(sp.Capabilities.Secrets, n)
	}
	sp.Limits.Pool = -1
	res, err := call(t, loadWith(t, a, sp), &sp, args, secrets)
	if err != nil {
		return nil, err
	}
	return structured(t, res), nil
}

func TestNetwork(t *testing.T) {
	var seenAuth string
	okSrv, okPort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		seenAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/echo-secret":
			// A server that echoes the credential back.
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "you sent %s", r.Header.Get("Authorization"))
		case "/echo-encoded":
			// The credential reflected the ways servers write values:
			// in a redirect-style URL, base64, hex and JSON-escaped.
			v := r.Header.Get("Authorization")
			w.Header().Set("Location", "https://example.com/cb?token="+url.QueryEscape(v))
			fmt.Fprintf(w, "b64=%s hex=%x json=%s pct=%s", base64.StdEncoding.EncodeToString([]byte("x"+v)), v, strconv.QuoteToASCII(v), url.PathEscape(v))
		case "/echo-compressed":
			// The credential in a body compressed with an encoding the
			// host does not decode (and the guest did not ask for).
			w.Header().Set("Content-Encoding", "deflate")
			zw, _ := flate.NewWriter(w, flate.BestSpeed)
			fmt.Fprintf(zw, "you sent %s", r.Header.Get("Authorization"))
			zw.Close()
		case "/big":
			w.Write(make([]byte, 200<<10))
		default:
			fmt.Fprint(w, "hello from the allowed server")
		}
	})
	_, otherPort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "internal service reached")
	})
	redirSrv, redirPort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/", otherPort), http.StatusFound)
	})
	_ = redirSrv
	// Redirects to other schemes, and to a URL carrying credentials.
	_, redirSchemePort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		target := "file:///etc/passwd"
		if r.URL.Path == "/creds" {
			target = fmt.Sprintf("http://user:pass@127.0.0.1:%d/", r.Context().Value(http.LocalAddrContextKey).(net.Addr).(*net.TCPAddr).Port)
		}
		http.Redirect(w, r, target, http.StatusFound)
	})
	// A redirect to a name the allowlist accepts but which resolves to
	// loopback: refused when dialling.
	_, redirNamePort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://public.test:%d/", otherPort), http.StatusFound)
	})

	// A resolver mapping test names to addresses, standing in for DNS.
	names := map[string]string{
		"public.test":   "127.0.0.1", // a name the operator allows that resolves to loopback
		"mapped.test":   "::ffff:127.0.0.1",
		"metadata.test": "169.254.169.254",
	}
	a, err := New(Config{CacheDir: cacheDir, Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		if s, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(s)}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })

	allowOK := []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", okPort))}

	t.Run("allowed exact address", func(t *testing.T) {
		out, err := fetch(t, a, allowOK, nil, map[string]any{"url": okSrv.URL + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if out["body"] != "hello from the allowed server" {
			t.Fatalf("out = %v", out)
		}
	})
	t.Run("secret injected, echoed value redacted", func(t *testing.T) {
		out, err := fetch(t, a, allowOK, map[string]string{"TOKEN": "s3cr3t-value"},
			map[string]any{"url": okSrv.URL + "/echo-secret", "headers": map[string]string{"Authorization": "Bearer $TOKEN"}})
		if err != nil {
			t.Fatal(err)
		}
		if seenAuth != "Bearer s3cr3t-value" {
			t.Fatalf("server saw Authorization %q, want the injected secret", seenAuth)
		}
		body, _ := out["body"].(string)
		if strings.Contains(body, "s3cr3t-value") || !strings.Contains(body, "[REDACTED:TOKEN]") {
			t.Fatalf("guest saw body %q", body)
		}
		if h := fmt.Sprint(out["headers"]); strings.Contains(h, "s3cr3t-value") {
			t.Fatalf("guest saw the secret in headers %s", h)
		}
	})
	t.Run("secret echoed in other encodings, redacted", func(t *testing.T) {
		const secret = "s3cr3t/value+é"
		out, err := fetch(t, a, allowOK, map[string]string{"TOKEN": secret},
			map[string]any{"url": okSrv.URL + "/echo-encoded", "headers": map[string]string{"Authorization": "Bearer $TOKEN", "Accept-Encoding": "br, zstd"}})
		if err != nil {
			t.Fatal(err)
		}
		all := fmt.Sprint(out)
		for _, leak := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), fmt.Sprintf("%x", secret), base64.StdEncoding.EncodeToString([]byte("xBearer " + secret))[4:20]} {
			if strings.Contains(all, leak) {
				t.Errorf("guest saw %q in %s", leak, all)
			}
		}
		if !strings.Contains(all, "[REDACTED:TOKEN]") {
			t.Fatalf("nothing redacted: %s", all)
		}
	})
	t.Run("body in an encoding the host cannot decode is refused", func(t *testing.T) {
		out, err := fetch(t, a, allowOK, map[string]string{"TOKEN": "s3cr3t-value"},
			map[string]any{"url": okSrv.URL + "/echo-compressed", "headers": map[string]string{"Authorization": "Bearer $TOKEN"}})
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := out["error"].(string); !strings.Contains(e, "deflate") || out["body"] != nil && out["body"] != "" {
			t.Fatalf("out = %v, want the response refused naming its encoding", out)
		}
	})
	t.Run("secret not granted stays literal", func(t *testing.T) {
		_, err := fetch(t, a, allowOK, nil,
			map[string]any{"url": okSrv.URL + "/", "headers": map[string]string{"Authorization": "Bearer $TOKEN"}})
		if err != nil {
			t.Fatal(err)
		}
		if seenAuth != "Bearer ${TOKEN}" && seenAuth != "Bearer $TOKEN" {
			t.Fatalf("server saw %q", seenAuth)
		}
	})

	refused := []struct {
		name  string
		hosts []plugin.HostRule
		url   string
	}{
		{"no network capability", nil, okSrv.URL},
		{"host not in allowlist", allowOK, "http://example.com/"},
		{"other port on an allowed address", allowOK, fmt.Sprintf("http://127.0.0.1:%d/", otherPort)},
		// A rule without a port allows 80 and 443 only (issue 23: it allowed
		// every port).
		{"rule without port, other port", []plugin.HostRule{rule(t, "127.0.0.1")}, fmt.Sprintf("http://127.0.0.1:%d/", okPort)},
		{"loopback by name", []plugin.HostRule{rule(t, "public.test")}, fmt.Sprintf("http://public.test:%d/", okPort)},
		{"loopback 127.0.0.1 not named", []plugin.HostRule{rule(t, "*.test")}, fmt.Sprintf("http://127.0.0.1:%d/", okPort)},
		{"[::1]", []plugin.HostRule{rule(t, "public.test")}, fmt.Sprintf("http://[::1]:%d/", okPort)},
		{"metadata address", []plugin.HostRule{rule(t, "metadata.test")}, "http://169.254.169.254/latest/meta-data/"},
		{"metadata by name", []plugin.HostRule{rule(t, "metadata.test")}, "http://metadata.test/latest/meta-data/"},
		{"IPv4-mapped literal", allowOK, fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", okPort)},
		{"IPv4-mapped by name", []plugin.HostRule{rule(t, "mapped.test")}, fmt.Sprintf("http://mapped.test:%d/", okPort)},
		{"decimal IP", allowOK, fmt.Sprintf("http://2130706433:%d/", okPort)},
		{"hex IP", allowOK, fmt.Sprintf("http://0x7f000001:%d/", okPort)},
		{"octal IP", allowOK, fmt.Sprintf("http://0177.0.0.1:%d/", okPort)},
		{"short IP", allowOK, fmt.Sprintf("http://127.1:%d/", okPort)},
		{"redirect to loopback", []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", redirPort))}, fmt.Sprintf("http://127.0.0.1:%d/", redirPort)},
		{"file scheme", allowOK, "file:///etc/passwd"},
		{"redirect to the file scheme", []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", redirSchemePort))}, fmt.Sprintf("http://127.0.0.1:%d/", redirSchemePort)},
		{"redirect to a URL with credentials", []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", redirSchemePort))}, fmt.Sprintf("http://127.0.0.1:%d/creds", redirSchemePort)},
		{"redirect to a name resolving to loopback", []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", redirNamePort)), rule(t, "*.test")},
			fmt.Sprintf("http://127.0.0.1:%d/", redirNamePort)},
	}
	for _, tc := range refused {
		t.Run("refused "+tc.name, func(t *testing.T) {
			out, err := fetch(t, a, tc.hosts, nil, map[string]any{"url": tc.url})
			if err != nil {
				t.Fatal(err)
			}
			e, _ := out["error"].(string)
			if e == "" {
				t.Fatalf("request to %s was not refused: %v", tc.url, out)
			}
			if !strings.Contains(e, "CAPABILITY_DENIED") {
				t.Fatalf("error %q, want CAPABILITY_DENIED", e)
			}
		})
	}
	t.Run("http_requests limit", func(t *testing.T) {
		sp := guestSpec("hostile", "fetch")
		sp.Capabilities.Hosts = allowOK
		sp.Limits.HTTPRequests = 3
		tool := loadWith(t, a, sp)
		_, err := call(t, tool, &sp, map[string]any{"url": okSrv.URL + "/", "count": 10}, nil)
		wantLimit(t, err, "http_requests")
		res, err := call(t, tool, &sp, map[string]any{"url": okSrv.URL + "/", "count": 2}, nil)
		if err != nil || structured(t, res)["status"] != float64(200) {
			t.Fatalf("after the limit: %v %v", err, res)
		}
	})
	t.Run("http_response limit", func(t *testing.T) {
		sp := guestSpec("hostile", "fetch")
		sp.Capabilities.Hosts = allowOK
		sp.Limits.HTTPResponse = 64 << 10
		_, err := call(t, loadWith(t, a, sp), &sp, map[string]any{"url": okSrv.URL + "/big"}, nil)
		wantLimit(t, err, "http_response")
	})
	// Extism's own http_request (pdk.NewHTTPRequest), which go-sdk would
	// serve with no address checks, limits or secrets, goes through the
	// same guarded client (issue 23, part 5: it was refused outright).
	pdkfetch := func(t *testing.T, hosts []plugin.HostRule, secrets map[string]string, args map[string]any, limits func(*plugin.Limits)) (map[string]any, error) {
		t.Helper()
		sp := guestSpec("hostile", "pdkfetch")
		sp.Capabilities.Hosts = hosts
		for n := range secrets {
			sp.Capabilities.Secrets = append(sp.Capabilities.Secrets, n)
		}
		if limits != nil {
			limits(&sp.Limits)
		}
		res, err := call(t, loadWith(t, a, sp), &sp, args, secrets)
		if err != nil {
			return nil, err
		}
		return structured(t, res), nil
	}
	t.Run("extism http_request reaches a granted host", func(t *testing.T) {
		out, err := pdkfetch(t, allowOK, nil, map[string]any{"url": okSrv.URL + "/"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out["status"] != float64(200) || out["body"] != "hello from the allowed server" {
			t.Fatalf("out = %v", out)
		}
		if h, _ := out["headers"].(map[string]any); h["content-type"] == nil {
			t.Fatalf("headers %v, want Extism's lower-cased response headers", out["headers"])
		}
	})
	t.Run("extism http_request: secret injected, echo redacted", func(t *testing.T) {
		out, err := pdkfetch(t, allowOK, map[string]string{"TOKEN": "s3cr3t-value"},
			map[string]any{"url": okSrv.URL + "/echo-secret", "headers": map[string]string{"Authorization": "Bearer $TOKEN"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if seenAuth != "Bearer s3cr3t-value" {
			t.Fatalf("server saw Authorization %q", seenAuth)
		}
		if all := fmt.Sprint(out); strings.Contains(all, "s3cr3t-value") || !strings.Contains(all, "[REDACTED:TOKEN]") {
			t.Fatalf("guest saw %s", all)
		}
	})
	for _, tc := range []struct {
		name, url, want string
		hosts           []plugin.HostRule
	}{
		{"host not granted", "http://example.com/", "example.com", allowOK},
		{"no network capability", okSrv.URL + "/", "no network access", nil},
		{"granted name resolving to loopback", fmt.Sprintf("http://public.test:%d/", okPort), "public.test", []plugin.HostRule{rule(t, fmt.Sprintf("public.test:%d", okPort))}},
		{"redirect to a host not granted", fmt.Sprintf("http://127.0.0.1:%d/", redirPort), "redirect", []plugin.HostRule{rule(t, fmt.Sprintf("127.0.0.1:%d", redirPort))}},
	} {
		t.Run("extism http_request refused: "+tc.name, func(t *testing.T) {
			_, err := pdkfetch(t, tc.hosts, nil, map[string]any{"url": tc.url}, nil)
			if err == nil {
				t.Fatal("not refused")
			}
			wantCode(t, err, plugin.CodeCapabilityDenied)
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "crashed") {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
		})
	}
	t.Run("extism http_request: response limit", func(t *testing.T) {
		_, err := pdkfetch(t, allowOK, nil, map[string]any{"url": okSrv.URL + "/big"}, func(l *plugin.Limits) { l.HTTPResponse = 64 << 10 })
		wantLimit(t, err, "http_response")
	})
	t.Run("proxy variables are ignored", func(t *testing.T) {
		proxyHit := false
		_, proxyPort := testServer(t, func(w http.ResponseWriter, r *http.Request) {
			proxyHit = true
			io.WriteString(w, "proxied")
		})
		t.Setenv("HTTP_PROXY", fmt.Sprintf("http://127.0.0.1:%d", proxyPort))
		t.Setenv("http_proxy", fmt.Sprintf("http://127.0.0.1:%d", proxyPort))
		out, err := fetch(t, a, allowOK, nil, map[string]any{"url": okSrv.URL + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if proxyHit || out["body"] != "hello from the allowed server" {
			t.Fatalf("request went through the proxy: %v", out)
		}
	})
}

// goSDKWasm returns the path of a prebuilt plugin that extism/go-sdk ships
// in its module (wasm/NAME), from the module cache of this build.
func goSDKWasm(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	if err != nil {
		t.Fatalf("finding go-sdk in the module cache: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "wasm", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("go-sdk's %s: %v", name, err)
	}
	return p
}

// TestExtismSDKHTTPPlugin: go-sdk's own prebuilt http_headers.wasm, a
// third-party plugin that fetches with Extism's http_request and returns
// the response headers (Extism's http_headers), works through toolhost
// under the tool's allowlist, and is refused elsewhere.
func TestExtismSDKHTTPPlugin(t *testing.T) {
	srv, port := testServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Served-By", "toolhost-test")
		fmt.Fprint(w, "ok")
	})
	a, err := New(Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	spec := func(hosts ...plugin.HostRule) plugin.Spec {
		return plugin.Spec{Name: "http_get", Capabilities: plugin.Capabilities{Hosts: hosts},
			InputSchema: []byte(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
			Source:      plugin.Source{Kind: Kind, Path: goSDKWasm(t, "http_headers.wasm"), Export: "http_get"}}
	}
	sp := spec(rule(t, fmt.Sprintf("127.0.0.1:%d", port)))
	res, err := call(t, loadWith(t, a, sp), &sp, map[string]any{"url": srv.URL + "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := res.TextContent(); !strings.Contains(out, `"x-served-by":"toolhost-test"`) {
		t.Fatalf("output %s, want the response's headers", out)
	}
	sp = spec(rule(t, "127.0.0.1:1"))
	_, err = call(t, loadWith(t, a, sp), &sp, map[string]any{"url": srv.URL + "/"}, nil)
	wantCode(t, err, plugin.CodeCapabilityDenied)
	if !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", port)) {
		t.Fatalf("err = %v, want it to name the host", err)
	}
}
