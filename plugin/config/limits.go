package config

import (
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/plugin"
	"github.com/zclconf/go-cty/cty"
)

type limitKind int

const (
	sizeLimit     limitKind = iota // "64MiB" or a number of bytes
	durationLimit                  // "30s"
	countLimit                     // a whole number
)

// limitFields maps each limits {} attribute to its kind and field.
var limitFields = []struct {
	name string
	kind limitKind
	set  func(l *plugin.Limits, v int64)
}{
	{"memory", sizeLimit, func(l *plugin.Limits, v int64) { l.Memory = v }},
	{"timeout", durationLimit, func(l *plugin.Limits, v int64) { l.Timeout = time.Duration(v) }},
	{"fuel", countLimit, func(l *plugin.Limits, v int64) { l.Fuel = uint64(v) }},
	{"output", sizeLimit, func(l *plugin.Limits, v int64) { l.Output = v }},
	{"preview", sizeLimit, func(l *plugin.Limits, v int64) { l.Preview = v }},
	{"arguments", sizeLimit, func(l *plugin.Limits, v int64) { l.Arguments = v }},
	{"file_descriptors", countLimit, func(l *plugin.Limits, v int64) { l.FileDescriptors = int(v) }},
	{"http_requests", countLimit, func(l *plugin.Limits, v int64) { l.HTTPRequests = int(v) }},
	{"http_response", sizeLimit, func(l *plugin.Limits, v int64) { l.HTTPResponse = v }},
	{"tool_invocations", countLimit, func(l *plugin.Limits, v int64) { l.ToolInvocations = int(v) }},
	{"client_requests", countLimit, func(l *plugin.Limits, v int64) { l.ClientRequests = int(v) }},
	{"log_entries", countLimit, func(l *plugin.Limits, v int64) { l.LogEntries = int(v) }},
	{"file_bytes_read", sizeLimit, func(l *plugin.Limits, v int64) { l.FileBytesRead = v }},
	{"var_size", sizeLimit, func(l *plugin.Limits, v int64) { l.VarSize = v }},
	{"pool", countLimit, func(l *plugin.Limits, v int64) { l.Pool = int(v) }},
	{"idle_timeout", durationLimit, func(l *plugin.Limits, v int64) { l.IdleTimeout = time.Duration(v) }},
}

func limitsSchema() *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, f := range limitFields {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f.name})
	}
	return s
}

// decodeLimits decodes a limits {} block. Values must be literals: sizes as
// strings with units or whole numbers of bytes, durations as strings.
func (d *decoder) decodeLimits(r *rawLimits) plugin.Limits {
	var l plugin.Limits
	content, diags := r.Body.Content(limitsSchema())
	d.diags = append(d.diags, diags...)
	if content == nil {
		return l
	}
	max := plugin.MaxLimits()
	for _, f := range limitFields {
		attr, ok := content.Attributes[f.name]
		if !ok {
			continue
		}
		rng := attr.Expr.Range()
		v, vd := attr.Expr.Value(d.evalContext())
		d.diags = append(d.diags, vd...)
		if vd.HasErrors() || v.IsNull() || !v.IsKnown() {
			continue
		}
		var n int64
		var err error
		switch f.kind {
		case sizeLimit:
			n, err = sizeValue(v)
		case durationLimit:
			if v.Type() != cty.String {
				err = fmt.Errorf("%s is a duration: write it as a string such as \"30s\" or \"5m\"", f.name)
				break
			}
			var dur time.Duration
			dur, err = parseDuration(v.AsString())
			n = int64(dur)
		case countLimit:
			if f.name == "pool" && v.Type() == cty.Number && v.Equals(cty.NumberIntVal(-1)).True() {
				n = -1 // documented: no pre-instantiated instances
				break
			}
			n, err = countValue(v)
		}
		if err != nil {
			d.errorf(rng, "Invalid limit", "%s: %v.", f.name, err)
			continue
		}
		if n == 0 {
			d.errorf(rng, "Invalid limit", "%s must be greater than zero; omit it to use the default.", f.name)
			continue
		}
		var one plugin.Limits
		f.set(&one, n)
		for _, viol := range one.Check(max) {
			d.errorf(rng, "Limit above maximum", "%s.", viol.Error())
		}
		f.set(&l, n)
	}
	return l
}

func sizeValue(v cty.Value) (int64, error) {
	switch v.Type() {
	case cty.String:
		return plugin.ParseSize(v.AsString())
	case cty.Number:
		return countValue(v)
	}
	return 0, fmt.Errorf("want a size such as \"64MiB\" or a number of bytes, got %s", v.Type().FriendlyName())
}

func countValue(v cty.Value) (int64, error) {
	if v.Type() == cty.String {
		n, err := strconv.ParseInt(strings.ReplaceAll(v.AsString(), "_", ""), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want a whole number, got %q", v.AsString())
		}
		v = cty.NumberIntVal(n)
	}
	if v.Type() != cty.Number {
		return 0, fmt.Errorf("want a whole number, got %s", v.Type().FriendlyName())
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, fmt.Errorf("want a whole number, got %s", bf.Text('g', -1))
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < 0 {
		return 0, fmt.Errorf("%s is out of range", bf.Text('g', -1))
	}
	return i, nil
}

// parseDuration parses Go durations ("30s", "1m30s", "500ms") and also
// days ("2d") for idle timeouts.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(t, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	dur, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write it like \"30s\", \"5m\" or \"1h\"", s)
	}
	if dur < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return dur, nil
}

func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries credentials in the URL; use headers with a secret instead", raw)
	}
	return u, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
