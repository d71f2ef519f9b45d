//! The part of toolhost's built-in filesystem plugin written in Rust:
//! filesystem.read and filesystem.list, the calls agents make most. The
//! other filesystem tools are the Go module's (../filesystem); the catalog
//! routes each tool to the module that offers it (builtin.go).
//!
//! Why a second language: a fresh instance per call is the tier's rule, and
//! a Go module pays for it. Instantiating the Go filesystem module costs
//! ~0.75 ms of CPU (wazero fills its 2707-entry function table one
//! allocation at a time, then copies a 4.5 MiB memory image); this module
//! has a few dozen table entries and a memory of a few pages. Back-to-back
//! calls, which use one instance each, are bound by that cost.
//!
//! The guest contract is docs/wasm.md's: list_tools and call_tool with
//! Extism input and output, or stdin and stdout when the host marks fast
//! I/O (toolhost_fast_io_v1). It is built by go generate (internal/gen)
//! with rustc alone: the standard library, no crates.

mod glob;
mod json;
mod list;
mod mounts;
mod read;

use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
#[cfg(unix)] // the unit tests, built natively
use std::os::unix::io::{FromRawFd, RawFd};
#[cfg(target_os = "wasi")]
use std::os::wasi::io::{FromRawFd, RawFd};

use json::Value;
use mounts::{err, Error, INVALID_REQUEST};

#[link(wasm_import_module = "extism:host/env")]
extern "C" {
    fn input_length() -> u64;
    fn input_load_u64(offset: u64) -> u64;
    fn input_load_u8(offset: u64) -> u32;
    fn alloc(length: u64) -> u64;
    fn length(offset: u64) -> u64;
    fn load_u8(offset: u64) -> u32;
    fn store_u64(offset: u64, v: u64);
    fn store_u8(offset: u64, v: u32);
    fn output_set(offset: u64, length: u64);
    fn error_set(offset: u64);
    fn config_get(offset: u64) -> u64;
}

#[link(wasm_import_module = "extism:host/user")]
extern "C" {
    fn toolhost_config_get(key: *const u8, key_len: u32, out: *mut u8, out_cap: u32) -> i32;
}

struct Tool {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    schema: &'static str,
    run: fn(&Args) -> Result<Reply, Error>,
}

/// The tools, sorted by name as list_tools gives them.
const TOOLS: &[Tool] = &[
    Tool { name: "filesystem.list", title: list::TITLE, description: list::DESCRIPTION, schema: list::SCHEMA, run: list::list },
    Tool { name: "filesystem.read", title: read::TITLE, description: read::DESCRIPTION, schema: read::SCHEMA, run: read::read },
];

/// Marks the fast I/O path (docs/wasm.md): the host then passes an empty
/// Extism input and the real one on stdin.
#[no_mangle]
pub extern "C" fn toolhost_fast_io_v1() {}

#[no_mangle]
pub extern "C" fn list_tools() -> i32 {
    let mut out = String::from("{\"tools\":[");
    for (i, t) in TOOLS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json::push_string(&mut out, t.name);
        out.push_str(",\"title\":");
        json::push_string(&mut out, t.title);
        out.push_str(",\"description\":");
        json::push_string(&mut out, t.description);
        out.push_str(",\"inputSchema\":");
        out.push_str(t.schema);
        out.push_str(",\"annotations\":{\"readOnlyHint\":true}}");
    }
    out.push_str("]}");
    let fast = fast_io();
    output(fast, out.as_bytes());
    0
}

#[no_mangle]
pub extern "C" fn call_tool() -> i32 {
    let fast = fast_io();
    let input = input(fast);
    let req = match json::parse(&input) {
        Ok(v) => v,
        Err(e) => return fail(&format!("call_tool input: {}", e)),
    };
    let params = match req.get("params") {
        Some(p @ Value::Object(_)) => p,
        _ => return fail("call_tool input: no params object"),
    };
    let name = match params.get("name") {
        Some(Value::String(s)) => s.as_str(),
        _ => "",
    };
    let tool = match TOOLS.iter().find(|t| t.name == name) {
        Some(t) => t,
        None => return fail(&format!("unknown tool {}", mounts::quote(name))),
    };
    let args = Args(params.get("arguments"));
    let reply = match (tool.run)(&args) {
        Ok(r) => r,
        Err(e) => Reply { text: e.msg, code: Some(e.code) },
    };
    output(fast, &reply.encode(fast));
    0
}

