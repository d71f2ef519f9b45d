//! filesystem.read: a text file, or a window of its lines.

use std::fs::File;
use std::io::Read;

use crate::mounts::{self, err, Error, FAILED, FILE_TOO_LARGE, INVALID_REQUEST};
use crate::{config, Args, Reply};

pub const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read: relative to the workspace, or absolute inside a mounted directory."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default: all."},
    "encoding": {"type": "string", "enum": ["utf-8", "latin-1"], "description": "Text encoding. Default utf-8, falling back to latin-1 when the bytes are not valid UTF-8."}
  },
  "required": ["path"],
  "additionalProperties": false
}"#;

pub const TITLE: &str = "Read a file";

pub const DESCRIPTION: &str = "Read a text file. Returns its lines, optionally a window of them (offset, limit). \
A binary file returns \"Binary file, N bytes\"; a file over the size limit fails with FILE_TOO_LARGE.";

const DEFAULT_MAX_FILE_SIZE: i64 = 10 << 20;

/// How much of a file the binary test looks at.
const BINARY_PREFIX: usize = 8 << 10;

pub fn read(args: &Args) -> Result<Reply, Error> {
    args.only(&["path", "offset", "limit", "encoding"], "readIn")?;
    let path = args.string("path", "readIn")?;
    let offset = args.int("offset", "readIn")?;
    let limit = args.int("limit", "readIn")?;
    let encoding = args.string("encoding", "readIn")?;
    if offset < 0 || limit < 0 {
        return Err(err(INVALID_REQUEST, "offset and limit must be positive".to_string()));
    }
    let latin1_asked = match encoding.to_lowercase().as_str() {
        "" | "utf-8" | "utf8" => false,
        "latin-1" | "latin1" | "iso-8859-1" => true,
        _ => return Err(err(INVALID_REQUEST, format!("encoding {} is not supported: use utf-8 or latin-1", mounts::quote(&encoding)))),
    };
    let max = config_size("max_file_size", DEFAULT_MAX_FILE_SIZE)?;
    let p = mounts::Set::discover().resolve(&path)?;
    let f = File::open(&p.abs).map_err(|e| mounts::from_io(&p.display, &e))?;
    let meta = f.metadata().map_err(|e| mounts::from_io(&p.display, &e))?;
    if meta.is_dir() {
        return Err(err(INVALID_REQUEST, format!("{} is a directory; use filesystem.list to see what it holds", p.display)));
    }
    if !meta.is_file() {
        return Err(err(INVALID_REQUEST, format!("{} is not a regular file", p.display)));
    }
    let size = meta.len() as i64;
    if size > max {
        return Err(too_large(&p.display, size, max));
    }
    // Read one byte more than the limit, in case the file grew since.
    let mut data = Vec::with_capacity(size as usize + 1);
    f.take(max as u64 + 1).read_to_end(&mut data).map_err(|e| mounts::from_io(&p.display, &e))?;
    if data.len() as i64 > max {
        return Err(too_large(&p.display, data.len() as i64, max));
    }
    if data[..data.len().min(BINARY_PREFIX)].contains(&0) {
        return Ok(Reply::text(format!("Binary file, {} bytes", data.len())));
    }
    let body = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&data);
    let mut notes: Vec<String> = Vec::new();
    let text = if latin1_asked {
        latin1(body)
    } else {
        match std::str::from_utf8(body) {
            Ok(s) => s.to_string(),
            Err(_) => {
                notes.push("the file is not valid UTF-8; it was decoded as latin-1".to_string());
                latin1(body)
            }
        }
    };
    let (window, note) = window(&text, offset, limit);
    let mut out = window.to_string();
    if let Some(n) = note {
        notes.push(n);
    }
    if !notes.is_empty() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('[');
        out.push_str(&notes.join("; "));
        out.push(']');
    }
    Ok(Reply::text(out))
}

fn too_large(shown: &str, size: i64, max: i64) -> Error {
    err(FILE_TOO_LARGE, format!("{} is {} bytes, over the {}-byte limit for reading (max_file_size)", shown, size, max))
}

/// A size from the operator's config.
fn config_size(key: &str, default: i64) -> Result<i64, Error> {
    match config(key) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(v) => match mounts::parse_size(&v) {
            Ok(n) if n > 0 => Ok(n),
            Ok(_) => Err(err(FAILED, format!("the operator's config {} = {} is not a size: must be positive", key, mounts::quote(&v)))),
            Err(e) => Err(err(FAILED, format!("the operator's config {} = {} is not a size: {}", key, mounts::quote(&v), e))),
        },
    }
}

/// ISO-8859-1: every byte is the code point of the same value.
fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// Lines offset.. (1-based) of text, at most limit of them (0: all), and
/// a note saying what was left out, if anything.
fn window(text: &str, offset: i64, limit: i64) -> (&str, Option<String>) {
    if offset <= 1 && limit == 0 {
        return (text, None);
    }
    let offset = offset.max(1);
    let mut total = text.bytes().filter(|&c| c == b'\n').count() as i64;
    if !text.is_empty() && !text.ends_with('\n') {
        total += 1;
    }
    if offset > total {
        return ("", Some(format!("offset {} is past the end: the file has {} lines", offset, total)));
    }
    let line_end = |from: usize| from + text[from..].find('\n').map_or(text.len() - from, |i| i + 1);
    let mut start = 0;
    for _ in 1..offset {
        start = line_end(start);
    }
    let (mut end, mut last) = (text.len(), total);
    if limit > 0 && offset.saturating_add(limit - 1) < total {
        last = offset + limit - 1;
        end = start;
        for _ in offset..=last {
            end = line_end(end);
        }
    }
    let mut note = None;
    if offset > 1 || last < total {
        let mut n = format!("lines {}-{} of {}", offset, last, total);
        if last < total {
            n.push_str(&format!("; call again with offset={} for more", last + 1));
        }
        note = Some(n);
    }
    (&text[start..end], note)
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn windows() {
        let t = "a\nb\nc\n";
        assert_eq!(window(t, 2, 1), ("b\n", Some("lines 2-2 of 3; call again with offset=3 for more".to_string())));
        assert_eq!(window(t, 3, 0), ("c\n", Some("lines 3-3 of 3".to_string())));
        assert_eq!(window(t, 4, 0).0, "");
        assert_eq!(window("x", 1, 5), ("x", None));
        assert_eq!(window(t, 2, i64::MAX), ("b\nc\n", Some("lines 2-3 of 3".to_string())));
    }
}
