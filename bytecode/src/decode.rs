//! The `.cjb` decoder: bytes → [`Module`], trusting nothing.
//!
//! [`decode`] checks that the bytes are the canonical encoding (see `docs/cjb-format.md` and
//! [`encode`](mod@crate::encode)) of *some* module: framing, tags, UTF-8, opcode numbers,
//! integer ranges and the module-level cross references that can be checked while reading
//! (class indices inside types, file indices, init and entry function indices). Everything
//! about instructions and their operands is left to [`crate::verify::verify`], which must run
//! before execution.
//!
//! Guarantees, for any input:
//! - it never panics;
//! - it never allocates more than a small multiple of the input's size: every count is capped
//!   by the bytes that remain, assuming the smallest possible element;
//! - it accepts only canonical encodings (shortest LEB128, tags in range, sections in order,
//!   no slack), so `encode(&decode(b)?) == b` for every accepted `b`.

use std::fmt;

use crate::encode::{const_tag, section, type_tag, MAGIC};
use crate::module::{
    Class, Const, Field, FnKind, Function, InlinedCall, LineEntry, LocalName, Module, Region,
    RegionKind, SharedDecl, Static, FORMAT_VERSION,
};
use crate::opcodes::{Instr, Op};
use crate::types::{Elem, Scalar, Type};

/// Why a byte string is not a valid `.cjb` file.
///
/// `code` is one of:
/// - `CJB-E-MAGIC`: the file does not start with `CJB\0`;
/// - `CJB-E-VERSION`: the format version is not [`FORMAT_VERSION`];
/// - `CJB-E-TRUNCATED`: the file or a section ends in the middle of a value;
/// - `CJB-E-SECTION`: a section is missing, unknown, out of order, or has unused bytes;
/// - `CJB-E-INT`: an integer is not in shortest LEB128 form or out of its field's range;
/// - `CJB-E-TAG`: a constant, function-kind, region-kind or presence byte is out of range;
/// - `CJB-E-TYPE`: a type tag or scalar byte is invalid;
/// - `CJB-E-OPCODE`: an instruction has an unknown opcode number;
/// - `CJB-E-UTF8`: a string is not valid UTF-8;
/// - `CJB-E-INDEX`: a class, file or function index is out of range;
/// - `CJB-E-TRAILING`: there are bytes after the last section.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FormatError {
    /// The stable error code (`CJB-E-…`).
    pub code: &'static str,
    /// Byte offset in the input where the problem was found.
    pub offset: usize,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cajeta: error[{}]: {} (at byte {})",
            self.code, self.message, self.offset
        )
    }
}

impl std::error::Error for FormatError {}

/// Decodes `.cjb` bytes into a [`Module`].
///
/// The result is well-formed but not yet verified: call [`crate::verify::verify`] before
/// executing or lowering it.
///
/// # Errors
///
/// A [`FormatError`] with one of the codes listed on its type and the offset of the first
/// offending byte.
///
/// # Examples
///
/// ```
/// use cajeta_bytecode::{decode, encode, Module};
/// let bytes = encode(&Module::default());
/// assert!(decode(&bytes).is_ok());
/// let err = decode(&bytes[..6]).unwrap_err();
/// assert_eq!(err.code, "CJB-E-TRUNCATED");
/// assert_eq!(decode(b"ELF!").unwrap_err().code, "CJB-E-MAGIC");
/// ```
pub fn decode(bytes: &[u8]) -> Result<Module, FormatError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        end: bytes.len(),
        what: "file header",
    };
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(err(
            "CJB-E-MAGIC",
            0,
            "not a .cjb file (bad magic)".to_string(),
        ));
    }
    r.pos = MAGIC.len();
    let version_at = r.pos;
    let version = r.u32_le()?;
    if version != FORMAT_VERSION {
        return Err(err(
            "CJB-E-VERSION",
            version_at,
            format!("format version {version} is not supported (expected {FORMAT_VERSION})"),
        ));
    }

    let mut m = Module::default();
    let mut cx = Context {
        classes: 0,
        files: 0,
    };
    m.files = r.section(section::FILES, |s| {
        let n = s.count(1)?;
        let mut files = Vec::with_capacity(n);
        for _ in 0..n {
            files.push(s.string()?);
        }
        Ok(files)
    })?;
    cx.files = m.files.len();
    m.consts = r.section(section::CONSTS, |s| {
        let n = s.count(2)?;
        let mut consts = Vec::with_capacity(n);
        for _ in 0..n {
            consts.push(s.constant()?);
        }
        Ok(consts)
    })?;
    m.classes = r.section(section::CLASSES, |s| {
        let n = s.count(2)?;
        // Fields may name any class, including later ones, so the count is the bound.
        let cx = Context { classes: n, ..cx };
        let mut classes = Vec::with_capacity(n);
        for _ in 0..n {
            classes.push(s.class(&cx)?);
        }
        Ok(classes)
    })?;
    cx.classes = m.classes.len();
    m.statics = r.section(section::STATICS, |s| {
        let n = s.count(2)?;
        let mut statics = Vec::with_capacity(n);
        for _ in 0..n {
            let name = s.string()?;
            let ty = s.ty(&cx)?;
            statics.push(Static { name, ty });
        }
        Ok(statics)
    })?;
    m.functions = r.section(section::FUNCTIONS, |s| {
        let n = s.count(MIN_FUNCTION_BYTES)?;
        let mut functions = Vec::with_capacity(n);
        for _ in 0..n {
            functions.push(s.function(&cx)?);
        }
        Ok(functions)
    })?;
    let nfunctions = m.functions.len();
    m.init = r.section(section::INIT, |s| s.function_indices(nfunctions))?;
    m.entry = r.section(section::ENTRY, |s| match s.presence()? {
        false => Ok(None),
        true => Ok(Some(s.function_index(nfunctions)?)),
    })?;
    m.fini = r.section(section::FINI, |s| s.function_indices(nfunctions))?;
    if r.pos != bytes.len() {
        return Err(err(
            "CJB-E-TRAILING",
            r.pos,
            format!(
                "{} unexpected bytes after the last section",
                bytes.len() - r.pos
            ),
        ));
    }
    Ok(m)
}

