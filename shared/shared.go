// Package shared is what a subprocess tool plugin imports: the go-plugin
// handshake, the gRPC contract (package pluginv1, generated from
// pluginv1/plugin.proto) and [Serve], the one call a Go plugin author needs:
//
//	func main() {
//		shared.Serve(myTools{})
//	}
//
// The host side (package subprocess) uses the same [Handshake] and
// [GRPCPlugin] to talk to the plugin. Every payload is MCP-shaped JSON, the
// same shapes a wasm tool's list_tools and call_tool exchange, so a plugin in
// any language needs only plugin.proto and the handshake
// (docs/plugin-protocol.md).
//
// This package never imports host code.
package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolhost/toolhost/shared/pluginv1"
)

// ProtocolVersion is the plugin protocol version. It changes only when the
// gRPC contract changes incompatibly.
const ProtocolVersion = 1

// PluginName is the name the tools service is dispensed under in go-plugin's
// plugin set.
const PluginName = "tools"

// Handshake is the go-plugin handshake host and plugin must agree on. The
// magic cookie is not a security measure: it only keeps a user who runs a
// plugin binary by hand from getting a confusing error.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "TOOLHOST_PLUGIN",
	MagicCookieValue: "b6f1d0a2-tool-host-subprocess-v1",
}

// Tool describes one tool, shaped like an MCP tools/list entry.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// ListToolsResult is the MCP tools/list result.
type ListToolsResult struct {
	Tools []Tool `json:"tools"`
}

// CallToolParams names the tool to call and carries its arguments.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CallToolRequest is the MCP tools/call request, in the hyper-mcp shape
// ({"params":{...}}) that wasm tools receive too.
type CallToolRequest struct {
	Params CallToolParams `json:"params"`
}

// Content is one item of a result, shaped like MCP content. Data is base64
// in JSON.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
}

// CallToolResult is the MCP tools/call result.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// TextResult returns a result holding one text item.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{{Type: "text", Text: text}}}
}

// ErrorResult returns an error result holding one text item. Use it for
// failures the model should see and can correct (a bad path, a command that
// failed); return a Go error only for failures of the plugin itself.
func ErrorResult(format string, args ...any) *CallToolResult {
	r := TextResult(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// Tools is what a Go plugin implements. Implementations must be safe for
// concurrent use: the host may call CallTool from several goroutines.
// ctx carries the host's deadline for the call.
type Tools interface {
	ListTools(ctx context.Context) ([]Tool, error)
	CallTool(ctx context.Context, name string, arguments json.RawMessage) (*CallToolResult, error)
}

// ErrUnknownTool is what a Tools implementation returns (wrapped or not) for
// a name it does not serve.
var ErrUnknownTool = errors.New("unknown tool")

// Serve serves impl over go-plugin's gRPC transport and returns when the host
// tells the plugin to stop. It must be the only thing main does after setup;
// the process exits when Serve returns. A binary that is run by hand (without
// the host's handshake environment) prints a short explanation and exits 1.
func Serve(impl Tools) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

// PluginSet returns the plugin set a host passes to go-plugin's ClientConfig.
func PluginSet() goplugin.PluginSet {
	return goplugin.PluginSet{PluginName: &GRPCPlugin{}}
}

// GRPCPlugin adapts [Tools] to go-plugin. Plugins set Impl (Serve does it for
// them); hosts leave it nil and dispense a [*Client].
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl Tools
}

// GRPCServer registers the tools service on s.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("shared: GRPCPlugin.Impl is nil")
	}
	pluginv1.RegisterToolsServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns a [*Client] over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{rpc: pluginv1.NewToolsClient(conn)}, nil
}

// Client is the host's view of a plugin: raw MCP JSON in and out, so the host
// validates every byte a plugin sends instead of trusting a decoder.
type Client struct {
	rpc pluginv1.ToolsClient
}

// ListTools returns the plugin's raw tools/list JSON.
func (c *Client) ListTools(ctx context.Context, opts ...grpc.CallOption) ([]byte, error) {
	r, err := c.rpc.ListTools(ctx, &pluginv1.ListToolsRequest{}, opts...)
	if err != nil {
		return nil, err
	}
	return r.GetJson(), nil
}

// CallTool sends a raw tools/call request and returns the raw result JSON.
// opts can raise gRPC's 4 MiB receive limit for large results.
func (c *Client) CallTool(ctx context.Context, request []byte, opts ...grpc.CallOption) ([]byte, error) {
	r, err := c.rpc.CallTool(ctx, &pluginv1.CallToolRequest{Json: request}, opts...)
	if err != nil {
		return nil, err
	}
	return r.GetJson(), nil
}

type server struct {
	pluginv1.UnimplementedToolsServer
	impl Tools
}

