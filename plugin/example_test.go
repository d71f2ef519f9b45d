package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/toolhost/toolhost/plugin"
)

// wordCount is an in-process tool: a host application's own Go code,
// offered to a model through the same pipeline as any plugin.
func wordCount() plugin.Tool {
	return plugin.Func(plugin.Descriptor{
		Name:        "word_count",
		Description: "Counts the words in a text.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text":  {"type": "string"},
				"limit": {"type": "integer", "minimum": 1}
			},
			"required": ["text"],
			"additionalProperties": false
		}`),
	}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ Text string }
		if err := req.DecodeArguments(&in); err != nil {
			return nil, err
		}
		return &plugin.Result{Content: []plugin.Content{plugin.Textf("%d words", len(strings.Fields(in.Text)))}}, nil
	})
}

// A host application registers an in-process tool under a policy (its
// Spec) and invokes it.
func ExampleHost_Invoke() {
	host, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	spec := plugin.Spec{Name: "word_count", Tier: plugin.TierReadOnly}
	if err := host.Register(spec, wordCount()); err != nil {
		log.Fatal(err)
	}

	res, err := host.Invoke(context.Background(), plugin.Call{
		Name:      "word_count",
		Arguments: json.RawMessage(`{"text": "the quick brown fox"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.TextContent())
	// Output: 4 words
}

// Arguments that do not match the input schema never reach the tool. The
// error says which field is wrong, what was expected and what was given,
// so that a model can correct its next call.
func ExampleHost_Invoke_validation() {
	host, _ := plugin.NewHost(plugin.Options{})
	defer host.Close()
	host.Register(plugin.Spec{Name: "word_count", Tier: plugin.TierReadOnly}, wordCount())

	for _, args := range []string{
		`{}`,
		`{"text": "a b", "limit": "ten"}`,
		`{"text": "a b", "lang": "en"}`,
		`["a b"]`,
	} {
		res, err := host.Invoke(context.Background(), plugin.Call{Name: "word_count", Arguments: json.RawMessage(args)})
		fmt.Println(res.Code, errors.Is(err, plugin.ErrInvalidRequest))
		fmt.Println(" ", res.TextContent())
	}
	// Output:
	// INVALID_REQUEST true
	//   INVALID_REQUEST: invalid arguments: missing required field "text"
	// INVALID_REQUEST true
	//   INVALID_REQUEST: invalid arguments: "limit": expected integer, got string "ten"
	// INVALID_REQUEST true
	//   INVALID_REQUEST: invalid arguments: unexpected field "lang" (not in the schema)
	// INVALID_REQUEST true
	//   INVALID_REQUEST: arguments must be a JSON object, got array
}

