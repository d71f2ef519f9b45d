//! filesystem.list: the entries of a directory, one line each (type, size,
//! modification time in UTC, path), optionally recursive and filtered by a
//! glob.

use std::ffi::OsStr;
use std::fs::{self, FileType, Metadata};
#[cfg(unix)] // the unit tests, built natively
use std::os::unix::ffi::OsStrExt;
#[cfg(target_os = "wasi")]
use std::os::wasi::ffi::OsStrExt;
use std::time::UNIX_EPOCH;

use crate::glob::Glob;
use crate::mounts::{self, err, Error, FAILED, INVALID_REQUEST};
use crate::{config, Args, Reply};

pub const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workspace or absolute inside a mounted directory. Default: the workspace."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many levels to descend. Default 1 (the directory's own entries)."},
    "glob": {"type": "string", "description": "Only show entries matching this glob (\"*.go\", \"docs/**/*.md\", \"*.{yml,yaml}\"); a pattern without / matches the file name."}
  },
  "additionalProperties": false
}"#;

pub const TITLE: &str = "List a directory";

pub const DESCRIPTION: &str = "List the entries of a directory: type (dir, file, link), size in bytes, modification time (UTC) and path. \
Optionally recursive (depth) and filtered by a glob.";

const DEFAULT_MAX_ENTRIES: i64 = 1000;

const NOT_UTF8: &str = "  (name is not valid UTF-8; it cannot be passed to a tool)";

pub fn list(args: &Args) -> Result<Reply, Error> {
    args.only(&["path", "depth", "glob"], "listIn")?;
    let path = args.string("path", "listIn")?;
    let mut depth = args.int("depth", "listIn")?;
    let glob_arg = args.string("glob", "listIn")?;
    if depth == 0 {
        depth = 1;
    }
    if !(1..=20).contains(&depth) {
        return Err(err(INVALID_REQUEST, "depth must be between 1 and 20".to_string()));
    }
    let glob = if glob_arg.is_empty() { None } else { Some(Glob::compile(&glob_arg).map_err(|e| err(INVALID_REQUEST, e))?) };
    let max_entries = config_int("max_entries", DEFAULT_MAX_ENTRIES)?;
    let ms = mounts::Set::discover();
    let p = ms.resolve(&path)?;
    let meta = fs::symlink_metadata(&p.abs).map_err(|e| mounts::from_io(&p.display, &e))?;
    if !meta.is_dir() {
        let mut out = Vec::new();
        push_entry(&mut out, ms.display(&p.abs).as_bytes(), p.abs.as_bytes(), &meta);
        return Ok(Reply::text(String::from_utf8_lossy(&out).into_owned()));
    }
    let mut l = Lister { ms: &ms, glob: glob.as_ref(), max: max_entries, n: 0, stopped: false, out: Vec::with_capacity(4096) };
    l.walk(p.abs.as_bytes(), b"", depth).map_err(|e| mounts::from_io(&p.display, &e))?;
    let mut out = l.out;
    if l.stopped {
        out.extend_from_slice(format!("[listing stopped at {} entries; narrow it with a smaller depth or a glob]", max_entries).as_bytes());
    } else if l.n == 0 && glob.is_some() {
        out.extend_from_slice(format!("[no entries match {}]", mounts::quote(&glob_arg)).as_bytes());
    } else if l.n == 0 {
        out.extend_from_slice(b"[empty directory]");
    }
    if out.last() == Some(&b'\n') {
        out.pop();
    }
    Ok(Reply::text(String::from_utf8_lossy(&out).into_owned()))
}

struct Lister<'a> {
    ms: &'a mounts::Set,
    glob: Option<&'a Glob>,
    max: i64,
    n: i64,
    stopped: bool,
    out: Vec<u8>,
}

