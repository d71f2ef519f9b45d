package mcp

import (
	"bytes"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCommon decodes a message as jsonrpc.DecodeMessage does, if it has
// the common shape (no "error" member, a plain string or a number for id, a
// method name without escapes); otherwise it returns nil. b must be valid
// JSON.
//
// The SDK's decoder allocates a 32 KiB read buffer for every message, which
// Go makes a large object and clears: on an idle host, tens of
// microseconds of a call. This is a scan of the object's members. Whatever
// it does not take, the SDK's decoder reads, with the message or the error
// it always gives.
func decodeCommon(b []byte) jsonrpc.Message {
	var (
		version, method, params, result, rawID []byte
		seen                                   [5]bool
	)
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return nil
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil // no version tag: the SDK explains
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok {
			return nil
		}
		i = skipSpace(b, next)
		if i == len(b) || b[i] != ':' {
			return nil
		}
		i = skipSpace(b, i+1)
		end := skipValue(b, i)
		if end < 0 {
			return nil
		}
		v := b[i:end]
		slot := -1
		switch string(key) {
		case "jsonrpc":
			slot, version = 0, v
		case "id":
			slot, rawID = 1, v
		case "method":
			slot, method = 2, v
		case "params":
			slot, params = 3, v
		case "result":
			slot, result = 4, v
		case "error":
			return nil
		}
		if slot >= 0 {
			if seen[slot] {
				return nil // a repeated member: the SDK's decoder decides
			}
			seen[slot] = true
		}
		i = skipSpace(b, end)
		if i == len(b) {
			return nil
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return nil
		}
		i = skipSpace(b, i+1)
	}
	if string(version) != `"2.0"` || string(params) == "null" || string(result) == "null" {
		return nil
	}
	var id jsonrpc.ID
	switch {
	case rawID == nil || string(rawID) == "null":
	case rawID[0] == '"':
		s, _, ok := plainString(rawID, 0)
		if !ok {
			return nil
		}
		id, _ = jsonrpc.MakeID(string(s))
	default:
		// A float64, as the SDK reads it (it keeps the integer part).
		f, err := strconv.ParseFloat(string(rawID), 64)
		if err != nil {
			return nil
		}
		id, _ = jsonrpc.MakeID(f)
	}
	if method != nil {
		name, _, ok := plainString(method, 0)
		if !ok {
			return nil
		}
		return &jsonrpc.Request{ID: id, Method: string(name), Params: bytes.Clone(params)}
	}
	if !id.IsValid() {
		return nil
	}
	return &jsonrpc.Response{ID: id, Result: bytes.Clone(result)}
}

// plainString reads the string starting at b[i]: its contents, which must
// be printable ASCII without escapes (else ok is false), and the index
// after its closing quote.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipValue returns the index after the JSON value starting at b[i], or -1
// if it is not one. It only finds the value's end; json.Valid judges the
// whole line.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
