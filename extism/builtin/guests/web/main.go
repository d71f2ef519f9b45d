//go:build wasip1

// Command web is toolhost's built-in network plugin: http.request,
// web.fetch and web.search (docs/tools.md). It has no network of its own:
// every request goes through the host's guarded client, which allows only
// the hosts the operator granted, refuses private addresses at dial time,
// follows at most 5 redirects (each re-checked), caps the response size and
// injects secrets into headers without this plugin ever seeing them.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/extism/builtin/internal/hostcfg"
	"github.com/toolhost/toolhost/extism/builtin/internal/htmlmd"
	"github.com/toolhost/toolhost/shared/guest"
)

func main() {}

func init() {
	guest.Register(requestTool(), fetchTool(), searchTool())
}

const codeInvalid = "INVALID_REQUEST"

func invalid(format string, args ...any) *guest.Result {
	return guest.ErrorCode(codeInvalid, format, args...)
}

func decode(c *guest.Call, v any) *guest.Result {
	if err := c.Bind(v); err != nil {
		return invalid("invalid arguments: %v", err)
	}
	return nil
}

// checkURL validates a URL argument before the host sees it, so that a
// model gets a precise message.
func checkURL(raw string) (*url.URL, *guest.Result) {
	if strings.IndexByte(raw, 0) >= 0 || !utf8.ValidString(raw) {
		return nil, invalid("url must be valid UTF-8 without NUL bytes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalid("url %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, invalid("url %q: only http and https URLs are allowed", raw)
	}
	if u.Host == "" {
		return nil, invalid("url %q has no host", raw)
	}
	return u, nil
}

// fetch sends a request through the host and turns a refusal or failure
// into a result with the host's code.
func fetch(req guest.HTTPRequest) (*guest.HTTPResponse, *guest.Result) {
	resp, err := guest.Fetch(req)
	if err != nil {
		if resp != nil && resp.Code != "" {
			return nil, guest.ErrorCode(resp.Code, "%s %s: %s", req.Method, req.URL, resp.Error)
		}
		return nil, guest.Errorf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp, nil
}

// header returns a response header, case-insensitively.
func header(resp *guest.HTTPResponse, name string) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// mediaType returns the lower-case media type of a Content-Type value.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isText reports whether a body of this media type should be shown as text.
func isText(mt string, body []byte) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/xml", mt == "application/javascript", mt == "application/x-www-form-urlencoded",
		mt == "application/yaml", mt == "application/toml":
		return true
	case mt == "":
		return utf8.Valid(body) && bytes.IndexByte(body, 0) < 0
	}
	return false
}

// text returns the body as a string, decoding latin-1 when it is not UTF-8.
func text(body []byte) string {
	if utf8.Valid(body) {
		return string(body)
	}
	var sb strings.Builder
	for _, c := range body {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// --- http.request ---

const requestSchema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "minLength": 1, "description": "An http or https URL on a host the operator allows."},
    "method": {"type": "string", "enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], "description": "Default GET."},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Request headers."},
    "body": {"type": "string", "description": "Request body."},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 300, "description": "Seconds before the request is abandoned (TOOL_EXECUTION_TIMEOUT). Default 30; the tool's own time limit still applies."}
  },
  "required": ["url"],
  "additionalProperties": false
}`

type requestIn struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Timeout int               `json:"timeout"`
}

func requestTool() guest.Tool {
	return guest.Tool{
		Name:  "http.request",
		Title: "HTTP request",
		Description: "Send an HTTP request to an allowed host and return the status, content type, length and body. " +
			"At most 5 redirects are followed; responses over 10 MiB are refused.",
		InputSchema: []byte(requestSchema),
		Handler:     request,
		Args:        requestIn{},
	}
}

func request(c *guest.Call) (*guest.Result, error) {
	var in requestIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if _, r := checkURL(in.URL); r != nil {
		return r, nil
	}
	method := strings.ToUpper(in.Method)
	switch method {
	case "":
		method = "GET"
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		return invalid("method %q is not supported", in.Method), nil
	}
	if in.Timeout == 0 {
		in.Timeout = 30
	}
	if in.Timeout < 0 || in.Timeout > 300 {
		return invalid("timeout must be between 1 and 300 seconds"), nil
	}
	for k, v := range in.Headers {
		if strings.ContainsAny(k, "\r\n:\x00 ") || k == "" || strings.ContainsAny(v, "\r\n\x00") {
			return invalid("header %q is malformed", k), nil
		}
	}
	resp, r := fetch(guest.HTTPRequest{Method: method, URL: in.URL, Headers: in.Headers, Body: []byte(in.Body), TimeoutMS: int64(in.Timeout) * 1000})
	if r != nil {
		return r, nil
	}
	ct := header(resp, "Content-Type")
	var sb strings.Builder
	fmt.Fprintf(&sb, "HTTP %d %s\n", resp.Status, statusText(resp.Status))
	if resp.URL != "" && resp.URL != in.URL {
		fmt.Fprintf(&sb, "URL: %s\n", resp.URL)
	}
	fmt.Fprintf(&sb, "Content-Type: %s\nContent-Length: %d\n", ct, len(resp.Body))
	if len(resp.Body) > 0 {
		sb.WriteString("\n")
		if isText(mediaType(ct), resp.Body) {
			sb.WriteString(text(resp.Body))
		} else {
			fmt.Fprintf(&sb, "Binary body, %d bytes", len(resp.Body))
		}
	}
	return guest.Text(sb.String()), nil
}

// --- web.fetch ---

const fetchSchema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "minLength": 1, "description": "An http or https URL on a host the operator allows."}
  },
  "required": ["url"],
  "additionalProperties": false
}`

