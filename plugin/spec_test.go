package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhost/toolhost/plugin"
)

func TestErrors(t *testing.T) {
	sentinels := map[plugin.Code]error{
		plugin.CodeToolNotFound: plugin.ErrToolNotFound, plugin.CodeInvalidRequest: plugin.ErrInvalidRequest,
		plugin.CodeFileNotFound: plugin.ErrFileNotFound, plugin.CodeFileTooLarge: plugin.ErrFileTooLarge,
		plugin.CodePermissionDenied: plugin.ErrPermissionDenied, plugin.CodeCapabilityDenied: plugin.ErrCapabilityDenied,
		plugin.CodeApprovalRequired: plugin.ErrApprovalRequired, plugin.CodeApprovalDenied: plugin.ErrApprovalDenied,
		plugin.CodeLimitExceeded: plugin.ErrLimitExceeded, plugin.CodeToolExecutionFailed: plugin.ErrToolExecutionFailed,
		plugin.CodeToolExecutionTimeout: plugin.ErrToolExecutionTimeout, plugin.CodeOutputInvalid: plugin.ErrOutputInvalid,
		plugin.CodeToolUnavailable: plugin.ErrToolUnavailable,
	}
	codes := plugin.Codes()
	if len(codes) != len(sentinels) {
		t.Fatalf("Codes() has %d codes, %d sentinels", len(codes), len(sentinels))
	}
	for _, code := range codes {
		t.Run(string(code), func(t *testing.T) {
			err := fmt.Errorf("context: %w", plugin.Errorf(code, "something about %s", "x"))
			for other, sentinel := range sentinels {
				if got := errors.Is(err, sentinel); got != (other == code) {
					t.Errorf("errors.Is(%s error, Err for %s) = %v", code, other, got)
				}
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Code != code || pe.Message != "something about x" {
				t.Errorf("errors.As: %+v", pe)
			}
			if plugin.CodeOf(err) != code {
				t.Errorf("CodeOf = %s", plugin.CodeOf(err))
			}
		})
	}

	cause := os.ErrNotExist
	tests := []struct {
		name string
		err  error
		text string
		code plugin.Code
		is   []error
		not  []error
	}{
		{"message", plugin.Errorf(plugin.CodeFileNotFound, "no %q", "a"), `FILE_NOT_FOUND: no "a"`, plugin.CodeFileNotFound, []error{plugin.ErrFileNotFound}, []error{cause}},
		{"wrapping %w", plugin.Errorf(plugin.CodeFileNotFound, "open a: %w", cause), "FILE_NOT_FOUND: open a: file does not exist", plugin.CodeFileNotFound, []error{plugin.ErrFileNotFound, cause}, nil},
		{"code only", &plugin.Error{Code: plugin.CodeOutputInvalid}, "OUTPUT_INVALID", plugin.CodeOutputInvalid, nil, nil},
		{"cause only", &plugin.Error{Code: plugin.CodeToolUnavailable, Err: cause}, "TOOL_UNAVAILABLE: file does not exist", plugin.CodeToolUnavailable, []error{cause}, nil},
		{"limit", plugin.LimitError("memory", "used %s", "300MiB"), "LIMIT_EXCEEDED: used 300MiB", plugin.CodeLimitExceeded,
			[]error{plugin.ErrLimitExceeded, &plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "memory"}},
			[]error{&plugin.Error{Code: plugin.CodeLimitExceeded, Limit: "fuel"}}},
		{"deadline", context.DeadlineExceeded, "context deadline exceeded", plugin.CodeToolExecutionTimeout, nil, []error{plugin.ErrToolExecutionTimeout}},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), "read: i/o timeout", plugin.CodeToolExecutionTimeout, nil, nil},
		{"plain", errors.New("x"), "x", plugin.CodeToolExecutionFailed, nil, []error{plugin.ErrToolExecutionFailed}},
		{"canceled", context.Canceled, "context canceled", plugin.CodeToolExecutionFailed, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Error() != tc.text {
				t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.text)
			}
			if got := plugin.CodeOf(tc.err); got != tc.code {
				t.Errorf("CodeOf = %s, want %s", got, tc.code)
			}
			for _, e := range tc.is {
				if !errors.Is(tc.err, e) {
					t.Errorf("errors.Is(err, %v) = false", e)
				}
			}
			for _, e := range tc.not {
				if errors.Is(tc.err, e) {
					t.Errorf("errors.Is(err, %v) = true", e)
				}
			}
		})
	}
	if plugin.CodeOf(nil) != "" {
		t.Error("CodeOf(nil) is not empty")
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"512", 512, ""},
		{"512B", 512, ""},
		{"64KiB", 64 << 10, ""},
		{"64 KiB", 64 << 10, ""},
		{" 1MiB ", 1 << 20, ""},
		{"1.5MiB", 3 << 19, ""},
		{"10MB", 10_000_000, ""},
		{"1KB", 1000, ""},
		{"1GiB", 1 << 30, ""},
		{"2TiB", 2 << 40, ""},
		{"3GB", 3_000_000_000, ""},
		{"1TB", 1_000_000_000_000, ""},
		{"16K", 16 << 10, ""},
		{"16M", 16 << 20, ""},
		{"1G", 1 << 30, ""},
		{"0.5KiB", 512, ""},
		{"", 0, "empty size"},
		{"   ", 0, "empty size"},
		{"MiB", 0, "has no number"},
		{"-1", 0, "negative"},
		{"-1KiB", 0, "negative"},
		{"-0.5MiB", 0, "negative"},
		{"ten", 0, "want a number"},
		{"10 mb", 0, "want a number"},
		{"10XB", 0, "want a number"},
		{"NaN", 0, "want a number"},
		{"NaNKiB", 0, "want a number"},
		{"Inf", 0, "too large"},
		{"4194304TiB", 1 << 62, ""},
		{"4194305TiB", 0, "too large"},
		{"1e30", 0, "too large"},
		{"9223372036854775807", 9223372036854775807, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := plugin.ParseSize(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseSize(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {1, "1B"}, {1023, "1023B"}, {1024, "1KiB"}, {1536, "1536B"},
		{64 << 10, "64KiB"}, {1 << 20, "1MiB"}, {10 << 20, "10MiB"}, {3 << 30, "3GiB"}, {1 << 40, "1TiB"},
		{1 << 50, "1024TiB"}, {1000, "1000B"},
	}
	for _, tc := range tests {
		if got := plugin.FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := plugin.ParseSize(tc.want); err != nil || back != tc.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tc.in, back, err)
		}
	}
}

