//! The `.cjb` encoder: [`Module`] → bytes.
//!
//! The byte-level layout is specified in `docs/cjb-format.md`; this file and
//! [`decode`](mod@crate::decode) are its only implementations. In short: the magic `CJB\0`,
//! the format version as a `u32`, then seven sections in a fixed order, each a tag byte, a
//! `u32` payload length and the payload. Counts, indices and small integers are unsigned
//! LEB128 in their shortest form; constants' bits, instructions and section lengths are
//! fixed-width little-endian.
//!
//! Invariant: encoding is a pure function of the [`Module`] (no maps, no timestamps, no
//! padding), so the same module always gives the same bytes, and
//! [`decode`](mod@crate::decode) accepts exactly the canonical encoding, so
//! `encode(&decode(b)?) == b` for every accepted `b`.

use crate::module::{Class, Const, FnKind, Function, Module, RegionKind, Static, FORMAT_VERSION};
use crate::types::{Elem, Type};

/// The four bytes every `.cjb` file starts with.
pub const MAGIC: [u8; 4] = *b"CJB\0";

/// Section tags, in the order the sections must appear.
pub(crate) mod section {
    /// Source file names.
    pub const FILES: u8 = 1;
    /// The constant pool.
    pub const CONSTS: u8 = 2;
    /// Classes and their fields.
    pub const CLASSES: u8 = 3;
    /// Static fields.
    pub const STATICS: u8 = 4;
    /// Functions.
    pub const FUNCTIONS: u8 = 5;
    /// Static-initialiser list.
    pub const INIT: u8 = 6;
    /// The default entry point.
    pub const ENTRY: u8 = 7;
    /// Static-finaliser list.
    pub const FINI: u8 = 8;

    /// Every section with its name, in file order.
    pub const ORDER: [(u8, &str); 8] = [
        (FILES, "files"),
        (CONSTS, "constants"),
        (CLASSES, "classes"),
        (STATICS, "statics"),
        (FUNCTIONS, "functions"),
        (INIT, "init"),
        (ENTRY, "entry"),
        (FINI, "fini"),
    ];
}

/// Type tags. Scalars use their own discriminant (`0..=13`) as the tag, so the common case is
/// one byte.
pub(crate) mod type_tag {
    /// `String`.
    pub const STR: u8 = 0x10;
    /// `T[]`, followed by an element tag.
    pub const ARRAY: u8 = 0x11;
    /// A class instance, followed by the class index (LEB128).
    pub const OBJECT: u8 = 0x12;
    /// `KernelBuffer<T>`, followed by a scalar byte.
    pub const BUFFER: u8 = 0x13;
    /// `KernelStream`.
    pub const STREAM: u8 = 0x14;
    /// `Shared<T>`, followed by a scalar byte.
    pub const SHARED: u8 = 0x15;
    /// `Event` (T2).
    pub const EVENT: u8 = 0x16;
}

/// Constant-pool entry tags.
pub(crate) mod const_tag {
    /// A 64-bit cell, followed by 8 bytes little-endian.
    pub const BITS: u8 = 0;
    /// A string, followed by a length-prefixed UTF-8 string.
    pub const STR: u8 = 1;
}

/// Encodes a module into `.cjb` bytes.
///
/// The result is deterministic: equal modules give identical bytes. Encoding never fails and
/// does not validate; run [`crate::verify::verify`] first if the module comes from an untrusted
/// producer.
///
/// # Panics
///
/// Panics only if a single section grows beyond 4 GiB (its length must fit the `u32` length
/// field) or a vector has more than `u32::MAX` elements, neither of which a real module reaches.
///
/// # Examples
///
/// ```
/// use cajeta_bytecode::{decode, encode, Module};
/// let m = Module::default();
/// let bytes = encode(&m);
/// assert_eq!(&bytes[..4], b"CJB\0");
/// assert_eq!(decode(&bytes).unwrap(), m);
/// ```
pub fn encode(m: &Module) -> Vec<u8> {
    let mut w = Writer {
        out: Vec::with_capacity(256),
    };
    w.out.extend_from_slice(&MAGIC);
    w.out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());

    w.section(section::FILES, |w| {
        w.len(m.files.len());
        for f in &m.files {
            w.str(f);
        }
    });
    w.section(section::CONSTS, |w| {
        w.len(m.consts.len());
        for k in &m.consts {
            match k {
                Const::Bits(bits) => {
                    w.u8(const_tag::BITS);
                    w.out.extend_from_slice(&bits.to_le_bytes());
                }
                Const::Str(s) => {
                    w.u8(const_tag::STR);
                    w.str(s);
                }
            }
        }
    });
    w.section(section::CLASSES, |w| {
        w.len(m.classes.len());
        for c in &m.classes {
            w.class(c);
        }
    });
    w.section(section::STATICS, |w| {
        w.len(m.statics.len());
        for s in &m.statics {
            w.static_(s);
        }
    });
    w.section(section::FUNCTIONS, |w| {
        w.len(m.functions.len());
        for f in &m.functions {
            w.function(f);
        }
    });
    w.section(section::INIT, |w| {
        w.len(m.init.len());
        for &i in &m.init {
            w.uleb(i);
        }
    });
    w.section(section::ENTRY, |w| match m.entry {
        None => w.u8(0),
        Some(e) => {
            w.u8(1);
            w.uleb(e);
        }
    });
    w.section(section::FINI, |w| {
        w.len(m.fini.len());
        for &i in &m.fini {
            w.uleb(i);
        }
    });
    w.out
}