/// A tool's answer: one text item, and the error code if it failed.
pub struct Reply {
    text: String,
    code: Option<&'static str>,
}

impl Reply {
    pub fn text(text: String) -> Reply {
        Reply { text, code: None }
    }

    /// The reply as call_tool's output. On the fast path the text travels
    /// after the JSON line as raw bytes the JSON refers to ("textRef"):
    /// neither escaped here nor unescaped by the host, whatever its size.
    fn encode(&self, fast: bool) -> Vec<u8> {
        let raw = fast;
        let mut out = String::with_capacity(64 + if raw { 0 } else { self.text.len() + self.text.len() / 8 });
        out.push_str("{\"content\":[{\"type\":\"text\",");
        if raw {
            out.push_str("\"textRef\":[0,");
            out.push_str(json::decimal(self.text.len() as u64, &mut [0u8; 20]));
            out.push_str("]}]");
        } else {
            out.push_str("\"text\":");
            json::push_string(&mut out, &self.text);
            out.push_str("}]");
        }
        if let Some(code) = self.code {
            out.push_str(",\"isError\":true,\"code\":");
            json::push_string(&mut out, code);
        }
        out.push('}');
        let mut b = out.into_bytes();
        if raw {
            b.push(b'\n');
            b.extend_from_slice(self.text.as_bytes());
        }
        b
    }
}

/// A call's arguments, read strictly: an argument the tool does not take is
/// a mistake the model should hear about. Messages follow Go's decoder.
pub struct Args<'a>(Option<&'a Value>);

impl<'a> Args<'a> {
    fn invalid(msg: String) -> Error {
        err(INVALID_REQUEST, format!("invalid arguments: json: {}", msg))
    }

    fn members(&self, ty: &str) -> Result<&'a [(String, Value)], Error> {
        match self.0 {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Object(m)) => Ok(m),
            Some(v) => Err(Self::invalid(format!("cannot unmarshal {} into Go value of type main.{}", v.kind(), ty))),
        }
    }

    /// Refuses arguments not in known.
    pub fn only(&self, known: &[&str], ty: &str) -> Result<(), Error> {
        for (k, _) in self.members(ty)? {
            if !known.contains(&k.as_str()) {
                return Err(Self::invalid(format!("unknown field {}", mounts::quote(k))));
            }
        }
        Ok(())
    }

    fn member(&self, key: &str, ty: &str) -> Result<Option<&'a Value>, Error> {
        Ok(self.members(ty)?.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v))
    }

    /// A string argument; absent or null is "".
    pub fn string(&self, key: &str, ty: &str) -> Result<String, Error> {
        match self.member(key, ty)? {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(Self::invalid(format!("cannot unmarshal {} into Go struct field {}.{} of type string", v.kind(), ty, key))),
        }
    }

    /// A boolean argument; absent or null is false.
    pub fn bool(&self, key: &str, ty: &str) -> Result<bool, Error> {
        match self.member(key, ty)? {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(Self::invalid(format!("cannot unmarshal {} into Go struct field {}.{} of type bool", v.kind(), ty, key))),
        }
    }

    /// An integer argument; absent or null is 0.
    pub fn int(&self, key: &str, ty: &str) -> Result<i64, Error> {
        match self.member(key, ty)? {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => n
                .parse::<i64>()
                .map_err(|_| Self::invalid(format!("cannot unmarshal number {} into Go struct field {}.{} of type int", n, ty, key))),
            Some(v) => Err(Self::invalid(format!("cannot unmarshal {} into Go struct field {}.{} of type int", v.kind(), ty, key))),
        }
    }
}