func TestParseHostRule(t *testing.T) {
	tests := []struct {
		in   string
		want plugin.HostRule
		str  string
		err  string
	}{
		{in: "example.com", want: plugin.HostRule{Host: "example.com"}, str: "example.com"},
		{in: "Example.COM.", want: plugin.HostRule{Host: "example.com"}, str: "example.com"},
		{in: "example.com:443", want: plugin.HostRule{Host: "example.com", Port: 443}, str: "example.com:443"},
		{in: "*.example.com", want: plugin.HostRule{Host: "*.example.com"}, str: "*.example.com"},
		{in: "*.example.com:8443", want: plugin.HostRule{Host: "*.example.com", Port: 8443}, str: "*.example.com:8443"},
		{in: "127.0.0.1:8080", want: plugin.HostRule{Host: "127.0.0.1", Port: 8080}, str: "127.0.0.1:8080"},
		{in: "[::1]:8080", want: plugin.HostRule{Host: "::1", Port: 8080}, str: "[::1]:8080"},
		{in: "[::1]", want: plugin.HostRule{Host: "::1"}, str: "[::1]"},
		{in: "::1", want: plugin.HostRule{Host: "::1"}, str: "[::1]"},
		{in: "", err: "empty host"},
		{in: "*", err: `"*" alone is not allowed`},
		{in: "*:443", err: `"*" alone is not allowed`},
		{in: "https://example.com", err: "not a URL"},
		{in: "example.com/path", err: "not a URL"},
		{in: "example.com:0", err: "port must be 1-65535"},
		{in: "example.com:65536", err: "port must be 1-65535"},
		{in: "example.com:http", err: "port must be 1-65535"},
		{in: "example.com:", err: "port must be 1-65535"},
		{in: ":443", err: "must name a host"},
		{in: "0:0:0:0:0:0:0:1", want: plugin.HostRule{Host: "::1"}, str: "[::1]"},
		{in: "[::FFFF:1.2.3.4]:443", want: plugin.HostRule{Host: "::ffff:1.2.3.4", Port: 443}, str: "[::ffff:1.2.3.4]:443"},
		{in: "my_host-1.internal", want: plugin.HostRule{Host: "my_host-1.internal"}, str: "my_host-1.internal"},
		{in: "*.com", want: plugin.HostRule{Host: "*.com"}, str: "*.com"},
		{in: "foo:bar:baz", err: "not an IP address"},
		{in: "[example.com]:80", err: "not an IP address"},
		{in: "[fe80::1%eth0]:80", err: "not an IP address"},
		{in: "exa mple.com", err: "not a host name"},
		{in: "*.*.example.com", err: "a wildcard is allowed only as a leading"},
		{in: "ex*ample.com", err: "a wildcard is allowed only as a leading"},
		{in: "a..b", err: "not a host name"},
		{in: "-a.com", err: "starts or ends with '-'"},
		{in: "1.2.3.4.5", err: "neither a host name nor an IP address"},
		{in: "256.1.1.1", err: "neither a host name nor an IP address"},
		{in: "*.10.0.0.1", err: "neither a host name nor an IP address"},
		{in: strings.Repeat("a", 64) + ".com", err: "over-long label"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := plugin.ParseHostRule(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseHostRule(%q) = %+v, %v; want error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseHostRule(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.str {
				t.Errorf("String() = %q, want %q", got.String(), tc.str)
			}
			if again, err := plugin.ParseHostRule(got.String()); err != nil || again != got {
				t.Errorf("String() does not parse back: %+v, %v", again, err)
			}
		})
	}
}

func TestHostRuleCovers(t *testing.T) {
	tests := []struct {
		grant, declared string
		want            bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "example.com:443", true},
		{"example.com:443", "example.com:443", true},
		{"example.com:443", "example.com", false}, // 80 and 443 are wider than 443
		{"example.com", "example.com:80", true},
		{"example.com", "example.com:8443", false}, // no port: the web ports only (issue 23)
		{"example.com", "example.com:22", false},
		{"example.com:443", "example.com:80", false},
		{"example.com", "www.example.com", false},
		{"example.com", "evilexample.com", false},
		{"example.com", "example.com.evil.net", false},
		{"*.example.com", "www.example.com", true},
		{"*.example.com", "a.b.example.com:443", true},
		{"*.example.com", "a.b.example.com:9000", false},
		{"*.example.com", "example.com", false}, // the wildcard does not cover the apex
		{"*.example.com", "evilexample.com", false},
		{"*.example.com", "www.example.com.evil.net", false},
		{"*.example.com", "*.example.com", true},
		{"*.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", false},
		{"www.example.com", "*.example.com", false},
		{"*.example.com:443", "*.example.com", false},
		{"127.0.0.1", "127.0.0.1:8080", false},
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"::1", "[::1]:80", true},
	}
	for _, tc := range tests {
		t.Run(tc.grant+" covers "+tc.declared, func(t *testing.T) {
			g, err := plugin.ParseHostRule(tc.grant)
			if err != nil {
				t.Fatal(err)
			}
			d, err := plugin.ParseHostRule(tc.declared)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Covers(d); got != tc.want {
				t.Errorf("Covers = %v, want %v", got, tc.want)
			}
			if tc.want && !strings.HasPrefix(d.Host, "*.") && !g.Allows(d.Host, max(d.Port, 443)) {
				t.Errorf("covers %s but does not allow it", tc.declared)
			}
		})
	}
	t.Run("Allows", func(t *testing.T) {
		r := plugin.HostRule{Host: "*.example.com", Port: 443}
		for host, want := range map[string]bool{"api.example.com": true, "API.Example.Com.": true, "example.com": false, "api.example.org": false} {
			if got := r.Allows(host, 443); got != want {
				t.Errorf("Allows(%q, 443) = %v", host, got)
			}
		}
		if r.Allows("api.example.com", 80) {
			t.Error("Allows port 80 under a 443 rule")
		}
	})
}

