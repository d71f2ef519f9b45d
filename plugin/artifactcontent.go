package plugin

import (
	"context"
	"slices"
	"strings"
)

// ArtifactURIPrefix marks an embedded resource a tool wants kept as an
// artifact of the call rather than shown to the model: a content item of
// type "resource" whose URI is "toolhost-artifact:<name>" (a diff, a
// report). The pipeline stores its text under that name and lists the
// reference in Result.Artifacts; the item itself leaves the content.
// A binary resource carries its bytes in Content.Data and is kept as is.
const ArtifactURIPrefix = "toolhost-artifact:"

// keepArtifacts stores the result's artifact resources and removes them
// from its content. Their text is redacted like any output. A store that
// refuses one is logged; the call still succeeds.
func (h *Host) keepArtifacts(ctx context.Context, call Call, secrets *Secrets, res *Result) {
	if !slices.ContainsFunc(res.Content, func(c Content) bool {
		return c.Type == "resource" && strings.HasPrefix(c.URI, ArtifactURIPrefix)
	}) {
		return // the common case: no copy of the content
	}
	kept := res.Content[:0:0]
	for _, c := range res.Content {
		name, ok := strings.CutPrefix(c.URI, ArtifactURIPrefix)
		if c.Type != "resource" || !ok {
			kept = append(kept, c)
			continue
		}
		if name == "" {
			name = call.ID
		}
		// Binary resources (an image, a PDF) carry Data; text ones carry Text,
		// redacted like any output.
		data, mime := []byte(secrets.Redact(c.Text)), c.MIMEType
		if len(c.Data) > 0 {
			data = c.Data
			if mime == "" {
				mime = "application/octet-stream"
			}
		} else if mime == "" {
			mime = "text/plain; charset=utf-8"
		}
		ref, err := h.artifacts.Put(ctx, ArtifactMeta{Name: name, MIMEType: mime, CallID: call.ID, Tool: call.Name}, data)
		if err != nil {
			h.log.Warn("artifact not kept", "tool", call.Name, "call_id", call.ID, "artifact", name, "error", err)
			continue
		}
		res.Artifacts = append(res.Artifacts, ref)
	}
	res.Content = kept
}
