//! Glob patterns of filesystem.list, as the Go guests' internal/match
//! reads them: "*" any run of characters within a path element, "?" one
//! character, "[a-z]" a class (Go's path.Match syntax, "\" escaping), "**"
//! as a whole element any number of elements, "{a,b}" either alternative.
//! A pattern without "/" is matched against the file name at any depth;
//! one with "/" against the whole relative path.

const MAX_ALTERNATIVES: usize = 256;

pub struct Glob {
    alts: Vec<Vec<String>>,
    base_only: bool,
}

impl Glob {
    pub fn compile(pattern: &str) -> Result<Glob, String> {
        if pattern.is_empty() {
            return Err("empty glob pattern".to_string());
        }
        let mut alts = Vec::new();
        for a in expand_braces(pattern)? {
            let a = a.strip_prefix("./").unwrap_or(&a);
            let a = a.strip_prefix('/').unwrap_or(a);
            let mut els = Vec::new();
            for el in a.split('/') {
                if el != "**" && matches(el, "").is_err() {
                    return Err(format!("glob {}: bad pattern element {}", quote(pattern), quote(el)));
                }
                els.push(el.to_string());
            }
            alts.push(els);
        }
        Ok(Glob { alts, base_only: !pattern.contains('/') })
    }

    /// Whether the slash-separated relative path p matches.
    pub fn matches(&self, p: &str) -> bool {
        let p = if self.base_only { p.rsplit('/').next().unwrap_or(p) } else { p };
        let els: Vec<&str> = p.split('/').collect();
        self.alts.iter().any(|a| match_elems(a, &els))
    }
}

fn quote(s: &str) -> String {
    crate::mounts::quote(s)
}

fn match_elems(pat: &[String], els: &[&str]) -> bool {
    match pat.first() {
        None => els.is_empty(),
        Some(p) if p == "**" => (0..=els.len()).any(|i| match_elems(&pat[1..], &els[i..])),
        Some(p) => !els.is_empty() && matches(p, els[0]) == Ok(true) && match_elems(&pat[1..], &els[1..]),
    }
}

/// Expands {a,b} alternatives (not nested).
fn expand_braces(p: &str) -> Result<Vec<String>, String> {
    let i = match p.find('{') {
        None if p.contains('}') => return Err(format!("glob {}: unmatched }}", quote(p))),
        None => return Ok(vec![p.to_string()]),
        Some(i) => i,
    };
    let j = match p[i..].find('}') {
        None => return Err(format!("glob {}: unmatched {{", quote(p))),
        Some(j) => i + j,
    };
    if p[i + 1..j].contains('{') {
        return Err(format!("glob {}: nested braces are not supported", quote(p)));
    }
    let rest = expand_braces(&p[j + 1..])?;
    let mut out = Vec::new();
    for alt in p[i + 1..j].split(',') {
        for r in &rest {
            out.push(format!("{}{}{}", &p[..i], alt, r));
            if out.len() > MAX_ALTERNATIVES {
                return Err(format!("glob {} expands to more than {} alternatives", quote(p), MAX_ALTERNATIVES));
            }
        }
    }
    Ok(out)
}

/// Go's path.Match: whether name matches the shell pattern, or Err for a
/// malformed pattern.
pub fn matches(pattern: &str, name: &str) -> Result<bool, ()> {
    let (mut pattern, mut name) = (pattern, name);
    'chunks: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing star matches the rest, within the element.
            return Ok(!name.contains('/'));
        }
        let (t, ok) = match_chunk(chunk, name)?;
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if star {
            // Skip ever more of the name, never a '/'.
            for (i, c) in name.char_indices() {
                if c == '/' {
                    break;
                }
                let (t, ok) = match_chunk(chunk, &name[i + c.len_utf8()..])?;
                if ok {
                    if pattern.is_empty() && !t.is_empty() {
                        continue;
                    }
                    name = t;
                    continue 'chunks;
                }
            }
        }
        // No match: the rest of the pattern must still be well formed.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, "")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Splits off the leading stars and the chunk up to the next star outside
