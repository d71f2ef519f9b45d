//! The directories the operator mounted into this instance, and the
//! resolution of path arguments against them: the rules of the Go guests'
//! internal/mounts package, message for message, so that a tool answers
//! the same whichever module serves it.

use std::io;

pub const INVALID_REQUEST: &str = "INVALID_REQUEST";
pub const FILE_NOT_FOUND: &str = "FILE_NOT_FOUND";
pub const FILE_TOO_LARGE: &str = "FILE_TOO_LARGE";
pub const PERMISSION_DENIED: &str = "PERMISSION_DENIED";
pub const FAILED: &str = "TOOL_EXECUTION_FAILED";

const MAX_PATH_BYTES: usize = 4096;
const MAX_NAME_BYTES: usize = 255;

/// A failure with one of the pipeline's stable codes.
#[derive(Debug)]
pub struct Error {
    pub code: &'static str,
    pub msg: String,
}

pub fn err(code: &'static str, msg: String) -> Error {
    Error { code, msg }
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn fd_prestat_get(fd: i32, buf: *mut u32) -> i32;
    fn fd_prestat_dir_name(fd: i32, path: *mut u8, len: i32) -> i32;
}

/// The mounts of this instance, in the order the operator declared them;
/// the first is the workspace that relative paths start from.
pub struct Set {
    paths: Vec<String>,
    /// The preopened descriptor of each path.
    fds: Vec<i32>,
}

/// A resolved path.
#[derive(Debug)]
pub struct Path {
    /// The guest path to open.
    pub abs: String,
    /// How to show the path to a model: relative to the workspace when
    /// inside it, else absolute.
    pub display: String,
}

impl Set {
    /// Reads the WASI preopens. The per-call /tmp is not a mount the tools
    /// offer and is left out.
    pub fn discover() -> Set {
        let (mut paths, mut fds) = (Vec::new(), Vec::new());
        for fd in 3..64 {
            let mut pre = [0u32; 2]; // tag (u8, padded), name length
            if unsafe { fd_prestat_get(fd, pre.as_mut_ptr()) } != 0 {
                break;
            }
            let n = pre[1] as usize;
            if pre[0] & 0xff != 0 || n == 0 || n > MAX_PATH_BYTES {
                continue;
            }
            let mut buf = vec![0u8; n];
            if unsafe { fd_prestat_dir_name(fd, buf.as_mut_ptr(), n as i32) } != 0 {
                continue;
            }
            if buf.last() == Some(&0) {
                buf.pop();
            }
            let p = clean(&format!("/{}", String::from_utf8_lossy(&buf)));
            if p != "/tmp" && p != "/" {
                paths.push(p);
                fds.push(fd);
            }
        }
        Set { paths, fds }
    }

    /// Resolves p: relative to the workspace, or absolute inside a mount.
    /// An empty p is the workspace itself.
    pub fn resolve(&self, p: &str) -> Result<Path, Error> {
        if self.paths.is_empty() {
            return Err(err(PERMISSION_DENIED, "no directory is mounted for this tool; the operator grants one with a mount block".to_string()));
        }
        check_name("path", p)?;
        let abs = if p.starts_with('/') {
            clean(p)
        } else {
            let rel = clean(p);
            if rel == ".." || rel.starts_with("../") {
                return Err(err(PERMISSION_DENIED, format!("path {} climbs out of the workspace {} with \"..\"; give a path inside it", quote(p), self.paths[0])));
            }
            join(&self.paths[0], &rel)
        };
        if !self.paths.iter().any(|m| within(m, &abs)) {
            return Err(err(
                PERMISSION_DENIED,
                format!("path {} is outside every mounted directory ({}); give a path relative to {}", quote(p), self.paths.join(", "), self.paths[0]),
            ));
        }
        let display = self.display(&abs);
        Ok(Path { abs, display })
    }

