package plugin

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// flatSchemas are input schemas of the shapes tools declare, the first two
// those of the built-in filesystem.list and filesystem.read.
var flatSchemas = []string{
	`{"type":"object","properties":{"path":{"type":"string","description":"Directory"},"depth":{"type":"integer","minimum":1,"maximum":20},"glob":{"type":"string"},"details":{"type":"boolean"}},"additionalProperties":false}`,
	`{"type":"object","properties":{"path":{"type":"string","minLength":1},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1},"encoding":{"type":"string","enum":["utf-8","latin-1"]}},"required":["path"],"additionalProperties":false}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"q":{"type":["string","null"],"maxLength":3},"n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10},"x":{"title":"anything"},"t":true},"required":["q","extra"]}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{"e":{"enum":[]},"f":false,"s":{"type":"string","minLength":2,"maxLength":2}}}`,
}

// flatCompiled compiles schema, which must have a flat check.
func flatCompiled(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if s.flat == nil {
		t.Fatalf("%s: no flat check", schema)
	}
	return s
}

// check reports what the flat check and the full validator say of doc.
func check(s *Schema, doc string) (flat, full bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
	if err != nil {
		return false, false
	}
	return json.Valid([]byte(doc)) && s.flat.accepts([]byte(doc)), s.compiled.Validate(v) == nil
}

func TestFlatSchema(t *testing.T) {
	list, read, mixed, anyObject, odd := flatSchemas[0], flatSchemas[1], flatSchemas[2], flatSchemas[3], flatSchemas[4]
	for _, tc := range []struct {
		schema, doc string
		flat        bool // the flat check accepts it (else the full validator decides)
	}{
		{list, `{}`, true},
		{list, ` { "path" : "dir" , "details" : true } `, true},
		{list, `{"path":"dir","depth":20,"glob":"*.go","details":false}`, true},
		{list, `{"path":"é/ü"}`, true},
		{list, `{"depth":1}`, true},
		{list, `{"depth":0}`, false},
		{list, `{"depth":21}`, false},
		{list, `{"depth":1.0}`, false}, // valid: 1.0 is an integer, which the full validator knows
		{list, `{"depth":2e0}`, false}, // valid too
		{list, `{"depth":"2"}`, false}, // wrong type
		{list, `{"details":"yes"}`, false},
		{list, `{"details":null}`, false},
		{list, `{"path":"a","path":"b"}`, false}, // repeated member
		{list, `{"pa\u0074h":"dir"}`, false},     // escaped name: the same member
		{list, `{"other":1}`, false},
		{list, `{"path":{"nested":true}}`, false},
		{list, `[]`, false},
		{list, `"path"`, false},
		{read, `{"path":"file4k.txt"}`, true},
		{read, `{"path":"f","offset":1,"limit":100,"encoding":"latin-1"}`, true},
		{read, `{"path":""}`, false},
		{read, `{"path":"\u0041"}`, false}, // valid: escapes go to the full validator
		{read, `{"offset":1}`, false},
		{read, `{"path":"f","encoding":"utf-16"}`, false},
		{read, `{"path":"f","encoding":"utf\u002d8"}`, false}, // valid, escaped
		{read, `{"path":"f","offset":-9223372036854775809}`, false},
		{read, `{"path":"f","limit":99999999999999999999}`, false}, // valid, beyond int64
		{mixed, `{"q":null,"extra":[1,{"a":"}"}]}`, true},
		{mixed, `{"q":"abc","extra":0,"n":9,"x":{"y":[]},"t":"z"}`, true},
		{mixed, `{"q":"abcd","extra":0}`, false},
		{mixed, `{"q":"a","extra":0,"n":10}`, false},
		{mixed, `{"q":"a","extra":0,"n":0}`, false},
		{mixed, `{"q":"a","extra":0,"n":0.5}`, false}, // valid, not an integer literal
		{mixed, `{"q":"a"}`, false},
		{mixed, `{"q":"a","extra":0,"more":true}`, true},
		{anyObject, `{}`, true},
		{anyObject, `{"b":[1,{"c":null}],"d":"\"}"}`, true},
		{anyObject, `[]`, false},
		{anyObject, `null`, false},
		{odd, `{"s":"ab"}`, true},
		{odd, `{"s":"a"}`, false},
		{odd, `{"s":"日本"}`, true},
		{odd, `{"s":"日本語"}`, false},
		{odd, `{"e":"x"}`, false},
		{odd, `{"f":1}`, false},
	} {
		flat, full := check(flatCompiled(t, tc.schema), tc.doc)
		if flat != tc.flat {
			t.Errorf("%s against %.40s…: flat check %v, want %v", tc.doc, tc.schema, flat, tc.flat)
		}
		if flat && !full {
			t.Errorf("%s against %.40s…: the flat check accepts what the schema does not", tc.doc, tc.schema)
		}
	}
}

// TestNotFlat: schemas whose constraints a scan does not check are left to
// the full validator whole.
func TestNotFlat(t *testing.T) {
	for _, schema := range []string{
		`true`,
		`{"properties":{"a":{"type":"string"}}}`, // no "type": "object"
		`{"type":["object"]}`,
		`{"type":"object","properties":{"a":{"type":"object"}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`,
		`{"type":"object","properties":{"a":{"enum":["x",1]}}}`,
		`{"type":"object","properties":{"a":{"const":"x"}}}`,
		`{"type":"object","properties":{"a":{"minimum":0.5}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
		`{"type":"object","minProperties":1}`,
		`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
	} {
		s, err := CompileSchema([]byte(schema))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if s.flat != nil {
			t.Errorf("%s: flat check compiled", schema)
		}
	}
}

// FuzzFlatSchema: whatever the flat check accepts, the full validator
// accepts.
func FuzzFlatSchema(f *testing.F) {
	for _, doc := range []string{`{}`, `{"path":"dir","depth":3}`, `{"path":"f","offset":1,"encoding":"utf-8"}`,
		`{"q":null,"extra":[1]}`, `{"q":"abc","extra":0,"n":9.5}`, `{"s":"日本","e":"x"}`, `{"depth":-0}`, `{"path":"\ud800"}`} {
		f.Add(doc)
	}
	var compiled []*Schema
	for _, schema := range flatSchemas {
		compiled = append(compiled, flatCompiled(f, schema))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for i, s := range compiled {
			if flat, full := check(s, doc); flat && !full {
				t.Fatalf("%s against %s: the flat check accepts what the schema does not", doc, flatSchemas[i])
			}
		}
	})
}
