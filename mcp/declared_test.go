package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/mcp"
	"github.com/toolhost/toolhost/plugin/declared"
)

// pngPixel is a 1x1 PNG.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")

// declaredOptions returns server options with a prompt of each kind of
// message, a text resource, a file-backed text and binary resource in dir
// (watched.txt, pixel.png), and a template.
func declaredOptions(t testing.TB, dir string) mcp.ServerOptions {
	t.Helper()
	for name, data := range map[string][]byte{"watched.txt": []byte("v1"), "pixel.png": pngPixel} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := declared.ParseURITemplate("docs://issue/{id}/{part}")
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) *declared.Text { t := declared.ParseText(s); return &t }
	many := make([]string, 150)
	for i := range many {
		many[i] = fmt.Sprintf("v%03d", i)
	}
	return mcp.ServerOptions{
		ResourcePollInterval: 20 * time.Millisecond,
		Prompts: []declared.Prompt{{
			Name: "review", Title: "Review", Description: "Review a diff.",
			Arguments: []declared.Argument{
				{Name: "diff", Description: "The diff.", Required: true},
				{Name: "style", Completions: []string{"go", "Google", "uber"}},
				{Name: "many", Completions: many},
			},
			Messages: []declared.Message{
				{Role: declared.RoleUser, Text: text("Review {{diff}} in {{style}} style.")},
				{Role: declared.RoleAssistant, Image: &declared.Image{MIMEType: "image/png", Data: pngPixel}},
				{Role: declared.RoleUser, Resource: &declared.EmbeddedResource{URI: declared.ParseText("notes://{{style}}"), MIMEType: "text/plain", Text: text("Notes for {{style}}.")}},
			},
		}},
		Resources: []declared.Resource{
			{URI: "docs://readme", Name: "readme", Description: "Fixed.", MIMEType: "text/plain", Text: "Hello."},
			{URI: "docs://watched", Name: "watched", MIMEType: "text/plain", Path: filepath.Join(dir, "watched.txt"), Root: dir},
			{URI: "docs://pixel", Name: "pixel", MIMEType: "image/png", Path: filepath.Join(dir, "pixel.png"), Root: dir},
		},
		ResourceTemplates: []declared.Template{{
			URITemplate: tmpl, Name: "issue", MIMEType: "text/plain",
			Text: declared.ParseText("Issue {{id}}: {{part}}"), Completions: map[string][]string{"part": {"title", "body"}},
		}},
	}
}

func declaredSession(t *testing.T, opts mcp.ServerOptions, o clientOptions) *sdk.ClientSession {
	t.Helper()
	th := newTestHost(t)
	srv, err := mcp.NewServer(th.Host, opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.protocol == "" {
		o.protocol = legacyProtocol
	}
	return stdioSession(t, srv, o)
}

func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// A configured prompt is listed with its arguments and got with them put
// in; a value holding {{...}} stays as sent; a missing required argument
// or an unknown one is -32602 naming it, an unknown prompt too.
func TestServerPrompts(t *testing.T) {
	cs := declaredSession(t, declaredOptions(t, t.TempDir()), clientOptions{})
	ctx := context.Background()
	caps := cs.InitializeResult().Capabilities
	if caps.Prompts == nil || caps.Completions == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		t.Errorf("capabilities %+v: want prompts, completions and resource subscriptions", caps)
	}
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "review" || len(list.Prompts[0].Arguments) != 3 || !list.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts/list: %v %+v", err, list)
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review", Arguments: map[string]string{"diff": "{{style}}", "style": "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("got %d messages", len(res.Messages))
	}
	if tc, ok := res.Messages[0].Content.(*sdk.TextContent); !ok || tc.Text != "Review {{style}} in go style." || res.Messages[0].Role != "user" {
		t.Errorf("text message: %+v", res.Messages[0].Content)
	}
	if ic, ok := res.Messages[1].Content.(*sdk.ImageContent); !ok || ic.MIMEType != "image/png" || string(ic.Data) != string(pngPixel) || res.Messages[1].Role != "assistant" {
		t.Errorf("image message: %+v", res.Messages[1])
	}
	if er, ok := res.Messages[2].Content.(*sdk.EmbeddedResource); !ok || er.Resource.URI != "notes://go" || er.Resource.Text != "Notes for go." {
		t.Errorf("resource message: %+v", res.Messages[2].Content)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"review", map[string]string{"style": "go"}, `missing required argument "diff"`},
		{"review", map[string]string{"diff": "", "style": "go"}, `missing required argument "diff"`},
		{"review", map[string]string{"diff": "d", "colour": "red"}, `no argument "colour"`},
		{"nope", nil, `unknown prompt "nope"`},
	} {
		_, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: tc.name, Arguments: tc.args})
		if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: got %v, want -32602 saying %s", tc.name, tc.args, err, tc.want)
		}
	}
}

