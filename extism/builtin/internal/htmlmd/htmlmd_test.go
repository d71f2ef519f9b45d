package htmlmd

import (
	"net/url"
	"testing"
)

func TestConvert(t *testing.T) {
	base, _ := url.Parse("https://example.com/docs/page.html")
	doc := `<!doctype html><html><head><title> The  Title </title><style>p{}</style>
<script>alert("x")</script></head><body>
<nav><a href="/">Home</a></nav>
<h1>Main <em>heading</em></h1>
<p>Some   <b>bold</b> and <i>italic</i> text
with a <a href="other.html">relative link</a>, an <a href="javascript:void(0)">empty one</a> and <code>x := 1</code>.<br>Next line.</p>
<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
<ol><li>first</li><li><p>second</p></li></ol>
<pre><code>func main() {
    fmt.Println("hi")
}</code></pre>
<blockquote><p>quoted</p><p>twice</p></blockquote>
<table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody><tr><td>a|b</td><td>1</td></tr><tr><td>c</td></tr></tbody></table>
<img src="/img.png" alt="a picture">
<form><input value="secret"><button>Go</button></form>
<div>trailing <span>text</span></div>
</body></html>`
	title, md, err := Convert([]byte(doc), base)
	if err != nil {
		t.Fatal(err)
	}
	if title != "The Title" {
		t.Errorf("title = %q", title)
	}
	want := "[Home](https://example.com/)\n\n" +
		"# Main *heading*\n\n" +
		"Some **bold** and *italic* text with a [relative link](https://example.com/docs/other.html), an empty one and `x := 1`.\nNext line.\n\n" +
		"- one\n- two\n  - nested\n\n" +
		"1. first\n2. second\n\n" +
		"```\nfunc main() {\n    fmt.Println(\"hi\")\n}\n```\n\n" +
		"> quoted\n>\n> twice\n\n" +
		"| Name | Value |\n| --- | --- |\n| a\\|b | 1 |\n| c |  |\n\n" +
		"![a picture](https://example.com/img.png)\n\n" +
		"trailing text"
	if md != want {
		t.Errorf("markdown:\n%s\n--- want:\n%s", md, want)
	}
}

func TestConvertTitleFallbackAndJunk(t *testing.T) {
	title, md, err := Convert([]byte("<h1>Only heading</h1><p>x</p>"), nil)
	if err != nil || title != "Only heading" || md != "# Only heading\n\nx" {
		t.Errorf("= %q, %q, %v", title, md, err)
	}
	for _, junk := range []string{"", "<<<>>>", "<p><b><i>unclosed", "\x00\xff\xfe", "<table><tr>"} {
		if _, _, err := Convert([]byte(junk), nil); err != nil {
			t.Errorf("Convert(%q): %v", junk, err)
		}
	}
}

func FuzzConvert(f *testing.F) {
	f.Add("<p>a <a href='x'>b</a></p><ul><li>c</ul><pre>d</pre><table><tr><td>e</table>")
	f.Fuzz(func(t *testing.T, doc string) {
		_, _, _ = Convert([]byte(doc), nil)
	})
}