func TestLimits(t *testing.T) {
	d := plugin.DefaultLimits()
	want := plugin.Limits{
		Memory: 256 << 20, Timeout: 30 * time.Second, Fuel: 1_000_000_000, Output: 10 << 20, Preview: 16 << 10,
		Arguments: 1 << 20, FileDescriptors: 32, HTTPRequests: 50, HTTPResponse: 10 << 20, ToolInvocations: 20, ClientRequests: 16,
		LogEntries: 1000, FileBytesRead: 10 << 20, VarSize: 1 << 20, Pool: 2, IdleTimeout: 5 * time.Minute,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("DefaultLimits (-design +got):\n%s", diff)
	}
	if v := d.Check(plugin.MaxLimits()); len(v) != 0 {
		t.Errorf("defaults violate the maxima: %v", v)
	}
	if v := plugin.MaxLimits().Check(plugin.MaxLimits()); len(v) != 0 {
		t.Errorf("maxima violate themselves: %v", v)
	}
	if got := (plugin.Limits{Memory: 64 << 20, Pool: -1}).WithDefaults(d); got.Memory != 64<<20 || got.Timeout != d.Timeout || got.Pool != -1 {
		t.Errorf("WithDefaults = %+v", got)
	}
	if got := (plugin.Limits{}).WithDefaults(d); got != d {
		t.Errorf("zero WithDefaults = %+v", got)
	}

	tests := []struct {
		name string
		l    plugin.Limits
		want []string
	}{
		{"zero", plugin.Limits{}, nil},
		{"at max", plugin.MaxLimits(), nil},
		{"memory", plugin.Limits{Memory: 2 << 30}, []string{"limit memory = 2GiB is above the maximum 1GiB"}},
		{"timeout", plugin.Limits{Timeout: 10 * time.Minute}, []string{"limit timeout = 10m0s is above the maximum 5m0s"}},
		{"fuel", plugin.Limits{Fuel: 1<<63 + 1}, []string{"limit fuel = 9223372036854775809 is above the maximum 1000000000000"}},
		{"negative", plugin.Limits{Output: -1}, []string{"limit output = -1B is above the maximum 1GiB"}},
		{"pool -1 means none", plugin.Limits{Pool: -1}, nil},
		{"pool -2", plugin.Limits{Pool: -2}, []string{"limit pool = -2"}},
		{"several, in order", plugin.Limits{Memory: 2 << 30, HTTPRequests: 20000, IdleTimeout: 48 * time.Hour}, []string{"limit memory", "limit http_requests = 20000", "limit idle_timeout = 48h0m0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.l.Check(plugin.MaxLimits())
			if len(v) != len(tc.want) {
				t.Fatalf("Check = %v, want %d violations", v, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(v[i].Error(), w) {
					t.Errorf("violation %d = %q, want prefix %q", i, v[i].Error(), w)
				}
			}
		})
	}
	t.Run("host defaults above max", func(t *testing.T) {
		if _, err := plugin.NewHost(plugin.Options{Defaults: plugin.Limits{Timeout: time.Hour}}); err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Errorf("NewHost: %v", err)
		}
	})
	t.Run("host defaults apply", func(t *testing.T) {
		h := newHost(t, plugin.Options{Defaults: plugin.Limits{Timeout: time.Second}})
		mustRegister(t, h, plugin.Spec{Name: "a"}, echoArgs())
		mustRegister(t, h, plugin.Spec{Name: "b", Limits: plugin.Limits{Timeout: 2 * time.Second}}, echoArgs())
		a, _ := h.Tool("a")
		b, _ := h.Tool("b")
		if a.Limits.Timeout != time.Second || b.Limits.Timeout != 2*time.Second || a.Limits.Memory != 256<<20 {
			t.Errorf("limits: a %+v, b %+v", a.Limits, b.Limits)
		}
	})
}