func fetchTool() guest.Tool {
	return guest.Tool{
		Name:  "web.fetch",
		Title: "Fetch a web page",
		Description: "GET a URL from an allowed host and return it readable: HTML converted to Markdown, plain text and JSON as they are, " +
			"with the page title and the final URL (after redirects).",
		InputSchema: []byte(fetchSchema),
		ReadOnly:    true,
		Handler:     webFetch,
		Args:        fetchIn{},
	}
}

type fetchIn struct {
	URL string `json:"url"`
}

func webFetch(c *guest.Call) (*guest.Result, error) {
	var in fetchIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if _, r := checkURL(in.URL); r != nil {
		return r, nil
	}
	resp, r := fetch(guest.HTTPRequest{Method: "GET", URL: in.URL, Headers: map[string]string{
		"Accept": "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
	}})
	if r != nil {
		return r, nil
	}
	final := resp.URL
	if final == "" {
		final = in.URL
	}
	if resp.Status >= 400 {
		return guest.Errorf("GET %s: HTTP %d %s", final, resp.Status, statusText(resp.Status)), nil
	}
	mt := mediaType(header(resp, "Content-Type"))
	var title, body string
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml" || (mt == "" && looksHTML(resp.Body)):
		base, _ := url.Parse(final)
		t, md, err := htmlmd.Convert([]byte(text(resp.Body)), base)
		if err != nil {
			return guest.Errorf("GET %s: the HTML does not parse: %v", final, err), nil
		}
		title, body = t, md
	case isText(mt, resp.Body):
		body = text(resp.Body)
	default:
		body = fmt.Sprintf("Binary content (%s), %d bytes", mt, len(resp.Body))
	}
	var sb strings.Builder
	if title != "" {
		fmt.Fprintf(&sb, "Title: %s\n", title)
	}
	fmt.Fprintf(&sb, "URL: %s\n", final)
	if mt != "" {
		fmt.Fprintf(&sb, "Content-Type: %s\n", mt)
	}
	sb.WriteString("\n")
	sb.WriteString(body)
	return guest.Text(sb.String()), nil
}

func looksHTML(b []byte) bool {
	head := bytes.ToLower(bytes.TrimSpace(b[:min(len(b), 512)]))
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
}

// --- web.search ---

const searchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "What to search for."},
    "count": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many results. Default 5."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

func searchTool() guest.Tool {
	return guest.Tool{
		Name:        "web.search",
		Title:       "Search the web",
		Description: "Search the web through the search provider the operator configured; returns the title, URL and snippet of each result.",
		InputSchema: []byte(searchSchema),
		ReadOnly:    true,
		Handler:     webSearch,
		Args:        searchIn{},
	}
}

type searchIn struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

type hit struct {
	Title, URL, Snippet string
}

