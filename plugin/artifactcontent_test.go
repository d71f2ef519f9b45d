package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/toolhost/toolhost/plugin"
)

// failingStore refuses every artifact.
type failingStore struct{ plugin.ArtifactStore }

func (failingStore) Put(context.Context, plugin.ArtifactMeta, []byte) (plugin.ArtifactRef, error) {
	return plugin.ArtifactRef{}, errors.New("disk full")
}

func TestArtifactContent(t *testing.T) {
	diff := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new sk-123\n"
	tool := plugin.Func(plugin.Descriptor{InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			return &plugin.Result{Content: []plugin.Content{
				plugin.Text("Wrote 3 bytes"),
				{Type: "resource", URI: plugin.ArtifactURIPrefix + "x.diff", MIMEType: "text/x-diff", Text: diff},
				{Type: "resource", URI: "file:///other", Text: "an ordinary resource stays"},
			}}, nil
		})
	for _, tt := range []struct {
		name  string
		store plugin.ArtifactStore
		kept  bool
	}{
		{"stored", plugin.NewMemoryArtifacts(0), true},
		{"store refuses", failingStore{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := plugin.NewHost(plugin.Options{Artifacts: tt.store, Grants: plugin.Capabilities{Secrets: []string{"KEY"}}, Secrets: plugin.SecretFunc(func(context.Context, string) (string, error) { return "sk-123", nil })})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := h.Register(plugin.Spec{Name: "w", Tier: plugin.TierReadOnly, Capabilities: plugin.Capabilities{Secrets: []string{"KEY"}}}, tool); err != nil {
				t.Fatal(err)
			}
			res, err := h.Invoke(context.Background(), plugin.Call{Name: "w"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 2 || res.Content[0].Text != "Wrote 3 bytes" || res.Content[1].URI != "file:///other" {
				t.Fatalf("content = %+v; want the text and the ordinary resource", res.Content)
			}
			if !tt.kept {
				if len(res.Artifacts) != 0 {
					t.Fatalf("artifacts = %+v", res.Artifacts)
				}
				return
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "x.diff" || res.Artifacts[0].MIMEType != "text/x-diff" {
				t.Fatalf("artifacts = %+v", res.Artifacts)
			}
			_, rc, err := h.Artifact(context.Background(), res.Artifacts[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			if want := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new [REDACTED:KEY]\n"; string(b) != want {
				t.Fatalf("artifact = %q, want %q (secrets redacted)", b, want)
			}
		})
	}
}

// A binary artifact resource (an image a remote server returned) is kept
// byte for byte.
func TestArtifactContentBinary(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
	h, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tool := plugin.Func(plugin.Descriptor{}, func(context.Context, *plugin.Request) (*plugin.Result, error) {
		return &plugin.Result{Content: []plugin.Content{
			plugin.Text("here is the chart"),
			{Type: "resource", URI: plugin.ArtifactURIPrefix + "chart.png", MIMEType: "image/png", Data: png},
			{Type: "resource", URI: plugin.ArtifactURIPrefix + "blob", Data: []byte{0, 1, 2}},
		}}, nil
	})
	if err := h.Register(plugin.Spec{Name: "chart"}, tool); err != nil {
		t.Fatal(err)
	}
	res, err := h.Invoke(context.Background(), plugin.Call{Name: "chart"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || len(res.Artifacts) != 2 {
		t.Fatalf("content %+v, artifacts %+v", res.Content, res.Artifacts)
	}
	for i, want := range []struct {
		mime string
		data []byte
	}{{"image/png", png}, {"application/octet-stream", []byte{0, 1, 2}}} {
		ref, rc, err := h.Artifact(context.Background(), res.Artifacts[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if ref.MIMEType != want.mime || string(b) != string(want.data) {
			t.Errorf("artifact %d: %s %q, want %s %q", i, ref.MIMEType, b, want.mime, want.data)
		}
	}
}