    /// abs as a model should see it: relative to the workspace when inside
    /// it ("." for the workspace itself), else absolute.
    pub fn display(&self, abs: &str) -> String {
        String::from_utf8(self.shown(abs.as_bytes()).to_vec()).unwrap_or_default()
    }

    /// display for a path that need not be UTF-8 (a file name can be any
    /// bytes), as a part of abs.
    pub fn shown<'b>(&self, abs: &'b [u8]) -> &'b [u8] {
        match self.paths.first() {
            Some(ws) if abs == ws.as_bytes() => b".",
            Some(ws) if under(ws.as_bytes(), abs) => &abs[ws.len() + 1..],
            _ => abs,
        }
    }

    /// The preopened directory abs lies in (the innermost mount holding
    /// it) and abs relative to it: where a WASI call on abs starts, as the
    /// standard library would find it.
    pub fn preopen<'b>(&self, abs: &'b [u8]) -> Option<(i32, &'b [u8])> {
        let mut best: Option<(usize, i32, &'b [u8])> = None;
        for (p, &fd) in self.paths.iter().zip(&self.fds) {
            let p = p.as_bytes();
            let rel: &'b [u8] = if abs == p {
                b"."
            } else if under(p, abs) {
                &abs[p.len() + 1..]
            } else {
                continue;
            };
            if best.map_or(true, |(n, _, _)| p.len() > n) {
                best = Some((p.len(), fd, rel));
            }
        }
        best.map(|(_, fd, rel)| (fd, rel))
    }
}

/// Whether p lies strictly below the directory dir.
fn under(dir: &[u8], p: &[u8]) -> bool {
    p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/'
}

/// Validates one string as a path argument: UTF-8, no NUL, not over-long.
pub fn check_name(field: &str, p: &str) -> Result<(), Error> {
    if p.contains('\0') {
        return Err(err(INVALID_REQUEST, format!("{} contains a NUL byte", field)));
    }
    if p.contains('\u{fffd}') {
        return Err(err(INVALID_REQUEST, format!("{} is not valid UTF-8", field)));
    }
    if p.len() > MAX_PATH_BYTES {
        return Err(err(INVALID_REQUEST, format!("{} is {} bytes long; the limit is {}", field, p.len(), MAX_PATH_BYTES)));
    }
    for el in p.split('/') {
        if el.len() > MAX_NAME_BYTES {
            let head: String = el.chars().take(20).collect();
            return Err(err(INVALID_REQUEST, format!("{} has a name of {} bytes ({}…); the limit is {}", field, el.len(), quote(&head), MAX_NAME_BYTES)));
        }
    }
    Ok(())
}

/// Whether p is dir or lies below it.
fn within(dir: &str, p: &str) -> bool {
    p == dir || (p.len() > dir.len() && p.as_bytes()[dir.len()] == b'/' && p.starts_with(dir))
}

fn join(dir: &str, rel: &str) -> String {
    if rel == "." {
        return dir.to_string();
    }
    clean(&format!("{}/{}", dir, rel))
}

