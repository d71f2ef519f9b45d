package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

type closeBuffer struct{ bytes.Buffer }

func (*closeBuffer) Close() error { return nil }

// TestStdioLineCap: a line over the cap is answered with an error and
// dropped whole; the next message is read as usual, in both read modes.
func TestStdioLineCap(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 300<<10) + `"}}`
	in := long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + long[:1000] + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	for _, direct := range []bool{false, true} {
		var out closeBuffer
		var r io.ReadCloser = io.NopCloser(strings.NewReader(in))
		if direct {
			r = deadlineReader{r}
		}
		conn, err := (&stdioTransport{in: r, out: &out, max: 100 << 10}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if c := conn.(*stdioConn); (c.direct != nil) != direct {
			t.Fatalf("direct mode %v, want %v", c.direct != nil, direct)
		}
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if req, ok := msg.(*jsonrpc.Request); !ok || req.ID.Raw() != int64(2) {
			t.Fatalf("want the request with id 2 after the long line, got %#v", msg)
		}
		var refusal struct {
			ID    *int `json:"id"`
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(out.Bytes(), &refusal); err != nil || refusal.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(refusal.Error.Message, "longer than 102400 bytes") {
			t.Fatalf("refusal of the long line: %v %q", err, out.String())
		}
		out.Reset()
		// A message cut short is a parse error; the last line, without a
		// newline, is read at the input's end, and then the end.
		msg, err = conn.Read(context.Background())
		if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.ID.Raw() != int64(3) {
			t.Fatalf("want the last request, with id 3, got %#v %v", msg, err)
		}
		if !strings.Contains(out.String(), "-32700") {
			t.Fatalf("a truncated message: want a parse error, got %q", out.String())
		}
		// The end of input is reported once the requests read are
		// answered (TestStdioAnswersBeforeEOF).
		for _, n := range []int64{2, 3} {
			id, _ := jsonrpc.MakeID(float64(n))
			if err := conn.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Read(context.Background()); err != io.EOF {
			t.Fatalf("at the end of the input: %v, want io.EOF", err)
		}
		conn.Close()
	}
}

// TestStdioResponseEncoding: the fast encoding of a response is what the
// SDK's encoder writes, for every kind of id.
func TestStdioResponseEncoding(t *testing.T) {
	ids := []any{int64(0), int64(-5), int64(1) << 53, "", "plain", "quote\"back\\slash", "<&>", "é✓", "\x01\u2028", "\xff"}
	for _, v := range ids {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			if n, ok := v.(int64); ok {
				id, err = jsonrpc.MakeID(float64(n))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		r := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"content":[{"type":"text","text":"a\nb"}]}`)}
		got, err := appendMessage(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
			t.Fatalf("id %q: not JSON: %s / %s", v, got, want)
		}
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			t.Fatalf("id %q: fast encoding %s, SDK's %s", v, got, want)
		}
	}
}

// deadlineReader is a reader with a SetReadDeadline that works, as a
// non-blocking pipe's: the connection reads it directly.
type deadlineReader struct{ io.ReadCloser }

func (deadlineReader) SetReadDeadline(time.Time) error { return nil }
