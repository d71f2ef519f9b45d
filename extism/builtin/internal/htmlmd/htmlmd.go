// Package htmlmd converts HTML to Markdown for web.fetch: headings,
// paragraphs, links (resolved against the page's URL), emphasis, lists,
// code and preformatted blocks, block quotes and tables, roughly as a
// reader sees them. Scripts, styles, forms and other non-content elements
// are dropped. The output is meant for a model to read, not to round-trip.
package htmlmd

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Convert parses an HTML document and returns its title and its content
// as Markdown. base resolves relative links; it may be nil.
func Convert(doc []byte, base *url.URL) (title, markdown string, err error) {
	root, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		return "", "", err
	}
	c := &conv{base: base}
	title = strings.TrimSpace(collapse(textOf(find(root, atom.Title))))
	body := find(root, atom.Body)
	if body == nil {
		body = root
	}
	md := c.block(body)
	if title == "" {
		if h := find(body, atom.H1); h != nil {
			title = strings.TrimSpace(collapse(textOf(h)))
		}
	}
	return title, md, nil
}

type conv struct {
	base *url.URL
}

// skipped elements carry no content for a reader.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Head: true, atom.Svg: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Button: true, atom.Select: true, atom.Input: true, atom.Textarea: true, atom.Canvas: true,
	atom.Audio: true, atom.Video: true, atom.Map: true,
}

// blocks start on a new line (and end one).
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Nav: true, atom.Blockquote: true,
	atom.Pre: true, atom.Ul: true, atom.Ol: true, atom.Li: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Table: true, atom.Thead: true,
	atom.Tbody: true, atom.Tfoot: true, atom.Tr: true, atom.Hr: true, atom.Dl: true, atom.Dt: true,
	atom.Dd: true, atom.Figure: true, atom.Figcaption: true, atom.Form: true, atom.Fieldset: true,
	atom.Address: true, atom.Details: true, atom.Summary: true, atom.Body: true, atom.Html: true,
	atom.Center: true, atom.Caption: true,
}

func isBlock(n *html.Node) bool { return n.Type == html.ElementNode && blocks[n.DataAtom] }

// block renders the children of n as Markdown blocks separated by blank
// lines.
func (c *conv) block(n *html.Node) string { return c.blockSep(n, "\n\n") }

// blockSep renders the children of n as blocks joined by sep (a list item's
// blocks stay tight: "\n").
func (c *conv) blockSep(n *html.Node, sep string) string {
	var parts []string
	var inl strings.Builder
	flush := func() {
		if t := tidy(inl.String()); t != "" {
			parts = append(parts, t)
		}
		inl.Reset()
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.ElementNode && skipped[ch.DataAtom] {
			continue
		}
		if isBlock(ch) {
			flush()
			if s := c.element(ch); s != "" {
				parts = append(parts, s)
			}
			continue
		}
		c.inline(ch, &inl)
	}
	flush()
	return strings.Join(parts, sep)
}

// element renders one block element.
func (c *conv) element(n *html.Node) string {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		t := c.inlineText(n)
		if t == "" {
			return ""
		}
		return strings.Repeat("#", int(n.Data[1]-'0')) + " " + t
	case atom.Pre:
		t := strings.TrimRight(textOf(n), "\n")
		if strings.TrimSpace(t) == "" {
			return ""
		}
		fence := "```"
		for strings.Contains(t, fence) {
			fence += "`"
		}
		return fence + "\n" + t + "\n" + fence
	case atom.Ul, atom.Ol:
		return c.list(n)
	case atom.Blockquote:
		inner := c.block(n)
		if inner == "" {
			return ""
		}
		return prefixLines(inner, "> ", "> ")
	case atom.Table:
		return c.table(n)
	case atom.Hr:
		return "---"
	case atom.Dt:
		if t := c.inlineText(n); t != "" {
			return "**" + t + "**"
		}
		return ""
	case atom.Li:
		// A list item outside a list: render as a bullet.
		if inner := c.block(n); inner != "" {
			return prefixLines(inner, "- ", "  ")
		}
		return ""
	}
	return c.block(n)
}

