//! filesystem.list: the entries of a directory, one line each (type and
//! path; with details, also size and modification time in UTC), optionally
//! recursive and filtered by a glob.

use std::ffi::OsStr;
use std::fs;
use std::io;
#[cfg(unix)] // the unit tests, built natively
use std::os::unix::ffi::OsStrExt;
#[cfg(target_os = "wasi")]
use std::os::wasi::ffi::OsStrExt;

use crate::glob::Glob;
use crate::json::decimal;
use crate::mounts::{self, err, Error, FAILED, INVALID_REQUEST};
use crate::{config, Args, Reply};

pub const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workspace or absolute inside a mounted directory. Default: the workspace."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many levels to descend. Default 1 (the directory's own entries)."},
    "glob": {"type": "string", "description": "Only show entries matching this glob (\"*.go\", \"docs/**/*.md\", \"*.{yml,yaml}\"); a pattern without / matches the file name."},
    "details": {"type": "boolean", "description": "Also show each entry's size in bytes and modification time (UTC). Default false: type and path only."}
  },
  "additionalProperties": false
}"#;

pub const TITLE: &str = "List a directory";

pub const DESCRIPTION: &str = "List the entries of a directory: type (dir, file, link) and path; with details, also size in bytes and modification time (UTC). \
Optionally recursive (depth) and filtered by a glob.";

const DEFAULT_MAX_ENTRIES: i64 = 1000;

const NOT_UTF8: &str = "  (name is not valid UTF-8; it cannot be passed to a tool)";

pub fn list(args: &Args) -> Result<Reply, Error> {
    args.only(&["path", "depth", "glob", "details"], "listIn")?;
    let path = args.string("path", "listIn")?;
    let mut depth = args.int("depth", "listIn")?;
    let glob_arg = args.string("glob", "listIn")?;
    let details = args.bool("details", "listIn")?;
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
    let entries = match read_dir(&ms, p.abs.as_bytes()) {
        Ok(entries) => entries,
        // Not a directory (a file, a link): one line for it.
        Err(e) if matches!(e.raw_os_error(), Some(mounts::ENOTDIR | mounts::ELOOP)) => {
            let st = lstat(&ms, p.abs.as_bytes()).map_err(|e| mounts::from_io(&p.display, &e))?;
            let mut out = Vec::new();
            push_entry(&mut out, ms.shown(p.abs.as_bytes()), p.abs.as_bytes(), &st, details);
            return Ok(Reply::text(utf8(out)));
        }
        Err(e) => return Err(mounts::from_io(&p.display, &e)),
    };
    let mut l = Lister { ms: &ms, glob: glob.as_ref(), details, max: max_entries, n: 0, stopped: false, out: Vec::with_capacity(4096) };
    let (mut abs, mut rel) = (p.abs.clone().into_bytes(), Vec::new());
    l.list(&mut abs, &mut rel, entries, depth);
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
    Ok(Reply::text(utf8(out)))
}

/// out as a String: it is UTF-8 (names that are not are quoted), so this
/// does not copy it.
fn utf8(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

struct Lister<'a> {
    ms: &'a mounts::Set,
    glob: Option<&'a Glob>,
    /// Whether lines show size and modification time: then every entry is
    /// examined (one path_filestat_get each); without, the type the
    /// directory itself gives is enough.
    details: bool,
    max: i64,
    n: i64,
    stopped: bool,
    out: Vec<u8>,
}

impl<'a> Lister<'a> {
    /// Lists the entries of dir (at rel below the listed directory), then
    /// the directories in it while depth allows. Names are bytes: a file
    /// name need not be UTF-8. dir and rel grow by each entry's name in turn
    /// and are given back as they came.
    fn list(&mut self, dir: &mut Vec<u8>, rel: &mut Vec<u8>, mut entries: Vec<(Vec<u8>, Option<Kind>)>, depth: i64) {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let (dir_len, rel_len) = (dir.len(), rel.len());
        for (name, kind) in entries {
            if self.stopped {
                break;
            }
            join(dir, &name);
            join(rel, &name);
            self.entry(dir, rel, &name, kind, depth);
            dir.truncate(dir_len);
            rel.truncate(rel_len);
        }
    }

