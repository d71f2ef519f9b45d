// Command git is a toolhost subprocess plugin that answers questions about
// git repositories by running the git CLI: the kind of tool that needs an
// external program and so cannot be a wasm plugin.
//
// It serves two tools over the go-plugin gRPC contract of package shared:
//
//   - git_log: the latest commits of a repository (hash, author, date, subject)
//   - git_show: the files and line counts a commit changed
//
// The host runs it in the subprocess sandbox: only the directories the
// operator mounts for the tool are readable, nothing outside its scratch
// directory is writable, and the git processes it starts are killed with it.
// See README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolhost/toolhost/shared"
)

func main() {
	shared.Serve(gitTools{})
}

type gitTools struct{}

const logSchema = `{
  "type": "object",
  "properties": {
    "repo": {"type": "string", "description": "Absolute path of the repository (a directory mounted for this tool)"},
    "max": {"type": "integer", "minimum": 1, "maximum": 200, "description": "How many commits (default 10)"},
    "path": {"type": "string", "description": "Only commits touching this path, relative to the repository"}
  },
  "required": ["repo"],
  "additionalProperties": false
}`

const showSchema = `{
  "type": "object",
  "properties": {
    "repo": {"type": "string", "description": "Absolute path of the repository (a directory mounted for this tool)"},
    "commit": {"type": "string", "pattern": "^[0-9a-fA-F]{4,64}$|^HEAD(~[0-9]+)?$", "description": "Commit hash or HEAD, HEAD~N"}
  },
  "required": ["repo", "commit"],
  "additionalProperties": false
}`

// ListTools describes the tools.
func (gitTools) ListTools(context.Context) ([]shared.Tool, error) {
	ro := json.RawMessage(`{"readOnlyHint":true}`)
	return []shared.Tool{
		{Name: "git_log", Description: "List the latest commits of a git repository: hash, author, date and subject.",
			InputSchema: json.RawMessage(logSchema), Annotations: ro},
		{Name: "git_show", Description: "Show which files a git commit changed, with added and deleted line counts.",
			InputSchema: json.RawMessage(showSchema), Annotations: ro},
	}, nil
}

var commitRE = regexp.MustCompile(`^([0-9a-fA-F]{4,64}|HEAD(~[0-9]+)?)$`)

// CallTool runs git. Mistakes a model can correct come back as error
// results; only failures of the plugin itself are Go errors.
func (gitTools) CallTool(ctx context.Context, name string, raw json.RawMessage) (*shared.CallToolResult, error) {
	var args struct {
		Repo   string `json:"repo"`
		Max    int    `json:"max"`
		Path   string `json:"path"`
		Commit string `json:"commit"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return shared.ErrorResult("arguments: %v", err), nil
	}
	if !filepath.IsAbs(args.Repo) {
		return shared.ErrorResult("repo: expected an absolute path, got %q", args.Repo), nil
	}
	switch name {
	case "git_log":
		if args.Max == 0 {
			args.Max = 10
		}
		if args.Max < 1 || args.Max > 200 {
			return shared.ErrorResult("max: expected 1 to 200, got %d", args.Max), nil
		}
		cmd := []string{"log", fmt.Sprintf("-n%d", args.Max), "--date=short", "--format=%h %ad %an: %s"}
		if args.Path != "" {
			if strings.HasPrefix(args.Path, "-") {
				return shared.ErrorResult("path: must not start with '-'"), nil
			}
			cmd = append(cmd, "--", args.Path)
		}
		return runGit(ctx, args.Repo, cmd...)
	case "git_show":
		if !commitRE.MatchString(args.Commit) {
			return shared.ErrorResult("commit: expected a hash or HEAD~N, got %q", args.Commit), nil
		}
		return runGit(ctx, args.Repo, "show", "--numstat", "--format=%h %an: %s", args.Commit)
	}
	return nil, fmt.Errorf("%w: %s", shared.ErrUnknownTool, name)
}

// runGit runs git in repo. The host's environment never reaches the plugin,
// so git sees no user configuration: its HOME is the plugin's scratch
// directory.
func runGit(ctx context.Context, repo string, args ...string) (*shared.CallToolResult, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo, "--no-pager", "-c", "safe.directory=*"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return shared.ErrorResult("git %s failed: %s", args[0], strings.TrimSpace(stderr.String())), nil
	}
	if err != nil {
		return nil, err
	}
	return shared.TextResult(stdout.String()), nil
}