// A privileged tool runs only when the Approver says yes. Without an
// approver the call fails with APPROVAL_REQUIRED: never a silent yes.
func ExampleApprover() {
	remove := plugin.Func(plugin.Descriptor{
		Name:        "remove",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
		var in struct{ Path string }
		req.DecodeArguments(&in)
		return &plugin.Result{Content: []plugin.Content{plugin.Textf("removed %s", in.Path)}}, nil
	})
	spec := plugin.Spec{Name: "remove", Tier: plugin.TierPrivileged}

	// An approver that allows removing files under /tmp only. A real one
	// asks a person, and honours ctx.
	approver := plugin.ApproverFunc(func(ctx context.Context, req plugin.ApprovalRequest) (bool, error) {
		var in struct{ Path string }
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return false, err
		}
		return strings.HasPrefix(in.Path, "/tmp/"), nil
	})

	for _, approver := range []plugin.Approver{nil, approver} {
		host, _ := plugin.NewHost(plugin.Options{Approver: approver})
		host.Register(spec, remove)
		for _, path := range []string{"/tmp/scratch", "/etc/passwd"} {
			res, _ := host.Invoke(context.Background(), plugin.Call{Name: "remove", Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q}`, path))})
			fmt.Println(res.TextContent())
		}
		host.Close()
	}
	// Output:
	// APPROVAL_REQUIRED: tool "remove" (privileged) needs approval and no approver is configured
	// APPROVAL_REQUIRED: tool "remove" (privileged) needs approval and no approver is configured
	// removed /tmp/scratch
	// APPROVAL_DENIED: the call to "remove" was not approved
}

// A batch runs read_only calls concurrently and everything else one at a
// time, in order; outcomes come back in request order either way.
func ExampleHost_InvokeBatch() {
	host, _ := plugin.NewHost(plugin.Options{})
	defer host.Close()
	host.Register(plugin.Spec{Name: "word_count", Tier: plugin.TierReadOnly}, wordCount())

	calls := []plugin.Call{
		{Name: "word_count", Arguments: json.RawMessage(`{"text": "one"}`)},
		{Name: "word_count", Arguments: json.RawMessage(`{"text": "one two"}`)},
		{Name: "word_cont", Arguments: json.RawMessage(`{"text": "typo"}`)},
		{Name: "word_count", Arguments: json.RawMessage(`{"text": "one two three"}`)},
	}
	for i, o := range host.InvokeBatch(context.Background(), calls) {
		fmt.Printf("%d: %s\n", i, o.Result.TextContent())
	}
	// Output:
	// 0: 1 words
	// 1: 2 words
	// 2: TOOL_NOT_FOUND: unknown tool "word_cont"; did you mean "word_count"?
	// 3: 3 words
}

// A host lists its tools with the policy each runs under, in registration
// order: what a host application hands to a model. The spec's tier, not
// the tool, decides the read-only hint.
func ExampleHost_Tools() {
	host, err := plugin.NewHost(plugin.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	saveNote := plugin.Func(plugin.Descriptor{Name: "save", Description: "Saves a note.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			return &plugin.Result{Content: []plugin.Content{plugin.Text("saved")}}, nil
		})
	for _, r := range []struct {
		spec plugin.Spec
		tool plugin.Tool
	}{
		{plugin.Spec{Name: "word_count", Tier: plugin.TierReadOnly}, wordCount()},
		{plugin.Spec{Name: "notes.save", Tier: plugin.TierSideEffecting}, saveNote},
		{plugin.Spec{Name: "notes.purge", Tier: plugin.TierPrivileged, Description: "Deletes every note."}, saveNote},
	} {
		if err := host.Register(r.spec, r.tool); err != nil {
			log.Fatal(err)
		}
	}

	for _, t := range host.Tools() {
		fmt.Printf("%-12s %-15s read-only=%-5v %s\n", t.Descriptor.Name, t.Tier, t.Descriptor.Annotations.ReadOnlyHint, t.Descriptor.Description)
	}
	// Output:
	// word_count   read_only       read-only=true  Counts the words in a text.
	// notes.save   side_effecting  read-only=false Saves a note.
	// notes.purge  privileged      read-only=false Deletes every note.
}

// A tool that needs a decision from the caller asks a question; the caller
// answers by calling again with Answers.
func ExampleQuestion() {
	deploy := plugin.Func(plugin.Descriptor{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *plugin.Request) (*plugin.Result, error) {
			q := &plugin.Question{ID: "env", Type: plugin.AnswerSelect, Text: "Deploy where?", Options: []string{"staging", "production"}}
			answer, ok, err := req.Answer(q) // checked against the options
			if err != nil {
				return nil, err
			}
			if !ok {
				return &plugin.Result{NeedsInput: q}, nil
			}
			return &plugin.Result{Content: []plugin.Content{plugin.Textf("deployed to %s", answer.Text)}}, nil
		})
	host, _ := plugin.NewHost(plugin.Options{})
	defer host.Close()
	host.Register(plugin.Spec{Name: "deploy"}, deploy)

	res, _ := host.Invoke(context.Background(), plugin.Call{Name: "deploy"})
	fmt.Println(res.NeedsInput.ID, res.NeedsInput.Options)
	fmt.Println(res.TextContent())

	res, _ = host.Invoke(context.Background(), plugin.Call{
		Name:    "deploy",
		Answers: map[string]json.RawMessage{"env": json.RawMessage(`"staging"`)},
	})
	fmt.Println(res.TextContent())

	_, err := host.Invoke(context.Background(), plugin.Call{
		Name:    "deploy",
		Answers: map[string]json.RawMessage{"env": json.RawMessage(`"prod"`)},
	})
	fmt.Println(err)
	// Output:
	// env [staging production]
	// Input needed (env): Deploy where? [one of: "staging","production"]
	// Call the tool again with answers: {"env": <answer>}.
	// deployed to staging
	// INVALID_REQUEST: answer "env": expected one of "staging", "production", got string "prod"
}

// Long output is cut for the model, head and tail kept; the whole is kept
// as an artifact the caller can fetch.
func ExampleTruncate() {
	s := strings.Repeat("a", 100) + strings.Repeat("z", 100)
	short, omitted := plugin.Truncate(s, 80)
	fmt.Println(short)
	fmt.Println(omitted, len(short))
	// Output:
	// aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
	// [... truncated 151 bytes ...]
	// zzzzzzzzzz
	// 151 80
}

func ExampleParseSize() {
	for _, s := range []string{"512", "64KiB", "1.5MiB", "10MB"} {
		n, _ := plugin.ParseSize(s)
		fmt.Println(s, n, plugin.FormatSize(n))
	}
	// Output:
	// 512 512 512B
	// 64KiB 65536 64KiB
	// 1.5MiB 1572864 1536KiB
	// 10MB 10000000 10000000B
}