    /// Lists one entry (at abs, rel below the listed directory), and what
    /// is under it while depth allows.
    /// kind is what the directory says of the entry (None: nothing
    /// precise).
    fn entry(&mut self, abs: &mut Vec<u8>, rel: &mut Vec<u8>, name: &[u8], kind: Option<Kind>, depth: i64) {
        if self.glob.map_or(true, |g| g.matches(&String::from_utf8_lossy(rel))) {
            if self.n == self.max {
                self.stopped = true;
                return;
            }
            let shown = self.ms.shown(abs);
            match kind {
                Some(k) if !self.details => push_entry(&mut self.out, shown, abs, &Stat { kind: k, size: 0, mtime: 0 }, false),
                _ => match lstat(self.ms, abs) {
                    Ok(st) => push_entry(&mut self.out, shown, abs, &st, self.details),
                    Err(_) => push_unknown(&mut self.out, shown, kind, self.details),
                },
            }
            self.n += 1;
        }
        if kind == Some(Kind::Dir) && depth > 1 && name != b".git" {
            match read_dir(self.ms, abs) {
                Ok(entries) => self.list(abs, rel, entries, depth - 1),
                Err(e) => {
                    let shown = String::from_utf8_lossy(self.ms.shown(abs)).into_owned();
                    let msg = mounts::from_io(&shown, &e).msg;
                    self.out.extend_from_slice(format!("error {}: {}\n", shown, msg).as_bytes());
                }
            }
        }
    }
}

/// Appends an entry's name to a directory path ("" is the listed
/// directory).
fn join(dir: &mut Vec<u8>, name: &[u8]) {
    if !dir.is_empty() && !dir.ends_with(b"/") {
        dir.push(b'/');
    }
    dir.extend_from_slice(name);
}

/// What a listing shows of an entry.
struct Stat {
    kind: Kind,
    size: u64,
    /// Modification time, seconds since the Unix epoch.
    mtime: i64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// WASI's filetypes (preview 1) that a listing tells apart.
const DIRECTORY: u8 = 3;
const REGULAR_FILE: u8 = 4;
const SYMBOLIC_LINK: u8 = 7;

impl Kind {
    /// The kind of an entry as its directory gives it (a WASI filetype);
    /// None for anything but a directory, a file or a link (devices,
    /// sockets, and "unknown", which some filesystems give): such entries
    /// are rare, and examined.
    fn of(filetype: u8) -> Option<Kind> {
        match filetype {
            DIRECTORY => Some(Kind::Dir),
            REGULAR_FILE => Some(Kind::File),
            SYMBOLIC_LINK => Some(Kind::Link),
            _ => None,
        }
    }
}

/// The WASI filetype of what the standard library says of an entry (0,
/// unknown, for anything a listing does not tell apart).
fn filetype(ft: fs::FileType) -> u8 {
    if ft.is_dir() {
        DIRECTORY
    } else if ft.is_file() {
        REGULAR_FILE
    } else if ft.is_symlink() {
        SYMBOLIC_LINK
    } else {
        0
    }
}

#[cfg(target_os = "wasi")]
#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn path_open(fd: i32, dirflags: i32, path: *const u8, path_len: usize, oflags: i32, rights_base: u64, rights_inheriting: u64, fdflags: i32, opened: *mut i32) -> i32;
    fn fd_readdir(fd: i32, buf: *mut u8, buf_len: usize, cookie: u64, bufused: *mut usize) -> i32;
    fn fd_close(fd: i32) -> i32;
    fn path_filestat_get(fd: i32, flags: i32, path: *const u8, path_len: usize, buf: *mut u64) -> i32;
}

/// The entries of the directory abs (names and what the directory says
/// of their kinds), "." and ".." left out, in the directory's order. abs
/// is opened without following a final symbolic link: a link, like a
/// file, fails with ENOTDIR or ELOOP. These are the WASI calls the
/// standard library's read_dir makes, on the preopen it would pick,
/// without its search of the preopens by name, its copies of the path,
/// and the examination of abs that telling a directory from a file would
/// otherwise take.
#[cfg(target_os = "wasi")]
fn read_dir(ms: &mounts::Set, abs: &[u8]) -> io::Result<Vec<(Vec<u8>, Option<Kind>)>> {
    const O_DIRECTORY: i32 = 2;
    const FD_READDIR: u64 = 1 << 14;
    let (pfd, rel) = match ms.preopen(abs) {
        Some(p) => p,
        None => return Err(io::Error::from_raw_os_error(mounts::ENOENT)),
    };
    let mut fd = -1;
    let errno = unsafe { path_open(pfd, 0, rel.as_ptr(), rel.len(), O_DIRECTORY, FD_READDIR, 0, 0, &mut fd) };
    if errno != 0 {
        return Err(io::Error::from_raw_os_error(errno));
    }
    let entries = read_entries(fd);
    unsafe { fd_close(fd) };
    entries
}

