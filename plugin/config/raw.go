package config

import (
	"github.com/hashicorp/hcl/v2"
)

// The raw structs mirror the HCL schema one to one; gohcl decodes into them
// strictly (unknown attributes and blocks are diagnostics) and records the
// ranges that later checks point at.

type rawFile struct {
	Host       *rawHost       `hcl:"host,block"`
	Grants     []*rawGrants   `hcl:"grants,block"`
	Secrets    []*rawSecret   `hcl:"secret,block"`
	Tools      []*rawTool     `hcl:"tool,block"`
	MCPServers []*rawMCP      `hcl:"mcp_server,block"`
	Registries []*rawRegistry `hcl:"registry,block"`
	Trust      []*rawTrust    `hcl:"trust,block"`

	Prompts           []*rawPrompt           `hcl:"prompt,block"`
	Resources         []*rawResource         `hcl:"resource,block"`
	ResourceTemplates []*rawResourceTemplate `hcl:"resource_template,block"`
}

type rawRegistry struct {
	Name string  `hcl:"name,label"`
	Path *string `hcl:"path"`
	URL  *string `hcl:"url"`

	PathRange hcl.Range `hcl:"path,attr_value_range"`
	URLRange  hcl.Range `hcl:"url,attr_value_range"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type rawTrust struct {
	Keys     []string          `hcl:"keys,optional"`
	KeyFiles []string          `hcl:"key_files,optional"`
	Revoked  []string          `hcl:"revoked,optional"`
	Expires  map[string]string `hcl:"expires,optional"`

	KeysRange     hcl.Range `hcl:"keys,attr_value_range"`
	KeyFilesRange hcl.Range `hcl:"key_files,attr_value_range"`
	RevokedRange  hcl.Range `hcl:"revoked,attr_value_range"`
	ExpiresRange  hcl.Range `hcl:"expires,attr_value_range"`
	DefRange      hcl.Range `hcl:",def_range"`
}

type rawHost struct {
	Workspace    *string    `hcl:"workspace"`
	CacheDir     *string    `hcl:"cache_dir"`
	ArtifactsDir *string    `hcl:"artifacts_dir"`
	AuditLog     *string    `hcl:"audit_log"`
	LogLevel     *string    `hcl:"log_level"`
	MaxDepth     *int       `hcl:"max_depth"`
	PluginDir    *string    `hcl:"plugin_dir"`
	SubUser      *string    `hcl:"subprocess_user"`
	Limits       *rawLimits `hcl:"limits,block"`

	WorkspaceRange hcl.Range `hcl:"workspace,attr_value_range"`
	CacheDirRange  hcl.Range `hcl:"cache_dir,attr_value_range"`
	LogLevelRange  hcl.Range `hcl:"log_level,attr_value_range"`
	MaxDepthRange  hcl.Range `hcl:"max_depth,attr_value_range"`
	PluginDirRange hcl.Range `hcl:"plugin_dir,attr_value_range"`
	SubUserRange   hcl.Range `hcl:"subprocess_user,attr_value_range"`
	DefRange       hcl.Range `hcl:",def_range"`
}

type rawGrants struct {
	Mounts       []*rawGrantMount `hcl:"mount,block"`
	Hosts        []string         `hcl:"hosts,optional"`
	Secrets      []string         `hcl:"secrets,optional"`
	Invoke       []string         `hcl:"invoke,optional"`
	Env          []string         `hcl:"env,optional"`
	Capabilities []string         `hcl:"capabilities,optional"`

	HostsRange        hcl.Range `hcl:"hosts,attr_value_range"`
	SecretsRange      hcl.Range `hcl:"secrets,attr_value_range"`
	CapabilitiesRange hcl.Range `hcl:"capabilities,attr_value_range"`
	DefRange          hcl.Range `hcl:",def_range"`
}

type rawGrantMount struct {
	Path     string `hcl:"path"`
	ReadOnly *bool  `hcl:"read_only"`

	PathRange hcl.Range `hcl:"path,attr_value_range"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type rawSecret struct {
	Name string  `hcl:"name,label"`
	Env  *string `hcl:"env"`
	File *string `hcl:"file"`

	DefRange hcl.Range `hcl:",def_range"`
}

type rawTool struct {
	Name          string          `hcl:"name,label"`
	Description   *string         `hcl:"description"`
	Tier          *string         `hcl:"tier"`
	Approval      *string         `hcl:"approval"`
	Enabled       *bool           `hcl:"enabled"`
	AllowUnsigned *bool           `hcl:"allow_unsigned"`
	InputSchema   *string         `hcl:"input_schema"`
	OutputSchema  *string         `hcl:"output_schema"`
	Hosts         []string        `hcl:"hosts,optional"`
	Secrets       []string        `hcl:"secrets,optional"`
	Invoke        []string        `hcl:"invoke,optional"`
	Capabilities  []string        `hcl:"capabilities,optional"`
	Wasm          []*rawWasm      `hcl:"wasm,block"`
	Subprocess    []*rawSubproc   `hcl:"subprocess,block"`
	Go            []*rawGo        `hcl:"go,block"`
	Mounts        []*rawToolMount `hcl:"mount,block"`
	Limits        *rawLimits      `hcl:"limits,block"`

	TierRange          hcl.Range `hcl:"tier,attr_value_range"`
	ApprovalRange      hcl.Range `hcl:"approval,attr_value_range"`
	InputSchemaRange   hcl.Range `hcl:"input_schema,attr_value_range"`
	OutputSchemaRange  hcl.Range `hcl:"output_schema,attr_value_range"`
	HostsRange         hcl.Range `hcl:"hosts,attr_value_range"`
	SecretsRange       hcl.Range `hcl:"secrets,attr_value_range"`
	InvokeRange        hcl.Range `hcl:"invoke,attr_value_range"`
	CapabilitiesRange  hcl.Range `hcl:"capabilities,attr_value_range"`
	AllowUnsignedRange hcl.Range `hcl:"allow_unsigned,attr_value_range"`
	DefRange           hcl.Range `hcl:",def_range"`
}

type rawWasm struct {
	Path     *string           `hcl:"path"`
	Builtin  *string           `hcl:"builtin"`
	SHA256   *string           `hcl:"sha256"`
	Tool     *string           `hcl:"tool"`
	Export   *string           `hcl:"export"`
	ToolRef  *string           `hcl:"tool_ref"`
	Manifest *string           `hcl:"manifest"`
	Config   map[string]string `hcl:"config,optional"`

	ToolRefRange  hcl.Range `hcl:"tool_ref,attr_value_range"`
	ManifestRange hcl.Range `hcl:"manifest,attr_value_range"`
	PathRange     hcl.Range `hcl:"path,attr_value_range"`
	SHA256Range   hcl.Range `hcl:"sha256,attr_value_range"`
	BuiltinRange  hcl.Range `hcl:"builtin,attr_value_range"`
	ToolRange     hcl.Range `hcl:"tool,attr_value_range"`
	DefRange      hcl.Range `hcl:",def_range"`
}

type rawSubproc struct {
	Path     *string  `hcl:"path"`
	Builtin  *string  `hcl:"builtin"`
	SHA256   *string  `hcl:"sha256"`
	Tool     *string  `hcl:"tool"`
	Args     []string `hcl:"args,optional"`
	Env      []string `hcl:"env,optional"`
	ToolRef  *string  `hcl:"tool_ref"`
	Manifest *string  `hcl:"manifest"`

	ToolRefRange  hcl.Range `hcl:"tool_ref,attr_value_range"`
	ManifestRange hcl.Range `hcl:"manifest,attr_value_range"`
	PathRange     hcl.Range `hcl:"path,attr_value_range"`
	SHA256Range   hcl.Range `hcl:"sha256,attr_value_range"`
	BuiltinRange  hcl.Range `hcl:"builtin,attr_value_range"`
	EnvRange      hcl.Range `hcl:"env,attr_value_range"`
	DefRange      hcl.Range `hcl:",def_range"`
}

type rawGo struct {
	Tool *string `hcl:"tool"`

	DefRange hcl.Range `hcl:",def_range"`
}

type rawToolMount struct {
	HostPath  string `hcl:"host_path"`
	GuestPath string `hcl:"guest_path"`
	ReadOnly  *bool  `hcl:"read_only"`

	HostPathRange  hcl.Range `hcl:"host_path,attr_value_range"`
	GuestPathRange hcl.Range `hcl:"guest_path,attr_value_range"`
	DefRange       hcl.Range `hcl:",def_range"`
}

type rawMCP struct {
	Name    string            `hcl:"name,label"`
	URL     string            `hcl:"url"`
	Headers map[string]string `hcl:"headers,optional"`
	Secrets []string          `hcl:"secrets,optional"`
	Tools   []string          `hcl:"tools"`
	Tier    *string           `hcl:"tier"`
	Timeout *string           `hcl:"timeout"`
	Limits  *rawLimits        `hcl:"limits,block"`
	// Capabilities: client.sampling, client.elicitation (the server may
	// ask the caller's client while its tools run).
	Capabilities []string  `hcl:"capabilities,optional"`
	OAuth        *rawOAuth `hcl:"oauth,block"`

	URLRange          hcl.Range `hcl:"url,attr_value_range"`
	HeadersRange      hcl.Range `hcl:"headers,attr_value_range"`
	CapabilitiesRange hcl.Range `hcl:"capabilities,attr_value_range"`
	SecretsRange      hcl.Range `hcl:"secrets,attr_value_range"`
	ToolsRange        hcl.Range `hcl:"tools,attr_value_range"`
	TierRange         hcl.Range `hcl:"tier,attr_value_range"`
	TimeoutRange      hcl.Range `hcl:"timeout,attr_value_range"`
	DefRange          hcl.Range `hcl:",def_range"`
}

// rawOAuth is an mcp_server's oauth block. Secrets are named (client_secret,
// private_key), never written: their values stay out of the file.
type rawOAuth struct {
	Grant               *string  `hcl:"grant"`
	ClientID            *string  `hcl:"client_id"`
	ClientSecret        *string  `hcl:"client_secret"`
	PrivateKey          *string  `hcl:"private_key"`
	SigningAlgorithm    *string  `hcl:"signing_algorithm"`
	ClientIDMetadataURL *string  `hcl:"client_id_metadata_url"`
	Scopes              []string `hcl:"scopes,optional"`
	RedirectURL         *string  `hcl:"redirect_url"`

	GrantRange               hcl.Range `hcl:"grant,attr_value_range"`
	ClientIDRange            hcl.Range `hcl:"client_id,attr_value_range"`
	ClientSecretRange        hcl.Range `hcl:"client_secret,attr_value_range"`
	PrivateKeyRange          hcl.Range `hcl:"private_key,attr_value_range"`
	SigningAlgorithmRange    hcl.Range `hcl:"signing_algorithm,attr_value_range"`
	ClientIDMetadataURLRange hcl.Range `hcl:"client_id_metadata_url,attr_value_range"`
	ScopesRange              hcl.Range `hcl:"scopes,attr_value_range"`
	RedirectURLRange         hcl.Range `hcl:"redirect_url,attr_value_range"`
	DefRange                 hcl.Range `hcl:",def_range"`
}

// rawLimits keeps every limit as an expression so that sizes ("64MiB"),
// durations ("30s") and counts are parsed with a diagnostic at the value.
type rawLimits struct {
	Body hcl.Body `hcl:",remain"`
}

type rawPrompt struct {
	Name        string         `hcl:"name,label"`
	Title       *string        `hcl:"title"`
	Description *string        `hcl:"description"`
	Arguments   []*rawArgument `hcl:"argument,block"`
	Messages    []*rawMessage  `hcl:"message,block"`

	DefRange hcl.Range `hcl:",def_range"`
}

type rawArgument struct {
	Name        string   `hcl:"name,label"`
	Title       *string  `hcl:"title"`
	Description *string  `hcl:"description"`
	Required    *bool    `hcl:"required"`
	Completions []string `hcl:"completions,optional"`

	DefRange hcl.Range `hcl:",def_range"`
}

// rawMessage holds one of text, image {} and resource {}.
type rawMessage struct {
	Role     string            `hcl:"role"`
	Text     *string           `hcl:"text"`
	Image    []*rawImage       `hcl:"image,block"`
	Resource []*rawEmbeddedRes `hcl:"resource,block"`

	RoleRange hcl.Range `hcl:"role,attr_value_range"`
	TextRange hcl.Range `hcl:"text,attr_value_range"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type rawImage struct {
	Path     string  `hcl:"path"`
	MIMEType *string `hcl:"mime_type"`

	PathRange     hcl.Range `hcl:"path,attr_value_range"`
	MIMETypeRange hcl.Range `hcl:"mime_type,attr_value_range"`
	DefRange      hcl.Range `hcl:",def_range"`
}

type rawEmbeddedRes struct {
	URI      string  `hcl:"uri"`
	MIMEType *string `hcl:"mime_type"`
	Text     *string `hcl:"text"`
	Path     *string `hcl:"path"`

	URIRange  hcl.Range `hcl:"uri,attr_value_range"`
	TextRange hcl.Range `hcl:"text,attr_value_range"`
	PathRange hcl.Range `hcl:"path,attr_value_range"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type rawResource struct {
	URI         string  `hcl:"uri,label"`
	Name        *string `hcl:"name"`
	Title       *string `hcl:"title"`
	Description *string `hcl:"description"`
	MIMEType    *string `hcl:"mime_type"`
	Text        *string `hcl:"text"`
	Path        *string `hcl:"path"`

	PathRange hcl.Range `hcl:"path,attr_value_range"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type rawResourceTemplate struct {
	URITemplate string              `hcl:"uri_template,label"`
	Name        *string             `hcl:"name"`
	Title       *string             `hcl:"title"`
	Description *string             `hcl:"description"`
	MIMEType    *string             `hcl:"mime_type"`
	Text        string              `hcl:"text"`
	Completions map[string][]string `hcl:"completions,optional"`

	TextRange        hcl.Range `hcl:"text,attr_value_range"`
	CompletionsRange hcl.Range `hcl:"completions,attr_value_range"`
	DefRange         hcl.Range `hcl:",def_range"`
}
