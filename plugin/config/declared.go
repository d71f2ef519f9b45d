package config

// Decoding of prompt, resource and resource_template blocks: what the host
// serves over MCP besides tools. Files they name must lie under the
// configuration's directory (symlinks resolved): the content is handed to
// any client of the server, so a path that wanders off ("../", a link to
// ~/.ssh) is far more likely a mistake than a wish, and refusing it keeps
// one directory as the whole of what can be disclosed.

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/plugin/declared"
)

func (d *decoder) decodeDeclared(raw *rawFile, cfg *Config) {
	cfg.Prompts = decodeUnique(d, raw.Prompts, func(p *rawPrompt) (string, hcl.Range) { return p.Name, p.DefRange },
		"Duplicate prompt", "A prompt named %q is already defined at %s.", d.decodePrompt)
	cfg.Resources = decodeUnique(d, raw.Resources, func(r *rawResource) (string, hcl.Range) { return r.URI, r.DefRange },
		"Duplicate resource", "A resource with URI %q is already defined at %s.", d.decodeResource)
	cfg.ResourceTemplates = decodeUnique(d, raw.ResourceTemplates, func(t *rawResourceTemplate) (string, hcl.Range) { return t.URITemplate, t.DefRange },
		"Duplicate resource template", "A resource template %q is already defined at %s.", d.decodeTemplate)
}

// decodeUnique decodes blocks in order and returns those that decode and
// whose key no earlier block has. A repeated key is reported at the block
// (detail takes the key and where it was first defined); the block is
// still decoded, so that its own mistakes come in the same pass, then
// dropped.
func decodeUnique[B, V any](d *decoder, blocks []B, key func(B) (string, hcl.Range), summary, detail string, decode func(B) (V, bool)) []V {
	var out []V
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		k, rng := key(b)
		prev, dup := seen[k]
		if dup {
			d.errorf(rng, summary, detail, k, prev)
		} else {
			seen[k] = rng
		}
		if v, ok := decode(b); ok && !dup {
			out = append(out, v)
		}
	}
	return out
}

func (d *decoder) decodePrompt(p *rawPrompt) (declared.Prompt, bool) {
	n := len(d.diags)
	out := declared.Prompt{Name: p.Name, Title: deref(p.Title), Description: deref(p.Description)}
	if strings.TrimSpace(p.Name) == "" {
		d.errorf(p.DefRange, "Invalid prompt name", "A prompt needs a name.")
	}
	for _, a := range p.Arguments {
		if !declared.ValidName(a.Name) {
			d.errorf(a.DefRange, "Invalid argument name", "%q is not an argument name: use letters, digits, '_' and '-', starting with a letter or '_', so that text can place it as {{%s}}.", a.Name, a.Name)
			continue
		}
		if _, dup := out.Argument(a.Name); dup {
			d.errorf(a.DefRange, "Duplicate argument", "Prompt %q already has an argument %q.", p.Name, a.Name)
			continue
		}
		out.Arguments = append(out.Arguments, declared.Argument{
			Name: a.Name, Title: deref(a.Title), Description: deref(a.Description),
			Required: a.Required != nil && *a.Required, Completions: a.Completions,
		})
	}
	var names []string
	for _, a := range out.Arguments {
		names = append(names, a.Name)
	}
	if len(p.Messages) == 0 {
		d.errorf(p.DefRange, "Prompt without messages", "Give prompt %q at least one message { role = \"user\", text = \"...\" } block.", p.Name)
	}
	for _, m := range p.Messages {
		if msg, ok := d.decodeMessage(p.Name, names, m); ok {
			out.Messages = append(out.Messages, msg)
		}
	}
	return out, len(d.diags) == n
}

func (d *decoder) decodeMessage(prompt string, args []string, m *rawMessage) (declared.Message, bool) {
	msg := declared.Message{Role: declared.Role(m.Role)}
	ok := true
	if msg.Role != declared.RoleUser && msg.Role != declared.RoleAssistant {
		d.errorf(m.RoleRange, "Invalid role", "role must be \"user\" or \"assistant\", not %q.", m.Role)
		ok = false
	}
	given := 0
	if m.Text != nil {
		given++
	}
	given += len(m.Image) + len(m.Resource)
	if given != 1 {
		d.errorf(m.DefRange, "Invalid message content", "A message holds exactly one of text = \"...\", an image {} block or a resource {} block; this one has %d.", given)
		return msg, false
	}
	switch {
	case m.Text != nil:
		t, tok := d.text(*m.Text, m.TextRange, prompt, args)
		msg.Text = &t
		ok = ok && tok
	case len(m.Image) == 1:
		img, iok := d.decodeImage(m.Image[0])
		msg.Image = img
		ok = ok && iok
	default:
		r, rok := d.decodeEmbedded(prompt, args, m.Resource[0])
		msg.Resource = r
		ok = ok && rok
	}
	return msg, ok
}