// Configured resources are listed beside the artifact template and read:
// text as text, a PNG file as a blob, a template's expansion with the
// URI's values; an unknown URI is -32002.
func TestServerDeclaredResources(t *testing.T) {
	cs := declaredSession(t, declaredOptions(t, t.TempDir()), clientOptions{})
	ctx := context.Background()
	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 3 {
		t.Fatalf("resources/list: %v %+v", err, list)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 2 {
		t.Fatalf("resources/templates/list: %v %+v", err, tl)
	}
	for _, tc := range []struct{ uri, mime, text, blob string }{
		{"docs://readme", "text/plain", "Hello.", ""},
		{"docs://watched", "text/plain", "v1", ""},
		{"docs://pixel", "image/png", "", string(pngPixel)},
		{"docs://issue/42/ti%7Btle", "text/plain", "Issue 42: ti{tle", ""},
	} {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: tc.uri})
		if err != nil {
			t.Errorf("read %s: %v", tc.uri, err)
			continue
		}
		c := res.Contents[0]
		if c.URI != tc.uri || c.MIMEType != tc.mime || c.Text != tc.text || string(c.Blob) != tc.blob {
			t.Errorf("read %s: %+v", tc.uri, c)
		}
	}
	for _, uri := range []string{"docs://nope", "docs://issue/42", "docs://issue/4/2/x"} {
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); rpcCode(err) != sdk.CodeResourceNotFound {
			t.Errorf("read %s: %v, want -32002", uri, err)
		}
	}
}

// Completions offer the configured values that start with what was typed
// (ignoring case), at most 100 with the total; unknown prompts, arguments,
// templates and variables are -32602.
func TestServerCompletion(t *testing.T) {
	cs := declaredSession(t, declaredOptions(t, t.TempDir()), clientOptions{})
	ctx := context.Background()
	prompt := func(name string) *sdk.CompleteReference {
		return &sdk.CompleteReference{Type: "ref/prompt", Name: name}
	}
	resource := func(uri string) *sdk.CompleteReference { return &sdk.CompleteReference{Type: "ref/resource", URI: uri} }
	for _, tc := range []struct {
		ref          *sdk.CompleteReference
		arg, value   string
		want         string
		total        int
		more         bool
		wantCodeFail bool
	}{
		{ref: prompt("review"), arg: "style", value: "g", want: "go,Google", total: 2},
		{ref: prompt("review"), arg: "style", value: "", want: "go,Google,uber", total: 3},
		{ref: prompt("review"), arg: "diff", value: "x", want: "", total: 0},
		{ref: prompt("review"), arg: "many", value: "v", total: 150, more: true},
		{ref: resource("docs://issue/{id}/{part}"), arg: "part", value: "B", want: "body", total: 1},
		{ref: resource("toolhost://artifacts/{id}"), arg: "id", value: "", want: "", total: 0},
		{ref: prompt("nope"), arg: "x", wantCodeFail: true},
		{ref: prompt("review"), arg: "nope", wantCodeFail: true},
		{ref: resource("docs://nope/{x}"), arg: "x", wantCodeFail: true},
		{ref: resource("docs://issue/{id}/{part}"), arg: "nope", wantCodeFail: true},
	} {
		res, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: tc.ref, Argument: sdk.CompleteParamsArgument{Name: tc.arg, Value: tc.value}})
		if tc.wantCodeFail {
			if rpcCode(err) != jsonrpc.CodeInvalidParams {
				t.Errorf("%+v %s: %v, want -32602", tc.ref, tc.arg, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v %s: %v", tc.ref, tc.arg, err)
			continue
		}
		c := res.Completion
		if c.Values == nil || c.Total != tc.total || c.HasMore != tc.more || (!tc.more && strings.Join(c.Values, ",") != tc.want) || len(c.Values) > 100 {
			t.Errorf("%+v %s=%q: %+v", tc.ref, tc.arg, tc.value, c)
		}
	}
}

