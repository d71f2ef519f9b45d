package plugin

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/jsonscan"
)

// A flatSchema is an object schema whose every constraint a scan of the
// document can check in place: the input schema of most tools (named
// arguments of simple types, some required, nothing else allowed).
// Validating arguments against it needs no decode, which on a small tool
// call costs about as much as the rest of the pipeline together.
//
// It only ever accepts: a document it does not accept (a problem, or only
// something it does not check, such as an escaped string or 1.0 for an
// integer) goes to the full validator, which decides and explains. So it
// may be stricter than the schema, never looser.
type flatSchema struct {
	props    map[string]*flatProp
	closed   bool   // additionalProperties: false
	required uint64 // bits of the properties that must be present
}

// flatProp is what a flatSchema checks of one property's value.
type flatProp struct {
	bit              uint64
	kinds            kindSet
	minLen, maxLen   int // -1: no bound
	hasMin, hasMax   bool
	minimum, maximum int64 // inclusive
	enum             []string
}

type kindSet uint8

const (
	kString kindSet = 1 << iota
	kInteger
	kNumber
	kBoolean
	kNull
	kAny kindSet = 1<<8 - 1 // no "type": objects and arrays too
)

var kindNames = map[string]kindSet{"string": kString, "integer": kInteger, "number": kNumber, "boolean": kBoolean, "null": kNull}

// The dialects whose meaning of the keywords below is the one checked.
var flatDialects = []string{
	"https://json-schema.org/draft/2020-12/schema",
	"https://json-schema.org/draft/2019-09/schema",
	"http://json-schema.org/draft-07/schema#",
	"http://json-schema.org/draft-07/schema",
}

// isAnnotation reports whether a keyword only annotates, so a validator
// ignores it.
func isAnnotation(k string) bool {
	switch k {
	case "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// compileFlat returns the flatSchema of a decoded schema document, or nil
// if it uses anything a scan does not check.
func compileFlat(v any) *flatSchema {
	m, ok := v.(map[string]any)
	if !ok || m["type"] != "object" {
		return nil
	}
	f := &flatSchema{props: map[string]*flatProp{}}
	add := func(name string) *flatProp {
		p := f.props[name]
		if p == nil {
			if len(f.props) == 64 {
				return nil
			}
			p = &flatProp{bit: 1 << len(f.props), kinds: kAny, minLen: -1, maxLen: -1}
			f.props[name] = p
		}
		return p
	}
	for k, val := range m {
		switch k {
		case "type", "$id", "$defs", "definitions": // $defs only matter through a $ref, which nothing here has
		case "$schema":
			if s, _ := val.(string); !slices.Contains(flatDialects, s) {
				return nil
			}
		case "properties":
			props, ok := val.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				p := add(name)
				if p == nil || !p.compile(ps) {
					return nil
				}
			}
		case "required":
			names, ok := val.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil
				}
				p := add(name)
				if p == nil {
					return nil
				}
				f.required |= p.bit
			}
		case "additionalProperties":
			allowed, ok := val.(bool)
			if !ok {
				return nil
			}
			f.closed = !allowed
		default:
			if !isAnnotation(k) {
				return nil
			}
		}
	}
	return f
}

// compile reads one property's schema into p, reporting whether every
// keyword in it is one that p checks.
func (p *flatProp) compile(v any) bool {
	if b, ok := v.(bool); ok {
		if !b {
			p.kinds = 0 // nothing: the full validator says why
		}
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, val := range m {
		switch k {
		case "type":
			p.kinds = 0
			types, isList := val.([]any)
			if !isList {
				types = []any{val}
			}
			for _, t := range types {
				name, _ := t.(string)
				kind := kindNames[name]
				if kind == 0 { // object, array: their contents are not checked here
					return false
				}
				p.kinds |= kind
			}
		case "minLength", "maxLength":
			n, ok := integral(val)
			if !ok || n < 0 || n > 1<<31 {
				return false
			}
			if k == "minLength" {
				p.minLen = int(n)
			} else {
				p.maxLen = int(n)
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, ok := integral(val)
			if !ok || n <= -1<<62 || n >= 1<<62 {
				return false
			}
			switch k { // inclusive integer bounds; the tighter of two wins
			case "exclusiveMinimum":
				n++
				fallthrough
			case "minimum":
				if !p.hasMin || n > p.minimum {
					p.hasMin, p.minimum = true, n
				}
			case "exclusiveMaximum":
				n--
				fallthrough
			case "maximum":
				if !p.hasMax || n < p.maximum {
					p.hasMax, p.maximum = true, n
				}
			}
		case "enum":
			list, ok := val.([]any)
			if !ok {
				return false
			}
			p.enum = []string{} // an empty enum accepts nothing
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return false
				}
				p.enum = append(p.enum, s)
			}
		default:
			if !isAnnotation(k) {
				return false
			}
		}
	}
	return true
}

// integral returns a schema's number (a json.Number, as
// jsonschema.UnmarshalJSON decodes it) if it is a plain integer.
func integral(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// accepts reports whether doc, valid JSON, is an object that meets every
// constraint of f. False means only that the full validator must decide.
func (f *flatSchema) accepts(doc []byte) bool {
	var seen uint64
	return jsonscan.Members(doc, func(name, v []byte) bool {
		p := f.props[string(name)]
		if p == nil {
			return !f.closed
		}
		if seen&p.bit != 0 {
			return false // a repeated member: which one counts is the decoder's business
		}
		seen |= p.bit
		return p.accepts(v)
	}) && seen&f.required == f.required
}

// accepts reports whether v, one valid JSON value, meets p.
func (p *flatProp) accepts(v []byte) bool {
	switch v[0] {
	case '"':
		if p.kinds&kString == 0 {
			return false
		}
		if p.minLen < 0 && p.maxLen < 0 && p.enum == nil {
			return true
		}
		body := v[1 : len(v)-1]
		if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
			return false // what it decodes to is not its bytes
		}
		if p.enum != nil && !slices.Contains(p.enum, string(body)) {
			return false
		}
		n := utf8.RuneCount(body)
		return n >= p.minLen && (p.maxLen < 0 || n <= p.maxLen)
	case 't', 'f':
		return p.kinds&kBoolean != 0 && p.enum == nil
	case 'n':
		return p.kinds&kNull != 0 && p.enum == nil
	case '{', '[':
		return p.kinds == kAny && p.enum == nil
	}
	if p.enum != nil || p.kinds&(kInteger|kNumber) == 0 {
		return false
	}
	isInt := bytes.IndexAny(v, ".eE") < 0
	if !isInt && (p.kinds&kNumber == 0 || p.hasMin || p.hasMax) {
		return false // 1.0 is an integer, and 1.5 against a bound: the full validator
	}
	if !p.hasMin && !p.hasMax {
		return true
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	return (!p.hasMin || n >= p.minimum) && (!p.hasMax || n <= p.maximum)
}
