//! The disassembler: a deterministic, human-readable listing of a [`Module`] (`cajeta dis`).
//!
//! The listing starts with the module tables (files, constants, classes, statics, init order,
//! entry), then each function: a header line with index, name, kind and signature, its
//! register types and local names, one line per instruction with symbolic operands, and its
//! region table:
//!
//! ```text
//! function 1: Main.add [host] (int32, int32) -> int32  (main.cajeta)
//!   registers: r0 int32, r1 int32, r2 int32
//!   locals: r0 a, r1 b
//!   0000  add.i32     r2, r0, r1                          ; 3:16
//!   0001  ret         r2
//! ```
//!
//! Operands: registers `r2`; constants inline (`K[3] = 1.5`, `K[0] = "hi\n"`), typed by the
//! destination register; jump targets `-> 0012`; functions, classes, fields (`Point.x`) and
//! statics by name; calls as `r3, Main.fib(r4, r5)`. A source `; line:col` annotation is
//! appended whenever the line changes.
//!
//! The disassembler never panics, even on an unverified module: indices out of range are shown
//! with a `?` (`F[9]?`) instead of a name.

use std::fmt::Write;

use crate::module::{Const, FnKind, Function, Module, RegionKind};
use crate::opcodes::{Instr, MathFn, Op, Operand};
use crate::types::{Elem, Scalar, Type};

/// Column at which source-position annotations start.
const ANNOTATION_COLUMN: usize = 56;

/// Calls list at most this many argument registers before eliding the middle.
const MAX_LISTED_ARGS: u16 = 8;

/// Disassembles a whole module.
///
/// Deterministic: the same module always gives the same text. Accepts unverified modules.
///
/// # Examples
///
/// ```
/// use cajeta_bytecode::*;
/// let f = Function {
///     name: "Main.main".into(),
///     kind: FnKind::Host,
///     params: 0,
///     ret: None,
///     regs: vec![Type::I32],
///     code: vec![Instr::with_bc(Op::LoadI, 0, 7), Instr::new(Op::RetVoid, 0, 0, 0)],
///     file: 0,
///     lines: vec![],
///     regions: vec![],
///     locals: vec![],
///     shared: vec![],
///     inlined: vec![],
/// };
/// let m = Module { files: vec!["m.cajeta".into()], functions: vec![f], ..Module::default() };
/// let text = disassemble(&m);
/// assert!(text.contains("0000  loadi       r0, 7"));
/// ```
pub fn disassemble(m: &Module) -> String {
    let d = Dis { m };
    let mut out = String::new();
    d.module(&mut out);
    for (n, f) in m.functions.iter().enumerate() {
        out.push('\n');
        d.function(&mut out, n, f);
    }
    out
}

/// Disassembles a single function of `m` (the same text as in [`disassemble`]).
///
/// Returns an empty string if `index` is out of range.
pub fn disassemble_function(m: &Module, index: usize) -> String {
    let mut out = String::new();
    if let Some(f) = m.functions.get(index) {
        Dis { m }.function(&mut out, index, f);
    }
    out
}

struct Dis<'m> {
    m: &'m Module,
}