impl<'a> Lister<'a> {
    /// Lists dir (at rel below the listed directory), then the directories
    /// in it while depth allows. Names are bytes: a file name need not be
    /// UTF-8.
    fn walk(&mut self, dir: &[u8], rel: &[u8], depth: i64) -> std::io::Result<()> {
        let mut entries: Vec<(Vec<u8>, FileType)> = Vec::new();
        for e in fs::read_dir(OsStr::from_bytes(dir))? {
            let e = e?;
            entries.push((e.file_name().as_bytes().to_vec(), e.file_type()?));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in entries {
            if self.stopped {
                return Ok(());
            }
            let abs = join(dir, &name);
            let r = join(rel, &name);
            if self.glob.map_or(true, |g| g.matches(&String::from_utf8_lossy(&r))) {
                if self.n == self.max {
                    self.stopped = true;
                    return Ok(());
                }
                let shown = self.ms.display_bytes(&abs);
                match fs::symlink_metadata(OsStr::from_bytes(&abs)) {
                    Ok(meta) => push_entry(&mut self.out, &shown, &abs, &meta),
                    Err(_) => push_unknown(&mut self.out, &shown, kind),
                }
                self.n += 1;
            }
            if kind.is_dir() && depth > 1 && name != b".git" {
                if let Err(e) = self.walk(&abs, &r, depth - 1) {
                    let shown = String::from_utf8_lossy(&self.ms.display_bytes(&abs)).into_owned();
                    let msg = mounts::from_io(&shown, &e).msg;
                    self.out.extend_from_slice(format!("error {}: {}\n", shown, msg).as_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Joins a directory and an entry's name ("" is the listed directory).
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    if !dir.is_empty() && !dir.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// shown as it can be printed: as it is when it is UTF-8, else quoted the
/// way Go's %q quotes it (without the quotes), and whether it was UTF-8.
fn display_name(shown: &[u8]) -> (String, bool) {
    match std::str::from_utf8(shown) {
        Ok(s) => (s.to_string(), true),
        Err(_) => {
            let mut out = String::new();
            let mut rest = shown;
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        out.push_str(inner(&mounts::quote(s)));
                        break;
                    }
                    Err(e) => {
                        let (good, bad) = rest.split_at(e.valid_up_to());
                        out.push_str(inner(&mounts::quote(std::str::from_utf8(good).unwrap_or(""))));
                        let n = e.error_len().unwrap_or(bad.len()).max(1);
                        for &c in &bad[..n] {
                            out.push_str(&format!("\\x{:02x}", c));
                        }
                        rest = &bad[n..];
                    }
                }
            }
            (out, false)
        }
    }
}

fn inner(quoted: &str) -> &str {
    &quoted[1..quoted.len() - 1]
}

/// Appends one listing line: type, size, mtime (UTC), path.
fn push_entry(out: &mut Vec<u8>, shown: &[u8], abs: &[u8], meta: &Metadata) {
    let (mut name, ok) = display_name(shown);
    let ft = meta.file_type();
    let (kind, size) = if ft.is_dir() {
        name.push('/');
        ("dir", "-".to_string())
    } else if ft.is_symlink() {
        if let Ok(t) = fs::read_link(OsStr::from_bytes(abs)) {
            name.push_str(" -> ");
            name.push_str(&String::from_utf8_lossy(t.as_os_str().as_bytes()));
        }
        ("link", meta.len().to_string())
    } else if ft.is_file() {
        ("file", meta.len().to_string())
    } else {
        ("other", meta.len().to_string())
    };
    if !ok {
        name.push_str(NOT_UTF8);
    }
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs() as i64);
    let line = format!("{:<4} {:>10}  {}  {}\n", kind, size, date_time(mtime), name);
    out.extend_from_slice(line.as_bytes());
}

/// Appends the line of an entry that cannot be examined (gone since the
/// listing, or a name the filesystem refuses to look up).
fn push_unknown(out: &mut Vec<u8>, shown: &[u8], ft: FileType) {
    let (mut name, ok) = display_name(shown);
    let kind = if ft.is_dir() {
        name.push('/');
        "dir"
    } else if ft.is_symlink() {
        "link"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    };
    if !ok {
        name.push_str(NOT_UTF8);
    }
    out.extend_from_slice(format!("{:<4} {:>10}  {:>19}  {}\n", kind, "?", "?", name).as_bytes());
}

/// secs since the Unix epoch as "2006-01-02 15:04:05" (UTC).
fn date_time(secs: i64) -> String {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = civil(days);
    let year = if y < 0 { format!("-{:04}", -y) } else { format!("{:04}", y) };
    format!("{}-{:02}-{:02} {:02}:{:02}:{:02}", year, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// A positive number from the operator's config.
fn config_int(key: &str, default: i64) -> Result<i64, Error> {
    match config(key) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(err(FAILED, format!("the operator's config {} = {} is not a positive number", key, mounts::quote(&v)))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date_time(0), "1970-01-01 00:00:00");
        assert_eq!(date_time(1_709_296_496), "2024-03-01 12:34:56");
        assert_eq!(date_time(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(date_time(-1), "1969-12-31 23:59:59");
    }

    #[test]
    fn names() {
        assert_eq!(display_name(b"ok/\xc3\xa9"), ("ok/é".to_string(), true));
        assert_eq!(display_name(b"bad\xffname.txt"), ("bad\\xffname.txt".to_string(), false));
        assert_eq!(display_name(b"q\"\xfe"), ("q\\\"\\xfe".to_string(), false));
        assert_eq!(join(b"", b"a"), b"a");
        assert_eq!(join(b"/w", b"a"), b"/w/a");
        assert_eq!(join(b"/", b"a"), b"/a");
    }
}