func TestTiers(t *testing.T) {
	for _, tier := range []plugin.Tier{plugin.TierReadOnly, plugin.TierSideEffecting, plugin.TierPrivileged} {
		b, err := tier.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back plugin.Tier
		if err := back.UnmarshalText(b); err != nil || back != tier {
			t.Errorf("%s: round trip = %v, %v", tier, back, err)
		}
	}
	if _, err := plugin.ParseTier("readonly"); err == nil {
		t.Error(`ParseTier("readonly") succeeded`)
	}
	for s, want := range map[string]plugin.Approval{"": plugin.ApprovalDefault, "default": plugin.ApprovalDefault, "always": plugin.ApprovalAlways, "never": plugin.ApprovalNever} {
		if got, err := plugin.ParseApproval(s); err != nil || got != want {
			t.Errorf("ParseApproval(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := plugin.ParseApproval("sometimes"); err == nil {
		t.Error(`ParseApproval("sometimes") succeeded`)
	}

	t.Run("listing", func(t *testing.T) {
		h := newHost(t, plugin.Options{})
		destructive := false
		tool := plugin.Func(plugin.Descriptor{Name: "own", Description: "own words", InputSchema: []byte(`{"type":"object"}`),
			Annotations: &plugin.Annotations{ReadOnlyHint: true, DestructiveHint: &destructive, Title: "T"}}, nil)
		mustRegister(t, h, plugin.Spec{Name: "x", Tier: plugin.TierSideEffecting, Description: "operator words"}, tool)
		mustRegister(t, h, plugin.Spec{Name: "r", Tier: plugin.TierReadOnly}, tool)
		mustRegister(t, h, plugin.Spec{Name: "d"}, tool)
		infos := h.Tools()
		if len(infos) != 3 || infos[0].Descriptor.Name != "x" || infos[1].Descriptor.Name != "r" || infos[2].Descriptor.Name != "d" {
			t.Fatalf("Tools() = %+v", infos)
		}
		x := infos[0].Descriptor
		// The tier, not the tool, decides the hints.
		if x.Description != "operator words" || x.Annotations.ReadOnlyHint || x.Annotations.DestructiveHint == nil || *x.Annotations.DestructiveHint || x.Annotations.Title != "T" {
			t.Errorf("x: %+v %+v", x, x.Annotations)
		}
		r := infos[1].Descriptor
		if !r.Annotations.ReadOnlyHint || r.Annotations.DestructiveHint != nil || r.Description != "own words" {
			t.Errorf("r: %+v %+v", r, r.Annotations)
		}
		if infos[2].Tier != plugin.TierSideEffecting {
			t.Errorf("the default tier is %s, want side_effecting", infos[2].Tier)
		}
		if d := infos[2].Descriptor; d.Annotations.DestructiveHint != nil && *d.Annotations.DestructiveHint {
			// The tool said not destructive; a side-effecting tier keeps
			// the tool's own hint when it gave one.
			t.Errorf("d: DestructiveHint overridden")
		}
	})
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"read_file": true, "fs.read": true, "github/search": true, "_x": true, "a-b": true, "A1": true,
		"": false, "-x": false, ".x": false, "/x": false, "a b": false, "é": false, "a\n": false,
		strings.Repeat("a", 128): true, strings.Repeat("a", 129): false,
	} {
		if got := plugin.ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v", name, got)
		}
	}
}

func TestSchemaAcceptingAnyObject(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object"}`,
		`{"type":"object","description":"no arguments","title":"T","$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"type":"object","properties":{"a":{"type":"string"}}}`, // constrains "a"
	} {
		s, err := plugin.CompileSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		for doc, ok := range map[string]bool{`{}`: true, ` {"b":[1,{"c":null}]} `: true, `[]`: false, `"x"`: false, `{`: false, `{} {}`: false, `null`: false} {
			if err := s.ValidateJSON([]byte(doc)); (err == nil) != ok {
				t.Errorf("%s: ValidateJSON(%s) = %v, want ok %v", schema, doc, err, ok)
			}
		}
		if err := s.ValidateJSON([]byte(`{"a":1}`)); (err == nil) != !strings.Contains(schema, "properties") {
			t.Errorf("%s: ValidateJSON({\"a\":1}) = %v", schema, err)
		}
	}
}