// A subscriber to a file-backed resource hears when the file changes, and
// no more once it unsubscribed; subscribing to a text resource is
// accepted, to an unknown URI refused with -32002. The file is only
// watched while someone is subscribed.
func TestServerSubscribe(t *testing.T) {
	for _, tr := range []string{"stdio", "stdio-" + mrtrProtocol, "http"} {
		t.Run(tr, func(t *testing.T) {
			dir := t.TempDir()
			opts := declaredOptions(t, dir)
			updated := make(chan string, 16)
			protocol := legacyProtocol
			if tr == "stdio-"+mrtrProtocol {
				protocol = mrtrProtocol
			}
			o := clientOptions{protocol: protocol, updated: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				updated <- req.Params.URI
			}}
			th := newTestHost(t)
			srv, err := mcp.NewServer(th.Host, opts)
			if err != nil {
				t.Fatal(err)
			}
			var cs *sdk.ClientSession
			if strings.HasPrefix(tr, "stdio") {
				cs = stdioSession(t, srv, o)
			} else {
				url, _ := httpServer(t, srv, mcp.HTTPOptions{})
				cs = httpSession(t, url, o, "")
			}
			ctx := context.Background()
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "docs://readme"}); err != nil {
				t.Errorf("subscribe to a text resource: %v", err)
			}
			// In the 2026-07-28 protocol a subscription is a long-running
			// subscriptions/listen request, whose refusal the SDK's
			// Subscribe does not wait for.
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "docs://nope"}); protocol == legacyProtocol && rpcCode(err) != sdk.CodeResourceNotFound {
				t.Errorf("subscribe to an unknown resource: %v, want -32002", err)
			}
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "docs://watched"}); err != nil {
				t.Fatal(err)
			}
			// The new protocol's Subscribe can return before the server
			// has the subscription.
			for deadline := time.Now().Add(5 * time.Second); mcp.WatchedResources(srv) != 1; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d resources watched, want 1", mcp.WatchedResources(srv))
				}
			}
			write := func(s string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, "watched.txt"), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("v2, longer")
			select {
			case uri := <-updated:
				if uri != "docs://watched" {
					t.Errorf("update for %q", uri)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no notifications/resources/updated after the file changed")
			}
			res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://watched"})
			if err != nil || res.Contents[0].Text != "v2, longer" {
				t.Errorf("read after the change: %v %+v", err, res)
			}
			// The same size, and the modification time put back.
			for len(updated) > 0 {
				<-updated
			}
			fi, err := os.Stat(filepath.Join(dir, "watched.txt"))
			if err != nil {
				t.Fatal(err)
			}
			write("v2, LONGER")
			if err := os.Chtimes(filepath.Join(dir, "watched.txt"), fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-updated:
			case <-time.After(5 * time.Second):
				t.Fatal("no notifications/resources/updated after a same-size rewrite that kept the modification time")
			}
			if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "docs://watched"}); err != nil {
				t.Fatal(err)
			}
			// ... and its end (the listen request cancelled) is not
			// waited for either.
			for deadline := time.Now().Add(5 * time.Second); mcp.WatchedResources(srv) != 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d resources watched after unsubscribing, want 0", mcp.WatchedResources(srv))
				}
			}
			write("v3, longer still")
			select {
			case uri := <-updated:
				t.Errorf("update for %q after unsubscribing", uri)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// A client that goes away without unsubscribing stops the watch.
func TestServerSubscriberGone(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			th := newTestHost(t)
			srv, err := mcp.NewServer(th.Host, declaredOptions(t, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			var cs *sdk.ClientSession
			if tr == "stdio" {
				cs = stdioSession(t, srv, clientOptions{protocol: legacyProtocol})
			} else {
				url, _ := httpServer(t, srv, mcp.HTTPOptions{})
				cs = httpSession(t, url, clientOptions{protocol: legacyProtocol}, "")
			}
			if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "docs://watched"}); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			deadline := time.Now().Add(5 * time.Second)
			for mcp.WatchedResources(srv) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the watch outlived its only subscriber")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// When one of two subscribers goes away, the other still hears of
// changes.
func TestServerSubscriberGoneOtherStays(t *testing.T) {
	dir := t.TempDir()
	th := newTestHost(t)
	srv, err := mcp.NewServer(th.Host, declaredOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	// Over HTTP: a stdio server has one session, and shuts down with it.
	url, _ := httpServer(t, srv, mcp.HTTPOptions{})
	updated := make(chan string, 16)
	stays := httpSession(t, url, clientOptions{protocol: legacyProtocol, updated: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}, "")
	goes := httpSession(t, url, clientOptions{protocol: legacyProtocol}, "")
	ctx := context.Background()
	for _, cs := range []*sdk.ClientSession{stays, goes} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "docs://watched"}); err != nil {
			t.Fatal(err)
		}
	}
	goes.Close()
	// Wait for the server to see it go, so that the change below comes
	// after.
	for deadline := time.Now().Add(5 * time.Second); mcp.Subscribers(srv) != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions subscribed after one of two left, want 1", mcp.Subscribers(srv))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "watched.txt"), []byte("v2, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-updated:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber that stayed heard nothing after the file changed")
	}
	if n := mcp.WatchedResources(srv); n != 1 {
		t.Errorf("%d resources watched, want 1", n)
	}
}