func (s *server) ListTools(ctx context.Context, _ *pluginv1.ListToolsRequest) (*pluginv1.ListToolsResponse, error) {
	tools, err := s.impl.ListTools(ctx)
	if err != nil {
		return nil, err
	}
	if tools == nil {
		tools = []Tool{}
	}
	b, err := json.Marshal(ListToolsResult{Tools: tools})
	if err != nil {
		return nil, err
	}
	return &pluginv1.ListToolsResponse{Json: b}, nil
}

func (s *server) CallTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	b, err := s.call(ctx, req)
	if err != nil {
		return nil, err
	}
	return &pluginv1.CallToolResponse{Json: b}, nil
}

// CallToolSession runs one call whose context lets the tool report and ask
// (Progress, Log, Sample, Elicit) over the stream.
func (s *server) CallToolSession(stream pluginv1.Tools_CallToolSessionServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req := first.GetCall()
	if req == nil {
		return errors.New("a call session starts with the call")
	}
	sess := &session{stream: stream, waiting: map[uint64]chan []byte{}}
	go sess.receive()
	ctx := context.WithValue(stream.Context(), sessionKey{}, sess)
	b, err := s.call(ctx, req)
	if err != nil {
		return err
	}
	return sess.send(&pluginv1.PluginMessage{Message: &pluginv1.PluginMessage_Result{Result: &pluginv1.CallToolResponse{Json: b}}})
}

// call runs one tools/call request and returns the result's JSON.
func (s *server) call(ctx context.Context, req *pluginv1.CallToolRequest) ([]byte, error) {
	var call CallToolRequest
	if err := json.Unmarshal(req.GetJson(), &call); err != nil {
		return nil, fmt.Errorf("tools/call request: %w", err)
	}
	res, err := s.impl.CallTool(ctx, call.Params.Name, call.Params.Arguments)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return json.Marshal(res)
}

// ErrNoSession is returned by Client.CallToolSession when the plugin does
// not serve CallToolSession (a plugin built before it, or in another
// language without it): call CallTool instead.
var ErrNoSession = errors.New("the plugin does not serve CallToolSession")

// SessionHandler is what the host does with what a plugin sends during a
// call session. Both methods may be called from several goroutines.
type SessionHandler interface {
	// Notify receives a notification's JSON.
	Notify(json []byte)
	// Ask answers a request to the caller's client (kind "sampling" or
	// "elicitation") with the answer's JSON, or returns an error that ends
	// the call (a per-call limit was passed), which CallToolSession
	// returns.
	Ask(ctx context.Context, kind string, json []byte) ([]byte, error)
}

// CallToolSession is CallTool over the plugin's CallToolSession stream:
// what the plugin reports and asks while the call runs goes to h, and h's
// answers back to the plugin. It returns the result's JSON, ErrNoSession
// when the plugin does not serve the stream (nothing was run), or the
// error of h.Ask that ended the call.
func (c *Client) CallToolSession(ctx context.Context, request []byte, h SessionHandler, opts ...grpc.CallOption) ([]byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	var asks sync.WaitGroup
	defer func() {
		cancel(nil) // ends the asks still waiting for the client
		asks.Wait()
	}()
	stream, err := c.rpc.CallToolSession(ctx, opts...)
	if err != nil {
		return nil, sessionErr(err)
	}
	var sendMu sync.Mutex
	send := func(m *pluginv1.HostMessage) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&pluginv1.HostMessage{Message: &pluginv1.HostMessage_Call{Call: &pluginv1.CallToolRequest{Json: request}}}); err != nil {
		if _, rerr := stream.Recv(); rerr != nil {
			return nil, sessionErr(rerr)
		}
		return nil, sessionErr(err)
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
				return nil, cause
			}
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the plugin ended the call session without a result")
			}
			return nil, sessionErr(err)
		}
		switch x := m.GetMessage().(type) {
		case *pluginv1.PluginMessage_Result:
			_ = stream.CloseSend()
			return x.Result.GetJson(), nil
		case *pluginv1.PluginMessage_Notification:
			h.Notify(x.Notification.GetJson())
		case *pluginv1.PluginMessage_Ask:
			id, kind, body := x.Ask.GetId(), x.Ask.GetKind(), x.Ask.GetJson()
			asks.Add(1)
			go func() {
				defer asks.Done()
				answer, err := h.Ask(ctx, kind, body)
				if err != nil {
					cancel(err)
					return
				}
				_ = send(&pluginv1.HostMessage{Message: &pluginv1.HostMessage_Answer{Answer: &pluginv1.AskResponse{Id: id, Json: answer}}})
			}()
		}
	}
}

// sessionErr turns UNIMPLEMENTED into ErrNoSession.
func sessionErr(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return ErrNoSession
	}
	return err
}
