package config_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/plugin/config"
)

// rangeOf returns the range of the first occurrence of sub in src, with
// columns counted in runes, as hcl counts them for text without combining
// characters.
func rangeOf(t *testing.T, src, filename, sub string) hcl.Range {
	t.Helper()
	i := strings.Index(src, sub)
	if i < 0 {
		t.Fatalf("%q not in source", sub)
	}
	pos := func(off int) hcl.Pos {
		line := 1 + strings.Count(src[:off], "\n")
		col := 1 + len([]rune(src[strings.LastIndex(src[:off], "\n")+1:off]))
		return hcl.Pos{Line: line, Column: col, Byte: off}
	}
	return hcl.Range{Filename: filename, Start: pos(i), End: pos(i + len(sub))}
}

// The printer marks the subject with carets when there is no color: under
// its first line only, lined up through tabs and wide characters, one
// caret for an empty range; the position line names the column.
func TestWriteDiagnosticsPlain(t *testing.T) {
	const name = "testdata/printer.hcl"
	src := "tool \"t\" {\n\tdescription = \"世界\"\n  input_schema = <<EOT\n{\"type\":\n \"object\"}\nEOT\n  go {}\n}\n"
	p := config.NewParser()
	if _, diags := p.Parse([]byte(src), name); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	desc := rangeOf(t, src, name, `"世界"`)
	heredoc := rangeOf(t, src, name, "<<EOT\n{\"type\":\n \"object\"}\nEOT")
	empty := rangeOf(t, src, name, "go")
	empty.End = empty.Start
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Tabs and wide runes", Detail: "The value is wrong.", Subject: &desc},
		{Severity: hcl.DiagWarning, Summary: "Several lines", Detail: "Only the first line is underlined.", Subject: &heredoc},
		{Severity: hcl.DiagError, Summary: "Empty range", Subject: &empty},
		{Severity: hcl.DiagError, Summary: "No position", Detail: "Nothing to point at."},
	}
	var buf bytes.Buffer
	if err := p.WriteDiagnostics(&buf, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	want := `Error: Tabs and wide runes

  on testdata/printer.hcl line 2, column 16, in tool "t":
   2: 	description = "世界"
      	              ^^^^^^

The value is wrong.

Warning: Several lines

  on testdata/printer.hcl line 3, column 18, in tool "t":
   3:   input_schema = <<EOT
                       ^^^^^
   4: {"type":
   5:  "object"}
   6: EOT

Only the first line is underlined.

Error: Empty range

  on testdata/printer.hcl line 7, column 3, in tool "t":
   7:   go {}
        ^

Error: No position

Nothing to point at.

`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("escape codes without color:\n%q", buf.String())
	}
}

// With color the subject is highlighted instead, as hcl and Terraform do,
// and the severity is colored; the detail is wrapped at width.
func TestWriteDiagnosticsColor(t *testing.T) {
	const name = "testdata/color.hcl"
	src := "tool \"t\" {\n  go {}\n  colour = \"red\"\n}\n"
	p := config.NewParser()
	_, diags := p.Parse([]byte(src), name)
	if len(diags) != 1 || diags[0].Summary != "Unsupported argument" {
		t.Fatalf("diags = %v", diags)
	}
	diags[0].Detail = strings.Repeat("word ", 20) + "end."
	var buf bytes.Buffer
	if err := p.WriteDiagnostics(&buf, diags, 40, true); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"\x1b[31mError\x1b[0m: Unsupported argument\n",
		"  on testdata/color.hcl line 3, column 3, in tool \"t\":\n",
		"   3:   \x1b[1;4mcolour\x1b[0m = \"red\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "^") {
		t.Errorf("carets with color:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "word") && len(line) > 40 {
			t.Errorf("detail line not wrapped at 40: %q", line)
		}
	}
}

// A diagnostic about a file the parser has not read still names the
// position.
func TestWriteDiagnosticsNoSource(t *testing.T) {
	rng := hcl.Range{Filename: "elsewhere.hcl", Start: hcl.Pos{Line: 4, Column: 7, Byte: 40}, End: hcl.Pos{Line: 4, Column: 9, Byte: 42}}
	var buf bytes.Buffer
	err := config.NewParser().WriteDiagnostics(&buf, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Gone", Detail: "Read elsewhere.", Subject: &rng}}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "Error: Gone\n\n  on elsewhere.hcl line 4, column 7:\n  (source code not available)\n\nRead elsewhere.\n\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// A duplicate tool block is reported and dropped, and the mistakes inside
// it are reported in the same pass (testdata/errors/duplicate.hcl).
func TestDuplicateBlockContentsChecked(t *testing.T) {
	cfg, diags := config.Load("testdata/errors/duplicate.hcl")
	if cfg != nil {
		t.Fatal("a configuration with errors must not be returned")
	}
	type at struct {
		line    int
		summary string
	}
	var got []at
	for _, d := range diags {
		got = append(got, at{d.Subject.Start.Line, d.Summary})
	}
	want := []at{
		{6, "Duplicate tool"}, {7, "Invalid tier"}, {8, "File not found"}, {10, "Invalid limit"},
		{14, "Duplicate name"}, {15, "Invalid MCP server URL"}, {16, "No tools allowed"},
		{23, "Duplicate secret"}, {23, "Secret without a source"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(at{})); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
