package subprocess

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/plugin"
)

// TestShellExecThroughHost: shell.exec output longer than the preview is
// truncated by the host's pipeline for the model, and the full output is
// kept as an artifact.
func TestShellExecThroughHost(t *testing.T) {
	t.Parallel() // mostly waits (helper_test.go)
	ws := sandboxDir(t)
	grants := plugin.Capabilities{Subprocess: true, Mounts: []plugin.Mount{{HostPath: ws, GuestPath: "/workspace"}}}
	a := newTestAdapter(t, nil)
	h, err := plugin.NewHost(plugin.Options{Grants: grants, Approver: plugin.ApproveAll, Adapters: []plugin.Adapter{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const preview = 1 << 10
	spec := plugin.Spec{Name: BuiltinShellExec, Source: plugin.Source{Kind: Kind, Builtin: BuiltinShellExec},
		Capabilities: grants, Limits: plugin.Limits{Preview: preview}}
	if err := h.Load(t.Context(), spec); err != nil {
		t.Fatal(err)
	}

	var want strings.Builder
	want.WriteString("Exit code: 0\n--- stdout ---\n")
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("--- stderr ---\n")

	mark := newMark(t)
	res, err := h.Invoke(t.Context(), plugin.Call{Name: BuiltinShellExec, Arguments: json.RawMessage(`{"command":"seq 1 3000 # ` + mark + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	assertNoneLeft(t, mark, 2*time.Second)
	got := res.TextContent()
	tr := res.Truncated
	if tr == nil || tr.ArtifactID == "" {
		t.Fatalf("%d bytes of output not truncated (preview %d): %+v", want.Len(), preview, tr)
	}
	if len(got) > preview || tr.OriginalBytes != want.Len() || tr.ShownBytes != len(got) || tr.OmittedBytes <= 0 {
		t.Errorf("truncation %+v of a %d-byte output to %d bytes, preview %d", tr, want.Len(), len(got), preview)
	}
	if !strings.HasPrefix(got, "Exit code: 0\n--- stdout ---\n1\n2\n3\n") || !strings.Contains(got, "[... truncated ") ||
		!strings.HasSuffix(got, "2999\n3000\n--- stderr ---\n") {
		t.Errorf("model-facing text:\n%s", got)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].ID != tr.ArtifactID {
		t.Errorf("artifacts %+v, truncation names %s", res.Artifacts, tr.ArtifactID)
	}
	ref, rc, err := h.Artifact(t.Context(), tr.ArtifactID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	full, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if string(full) != want.String() || ref.Size != int64(want.Len()) {
		t.Fatalf("artifact %+v holds %d bytes, want the full %d-byte output", ref, len(full), want.Len())
	}
}