func (c *conv) list(n *html.Node) string {
	var items []string
	i := 1
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != html.ElementNode || ch.DataAtom != atom.Li {
			continue
		}
		marker := "- "
		if n.DataAtom == atom.Ol {
			marker = itoa(i) + ". "
			i++
		}
		inner := c.blockSep(ch, "\n")
		if inner == "" {
			continue
		}
		items = append(items, prefixLines(inner, marker, strings.Repeat(" ", len(marker))))
	}
	return strings.Join(items, "\n")
}

func (c *conv) table(n *html.Node) string {
	var rows [][]string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type != html.ElementNode {
				continue
			}
			switch ch.DataAtom {
			case atom.Tr:
				var row []string
				for td := ch.FirstChild; td != nil; td = td.NextSibling {
					if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
						cell := strings.ReplaceAll(c.inlineText(td), "\n", " ")
						row = append(row, strings.ReplaceAll(cell, "|", `\|`))
					}
				}
				if len(row) > 0 {
					rows = append(rows, row)
				}
			case atom.Thead, atom.Tbody, atom.Tfoot:
				walk(ch)
			}
		}
	}
	walk(n)
	if len(rows) == 0 {
		return ""
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	var sb strings.Builder
	for i, r := range rows {
		for len(r) < width {
			r = append(r, "")
		}
		sb.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			sb.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		}
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// inlineText renders n's content as one inline run.
func (c *conv) inlineText(n *html.Node) string {
	var sb strings.Builder
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.inline(ch, &sb)
	}
	return tidy(sb.String())
}

// inline renders an inline node. Text has its whitespace collapsed here;
// <br> is the only newline.
func (c *conv) inline(n *html.Node, sb *strings.Builder) {
	switch n.Type {
	case html.TextNode:
		sb.WriteString(collapse(n.Data))
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	wrap := func(mark string) {
		if t := c.inlineText(n); t != "" {
			sb.WriteString(mark + t + mark)
		}
	}
	switch n.DataAtom {
	case atom.Br:
		sb.WriteString("\n")
	case atom.A:
		t := c.inlineText(n)
		href := c.resolve(attr(n, "href"))
		switch {
		case t == "":
		case href == "":
			sb.WriteString(t)
		default:
			sb.WriteString("[" + strings.ReplaceAll(t, "\n", " ") + "](" + href + ")")
		}
	case atom.Strong, atom.B:
		wrap("**")
	case atom.Em, atom.I:
		wrap("*")
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		t := collapse(textOf(n))
		if strings.TrimSpace(t) != "" {
			fence := "`"
			if strings.Contains(t, "`") {
				fence = "``"
			}
			sb.WriteString(fence + strings.TrimSpace(t) + fence)
		}
	case atom.Img:
		if src := c.resolve(attr(n, "src")); src != "" {
			sb.WriteString("![" + collapse(attr(n, "alt")) + "](" + src + ")")
		}
	default:
		if isBlock(n) {
			sb.WriteString(" ")
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			c.inline(ch, sb)
		}
		if isBlock(n) {
			sb.WriteString(" ")
		}
	}
}

// resolve makes a link absolute; javascript: and empty links give "".
func (c *conv) resolve(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(strings.ToLower(ref), "javascript:") {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if c.base != nil {
		u = c.base.ResolveReference(u)
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(u.String())
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// find returns the first element of the given kind under n.
func find(n *html.Node, a atom.Atom) *html.Node {
	if n == nil {
		return nil
	}
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if f := find(ch, a); f != nil {
			return f
		}
	}
	return nil
}

// textOf returns all text under n, as is.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	if n.Type == html.TextNode {
		return n.Data
	}
	var sb strings.Builder
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.ElementNode && (ch.DataAtom == atom.Script || ch.DataAtom == atom.Style) {
			continue
		}
		sb.WriteString(textOf(ch))
	}
	return sb.String()
}

// collapse turns every run of whitespace into one space.
func collapse(s string) string {
	var sb strings.Builder
	space := false
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\u00a0':
			space = true
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	if space {
		sb.WriteByte(' ')
	}
	return sb.String()
}

// tidy trims spaces around the newlines of an inline run, and the run.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n ")
}

// prefixLines puts first before the first line and rest before the others.
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		if l == "" {
			lines[i] = strings.TrimRight(p, " ")
		} else {
			lines[i] = p + l
		}
	}
	return strings.Join(lines, "\n")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