/// The fewest bytes a function can occupy: empty name, kind, params, no result, file index,
/// and five empty counts (registers, code, lines, regions, locals).
const MIN_FUNCTION_BYTES: usize = 10;

fn section_name(tag: u8) -> &'static str {
    section::ORDER
        .iter()
        .find(|(t, _)| *t == tag)
        .map_or("?", |(_, name)| name)
}

fn err(code: &'static str, offset: usize, message: String) -> FormatError {
    FormatError {
        code,
        offset,
        message,
    }
}

/// What is known from earlier sections when reading a later one.
#[derive(Copy, Clone)]
struct Context {
    /// Number of classes (bound for class indices inside types).
    classes: usize,
    /// Number of source files (bound for function file indices).
    files: usize,
}

/// A cursor over `bytes[pos..end]`; offsets in errors are absolute.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Exclusive end of the region being read (the file or the current section).
    end: usize,
    /// What is being read, for truncation messages.
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.end - self.pos
    }

    fn truncated(&self, need: usize) -> FormatError {
        err(
            "CJB-E-TRUNCATED",
            self.pos,
            format!(
                "unexpected end of {} (needed {need} more bytes, {} left)",
                self.what,
                self.remaining()
            ),
        )
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    fn u16_le(&mut self) -> Result<u16, FormatError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32_le(&mut self) -> Result<u32, FormatError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64_le(&mut self) -> Result<u64, FormatError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Unsigned LEB128 of at most 32 bits, in shortest form.
    fn uleb(&mut self) -> Result<u32, FormatError> {
        let start = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let byte = self.u8()?;
            let bits = u32::from(byte & 0x7f);
            if i == 4 && bits > 0x0f {
                return Err(err(
                    "CJB-E-INT",
                    start,
                    "LEB128 integer exceeds 32 bits".into(),
                ));
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                // A zero final byte after the first means a shorter encoding existed.
                if i > 0 && byte == 0 {
                    return Err(err(
                        "CJB-E-INT",
                        start,
                        "LEB128 integer is not in shortest form".into(),
                    ));
                }
                return Ok(value);
            }
        }
        Err(err(
            "CJB-E-INT",
            start,
            "LEB128 integer longer than 5 bytes".into(),
        ))
    }

    /// A LEB128 value that must fit a `u16` field.
    fn uleb16(&mut self, field: &str) -> Result<u16, FormatError> {
        let at = self.pos;
        let v = self.uleb()?;
        u16::try_from(v)
            .map_err(|_| err("CJB-E-INT", at, format!("{field} {v} does not fit 16 bits")))
    }

    /// An element count, rejected early when even `min_size`-byte elements could not fit in
    /// what remains, so a forged count never drives a large allocation.
    fn count(&mut self, min_size: usize) -> Result<usize, FormatError> {
        let at = self.pos;
        let n = self.uleb()? as usize;
        match n.checked_mul(min_size) {
            Some(need) if need <= self.remaining() => Ok(n),
            _ => Err(err(
                "CJB-E-TRUNCATED",
                at,
                format!(
                    "count {n} cannot fit in the {} bytes left in {}",
                    self.remaining(),
                    self.what
                ),
            )),
        }
    }

    fn string(&mut self) -> Result<String, FormatError> {
        let n = self.count(1)?;
        let at = self.pos;
        let raw = self.take(n)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(err(
                "CJB-E-UTF8",
                at + e.valid_up_to(),
                "string is not valid UTF-8".into(),
            )),
        }
    }

    /// A presence byte: 0 (absent) or 1 (present).
    fn presence(&mut self) -> Result<bool, FormatError> {
        let at = self.pos;
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(err(
                "CJB-E-TAG",
                at,
                format!("presence byte {b} is neither 0 nor 1"),
            )),
        }
    }

    /// Reads the next section, which must carry `tag`, with `body`; all of the section's
    /// bytes must be used.
    fn section<T>(
        &mut self,
        tag: u8,
        body: impl FnOnce(&mut Reader<'a>) -> Result<T, FormatError>,
    ) -> Result<T, FormatError> {
        let name = section_name(tag);
        let at = self.pos;
        if self.remaining() == 0 {
            return Err(err(
                "CJB-E-SECTION",
                at,
                format!("missing section `{name}`"),
            ));
        }
        let found = self.u8()?;
        if found != tag {
            let what = match section::ORDER.iter().find(|(t, _)| *t == found) {
                Some((_, other)) => format!("section `{other}` out of order"),
                None => format!("unknown section tag {found}"),
            };
            return Err(err(
                "CJB-E-SECTION",
                at,
                format!("{what}: expected section `{name}`"),
            ));
        }
        let len = self.u32_le()? as usize;
        if len > self.remaining() {
            return Err(err(
                "CJB-E-TRUNCATED",
                at,
                format!(
                    "section `{name}` claims {len} bytes but only {} remain",
                    self.remaining()
                ),
            ));
        }
        let mut s = Reader {
            bytes: self.bytes,
            pos: self.pos,
            end: self.pos + len,
            what: name,
        };
        let value = body(&mut s)?;
        if s.pos != s.end {
            return Err(err(
                "CJB-E-SECTION",
                s.pos,
                format!("section `{name}` has {} unused bytes", s.remaining()),
            ));
        }
        self.pos = s.end;
        Ok(value)
    }

    fn constant(&mut self) -> Result<Const, FormatError> {
        let at = self.pos;
        match self.u8()? {
            const_tag::BITS => Ok(Const::Bits(self.u64_le()?)),
            const_tag::STR => Ok(Const::Str(self.string()?)),
            t => Err(err("CJB-E-TAG", at, format!("unknown constant tag {t}"))),
        }
    }

    fn scalar(&mut self) -> Result<Scalar, FormatError> {
        let at = self.pos;
        let b = self.u8()?;
        Scalar::from_u8(b).ok_or_else(|| err("CJB-E-TYPE", at, format!("invalid scalar type {b}")))
    }

    fn class_index(&mut self, cx: &Context) -> Result<u32, FormatError> {
        let at = self.pos;
        let k = self.uleb()?;
        if k as usize >= cx.classes {
            return Err(err(
                "CJB-E-INDEX",
                at,
                format!(
                    "class index {k} out of range (module has {} classes)",
                    cx.classes
                ),
            ));
        }
        Ok(k)
    }

    fn ty(&mut self, cx: &Context) -> Result<Type, FormatError> {
        let at = self.pos;
        let tag = self.u8()?;
        if let Some(s) = Scalar::from_u8(tag) {
            return Ok(Type::Scalar(s));
        }
        match tag {
            type_tag::STR => Ok(Type::Str),
            type_tag::ARRAY => {
                let at = self.pos;
                let tag = self.u8()?;
                if let Some(s) = Scalar::from_u8(tag) {
                    return Ok(Type::Array(Elem::Scalar(s)));
                }
                match tag {
                    type_tag::STR => Ok(Type::Array(Elem::Str)),
                    type_tag::OBJECT => Ok(Type::Array(Elem::Object(self.class_index(cx)?))),
                    t => Err(err(
                        "CJB-E-TYPE",
                        at,
                        format!("invalid array element tag {t:#04x}"),
                    )),
                }
            }
            type_tag::OBJECT => Ok(Type::Object(self.class_index(cx)?)),
            type_tag::BUFFER => Ok(Type::Buffer(self.scalar()?)),
            type_tag::STREAM => Ok(Type::Stream),
            type_tag::EVENT => Ok(Type::Event),
            type_tag::SHARED => Ok(Type::Shared(self.scalar()?)),
            t => Err(err("CJB-E-TYPE", at, format!("invalid type tag {t:#04x}"))),
        }
    }

    fn class(&mut self, cx: &Context) -> Result<Class, FormatError> {
        let name = self.string()?;
        let n = self.count(2)?;
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.string()?;
            let ty = self.ty(cx)?;
            fields.push(Field { name, ty });
        }
        Ok(Class { name, fields })
    }

    /// A `vec<uleb>` of function indices (the init and fini lists).
    fn function_indices(&mut self, functions: usize) -> Result<Vec<u32>, FormatError> {
        let n = self.count(1)?;
        let mut list = Vec::with_capacity(n);
        for _ in 0..n {
            list.push(self.function_index(functions)?);
        }
        Ok(list)
    }

    fn function_index(&mut self, functions: usize) -> Result<u32, FormatError> {
        let at = self.pos;
        let i = self.uleb()?;
        if i as usize >= functions {
            return Err(err(
                "CJB-E-INDEX",
                at,
                format!("function index {i} out of range (module has {functions} functions)"),
            ));
        }
        Ok(i)
    }

    fn function(&mut self, cx: &Context) -> Result<Function, FormatError> {
        let name = self.string()?;
        let at = self.pos;
        let kind = match self.u8()? {
            0 => FnKind::Host,
            1 => FnKind::Kernel,
            2 => FnKind::Device,
            3 => FnKind::Native,
            k => return Err(err("CJB-E-TAG", at, format!("unknown function kind {k}"))),
        };
        let params = self.uleb16("parameter count")?;
        let ret = match self.presence()? {
            false => None,
            true => Some(self.ty(cx)?),
        };

        let n = self.count(1)?;
        let mut regs = Vec::with_capacity(n);
        for _ in 0..n {
            regs.push(self.ty(cx)?);
        }

        let n = self.count(8)?;
        let mut code = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.pos;
            let op = self.u16_le()?;
            let op = Op::from_u16(op)
                .ok_or_else(|| err("CJB-E-OPCODE", at, format!("unknown opcode {op}")))?;
            let a = self.u16_le()?;
            let b = self.u16_le()?;
            let c = self.u16_le()?;
            code.push(Instr::new(op, a, b, c));
        }

        let at = self.pos;
        let file = self.uleb()?;
        if file as usize >= cx.files {
            return Err(err(
                "CJB-E-INDEX",
                at,
                format!(
                    "file index {file} out of range (module has {} files)",
                    cx.files
                ),
            ));
        }

        let n = self.count(3)?;
        let mut lines = Vec::with_capacity(n);
        for _ in 0..n {
            let pc = self.uleb()?;
            let line = self.uleb()?;
            let col = self.uleb()?;
            lines.push(LineEntry { pc, line, col });
        }

        let n = self.count(4)?;
        let mut regions = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.pos;
            let kind = match self.u8()? {
                0 => RegionKind::If,
                1 => RegionKind::Loop,
                k => return Err(err("CJB-E-TAG", at, format!("unknown region kind {k}"))),
            };
            let header = self.uleb()?;
            let merge = self.uleb()?;
            let cont = self.uleb()?;
            regions.push(Region {
                kind,
                header,
                merge,
                cont,
            });
        }

        let n = self.count(2)?;
        let mut locals = Vec::with_capacity(n);
        for _ in 0..n {
            let reg = self.uleb16("local register")?;
            let name = self.string()?;
            locals.push(LocalName { reg, name });
        }

        let n = self.count(2)?;
        let mut shared = Vec::with_capacity(n);
        for _ in 0..n {
            let elem = self.scalar()?;
            let len = self.uleb()?;
            shared.push(SharedDecl { elem, len });
        }

        let n = self.count(5)?;
        let mut inlined = Vec::with_capacity(n);
        for _ in 0..n {
            inlined.push(InlinedCall {
                start: self.uleb()?,
                end: self.uleb()?,
                callee: self.uleb()?,
                line: self.uleb()?,
                col: self.uleb()?,
            });
        }

        Ok(Function {
            name,
            kind,
            params,
            ret,
            regs,
            code,
            file,
            lines,
            regions,
            locals,
            shared,
            inlined,
        })
    }
}
