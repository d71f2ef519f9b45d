package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/plugin"
)

// toResult maps a host result to an MCP tool result. Failures are tool
// results with isError set and the code leading the text ("CODE: ..."),
// never JSON-RPC errors: the model reads them and can correct its call.
func toResult(res *plugin.Result, err error) *sdk.CallToolResult {
	if res == nil {
		return errorResult(plugin.Errorf(plugin.CodeOf(err), "%v", err))
	}
	out := &sdk.CallToolResult{Meta: sdk.Meta{}, IsError: res.IsError}
	if res.Meta != nil {
		out.Meta[MetaCallID] = res.Meta.CallID
	}
	linked := map[string]bool{}
	for _, c := range res.Content {
		if mc := toContent(c); mc != nil {
			out.Content = append(out.Content, mc)
			if c.Type == "resource_link" {
				linked[c.URI] = true
			}
		}
	}
	if res.IsError {
		code := res.Code
		if code == "" {
			code = plugin.CodeOf(err)
		}
		out.Meta[MetaCode] = string(code)
		if res.Limit != "" {
			out.Meta[MetaLimit] = res.Limit
		}
		if len(out.Content) == 0 {
			out.Content = []sdk.Content{&sdk.TextContent{Text: string(code)}}
		} else if tc, ok := out.Content[0].(*sdk.TextContent); ok && !strings.HasPrefix(tc.Text, string(code)) {
			tc.Text = string(code) + ": " + tc.Text
		}
		return out
	}
	if q := res.NeedsInput; q != nil {
		out.Meta[MetaQuestion] = q
		out.Content = []sdk.Content{&sdk.TextContent{Text: questionText(q)}}
		return out
	}
	if len(res.StructuredContent) > 0 {
		out.StructuredContent = json.RawMessage(res.StructuredContent)
	}
	if t := res.Truncated; t != nil {
		out.Meta[MetaTruncated] = t
	}
	// Link every artifact the call kept: the full output of a truncated
	// text first, then files the tool produced.
	for _, a := range res.Artifacts {
		uri := ResourceURIPrefix + a.ID
		if linked[uri] {
			continue
		}
		size := a.Size
		title := "Artifact " + a.Name
		if res.Truncated != nil && res.Truncated.ArtifactID == a.ID {
			title = fmt.Sprintf("Full output (%s; the text above is truncated)", plugin.FormatSize(a.Size))
		}
		out.Content = append(out.Content, &sdk.ResourceLink{URI: uri, Name: a.ID, Title: title, MIMEType: a.MIMEType, Size: &size})
	}
	if out.Content == nil {
		out.Content = []sdk.Content{}
	}
	return out
}

// toContent maps one content item; unknown types are dropped.
func toContent(c plugin.Content) sdk.Content {
	switch c.Type {
	case "text":
		return &sdk.TextContent{Text: c.Text}
	case "image":
		return &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
	case "audio":
		return &sdk.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
	case "resource_link":
		return &sdk.ResourceLink{URI: c.URI, Name: c.Name, MIMEType: c.MIMEType}
	case "resource":
		rc := &sdk.ResourceContents{URI: c.URI, MIMEType: c.MIMEType}
		if c.Data != nil {
			rc.Blob = c.Data
		} else {
			rc.Text = c.Text
		}
		return &sdk.EmbeddedResource{Resource: rc}
	}
	return nil
}

// errorResult is a tool error result for a failure outside the host.
func errorResult(e *plugin.Error) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: e.Error()}},
		IsError: true,
		Meta:    sdk.Meta{MetaCode: string(e.Code)},
	}
}

// questionText asks the question in text, for clients without elicitation.
func questionText(q *plugin.Question) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Input needed (%s): %s", q.ID, q.Text)
	switch q.Type {
	case plugin.AnswerBoolean:
		b.WriteString(" [yes/no]")
	case plugin.AnswerSelect:
		opts, _ := json.Marshal(q.Options)
		fmt.Fprintf(&b, " [one of: %s]", strings.Trim(string(opts), "[]"))
	}
	example := `"..."`
	if q.Type == plugin.AnswerBoolean {
		example = "true"
	}
	fmt.Fprintf(&b, "\nTo answer, call this tool again with the same arguments plus %q: {%q: %s}.", AnswersArgument, q.ID, example)
	return b.String()
}