impl Dis<'_> {
    fn ty(&self, t: Type) -> String {
        match t {
            Type::Object(k) => self.class_name(k),
            Type::Array(Elem::Object(k)) => format!("{}[]", self.class_name(k)),
            t => t.to_string(),
        }
    }

    fn class_name(&self, k: u32) -> String {
        match self.m.classes.get(k as usize) {
            Some(c) => c.name.clone(),
            None => format!("class#{k}?"),
        }
    }

    fn function_name(&self, n: u32) -> String {
        match self.m.functions.get(n as usize) {
            Some(f) => f.name.clone(),
            None => format!("F[{n}]?"),
        }
    }

    fn module(&self, out: &mut String) {
        let m = self.m;
        let _ = writeln!(
            out,
            "module (format version {})",
            crate::module::FORMAT_VERSION
        );
        let _ = writeln!(out, "  files:");
        for (n, f) in m.files.iter().enumerate() {
            let _ = writeln!(out, "    {n}  {f:?}");
        }
        let _ = writeln!(out, "  constants:");
        for (n, k) in m.consts.iter().enumerate() {
            match k {
                Const::Bits(b) => {
                    let _ = writeln!(out, "    K[{n}] = bits {b:#018x}");
                }
                Const::Str(s) => {
                    let _ = writeln!(out, "    K[{n}] = {s:?}");
                }
            }
        }
        let _ = writeln!(out, "  classes:");
        for (n, c) in m.classes.iter().enumerate() {
            let fields: Vec<String> = c
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, self.ty(f.ty)))
                .collect();
            let _ = writeln!(out, "    {n}  {} {{ {} }}", c.name, fields.join(", "));
        }
        let _ = writeln!(out, "  statics:");
        for (n, s) in m.statics.iter().enumerate() {
            let _ = writeln!(out, "    {n}  {}: {}", s.name, self.ty(s.ty));
        }
        let init: Vec<String> = m.init.iter().map(|&i| self.function_name(i)).collect();
        let _ = writeln!(out, "  init: [{}]", init.join(", "));
        match m.entry {
            Some(e) => {
                let _ = writeln!(out, "  entry: {}", self.function_name(e));
            }
            None => {
                let _ = writeln!(out, "  entry: none");
            }
        }
        if !m.fini.is_empty() {
            let fini: Vec<String> = m.fini.iter().map(|&i| self.function_name(i)).collect();
            let _ = writeln!(out, "  fini: [{}]", fini.join(", "));
        }
    }

    fn function(&self, out: &mut String, n: usize, f: &Function) {
        let kind = match f.kind {
            FnKind::Host => "host",
            FnKind::Kernel => "kernel",
            FnKind::Device => "device",
            FnKind::Native => "native",
        };
        let params: Vec<String> = (0..usize::from(f.params))
            .map(|p| match f.regs.get(p) {
                Some(&t) => self.ty(t),
                None => "?".into(),
            })
            .collect();
        let ret = match f.ret {
            Some(t) => self.ty(t),
            None => "void".into(),
        };
        let file = match self.m.files.get(f.file as usize) {
            Some(name) => name.clone(),
            None => format!("file#{}?", f.file),
        };
        let _ = writeln!(
            out,
            "function {n}: {} [{kind}] ({}) -> {ret}  ({file})",
            f.name,
            params.join(", ")
        );
        let regs: Vec<String> = f
            .regs
            .iter()
            .enumerate()
            .map(|(r, &t)| format!("r{r} {}", self.ty(t)))
            .collect();
        if regs.is_empty() {
            let _ = writeln!(out, "  registers: none");
        } else {
            let _ = writeln!(out, "  registers: {}", regs.join(", "));
        }
        if !f.locals.is_empty() {
            let locals: Vec<String> = f
                .locals
                .iter()
                .map(|l| format!("r{} {}", l.reg, local_name(&l.name)))
                .collect();
            let _ = writeln!(out, "  locals: {}", locals.join(", "));
        }
        let mut last_line = 0;
        for (pc, &i) in f.code.iter().enumerate() {
            let mut line = format!("  {pc:04}  {:<11} {}", i.op.mnemonic(), self.operands(f, i));
            let line_trimmed_len = line.trim_end().len();
            line.truncate(line_trimmed_len);
            let (src_line, col) = f.position(pc as u32);
            if src_line != 0 && src_line != last_line {
                let pad = ANNOTATION_COLUMN
                    .saturating_sub(line.chars().count())
                    .max(1);
                let _ = write!(line, "{:pad$}; {src_line}:{col}", "");
            }
            last_line = src_line;
            out.push_str(&line);
            out.push('\n');
        }
        if !f.regions.is_empty() {
            let _ = writeln!(out, "  regions:");
            for (n, r) in f.regions.iter().enumerate() {
                let _ = match r.kind {
                    RegionKind::Loop => writeln!(
                        out,
                        "    {n}  loop  header {:04}  cont {:04}  merge {:04}",
                        r.header, r.cont, r.merge
                    ),
                    RegionKind::If => writeln!(
                        out,
                        "    {n}  if    header {:04}  merge {:04}",
                        r.header, r.merge
                    ),
                };
            }
        }
        if !f.inlined.is_empty() {
            let _ = writeln!(out, "  inlined:");
            for c in &f.inlined {
                let callee = self
                    .m
                    .functions
                    .get(c.callee as usize)
                    .map_or("?", |g| g.name.as_str());
                let _ = writeln!(
                    out,
                    "    {:04}..{:04}  {callee}  called at {}:{}",
                    c.start, c.end, c.line, c.col
                );
            }
        }
    }

    /// The operand text of one instruction.
    fn operands(&self, f: &Function, i: Instr) -> String {
        if i.op == Op::Call {
            return self.call(i);
        }
        let ops = i.op.operands();
        let vals = [i.a, i.b, i.c];
        let mut parts = Vec::with_capacity(3);
        for (slot, (&o, &v)) in ops.iter().zip(vals.iter()).enumerate() {
            let wide = i.bc();
            let text = match o {
                Operand::N => None,
                Operand::Dst(_) | Operand::Src(_) | Operand::Special => Some(format!("r{v}")),
                Operand::Imm16 => Some(match i.op {
                    Op::AddImmI32 | Op::AddImmI64 => (v as i16).to_string(),
                    Op::Print => print_flags(v),
                    _ => v.to_string(),
                }),
                Operand::Imm32 => Some((wide as i32).to_string()),
                Operand::Const => Some(self.constant(f, i.a, wide)),
                Operand::Target => Some(format!("-> {wide:04}")),
                Operand::Func => Some(self.function_name(u32::from(v))),
                Operand::Class => Some(self.class_name(wide)),
                Operand::Static => Some(match self.m.statics.get(usize::from(v)) {
                    Some(s) => s.name.clone(),
                    None => format!("static#{v}?"),
                }),
                Operand::MathFn => Some(match MathFn::from_u16(v) {
                    Some(mf) => mf.name().to_string(),
                    None => format!("math#{v}?"),
                }),
                Operand::Field => {
                    // The object is the other register operand: `b` for getfield, `a` for
                    // setfield (the slot before the field for setfield, after for getfield).
                    let obj = if slot == 2 { i.b } else { i.a };
                    Some(self.field(f, obj, v))
                }
            };
            parts.extend(text);
        }
        parts.join(", ")
    }

    fn field(&self, f: &Function, obj: u16, field: u16) -> String {
        if let Some(Type::Object(k)) = f.regs.get(usize::from(obj)) {
            if let Some(c) = self.m.classes.get(*k as usize) {
                if let Some(fld) = c.fields.get(usize::from(field)) {
                    return format!("{}.{}", c.name, fld.name);
                }
            }
        }
        format!("field#{field}?")
    }

    fn constant(&self, f: &Function, dst: u16, k: u32) -> String {
        let value = match self.m.consts.get(k as usize) {
            None => return format!("K[{k}]?"),
            Some(Const::Str(s)) => format!("{s:?}"),
            Some(Const::Bits(bits)) => match f.regs.get(usize::from(dst)) {
                Some(Type::Scalar(s)) => scalar_value(*s, *bits),
                _ => format!("{bits:#x}"),
            },
        };
        format!("K[{k}] = {value}")
    }

    fn call(&self, i: Instr) -> String {
        let Some(callee) = self.m.functions.get(usize::from(i.c)) else {
            return format!("r{}, r{}, F[{}]?", i.a, i.b, i.c);
        };
        let n = callee.params;
        let b = u32::from(i.b);
        let args: Vec<String> = if n <= MAX_LISTED_ARGS {
            (0..u32::from(n)).map(|p| format!("r{}", b + p)).collect()
        } else {
            vec![
                format!("r{b}"),
                "…".into(),
                format!("r{} ({n} arguments)", b + u32::from(n) - 1),
            ]
        };
        // Without arguments, the callee's frame start (where its registers overwrite the
        // caller's, V-DEF) is not otherwise visible.
        let call = if n == 0 {
            format!("{}(), frame r{b}", callee.name)
        } else {
            format!("{}({})", callee.name, args.join(", "))
        };
        match callee.ret {
            Some(_) => format!("r{}, {call}", i.a),
            None => call,
        }
    }
}