func webSearch(c *guest.Call) (*guest.Result, error) {
	var in searchIn
	if r := decode(c, &in); r != nil {
		return r, nil
	}
	if strings.TrimSpace(in.Query) == "" {
		return invalid("query is empty"), nil
	}
	if in.Count == 0 {
		in.Count = 5
	}
	if in.Count < 0 || in.Count > 20 {
		return invalid("count must be between 1 and 20"), nil
	}
	provider, _ := hostcfg.Get("provider")
	endpoint, _ := hostcfg.Get("endpoint")
	secret, _ := hostcfg.Get("api_key_secret")
	var hits []hit
	var r *guest.Result
	switch provider {
	case "searxng":
		if endpoint == "" {
			return guest.Errorf("web.search is not configured: the searxng provider needs config endpoint (the instance's URL)"), nil
		}
		hits, r = searxng(endpoint, in)
	case "brave":
		if endpoint == "" {
			endpoint = "https://api.search.brave.com/res/v1/web/search"
		}
		if secret == "" {
			return guest.Errorf("web.search is not configured: the brave provider needs config api_key_secret (the name of a secret holding the API key)"), nil
		}
		hits, r = brave(endpoint, secret, in)
	case "":
		return guest.Errorf("web.search is not configured: set config provider to \"searxng\" or \"brave\""), nil
	default:
		return guest.Errorf("web.search: unknown provider %q (want searxng or brave)", provider), nil
	}
	if r != nil {
		return r, nil
	}
	if len(hits) > in.Count {
		hits = hits[:in.Count]
	}
	if len(hits) == 0 {
		return guest.Text(fmt.Sprintf("No results for %q.", in.Query)), nil
	}
	var sb strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&sb, "%d. %s\n   %s\n", i+1, oneLine(h.Title), h.URL)
		if s := oneLine(h.Snippet); s != "" {
			fmt.Fprintf(&sb, "   %s\n", s)
		}
		if i < len(hits)-1 {
			sb.WriteString("\n")
		}
	}
	return guest.Text(strings.TrimSuffix(sb.String(), "\n")), nil
}

// oneLine collapses whitespace and strips the markup some providers put
// in snippets (<strong>…</strong>).
func oneLine(s string) string {
	var sb strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			sb.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(sb.String()), " ")
}

// getJSON GETs a URL and decodes a JSON answer.
func getJSON(u string, headers map[string]string, v any) *guest.Result {
	headers["Accept"] = "application/json"
	resp, r := fetch(guest.HTTPRequest{Method: "GET", URL: u, Headers: headers, TimeoutMS: 20000})
	if r != nil {
		return r
	}
	if resp.Status != 200 {
		return guest.Errorf("search provider answered HTTP %d %s: %s", resp.Status, statusText(resp.Status), oneLine(text(resp.Body[:min(len(resp.Body), 300)])))
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return guest.Errorf("search provider answered something that is not the expected JSON: %v", err)
	}
	return nil
}

// searxng queries a SearXNG instance's JSON API: GET /search?q=…&format=json.
func searxng(endpoint string, in searchIn) ([]hit, *guest.Result) {
	u, err := url.Parse(strings.TrimSuffix(endpoint, "/") + "/search")
	if err != nil {
		return nil, guest.Errorf("config endpoint %q: %v", endpoint, err)
	}
	u.RawQuery = url.Values{"q": {in.Query}, "format": {"json"}}.Encode()
	var out struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if r := getJSON(u.String(), map[string]string{}, &out); r != nil {
		return nil, r
	}
	var hits []hit
	for _, x := range out.Results {
		hits = append(hits, hit{x.Title, x.URL, x.Content})
	}
	return hits, nil
}

// brave queries the Brave Search API: GET …/web/search?q=…&count=N with the
// key in X-Subscription-Token, written as $SECRET so that the host injects
// it.
func brave(endpoint, secret string, in searchIn) ([]hit, *guest.Result) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, guest.Errorf("config endpoint %q: %v", endpoint, err)
	}
	u.RawQuery = url.Values{"q": {in.Query}, "count": {strconv.Itoa(in.Count)}}.Encode()
	var out struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if r := getJSON(u.String(), map[string]string{"X-Subscription-Token": "$" + secret}, &out); r != nil {
		return nil, r
	}
	var hits []hit
	for _, x := range out.Web.Results {
		hits = append(hits, hit{x.Title, x.URL, x.Description})
	}
	return hits, nil
}

// statusText names the common HTTP status codes (net/http is not linked
// into this module: it would double its size).
func statusText(code int) string {
	if t, ok := statusTexts[code]; ok {
		return t
	}
	return ""
}

var statusTexts = map[int]string{
	100: "Continue", 101: "Switching Protocols",
	200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content", 206: "Partial Content",
	300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
	400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
	406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed",
	413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 418: "I'm a teapot",
	422: "Unprocessable Content", 425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
	431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
	500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
	505: "HTTP Version Not Supported",
}