/// a class.
fn scan_chunk(p: &str) -> (bool, &str, &str) {
    let trimmed = p.trim_start_matches('*');
    let star = trimmed.len() != p.len();
    let b = trimmed.as_bytes();
    let mut in_class = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => i += 1,
            b'[' => in_class = true,
            b']' => in_class = false,
            b'*' if !in_class => break,
            _ => {}
        }
        i += 1;
    }
    (star, &trimmed[..i], &trimmed[i..])
}

/// Matches chunk (no stars) at the start of s: what is left of s, and
/// whether it matched. The whole chunk is checked for errors even after a
/// mismatch.
fn match_chunk<'a>(chunk: &str, s: &'a str) -> Result<(&'a str, bool), ()> {
    let mut chunk = chunk;
    let mut s = s;
    let mut failed = false;
    while let Some(c0) = chunk.chars().next() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c0 {
            '[' => {
                let mut r = None;
                if !failed {
                    let c = s.chars().next().unwrap();
                    s = &s[c.len_utf8()..];
                    r = Some(c);
                }
                chunk = &chunk[1..];
                let negated = chunk.starts_with('^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if chunk.starts_with(']') && nrange > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk.starts_with('-') {
                        let (h, rest) = get_esc(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if let Some(r) = r {
                        if lo <= r && r <= hi {
                            matched = true;
                        }
                    }
                    nrange += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    let c = s.chars().next().unwrap();
                    if c == '/' {
                        failed = true;
                    }
                    s = &s[c.len_utf8()..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                if c0 == '\\' {
                    chunk = &chunk[1..];
                    if chunk.is_empty() {
                        return Err(());
                    }
                }
                let c = chunk.chars().next().unwrap();
                if !failed {
                    let sc = s.chars().next().unwrap();
                    if sc != c {
                        failed = true;
                    }
                    s = &s[sc.len_utf8()..];
                }
                chunk = &chunk[c.len_utf8()..];
            }
        }
    }
    if failed {
        Ok(("", false))
    } else {
        Ok((s, true))
    }
}

/// One possibly escaped character of a class.
fn get_esc(chunk: &str) -> Result<(char, &str), ()> {
    let mut chunk = chunk;
    if chunk.is_empty() || chunk.starts_with('-') || chunk.starts_with(']') {
        return Err(());
    }
    if chunk.starts_with('\\') {
        chunk = &chunk[1..];
        if chunk.is_empty() {
            return Err(());
        }
    }
    let c = chunk.chars().next().unwrap();
    let rest = &chunk[c.len_utf8()..];
    if rest.is_empty() {
        return Err(());
    }
    Ok((c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_match() {
        for (p, n, want) in [
            ("*.go", "main.go", Ok(true)),
            ("*.go", "a/main.go", Ok(false)),
            ("a*b*c", "axxbyyc", Ok(true)),
            ("a?c", "abc", Ok(true)),
            ("a?c", "a/c", Ok(false)),
            ("[a-c]x", "bx", Ok(true)),
            ("[^a-c]x", "bx", Ok(false)),
            ("[\\]]", "]", Ok(true)),
            ("\\*", "*", Ok(true)),
            ("[a", "a", Err(())),
            ("a\\", "a", Err(())),
            ("x[", "y", Err(())),
            ("*", "é", Ok(true)),
            ("?", "é", Ok(true)),
        ] {
            assert_eq!(matches(p, n), want, "{} {}", p, n);
        }
    }

    #[test]
    fn globs() {
        let g = Glob::compile("*.{yml,yaml}").unwrap();
        assert!(g.matches("a/b/c.yaml") && g.matches("c.yml") && !g.matches("c.json"));
        let g = Glob::compile("docs/**/*.md").unwrap();
        assert!(g.matches("docs/a.md") && g.matches("docs/x/y/a.md") && !g.matches("src/a.md"));
        assert!(Glob::compile("[a").is_err());
        assert!(Glob::compile("a{b").is_err());
        assert!(Glob::compile("a{b{c}}").is_err());
        assert!(Glob::compile("").is_err());
    }
}
