package scan

import "regexp/syntax"

// RequiredLiteral returns the longest literal that every match of the
// regular expression expr holds, and whether it is matched in either case
// (none: ""). A concatenation requires each of its parts' literals; a
// capture, x+ and x{n,} with n >= 1 require x's; alternations, optional
// and repeated-from-zero parts and classes require nothing.
func RequiredLiteral(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	return required(re.Simplify())
}

func required(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		best, fold := "", false
		for _, sub := range re.Sub {
			if lit, f := required(sub); len(lit) > len(best) {
				best, fold = lit, f
			}
		}
		return best, fold
	}
	return "", false
}