// text parses s and checks that every placeholder names an argument.
func (d *decoder) text(s string, rng hcl.Range, prompt string, args []string) (declared.Text, bool) {
	t := declared.ParseText(s)
	ok := true
	for _, ph := range t.Placeholders() {
		if !slices.Contains(args, ph) {
			d.errorf(rng, "Unknown placeholder", "{{%s}} names no argument of prompt %q%s.", ph, prompt, declaredList(args))
			ok = false
		}
	}
	return t, ok
}

func declaredList(names []string) string {
	if len(names) == 0 {
		return ", which declares none"
	}
	return "; it declares " + quoteList(names)
}

// file reads a file a declaration names, which must lie under the
// configuration's directory, reporting a mistake at rng.
func (d *decoder) file(p string, rng hcl.Range, what string) (string, []byte, bool) {
	abs := d.path(p)
	data, err := declared.ReadFile(d.dir, abs, declared.MaxFileBytes)
	return abs, data, d.fileOK(abs, err, rng, what)
}

// fileType checks a path-backed resource's file as file does and returns
// its media type, without reading it all: it is read at every read of the
// resource, not at load.
func (d *decoder) fileType(p string, rng hcl.Range) (string, string, bool) {
	abs := d.path(p)
	typ, err := declared.FileType(d.dir, abs, declared.MaxFileBytes)
	return abs, typ, d.fileOK(abs, err, rng, "resource file")
}

// fileOK reports err, met reading the file abs, at rng; it reports
// whether there was none.
func (d *decoder) fileOK(abs string, err error, rng hcl.Range, what string) bool {
	// ReadFile refuses a path outside d.dir, lexically (ErrOutside) or
	// through a symlink (os.Root's own error, which within tells apart).
	if _, in := within(d.dir, abs); !in || errors.Is(err, declared.ErrOutside) {
		d.errorf(rng, "Path outside the configuration directory", "The %s %s is not under %s (symlinks resolved); files served to MCP clients must be.", what, abs, d.dir)
		return false
	}
	switch {
	case errors.Is(err, declared.ErrTooLarge):
		d.errorf(rng, "File too large", "The %s %s is over the %s a declared file may hold.", what, abs, plugin.FormatSize(declared.MaxFileBytes))
	case errors.Is(err, os.ErrNotExist):
		d.errorf(rng, "File not found", "The %s %s cannot be read: %v.", what, abs, unwrapPathError(err))
	case err != nil:
		d.errorf(rng, "Cannot read file", "The %s %s cannot be read: %v.", what, abs, unwrapPathError(err))
	default:
		return true
	}
	return false
}

func (d *decoder) decodeImage(im *rawImage) (*declared.Image, bool) {
	abs, data, ok := d.file(im.Path, im.PathRange, "image")
	if !ok {
		return nil, false
	}
	img := &declared.Image{Data: data, MIMEType: declared.MIMEType(abs, data)}
	rng := im.PathRange
	if im.MIMEType != nil {
		img.MIMEType, rng = *im.MIMEType, im.MIMETypeRange
	}
	if !strings.HasPrefix(img.MIMEType, "image/") {
		d.errorf(rng, "Not an image", "The image %s has media type %q; set mime_type = \"image/...\" if it is an image.", abs, img.MIMEType)
		return nil, false
	}
	return img, true
}

