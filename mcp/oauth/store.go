package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolhost/toolhost/internal/atomicfile"
)

// Store keeps one token file per MCP server URL in a directory of its own
// (0700; each file 0600, replaced atomically), so that a token obtained
// by `host auth login` is used by every later host, and a refreshed one
// survives a restart. A Store is safe for concurrent use by goroutines and
// processes: a reader sees a whole file, the old or the new one.
type Store struct {
	dir string
}

// NewStore returns a store in dir, which is created when the first token
// is saved.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Record is what the store keeps for one server: the token and what is
// needed to refresh it without discovery or registration again.
type Record struct {
	// ServerURL is the MCP server the token is for.
	ServerURL string `json:"server_url"`
	// Grant is the grant that obtained it.
	Grant string `json:"grant"`
	// Issuer is the authorization server's issuer, when known.
	Issuer    string `json:"issuer,omitempty"`
	TokenURL  string `json:"token_url"`
	AuthStyle int    `json:"auth_style,omitempty"`
	ClientID  string `json:"client_id"`
	// ClientSecret is set only for a client the host registered itself
	// (dynamic registration): a configured secret stays in its secret.
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Resource     string   `json:"resource,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Obtained     time.Time `json:"obtained"`
}

// Token returns the record's token.
func (r *Record) Token() *oauth2.Token {
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken, Expiry: r.Expiry}
}

// Expired reports whether the access token has expired at now (a token
// without an expiry never does).
func (r *Record) Expired(now time.Time) bool {
	return !r.Expiry.IsZero() && !now.Before(r.Expiry)
}

// Path is the file that holds the token of serverURL: named by a hash of
// the URL, so that any URL makes a safe file name.
func (s *Store) Path(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the record of serverURL, or nil and no error when there is
// none.
func (s *Store) Load(serverURL string) (*Record, error) {
	b, err := os.ReadFile(s.Path(serverURL))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("token store: %s: %w", s.Path(serverURL), err)
	}
	if r.ServerURL != serverURL {
		// A hash collision, or a file copied by hand: not this server's.
		return nil, nil
	}
	return &r, nil
}

// Save writes the record of r.ServerURL: to a temporary file in the
// directory, made 0600 before anything is written, then renamed over the
// old one, so that no reader ever sees half a token.
func (s *Store) Save(r *Record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := atomicfile.WriteFile(s.Path(r.ServerURL), b, atomicfile.Options{Perm: 0o600, Sync: true}); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// Delete removes the record of serverURL; it reports whether there was one.
func (s *Store) Delete(serverURL string) (bool, error) {
	err := os.Remove(s.Path(serverURL))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("token store: %w", err)
	}
	return true, nil
}
