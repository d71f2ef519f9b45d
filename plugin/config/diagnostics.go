package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/mitchellh/go-wordwrap"
	"golang.org/x/text/width"
)

// WriteDiagnostics prints diagnostics the way Terraform does, plus the
// column: severity and summary, "on FILE line L, column C, in BLOCK:", the
// source lines with the offending part marked, then the detail. width wraps
// the detail (0: no wrapping).
//
// With color, the offending part is highlighted (bold, underlined) and the
// severity colored, as hcl's own text writer does. Without color (piped
// output, logs, golden files) highlighting would be lost, so a line of
// carets under the source line marks the part instead; a subject that spans
// several lines is underlined on its first line.
//
// hcl.NewDiagnosticTextWriter is not used because it marks the column only
// with escape codes: without color its output cannot say where on the line
// the problem is.
func (p *Parser) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, width uint, color bool) error {
	dw := &diagWriter{w: w, files: p.Files(), width: width, color: color}
	for _, d := range diags {
		if err := dw.write(d); err != nil {
			return err
		}
	}
	return nil
}

type diagWriter struct {
	w     io.Writer
	files map[string]*hcl.File
	width uint
	color bool
}

// VT100 codes, as hcl's text writer and Terraform use them.
const (
	ansiRed       = "\x1b[31m"
	ansiYellow    = "\x1b[33m"
	ansiHighlight = "\x1b[1;4m"
	ansiReset     = "\x1b[0m"
)

func (dw *diagWriter) write(d *hcl.Diagnostic) error {
	var buf bytes.Buffer
	severity, code := "Error", ansiRed
	if d.Severity == hcl.DiagWarning {
		severity, code = "Warning", ansiYellow
	}
	if dw.color {
		severity = code + severity + ansiReset
	}
	fmt.Fprintf(&buf, "%s: %s\n\n", severity, d.Summary)
	if d.Subject != nil {
		dw.snippet(&buf, d)
	}
	if d.Detail != "" {
		detail := d.Detail
		if dw.width > 0 {
			detail = wordwrap.WrapString(detail, dw.width)
		}
		fmt.Fprintf(&buf, "%s\n\n", detail)
	}
	_, err := dw.w.Write(buf.Bytes())
	return err
}

// snippet writes the "on ..." line and the source lines of the subject (and
// of the context range, when the diagnostic has one).
func (dw *diagWriter) snippet(buf *bytes.Buffer, d *hcl.Diagnostic) {
	subj := *d.Subject
	file := dw.files[subj.Filename]
	if file == nil || file.Bytes == nil {
		fmt.Fprintf(buf, "  on %s line %d, column %d:\n  (source code not available)\n\n", subj.Filename, subj.Start.Line, subj.Start.Column)
		return
	}
	where := ""
	if cs, ok := file.Nav.(interface{ ContextString(offset int) string }); ok {
		if s := cs.ContextString(subj.Start.Byte); s != "" {
			where = ", in " + s
		}
	}
	fmt.Fprintf(buf, "  on %s line %d, column %d%s:\n", subj.Filename, subj.Start.Line, subj.Start.Column, where)

	// An empty range cannot be shown: make it one character wide (it may
	// then point just past the end of a line, which the caret shows well).
	highlight := subj
	if highlight.Empty() {
		highlight.End.Byte++
		highlight.End.Column++
	}
	shown := highlight
	if d.Context != nil {
		shown = hcl.RangeOver(shown, *d.Context)
	}
	src := file.Bytes
	sc := hcl.NewRangeScanner(src, subj.Filename, bufio.ScanLines)
	for sc.Scan() {
		line := sc.Range()
		first := line.Start.Line == subj.Start.Line
		// The subject's first line is shown even when the subject is only
		// its line break (a block left open), which no line range covers.
		if !line.Overlaps(shown) && !first {
			continue
		}
		before, marked, after := line.PartitionAround(highlight)
		if dw.color && !marked.Empty() {
			fmt.Fprintf(buf, "%4d: %s%s%s%s%s\n", line.Start.Line,
				before.SliceBytes(src), ansiHighlight, marked.SliceBytes(src), ansiReset, after.SliceBytes(src))
			continue
		}
		fmt.Fprintf(buf, "%4d: %s\n", line.Start.Line, sc.Bytes())
		if first && !dw.color {
			start := min(max(subj.Start.Byte, line.Start.Byte), line.End.Byte)
			end := min(max(highlight.End.Byte, start), line.End.Byte)
			fmt.Fprintf(buf, "      %s%s\n", blank(src[line.Start.Byte:start]), carets(src[start:end]))
		}
	}
	buf.WriteByte('\n')
}

// blank returns s with every character replaced by spaces of the same
// display width, tabs kept, so that what follows lines up with the source
// line above it.
func blank(s []byte) string {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		s = s[n:]
		if r == '\t' {
			out = append(out, '\t')
			continue
		}
		for range runeWidth(r) {
			out = append(out, ' ')
		}
	}
	return string(out)
}

// carets returns a line of carets as wide as s is displayed (at least one).
func carets(s []byte) string {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		s = s[size:]
		if r == '\t' {
			n++
			continue
		}
		n += runeWidth(r)
	}
	return string(bytes.Repeat([]byte{'^'}, max(n, 1)))
}

// runeWidth is the number of terminal columns r takes: 2 for East Asian
// wide and full-width characters, 0 for combining marks, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