/// Whether the input is on stdin and the output goes to stdout. toolhost
/// sets the config key toolhost.fast_io to "stdio" for every module, and
/// asking it is one plain host call; on other hosts (toolhost_config_get
/// answers that it is not toolhost) an empty Extism input says so, as the
/// guest contract has it, but go-sdk makes each input_length call build
/// fresh call state in its kernel.
fn fast_io() -> bool {
    match toolhost_config("toolhost.fast_io") {
        Ok(v) => v.as_deref() == Some("stdio"),
        Err(NotToolhost) => unsafe { input_length() == 0 },
    }
}

/// The value of an Extism config key of this plugin: through
/// toolhost_config_get (one host call), or Extism's config_get on other
/// hosts.
pub fn config(key: &str) -> Option<String> {
    toolhost_config(key).unwrap_or_else(|NotToolhost| extism_config(key))
}

/// toolhost_config_get answered that the host is not toolhost.
struct NotToolhost;

/// The value of a config key through toolhost_config_get.
fn toolhost_config(key: &str) -> Result<Option<String>, NotToolhost> {
    const ENOENT: i32 = -44;
    let mut out = vec![0u8; 128];
    loop {
        let n = unsafe { toolhost_config_get(key.as_ptr(), key.len() as u32, out.as_mut_ptr(), out.len() as u32) };
        if n == ENOENT {
            return Ok(None);
        }
        if n < 0 {
            return Err(NotToolhost);
        }
        if n as usize <= out.len() {
            out.truncate(n as usize);
            return Ok(Some(String::from_utf8_lossy(&out).into_owned()));
        }
        out = vec![0u8; n as usize];
    }
}

fn extism_config(key: &str) -> Option<String> {
    let k = unsafe { alloc(key.len() as u64) };
    for (i, b) in key.bytes().enumerate() {
        unsafe { store_u8(k + i as u64, b as u32) };
    }
    let v = unsafe { config_get(k) };
    if v == 0 {
        return None;
    }
    let n = unsafe { length(v) };
    let bytes: Vec<u8> = (0..n).map(|i| unsafe { load_u8(v + i) } as u8).collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A standard stream as a file: read and written without the standard
/// library's locks and buffers, and without setting them up first.
fn stdio(fd: RawFd) -> ManuallyDrop<File> {
    ManuallyDrop::new(unsafe { File::from_raw_fd(fd) })
}

/// All of stdin.
fn read_stdin() -> io::Result<Vec<u8>> {
    let mut f = stdio(0);
    let mut b = vec![0u8; 4096];
    let mut n = 0;
    loop {
        if n == b.len() {
            b.resize(2 * n, 0);
        }
        match f.read(&mut b[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    b.truncate(n);
    Ok(b)
}

fn input(fast: bool) -> Vec<u8> {
    if fast {
        if let Ok(b) = read_stdin() {
            return b;
        }
    }
    let n = unsafe { input_length() };
    let mut b = Vec::with_capacity(n as usize);
    let mut i = 0;
    while i + 8 <= n {
        b.extend_from_slice(&unsafe { input_load_u64(i) }.to_le_bytes());
        i += 8;
    }
    while i < n {
        b.push(unsafe { input_load_u8(i) } as u8);
        i += 1;
    }
    b
}

fn output(fast: bool, b: &[u8]) {
    if fast && !b.is_empty() && stdio(1).write_all(b).is_ok() {
        return;
    }
    unsafe { output_set(to_extism(b), b.len() as u64) };
}

fn to_extism(b: &[u8]) -> u64 {
    let p = unsafe { alloc(b.len() as u64) };
    let mut chunks = b.chunks_exact(8);
    let mut at = p;
    for c in &mut chunks {
        unsafe { store_u64(at, u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])) };
        at += 8;
    }
    for &c in chunks.remainder() {
        unsafe { store_u8(at, c as u32) };
        at += 1;
    }
    p
}

/// Fails the call the Extism way: an error message, return code 1.
fn fail(msg: &str) -> i32 {
    unsafe { error_set(to_extism(msg.as_bytes())) };
    1
}
