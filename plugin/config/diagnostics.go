package config

import (
	"io"

	"github.com/hashicorp/hcl/v2"
)

// WriteDiagnostics prints diagnostics the way Terraform does: severity,
// summary, file:line:col, the source line with the offending part marked,
// and the detail. width wraps the detail (0: no wrapping).
func (p *Parser) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, width uint, color bool) error {
	return hcl.NewDiagnosticTextWriter(w, p.Files(), width, color).WriteDiagnostics(diags)
}