// A resource file replaced after loading by a symlink out of its directory
// is refused at read time, and the server goes on serving.
func TestServerResourceSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	opts := declaredOptions(t, dir)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := declaredSession(t, opts, clientOptions{})
	ctx := context.Background()
	w := filepath.Join(dir, "watched.txt")
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, w); err != nil {
		t.Fatal(err)
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://watched"})
	if err == nil || strings.Contains(fmt.Sprint(res), "s3cret") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("read through a symlink out: %v %+v", err, res)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://readme"}); err != nil {
		t.Errorf("the server stopped serving: %v", err)
	}
}

// A resource file that grows past declared.MaxFileBytes after loading is
// refused at read time (the cap is checked at every read, not only at
// load), and the server goes on serving.
func TestServerResourceGrown(t *testing.T) {
	dir := t.TempDir()
	cs := declaredSession(t, declaredOptions(t, dir), clientOptions{})
	// Sparse: the size is checked before anything is read.
	if err := os.Truncate(filepath.Join(dir, "watched.txt"), declared.MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://watched"}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("read a file over the cap: %v %+v", err, res)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "docs://readme"}); err != nil {
		t.Errorf("the server stopped serving: %v", err)
	}
}

// Subscribing to a template's expansion is accepted, and watches nothing:
// it never changes.
func TestServerSubscribeTemplate(t *testing.T) {
	th := newTestHost(t)
	srv, err := mcp.NewServer(th.Host, declaredOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cs := stdioSession(t, srv, clientOptions{protocol: legacyProtocol})
	if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "docs://issue/1/title"}); err != nil {
		t.Fatalf("subscribe to a template expansion: %v", err)
	}
	if n := mcp.WatchedResources(srv); n != 0 {
		t.Errorf("%d resources watched, want 0", n)
	}
}

// Without prompts, resources or completions configured, their methods are
// refused with -32601 and their capabilities not advertised.
func TestServerNothingDeclared(t *testing.T) {
	cs := declaredSession(t, mcp.ServerOptions{}, clientOptions{})
	caps := cs.InitializeResult().Capabilities
	if caps.Prompts != nil || caps.Completions != nil || caps.Resources == nil || caps.Resources.Subscribe {
		t.Errorf("capabilities %+v", caps)
	}
	ctx := context.Background()
	if _, err := cs.ListPrompts(ctx, nil); rpcCode(err) != jsonrpc.CodeMethodNotFound {
		t.Errorf("prompts/list: %v", err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "docs://x"}); rpcCode(err) != jsonrpc.CodeMethodNotFound {
		t.Errorf("resources/subscribe: %v", err)
	}
}

// TestServerPromptAmplification: a message that names an argument many
// times multiplies what the client sends. A value that would make the
// messages larger than the limit is refused with -32602 before anything is
// built, and the session goes on serving; under the limit it is expanded.
func TestServerPromptAmplification(t *testing.T) {
	opts := declaredOptions(t, t.TempDir())
	opts.Prompts = append(opts.Prompts, declared.Prompt{
		Name:      "echo200",
		Arguments: []declared.Argument{{Name: "x", Required: true}},
		Messages:  []declared.Message{{Role: declared.RoleUser, Text: func() *declared.Text { t := declared.ParseText(strings.Repeat("{{x}}", 200)); return &t }()}},
	})
	cs := declaredSession(t, opts, clientOptions{})
	ctx := context.Background()
	big := strings.Repeat("a", 100<<10) // 200 x 100 KiB = 20 MiB
	_, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "echo200", Arguments: map[string]string{"x": big}})
	if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "over the 16MiB limit") {
		t.Fatalf("20 MiB of messages: got %v, want -32602 naming the limit", err)
	}
	// 200 x 30 KiB of '<' is 6 MiB of text but 36 MiB of JSON (\u003c).
	angles := strings.Repeat("<", 30<<10)
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "echo200", Arguments: map[string]string{"x": angles}}); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Fatalf("36 MiB of messages once escaped: got %v, want -32602", err)
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "echo200", Arguments: map[string]string{"x": "ab"}})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*sdk.TextContent).Text != strings.Repeat("ab", 200) {
		t.Fatalf("a small value: %v %+v", err, res)
	}
}