/// The flags operand of `print`: bit 0 selects stderr, bit 1 appends a newline.
fn print_flags(v: u16) -> String {
    let mut s = String::from(if v & 1 == 0 { "stdout" } else { "stderr" });
    if v & 2 != 0 {
        s.push_str("|newline");
    }
    if v & !3 != 0 {
        let _ = write!(s, "|{:#x}", v & !3);
    }
    s
}

/// A local's source name, quoted unless it is a plain identifier.
fn local_name(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if plain {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// A constant's bits shown as a value of type `s`.
fn scalar_value(s: Scalar, bits: u64) -> String {
    match s {
        Scalar::F64 => format!("{:?}", f64::from_bits(bits)),
        Scalar::F32 => format!("{:?}", f32::from_bits(bits as u32)),
        Scalar::F16 => format!("{:?}", crate::half::f16_to_f32(bits as u16)),
        Scalar::BF16 => format!("{:?}", crate::half::bf16_to_f32(bits as u16)),
        Scalar::Bool => match bits {
            0 => "false".into(),
            1 => "true".into(),
            _ => format!("{bits:#x}"),
        },
        Scalar::Char => match u32::try_from(bits).ok().and_then(char::from_u32) {
            Some(c) => format!("{c:?}"),
            None => format!("{bits:#x}"),
        },
        s if s.is_signed() => (bits as i64).to_string(),
        _ => bits.to_string(),
    }
}
