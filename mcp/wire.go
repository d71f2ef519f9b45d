package mcp

import (
	"bytes"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/toolhost/toolhost/internal/jsonscan"
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
	if !jsonscan.Members(b, func(key, v []byte) bool {
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
			return false
		}
		if slot >= 0 {
			if seen[slot] {
				return false // a repeated member: the SDK's decoder decides
			}
			seen[slot] = true
		}
		return true
	}) {
		return nil
	}
	if string(version) != `"2.0"` || string(params) == "null" || string(result) == "null" {
		return nil
	}
	var id jsonrpc.ID
	switch {
	case rawID == nil || string(rawID) == "null":
	case rawID[0] == '"':
		s, _, ok := jsonscan.ASCIIString(rawID, 0)
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
		name, _, ok := jsonscan.ASCIIString(method, 0)
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