func (d *decoder) decodeEmbedded(prompt string, args []string, r *rawEmbeddedRes) (*declared.EmbeddedResource, bool) {
	out := &declared.EmbeddedResource{MIMEType: deref(r.MIMEType)}
	uri, ok := d.text(r.URI, r.URIRange, prompt, args)
	out.URI = uri
	if ok && uri.Placeholders() == nil {
		if err := checkURI(r.URI); err != nil {
			d.errorf(r.URIRange, "Invalid resource URI", "%v.", err)
			ok = false
		}
	}
	switch {
	case r.Text != nil && r.Path != nil:
		d.errorf(r.DefRange, "Both text and path", "An embedded resource takes its content from text or from path, not both.")
		return nil, false
	case r.Text != nil:
		t, tok := d.text(*r.Text, r.TextRange, prompt, args)
		out.Text = &t
		ok = ok && tok
		if out.MIMEType == "" {
			out.MIMEType = "text/plain"
		}
	case r.Path != nil:
		abs, data, fok := d.file(*r.Path, r.PathRange, "resource file")
		if !fok {
			return nil, false
		}
		if out.MIMEType == "" {
			out.MIMEType = declared.MIMEType(abs, data)
		}
		// A file's text is used as it is: placeholders are for what the
		// operator writes in the configuration.
		if text, blob := declared.TextOrBlob(out.MIMEType, data); blob == nil {
			t := declared.Literal(text)
			out.Text = &t
		} else {
			out.Blob = blob
		}
	default:
		d.errorf(r.DefRange, "Missing resource content", "Set text = \"...\" or path = \"./file\".")
		return nil, false
	}
	return out, ok
}

// checkURI accepts an absolute URI outside the toolhost: scheme, which
// names the host's own resources (artifacts).
func checkURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URI: %v", s, unwrapURLError(err))
	}
	if u.Scheme == "" {
		return fmt.Errorf("%q is not an absolute URI: it needs a scheme, like test://", s)
	}
	if strings.EqualFold(u.Scheme, "toolhost") {
		return fmt.Errorf("%q: the toolhost: scheme is the host's own (artifacts); use another", s)
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (d *decoder) decodeResource(r *rawResource) (declared.Resource, bool) {
	out := declared.Resource{
		URI: r.URI, Name: deref(r.Name), Title: deref(r.Title),
		Description: deref(r.Description), MIMEType: deref(r.MIMEType),
	}
	if out.Name == "" {
		out.Name = r.URI
	}
	ok := true
	if err := checkURI(r.URI); err != nil {
		d.errorf(r.DefRange, "Invalid resource URI", "%v.", err)
		ok = false
	}
	switch {
	case r.Text != nil && r.Path != nil:
		d.errorf(r.DefRange, "Both text and path", "A resource takes its content from text or from path, not both.")
		return out, false
	case r.Text != nil:
		out.Text = *r.Text
		if out.MIMEType == "" {
			out.MIMEType = "text/plain"
		}
	case r.Path != nil:
		abs, typ, fok := d.fileType(*r.Path, r.PathRange)
		if !fok {
			return out, false
		}
		out.Path, out.Root = abs, d.dir
		if out.MIMEType == "" {
			out.MIMEType = typ
		}
	default:
		d.errorf(r.DefRange, "Missing resource content", "Set text = \"...\" or path = \"./file\".")
		return out, false
	}
	return out, ok
}

func (d *decoder) decodeTemplate(t *rawResourceTemplate) (declared.Template, bool) {
	out := declared.Template{
		Name: deref(t.Name), Title: deref(t.Title), Description: deref(t.Description),
		MIMEType: deref(t.MIMEType), Completions: t.Completions,
	}
	if out.Name == "" {
		out.Name = t.URITemplate
	}
	if out.MIMEType == "" {
		out.MIMEType = "text/plain"
	}
	ut, err := declared.ParseURITemplate(t.URITemplate)
	if err != nil {
		d.errorf(t.DefRange, "Invalid URI template", "%v.", err)
		return out, false
	}
	if err := checkURI(strings.NewReplacer("{", "", "}", "").Replace(t.URITemplate)); err != nil {
		d.errorf(t.DefRange, "Invalid URI template", "%v.", err)
		return out, false
	}
	out.URITemplate = ut
	vars := ut.Variables()
	ok := true
	out.Text = declared.ParseText(t.Text)
	for _, ph := range out.Text.Placeholders() {
		if !slices.Contains(vars, ph) {
			d.errorf(t.TextRange, "Unknown placeholder", "{{%s}} names no variable of the URI template %q%s.", ph, t.URITemplate, declaredList(vars))
			ok = false
		}
	}
	for _, k := range sortedKeys(t.Completions) {
		if !slices.Contains(vars, k) {
			d.errorf(t.CompletionsRange, "Unknown template variable", "completions names %q, which is not a variable of %q%s.", k, t.URITemplate, declaredList(vars))
			ok = false
		}
	}
	return out, ok
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