/// Reads the open directory fd: fd_readdir fills buf with as many entries
/// (a 24-byte header, then the name) as fit, the last possibly cut short;
/// the next read starts from the last whole entry's cookie.
#[cfg(target_os = "wasi")]
fn read_entries(fd: i32) -> io::Result<Vec<(Vec<u8>, Option<Kind>)>> {
    const HEADER: usize = 24;
    let mut buf = vec![0u8; 8 << 10];
    let mut entries = Vec::new();
    let mut cookie = 0u64;
    loop {
        let mut used = 0usize;
        let errno = unsafe { fd_readdir(fd, buf.as_mut_ptr(), buf.len(), cookie, &mut used) };
        if errno != 0 {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let used = used.min(buf.len());
        let mut off = 0;
        while off + HEADER <= used {
            let h = &buf[off..off + HEADER];
            let next = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
            let namlen = u32::from_le_bytes([h[16], h[17], h[18], h[19]]) as usize;
            if off + HEADER + namlen > used {
                break;
            }
            let name = &buf[off + HEADER..off + HEADER + namlen];
            if name != b"." && name != b".." {
                entries.push((name.to_vec(), Kind::of(h[20])));
            }
            cookie = next;
            off += HEADER + namlen;
        }
        if used < buf.len() {
            return Ok(entries);
        }
        if off == 0 {
            // One entry longer than the buffer.
            let n = 2 * buf.len();
            buf.resize(n, 0);
        }
    }
}

/// read_dir for the unit tests, built natively: what the directory says
/// of abs, read through the standard library.
#[cfg(not(target_os = "wasi"))]
fn read_dir(ms: &mounts::Set, abs: &[u8]) -> io::Result<Vec<(Vec<u8>, Option<Kind>)>> {
    if lstat(ms, abs)?.kind != Kind::Dir {
        return Err(io::Error::from_raw_os_error(mounts::ENOTDIR));
    }
    let mut entries = Vec::new();
    for e in fs::read_dir(OsStr::from_bytes(abs))? {
        let e = e?;
        entries.push((e.file_name().as_bytes().to_vec(), Kind::of(filetype(e.file_type()?))));
    }
    Ok(entries)
}

/// Examines abs without following a final symbolic link: the WASI call the
/// standard library's symlink_metadata makes, on the preopen it would pick,
/// without its search of the preopens by name and its copies of the path.
#[cfg(target_os = "wasi")]
fn lstat(ms: &mounts::Set, abs: &[u8]) -> io::Result<Stat> {
    let (fd, rel) = match ms.preopen(abs) {
        Some(p) => p,
        None => return fs::symlink_metadata(OsStr::from_bytes(abs)).map(|m| Stat::of(&m)),
    };
    // filestat: dev, ino, filetype (u8, padded), nlink, size, atim, mtim, ctim.
    let mut st = [0u64; 8];
    let errno = unsafe { path_filestat_get(fd, 0, rel.as_ptr(), rel.len(), st.as_mut_ptr()) };
    if errno != 0 {
        return Err(io::Error::from_raw_os_error(errno));
    }
    let kind = Kind::of(st[2] as u8).unwrap_or(Kind::Other);
    Ok(Stat { kind, size: st[4], mtime: (st[6] / 1_000_000_000) as i64 })
}

/// lstat for the unit tests, built natively.
#[cfg(not(target_os = "wasi"))]
fn lstat(_: &mounts::Set, abs: &[u8]) -> io::Result<Stat> {
    fs::symlink_metadata(OsStr::from_bytes(abs)).map(|m| Stat::of(&m))
}

impl Stat {
    fn of(m: &fs::Metadata) -> Stat {
        let kind = Kind::of(filetype(m.file_type())).unwrap_or(Kind::Other);
        let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs() as i64);
        Stat { kind, size: m.len(), mtime }
    }
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

/// Appends one listing line: type, size, mtime (UTC), path, as
/// "{:<4} {:>10}  {}  {}" would write them; without details, type and
/// path as "{:<4} {}" would.
fn push_entry(out: &mut Vec<u8>, shown: &[u8], abs: &[u8], st: &Stat, details: bool) {
    let kind: &[u8] = match st.kind {
        Kind::Dir => b"dir ",
        Kind::File => b"file",
        Kind::Link => b"link",
        Kind::Other => b"other",
    };
    out.extend_from_slice(kind);
    out.push(b' ');
    if details {
        let mut digits = [0u8; 20];
        let size: &[u8] = if st.kind == Kind::Dir { b"-" } else { decimal(st.size, &mut digits).as_bytes() };
        out.resize(out.len() + 10usize.saturating_sub(size.len()), b' ');
        out.extend_from_slice(size);
        out.extend_from_slice(b"  ");
        push_date(out, st.mtime);
        out.extend_from_slice(b"  ");
    }
    let ok = push_display_name(out, shown);
    match st.kind {
        Kind::Dir => out.push(b'/'),
        Kind::Link => {
            if let Ok(t) = fs::read_link(OsStr::from_bytes(abs)) {
                out.extend_from_slice(b" -> ");
                out.extend_from_slice(String::from_utf8_lossy(t.as_os_str().as_bytes()).as_bytes());
            }
        }
        _ => {}
    }
    if !ok {
        out.extend_from_slice(NOT_UTF8.as_bytes());
    }
    out.push(b'\n');
}

/// Appends shown as display_name gives it and reports whether it was
/// UTF-8.
fn push_display_name(out: &mut Vec<u8>, shown: &[u8]) -> bool {
    if std::str::from_utf8(shown).is_ok() {
        out.extend_from_slice(shown);
        return true;
    }
    out.extend_from_slice(display_name(shown).0.as_bytes());
    false
}

/// Appends n in decimal with at least width digits.
fn push_padded(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let d = decimal(n, &mut digits).as_bytes();
    out.resize(out.len() + width.saturating_sub(d.len()), b'0');
    out.extend_from_slice(d);
}

/// Appends the line of an entry that cannot be examined (gone since the
/// listing, or a name the filesystem refuses to look up).
fn push_unknown(out: &mut Vec<u8>, shown: &[u8], kind: Option<Kind>, details: bool) {
    let (mut name, ok) = display_name(shown);
    let kind = match kind {
        Some(Kind::Dir) => {
            name.push('/');
            "dir"
        }
        Some(Kind::Link) => "link",
        Some(Kind::File) => "file",
        _ => "other",
    };
    if !ok {
        name.push_str(NOT_UTF8);
    }
    let line = if details { format!("{:<4} {:>10}  {:>19}  {}\n", kind, "?", "?", name) } else { format!("{:<4} {}\n", kind, name) };
    out.extend_from_slice(line.as_bytes());
}

/// Appends secs since the Unix epoch as "2006-01-02 15:04:05" (UTC).
fn push_date(out: &mut Vec<u8>, secs: i64) {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400) as u64;
    let (y, m, d) = civil(days);
    if y < 0 {
        out.push(b'-');
    }
    push_padded(out, y.unsigned_abs(), 4);
    for (sep, n) in [(b'-', m as u64), (b'-', d as u64), (b' ', rem / 3600), (b':', rem % 3600 / 60), (b':', rem % 60)] {
        out.push(sep);
        push_padded(out, n, 2);
    }
}

/// push_date's text.
#[cfg(test)]
fn date_time(secs: i64) -> String {
    let mut out = Vec::new();
    push_date(&mut out, secs);
    String::from_utf8(out).unwrap()
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
        assert_eq!(date_time(-62_198_755_200), "-0001-01-01 00:00:00");
        assert_eq!(date_time(253_402_300_800), "10000-01-01 00:00:00");
    }

    #[test]
    fn names() {
        assert_eq!(display_name(b"ok/\xc3\xa9"), ("ok/é".to_string(), true));
        assert_eq!(display_name(b"bad\xffname.txt"), ("bad\\xffname.txt".to_string(), false));
        assert_eq!(display_name(b"q\"\xfe"), ("q\\\"\\xfe".to_string(), false));
        for (dir, name, want) in [(&b""[..], &b"a"[..], &b"a"[..]), (b"/w", b"a", b"/w/a"), (b"/", b"a", b"/a")] {
            let mut p = dir.to_vec();
            join(&mut p, name);
            assert_eq!(p, want);
        }
    }
}