/// An append-only byte sink with the format's primitive encoders.
struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, b: u8) {
        self.out.push(b);
    }

    /// Unsigned LEB128, shortest form.
    fn uleb(&mut self, mut v: u32) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.out.push(byte);
                return;
            }
            self.out.push(byte | 0x80);
        }
    }

    /// A count or length as LEB128.
    fn len(&mut self, n: usize) {
        let n = u32::try_from(n).expect("cjb: more than u32::MAX elements in one table");
        self.uleb(n);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A section: tag, `u32` payload length (patched once the payload is written), payload.
    fn section(&mut self, tag: u8, body: impl FnOnce(&mut Writer)) {
        self.u8(tag);
        let at = self.out.len();
        self.out.extend_from_slice(&[0; 4]);
        body(self);
        let len = self.out.len() - at - 4;
        let len = u32::try_from(len).expect("cjb: section larger than 4 GiB");
        self.out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    fn elem(&mut self, e: Elem) {
        match e {
            Elem::Scalar(s) => self.u8(s as u8),
            Elem::Str => self.u8(type_tag::STR),
            Elem::Object(k) => {
                self.u8(type_tag::OBJECT);
                self.uleb(k);
            }
        }
    }

    fn ty(&mut self, t: Type) {
        match t {
            Type::Scalar(s) => self.u8(s as u8),
            Type::Str => self.u8(type_tag::STR),
            Type::Array(e) => {
                self.u8(type_tag::ARRAY);
                self.elem(e);
            }
            Type::Object(k) => {
                self.u8(type_tag::OBJECT);
                self.uleb(k);
            }
            Type::Buffer(s) => {
                self.u8(type_tag::BUFFER);
                self.u8(s as u8);
            }
            Type::Stream => self.u8(type_tag::STREAM),
            Type::Event => self.u8(type_tag::EVENT),
            Type::Shared(s) => {
                self.u8(type_tag::SHARED);
                self.u8(s as u8);
            }
        }
    }

    fn class(&mut self, c: &Class) {
        self.str(&c.name);
        self.len(c.fields.len());
        for f in &c.fields {
            self.str(&f.name);
            self.ty(f.ty);
        }
    }

    fn static_(&mut self, s: &Static) {
        self.str(&s.name);
        self.ty(s.ty);
    }

    fn function(&mut self, f: &Function) {
        self.str(&f.name);
        self.u8(match f.kind {
            FnKind::Host => 0,
            FnKind::Kernel => 1,
            FnKind::Device => 2,
            FnKind::Native => 3,
        });
        self.uleb(u32::from(f.params));
        match f.ret {
            None => self.u8(0),
            Some(t) => {
                self.u8(1);
                self.ty(t);
            }
        }
        self.len(f.regs.len());
        for &t in &f.regs {
            self.ty(t);
        }
        self.len(f.code.len());
        for i in &f.code {
            self.out.extend_from_slice(&(i.op as u16).to_le_bytes());
            self.out.extend_from_slice(&i.a.to_le_bytes());
            self.out.extend_from_slice(&i.b.to_le_bytes());
            self.out.extend_from_slice(&i.c.to_le_bytes());
        }
        self.uleb(f.file);
        self.len(f.lines.len());
        for l in &f.lines {
            self.uleb(l.pc);
            self.uleb(l.line);
            self.uleb(l.col);
        }
        self.len(f.regions.len());
        for r in &f.regions {
            self.u8(match r.kind {
                RegionKind::If => 0,
                RegionKind::Loop => 1,
            });
            self.uleb(r.header);
            self.uleb(r.merge);
            self.uleb(r.cont);
        }
        self.len(f.locals.len());
        for l in &f.locals {
            self.uleb(u32::from(l.reg));
            self.str(&l.name);
        }
        self.len(f.shared.len());
        for d in &f.shared {
            self.u8(d.elem as u8);
            self.uleb(d.len);
        }
        self.len(f.inlined.len());
        for c in &f.inlined {
            self.uleb(c.start);
            self.uleb(c.end);
            self.uleb(c.callee);
            self.uleb(c.line);
            self.uleb(c.col);
        }
    }
}
