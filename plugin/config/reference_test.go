package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// schemaNames adds every block and attribute name of the HCL schema, read
// from the raw structs' hcl tags, to out as "block.name" paths.
func schemaNames(t reflect.Type, prefix string, seen map[reflect.Type]bool, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		switch {
		case name == "" || kind == "label" || kind == "attr_value_range" || kind == "def_range" || kind == "remain":
			continue
		case kind == "block":
			out[prefix+name] = true
			schemaNames(f.Type, prefix+name+".", seen, out)
		default:
			out[prefix+name] = true
		}
	}
}

var (
	codeSpan = regexp.MustCompile("`[^`\n]+`")
	word     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// The README's configuration reference and docs/configuration.md name, in
// code, every block, attribute and limit the decoder accepts, so that
// neither falls behind the schema.
func TestReferenceComplete(t *testing.T) {
	names := map[string]bool{}
	schemaNames(reflect.TypeOf(rawFile{}), "", map[reflect.Type]bool{}, names)
	for _, f := range limitFields {
		names["limits."+f.name] = true
	}
	if !names["tool.wasm.export"] || !names["mcp_server.headers"] || !names["limits.idle_timeout"] {
		t.Fatalf("the schema walk missed names: %v", names)
	}
	for _, doc := range []string{"../../README.md", "../../docs/configuration.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		// The words of the document's code spans: where names are written.
		words := map[string]bool{}
		for _, span := range codeSpan.FindAllString(string(b), -1) {
			for _, w := range word.FindAllString(span, -1) {
				words[w] = true
			}
		}
		for path := range names {
			if name := path[strings.LastIndex(path, ".")+1:]; !words[name] {
				t.Errorf("%s does not document %s", doc, path)
			}
		}
	}
}