/// The shortest path equivalent to p by lexical processing, as Go's
/// path.Clean returns it.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for el in p.split('/') {
        match el {
            "" | "." => {}
            ".." => {
                if matches!(out.last(), Some(&last) if last != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            _ => out.push(el),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{}", body),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

/// s quoted as Go's %q quotes a valid UTF-8 string: escapes for quotes,
/// backslashes and control characters, everything printable as it is.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || is_format(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The invisible format characters Go's %q escapes, the common ones.
fn is_format(c: char) -> bool {
    matches!(c as u32, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff | 0xfff9..=0xfffb)
}

// WASI errno values.
const EACCES: i32 = 2;
const EISDIR: i32 = 31;
pub const ELOOP: i32 = 32;
const ENAMETOOLONG: i32 = 37;
pub const ENOENT: i32 = 44;
pub const ENOTDIR: i32 = 54;
const EPERM: i32 = 63;
const EROFS: i32 = 69;

/// Turns an I/O error into an Error with the right code; shown is the
/// path as the model gave it.
pub fn from_io(shown: &str, e: &io::Error) -> Error {
    match e.raw_os_error() {
        Some(ENOENT) => err(FILE_NOT_FOUND, format!("{} does not exist", shown)),
        Some(EROFS) => err(PERMISSION_DENIED, format!("{} is on a read-only mount", shown)),
        Some(EACCES | ELOOP | EPERM) => err(
            PERMISSION_DENIED,
            format!("{} cannot be accessed: it is outside the mounted directories (a symbolic link leading out, or no permission)", shown),
        ),
        Some(ENOTDIR) => err(FILE_NOT_FOUND, format!("{} does not exist (a parent is not a directory)", shown)),
        Some(EISDIR) => err(INVALID_REQUEST, format!("{} is a directory", shown)),
        Some(ENAMETOOLONG) => err(INVALID_REQUEST, format!("{}: name too long", shown)),
        _ => err(FAILED, format!("{}: {}", shown, e)),
    }
}

/// Parses a size written as people write them: "1048576", "64KiB",
/// "10MiB", "1GiB", "10MB", "512kB".
pub fn parse_size(s: &str) -> Result<i64, String> {
    let mut t = s.trim();
    let units: [(&str, i64); 8] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("kB", 1000), ("KB", 1000), ("MB", 1000 * 1000), ("GB", 1000 * 1000 * 1000), ("B", 1)];
    let mut mult = 1;
    for (suffix, m) in units {
        if let Some(rest) = t.strip_suffix(suffix) {
            t = rest.trim();
            mult = m;
            break;
        }
    }
    if t.is_empty() {
        return Err(format!("size {}: no number", quote(s)));
    }
    let mut n: i64 = 0;
    for c in t.chars() {
        if !c.is_ascii_digit() {
            return Err(format!("size {}: want a whole number with an optional unit (KiB, MiB, GiB)", quote(s)));
        }
        n = n * 10 + (c as i64 - '0' as i64);
        if n > 1 << 50 {
            return Err(format!("size {} is too large", quote(s)));
        }
    }
    Ok(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_like_go() {
        for (in_, want) in [("", "."), ("a/../..", ".."), ("/../x", "/x"), ("a//b/./c/", "a/b/c"), ("/", "/"), ("../a/../b", "../b"), ("a/..", ".")] {
            assert_eq!(clean(in_), want, "{}", in_);
        }
    }

    #[test]
    fn resolves() {
        let s = Set { paths: vec!["/workspace".into(), "/data".into(), "/workspace/sub".into()], fds: vec![3, 4, 5] };
        assert_eq!(s.resolve("a/b").unwrap().abs, "/workspace/a/b");
        assert_eq!(s.resolve("").unwrap().display, ".");
        assert_eq!(s.resolve("/data/x").unwrap().display, "/data/x");
        assert_eq!(s.resolve("../x").unwrap_err().code, PERMISSION_DENIED);
        assert_eq!(s.resolve("/workspacex").unwrap_err().code, PERMISSION_DENIED);
        assert_eq!(s.resolve("a\0b").unwrap_err().code, INVALID_REQUEST);
        assert_eq!(quote("a\"\n\u{200b}é"), "\"a\\\"\\n\\u200bé\"");
        assert_eq!(parse_size(" 64KiB").unwrap(), 65536);
        assert_eq!(s.preopen(b"/workspace"), Some((3, &b"."[..])));
        assert_eq!(s.preopen(b"/workspace/a/b"), Some((3, &b"a/b"[..])));
        assert_eq!(s.preopen(b"/workspace/sub/c"), Some((5, &b"c"[..])));
        assert_eq!(s.preopen(b"/workspacex"), None);
        assert_eq!(s.shown(b"/workspace/a"), b"a");
        assert_eq!(s.shown(b"/data/x"), b"/data/x");
        assert!(parse_size("nine KiB").is_err());
    }
}
