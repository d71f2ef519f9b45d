//! A small JSON reader and writer: what the guest contract needs (the
//! call_tool request in, a result out) without a crate registry.

use std::fmt::Write;

/// A parsed JSON value. Objects keep their members in order; numbers keep
/// their text, so that an integer is read exactly.
#[derive(Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member key of an object (the last one, as Go's decoder takes).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The name of the value's JSON type, as error messages give it.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

/// Parses one JSON value, which must be all of b (but for white space).
pub fn parse(b: &[u8]) -> Result<Value, String> {
    let mut p = Parser { b, i: 0, depth: 0 };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != b.len() {
        return Err(format!("invalid character {} after top-level value", p.describe()));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

const MAX_DEPTH: usize = 1000;

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn describe(&self) -> String {
        match self.b.get(self.i) {
            None => "end of input".to_string(),
            Some(&c) if (0x20..0x7f).contains(&c) => format!("'{}'", c as char),
            Some(&c) => format!("0x{:02x}", c),
        }
    }

    fn unexpected<T>(&self, looking: &str) -> Result<T, String> {
        if self.i >= self.b.len() {
            return Err("unexpected end of JSON input".to_string());
        }
        Err(format!("invalid character {} {}", self.describe(), looking))
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.b.get(self.i) {
            Some(b'{') => self.nested(|p| p.object()),
            Some(b'[') => self.nested(|p| p.array()),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.unexpected("looking for beginning of value"),
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<Value, String>) -> Result<Value, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("exceeded max depth".to_string());
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn word(&mut self, w: &str, v: Value) -> Result<Value, String> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            return Ok(v);
        }
        let at = self.b[self.i..].iter().zip(w.bytes()).take_while(|(a, b)| *a == b).count();
        self.i += at;
        self.unexpected(&format!("in literal {} (expecting '{}')", w, w.as_bytes()[at] as char))
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return self.unexpected("in numeric literal"),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return self.unexpected("after decimal point in numeric literal");
            }
            self.digits();
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return self.unexpected("in exponent of numeric literal");
            }
            self.digits();
        }
        Ok(Value::Number(String::from_utf8_lossy(&self.b[start..self.i]).into_owned()))
    }

    fn digits(&mut self) {
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
    }

    /// Reads a string. Invalid UTF-8 and unpaired surrogates become
    /// U+FFFD, as Go's decoder makes them (the path checks then refuse
    /// them with a message).
    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut raw: Vec<u8> = Vec::new();
        loop {
            let c = match self.b.get(self.i) {
                None => return Err("unexpected end of JSON input".to_string()),
                Some(&c) => c,
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(String::from_utf8_lossy(&raw).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    let e = match self.b.get(self.i) {
                        None => return Err("unexpected end of JSON input".to_string()),
                        Some(&e) => e,
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => {
                            self.i -= 1;
                            return self.unexpected("in string escape code");
                        }
                    };
                    let mut buf = [0u8; 4];
                    raw.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return self.unexpected("in string literal"),
                _ => {
                    raw.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.b.get(self.i..self.i + 4)?;
        let s = std::str::from_utf8(h).ok()?;
        let v = u32::from_str_radix(s, 16).ok()?;
        if !h.iter().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        Some(v)
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        let hi = match self.hex4() {
            Some(v) => v,
            None => return self.unexpected("in \\u hexadecimal character escape"),
        };
        if (0xd800..0xdc00).contains(&hi) && self.b[self.i..].starts_with(b"\\u") {
            let save = self.i;
            self.i += 2;
            if let Some(lo) = self.hex4() {
                if (0xdc00..0xe000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                    return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
                }
            }
            self.i = save;
        }
        Ok(char::from_u32(hi).unwrap_or('\u{fffd}'))
    }

    fn object(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.unexpected("looking for beginning of object key string");
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return self.unexpected("after object key");
            }
            self.i += 1;
            self.ws();
            let v = self.value()?;
            members.push((k, v));
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(members));
                }
                _ => return self.unexpected("after object key:value pair"),
            }
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return self.unexpected("after array element"),
            }
        }
    }
}

/// Appends s as a JSON string.
/// n in decimal, in the end of buf (core::fmt is a lot of code to bring
/// into a cold call for a number).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{0}'..='\u{1f}' | '\u{2028}' | '\u{2029}' => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(esc);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let v = parse(br#" {"a": [1, -2.5e3, true, null], "b": "x\u00e9\ud83d\ude00\"", "a": {}} "#).unwrap();
        assert!(matches!(v.get("a"), Some(Value::Object(_))));
        match v.get("b") {
            Some(Value::String(s)) => assert_eq!(s, "x\u{e9}\u{1f600}\""),
            other => panic!("{:?}", other),
        }
        let mut out = String::new();
        push_string(&mut out, "a\"b\\c\nd\u{1}\u{2028}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001\u2028é""#);
    }

    #[test]
    fn errors() {
        for bad in [&b"{"[..], b"{\"a\" 1}", b"[1,]", b"\"\x01\"", b"tru", b"1 2", b"01"] {
            assert!(parse(bad).is_err(), "{:?}", bad);
        }
        match parse(b"\"\xffx\"").unwrap() {
            Value::String(s) => assert_eq!(s, "\u{fffd}x"),
            other => panic!("{:?}", other),
        }
    }
}
