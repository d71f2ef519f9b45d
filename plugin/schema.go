package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless the document says
// otherwise). Schemas never load anything from outside the document: a $ref
// to a file or URL is a compile error, so a config cannot make the host read
// files through a schema.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
	// flat, if not nil, accepts most documents that meet the schema
	// without decoding them (flatschema.go).
	flat *flatSchema
}

// CompileSchema compiles a JSON Schema document.
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		if _, isBool := v.(bool); !isBool {
			return nil, fmt.Errorf("schema must be a JSON object, got %s", jsonKind(v))
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	const url = "toolhost:///schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			if ve, ok := sve.Err.(*jsonschema.ValidationError); ok {
				return nil, fmt.Errorf("invalid schema: %s", strings.Join(describe(ve, v), "; "))
			}
		}
		return nil, fmt.Errorf("invalid schema: %s", strings.TrimPrefix(err.Error(), "jsonschema: "))
	}
	return &Schema{raw: doc, compiled: s, flat: compileFlat(v)}, nil
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %q: external references are not loaded", url)
}

// Raw returns the schema document.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// ValidateJSON validates a JSON document against the schema. The error, if
// any, is an INVALID_REQUEST-style message naming each offending field, what
// was expected and what was given, one problem per line.
func (s *Schema) ValidateJSON(doc []byte) error {
	if s.flat != nil && json.Valid(doc) && s.flat.accepts(doc) {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	return s.Validate(v)
}

// Validate validates a value decoded by jsonschema.UnmarshalJSON (numbers as
// json.Number).
func (s *Schema) Validate(v any) error {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	return &SchemaError{Problems: describe(ve, v)}
}

// SchemaError lists what is wrong with a document, one problem per entry,
// each phrased so that a model can correct its next call.
type SchemaError struct {
	Problems []string
}

func (e *SchemaError) Error() string { return strings.Join(e.Problems, "; ") }

var printer = message.NewPrinter(language.English)

// describe flattens a validation error tree into messages. Leaves carry the
// precise problems; a oneOf/anyOf group is described by its own message when
// its branches disagree, since listing every branch's complaint confuses more
// than it helps.
func describe(root *jsonschema.ValidationError, instance any) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch e.ErrorKind.(type) {
		case *kind.Group, *kind.AllOf, *kind.Schema, *kind.Reference:
			for _, c := range byLocation(e.Causes) {
				walk(c)
			}
			return
		}
		_, isAny := e.ErrorKind.(*kind.AnyOf)
		_, isOne := e.ErrorKind.(*kind.OneOf)
		if len(e.Causes) > 0 && !isAny && !isOne {
			for _, c := range byLocation(e.Causes) {
				walk(c)
			}
			return
		}
		msg := problem(e, instance)
		if isAny || isOne {
			// Say what each alternative wanted: "x: expected one of ...; or expected array".
			alts := describe(&jsonschema.ValidationError{ErrorKind: &kind.Group{}, Causes: e.Causes}, instance)
			if len(alts) > 0 && len(alts) <= 4 {
				msg = strings.Join(alts, "; or ")
			}
		}
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	walk(root)
	if len(out) == 0 {
		out = append(out, "arguments do not match the input schema")
	}
	return out
}

// byLocation orders errors by the field they concern: the library collects
// them from maps, and a message that changes from call to call confuses a
// model (and a golden file). Errors about one field keep their order.
func byLocation(errs []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	out := slices.Clone(errs)
	slices.SortStableFunc(out, func(a, b *jsonschema.ValidationError) int {
		return slices.Compare(a.InstanceLocation, b.InstanceLocation)
	})
	return out
}

func problem(e *jsonschema.ValidationError, instance any) string {
	loc := e.InstanceLocation
	field := fieldName(loc)
	prefix := ""
	if field != "" {
		prefix = field + ": "
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		names := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			names[i] = strconv.Quote(m)
		}
		if len(names) == 1 {
			return prefix + "missing required field " + names[0]
		}
		return prefix + "missing required fields " + strings.Join(names, ", ")
	case *kind.Type:
		got := valueAt(instance, loc)
		return fmt.Sprintf("%sexpected %s, got %s", prefix, strings.Join(k.Want, " or "), describeValue(got))
	case *kind.AdditionalProperties:
		// The library lists them in map order; sort for a stable message.
		props := slices.Sorted(slices.Values(k.Properties))
		names := make([]string, len(props))
		for i, p := range props {
			names[i] = strconv.Quote(p)
		}
		what := "unexpected field "
		if len(names) > 1 {
			what = "unexpected fields "
		}
		return prefix + what + strings.Join(names, ", ") + " (not in the schema)"
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = compactJSON(w)
		}
		return fmt.Sprintf("%sexpected one of %s, got %s", prefix, strings.Join(want, ", "), describeValue(k.Got))
	case *kind.Const:
		return fmt.Sprintf("%sexpected %s, got %s", prefix, compactJSON(k.Want), describeValue(k.Got))
	}
	msg := e.ErrorKind.LocalizedString(printer)
	if field == "" {
		return "arguments: " + msg
	}
	return prefix + msg
}

// fieldName renders an instance location as a quoted field path:
// ["options","limit"] → `"options.limit"`, ["items","2"] → `"items[2]"`.
func fieldName(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for i, p := range loc {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return strconv.Quote(b.String())
}

func valueAt(v any, loc []string) any {
	for _, p := range loc {
		switch t := v.(type) {
		case map[string]any:
			v = t[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// maxShown is how many bytes of a wrong value a message quotes.
const maxShown = 50

func describeValue(v any) string {
	switch t := v.(type) {
	case map[string]any, []any:
		return jsonKind(v)
	case nil:
		return "null"
	case string:
		if len(t) > maxShown {
			// Cut the value, not its quoted form, so that the message
			// keeps whole runes and escapes and a closing quote.
			cut := maxShown
			for cut > 0 && !utf8.RuneStart(t[cut]) {
				cut--
			}
			q := compactJSON(t[:cut])
			return fmt.Sprintf("string %s...\" (%d bytes)", q[:len(q)-1], len(t))
		}
	}
	s := compactJSON(v)
	if len(s) > maxShown+10 {
		s = s[:maxShown] + "..." // numbers and booleans: ASCII
	}
	return jsonKind(v) + " " + s
}

func jsonKind(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64, int, int64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
