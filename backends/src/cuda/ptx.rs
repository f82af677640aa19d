//! PTX emission: one kernel, with its `@Device` callees inlined, to a PTX module.
//!
//! The emitter walks the kernel's bytecode once per inlined instance and writes one PTX
//! instruction sequence per bytecode instruction, with a typed virtual register per bytecode
//! register (ptxas does register allocation). Control flow is plain `bra` to labels: PTX does not
//! need structured control flow, so the region table is not consulted.
//!
//! # Register representation
//!
//! | bytecode type | PTX registers |
//! |---|---|
//! | `boolean`, `char`, `int8` … `uint32` | one `.b32`, the canonical value (see `bytecode::types`) sign- or zero-extended to 32 bits |
//! | `int64`, `uint64` | one `.b64` |
//! | `float32`, `float64` | one `.f32` / `.f64` |
//! | `KernelBuffer<T>`, `Shared<T>` | two `.b64`: the element address (global, resp. shared window) and the length in elements |
//!
//! Narrow integer results are re-canonicalised after each operation (`cvt.s32.s8`, `and 0xff`, …),
//! so every operation matches the reference interpreter (`backends/src/cpu/interp.rs`) bit for
//! bit: wrapping arithmetic per width, shifts modulo the width, saturating float-to-integer
//! conversions with NaN → 0, IEEE float operations with explicit `.rn` rounding (which also
//! forbids ptxas to contract `mul`+`add` into `fma`), subnormals kept (no `.ftz`).
//!
//! # Kernel ABI
//!
//! Parameters, in the kernel function's order: a scalar as one `.param` (`.u32` for types of at
//! most 32 bits, holding the canonical value's low 32 bits; `.u64`; `.f32`; `.f64`), a buffer as
//! two `.u64` (the address of its first element — views already offset — and its length in
//! elements); then one hidden `.u64`: the address of the launch's 64-byte fault record
//! ([`FAULT_RECORD_BYTES`]).
//!
//! # Faults
//!
//! Every buffer and shared access is bounds-checked and every integer division checks its
//! divisor (as the `cpu` backend): a failing check branches to a per-site stub that jumps to one
//! handler, which records the fault with the smallest `(workgroup, item)` in the fault record
//! (under a spin lock) and exits the thread without touching memory. Each site has an entry in
//! [`Lowered::sites`] (what failed, the variable, the inlined frames), from which the runtime
//! writes the same message as `cpu`.

use crate::devmath::{self, Recipe, Step};
use crate::LowerError;
use cajeta_bytecode::{Const, FnKind, Instr, MathFn, Module, Op, Scalar, Type};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The default target architecture (`--cuda-arch`).
pub const DEFAULT_ARCH: &str = "sm_80";

/// The wave width of every CUDA launch (XPU §8.2).
pub const WAVE_WIDTH: u32 = 32;

/// Size of the device-side fault record each launch passes as its hidden last parameter.
///
/// Layout (little-endian): `u32 lock` @0, `u32 site + 1` @4 (0: no fault), `u64 g` @8 (linear
/// workgroup), `u32 l` @16 (linear item), `u64 index` @24, `u64 length` @32, `u32 wx, wy, wz`
/// @40, `u32 tx, ty, tz` @52.
pub const FAULT_RECORD_BYTES: usize = 64;

/// Most inlined function instances per kernel (a guard against call-tree explosion).
const MAX_INSTANCES: u32 = 4096;

/// How one kernel parameter is passed (see the module documentation).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ParamAbi {
    /// A scalar by value.
    Scalar(Scalar),
    /// A buffer as address and length.
    Buffer(Scalar),
}

/// What a fault site checks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SiteKind {
    /// An element index against a buffer (`shared == false`) or shared array length; `var` is
    /// the source name of the register holding the memory (`r<n>` without one).
    Bounds {
        /// Shared memory (else a buffer).
        shared: bool,
        /// Variable name for the message.
        var: String,
    },
    /// A run-time lane index against a vector's lane count (`chk.idx` on a vector); `var` is
    /// the source name of the vector.
    Lane {
        /// Variable name for the message.
        var: String,
    },
    /// Integer division or remainder by zero.
    DivZero,
    /// Signed `MIN / -1`.
    Overflow,
}

/// One place in the emitted code that can fault.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FaultSite {
    /// What it checks.
    pub kind: SiteKind,
    /// The device frames, innermost first, as `(function, pc)`: the faulting instruction, then
    /// each inlined caller's `call`.
    pub frames: Vec<(u32, u32)>,
    /// The faulting index was a uint64 (it prints unsigned).
    pub unsigned_index: bool,
}

/// A lowered kernel: the PTX text and what the runtime needs to launch it and decode its faults.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The PTX module.
    pub text: String,
    /// The `.entry` name.
    pub entry: String,
    /// How each kernel parameter is passed, in order.
    pub params: Vec<ParamAbi>,
    /// The fault sites; the fault record's `site` field indexes this (plus one).
    pub sites: Vec<FaultSite>,
    /// Bytes of the kernel's static shared declarations.
    pub shared_bytes: u64,
    /// The static declarations live at the start of the dynamic shared memory (their total is
    /// above [`STATIC_SHARED_LIMIT`]): the launch adds `shared_bytes` to its dynamic size.
    pub static_in_dynamic: bool,
}

/// The most static shared memory a PTX module may declare (ptxas refuses more); a kernel
/// with more keeps its arrays in the dynamic shared memory, which can be opted in up to the
/// device's per-block maximum (XPU §8.3).
pub const STATIC_SHARED_LIMIT: u64 = 48 << 10;

/// The PTX module of kernel function `kernel` of `module`, for `arch` (`sm_80`, `sm_90`, …).
///
/// # Errors
/// A [`LowerError`] naming the instruction, type or architecture that cannot be lowered.
pub fn emit_ptx(module: &Module, kernel: u32, arch: &str) -> Result<String, LowerError> {
    lower(module, kernel, arch).map(|l| l.text)
}

/// The `.entry` name of a kernel: `cj_` and its qualified name with every byte outside
/// `[A-Za-z0-9]` escaped (`_` as `__`, others as `_XX`), so distinct names never collide.
pub fn entry_name(qualified: &str) -> String {
    let mut s = String::from("cj_");
    for b in qualified.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => s.push(b as char),
            b'_' => s.push_str("__"),
            _ => {
                let _ = write!(s, "_{b:02X}");
            }
        }
    }
    s
}

/// The compute capability of `sm_NN` / `sm_NNa` (`None` if malformed).
pub fn arch_number(arch: &str) -> Option<u32> {
    let digits = arch.strip_prefix("sm_")?;
    let digits = digits.strip_suffix('a').unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 4 {
        return None;
    }
    digits.parse().ok()
}

/// The PTX ISA version to declare for a target: 8.0 (the project's baseline) unless the
/// architecture needs a newer one.
fn ptx_version(sm: u32) -> &'static str {
    match sm {
        0..=90 => "8.0",
        91..=100 => "8.6",
        _ => "8.7",
    }
}

/// Lowers kernel `kernel` of `module` for `arch`.
///
/// # Errors
/// See [`emit_ptx`].
pub fn lower(module: &Module, kernel: u32, arch: &str) -> Result<Lowered, LowerError> {
    let kname = module
        .functions
        .get(kernel as usize)
        .map_or_else(|| format!("#{kernel}"), |f| f.name.clone());
    let err = |message: String| LowerError {
        kernel: kname.clone(),
        message,
    };
    let Some(kf) = module.functions.get(kernel as usize) else {
        return Err(err("no such function".into()));
    };
    if kf.kind != FnKind::Kernel {
        return Err(err("not a kernel".into()));
    }
    let sm = arch_number(arch).ok_or_else(|| {
        err(format!(
            "invalid CUDA architecture '{arch}' (expected sm_NN)"
        ))
    })?;
    if sm < 70 {
        return Err(err(format!(
            "architecture {arch} is not supported (sm_70 or newer: independent thread scheduling)"
        )));
    }
    let mut e = Emitter {
        m: module,
        sm,
        body: String::new(),
        stubs: String::new(),
        decls: String::new(),
        ntmp: 0,
        sites: vec![],
        ninst: 0,
        path: vec![],
        site_regs: false,
        shared_offsets: None,
    };
    let mut shared_bytes = 0u64;
    let mut offsets = vec![];
    for d in &kf.shared {
        // 16-byte aligned, as the dynamic array is.
        offsets.push(shared_bytes);
        shared_bytes += (d.elem.size() as u64 * u64::from(d.len)).next_multiple_of(16);
    }
    let static_in_dynamic = shared_bytes > STATIC_SHARED_LIMIT;
    if static_in_dynamic {
        e.shared_offsets = Some((offsets, shared_bytes));
    }
    let mut params = vec![];
    let mut plist = vec![];
    let mut loads = String::new();
    for (i, t) in kf.regs.iter().take(usize::from(kf.params)).enumerate() {
        let name = reg_name(0, i as u16);
        match *t {
            Type::Scalar(s) => {
                let pt = param_type(s);
                plist.push(format!(".param .{pt} p{i}"));
                let _ = writeln!(loads, "\tld.param.{pt} {name}, [p{i}];");
                params.push(ParamAbi::Scalar(s));
            }
            Type::Buffer(s) => {
                plist.push(format!(".param .u64 p{i}"));
                plist.push(format!(".param .u64 p{i}n"));
                let _ = writeln!(loads, "\tld.param.u64 {name}a, [p{i}];");
                let _ = writeln!(loads, "\tcvta.to.global.u64 {name}a, {name}a;");
                let _ = writeln!(loads, "\tld.param.u64 {name}n, [p{i}n];");
                params.push(ParamAbi::Buffer(s));
            }
            other => {
                return Err(err(format!(
                    "parameter {i} has type {other}, which kernels cannot take"
                )))
            }
        }
    }
    plist.push(".param .u64 fault".into());
    e.declare_regs(0, kernel).map_err(&err)?;
    e.body.push_str(&loads);
    e.zero_regs(0, kernel, usize::from(kf.params));
    e.emit_instance(kernel, 0, None).map_err(&err)?;

    let mut shared = String::new();
    if static_in_dynamic {
        let _ = writeln!(shared, ".extern .shared .align 16 .b8 cj_dyn[];");
    } else {
        for (i, d) in kf.shared.iter().enumerate() {
            if d.len == 0 {
                // The dynamic array (T2): sized by the launch's `sharedBytes`.
                let _ = writeln!(shared, ".extern .shared .align 16 .b8 cj_dyn[];");
                continue;
            }
            let bytes = d.elem.size() as u64 * u64::from(d.len);
            let _ = writeln!(shared, ".shared .align 8 .b8 cj_sh{i}[{bytes}];");
        }
    }

    let entry = entry_name(&kf.name);
    let mut text = String::new();
    let _ = writeln!(text, "// {} (generated by cajeta)", kf.name);
    let _ = writeln!(text, ".version {}", ptx_version(sm));
    let _ = writeln!(text, ".target {arch}");
    let _ = writeln!(text, ".address_size 64\n");
    text.push_str(&shared);
    if !shared.is_empty() {
        text.push('\n');
    }
    let _ = writeln!(text, ".visible .entry {entry}(");
    let _ = writeln!(text, "\t{}", plist.join(",\n\t"));
    text.push_str(")\n{\n");
    text.push_str(&e.decls);
    text.push_str(&e.body);
    if !e.sites.is_empty() {
        text.push_str(&e.stubs);
        text.push_str(&fault_handler());
    }
    text.push_str("}\n");
    Ok(Lowered {
        text,
        entry,
        params,
        sites: e.sites,
        shared_bytes,
        static_in_dynamic,
    })
}

/// PTX rounding the float32 bits in `%hw` (value `%hf`) to bfloat16 bits in `dst`: to
/// nearest-even, a NaN kept quiet with its top payload bits (as `cajeta_bytecode::half`). Uses
/// the scratch `%hu` and `%hp` of the enclosing block.
fn bf16_round(dst: &str) -> String {
    format!(
        "shr.u32 %hu, %hw, 16; and.b32 %hu, %hu, 1; add.u32 %hu, %hu, 32767; \
         add.u32 %hu, %hw, %hu; shr.u32 {dst}, %hu, 16; setp.nan.f32 %hp, %hf, %hf; \
         @%hp shr.u32 %hu, %hw, 16; @%hp or.b32 {dst}, %hu, 64;"
    )
}

/// The `.param` type of a scalar parameter.
fn param_type(s: Scalar) -> &'static str {
    match s {
        Scalar::I64 | Scalar::U64 => "u64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        _ => "u32",
    }
}

/// The PTX name of register `r` of inlined instance `inst` (buffers add `a` / `n`).
fn reg_name(inst: u32, r: u16) -> String {
    format!("%v{inst}_{r}")
}

/// How a bytecode register lives in PTX.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    /// `.b32` holding the canonical value of this scalar.
    B32(Scalar),
    /// `.b64` (int64, uint64).
    B64(Scalar),
    /// `.f32`.
    F32,
    /// `.f64`.
    F64,
    /// Address + length of a buffer (`shared == false`) or shared array of `elem`.
    Mem { shared: bool, elem: Scalar },
    /// No device representation (strings, arrays, objects, streams).
    None,
}

fn kind(t: Type) -> Kind {
    match t {
        Type::Scalar(s) => match s {
            Scalar::I64 | Scalar::U64 => Kind::B64(s),
            Scalar::F32 => Kind::F32,
            Scalar::F64 => Kind::F64,
            _ => Kind::B32(s),
        },
        Type::Buffer(elem) => Kind::Mem {
            shared: false,
            elem,
        },
        Type::Shared(elem) => Kind::Mem { shared: true, elem },
        _ => Kind::None,
    }
}

/// The scalar of a mnemonic suffix (`i32`, `bool`, `char`, …).
fn suffix_scalar(s: &str) -> Option<Scalar> {
    Scalar::ALL.into_iter().find(|x| x.suffix() == s)
}

/// The PTX integer type for a scalar's operations at its register width (`s32`, `u64`, …).
fn int_ty(s: Scalar) -> &'static str {
    match (s.bits() == 64, s.is_signed()) {
        (true, true) => "s64",
        (true, false) => "u64",
        (false, true) => "s32",
        (false, false) => "u32",
    }
}

/// The bit type of a scalar's register (`b32`, `b64`).
fn bit_ty(s: Scalar) -> &'static str {
    if s.bits() == 64 {
        "b64"
    } else {
        "b32"
    }
}

/// Where a `ret` goes in an inlined instance: the end label and the caller's result register.
struct RetTo {
    end: String,
    dst: Option<(String, Kind)>,
}

struct Emitter<'m> {
    m: &'m Module,
    sm: u32,
    /// Instructions of the kernel body.
    body: String,
    /// Fault stubs (after the body).
    stubs: String,
    /// Register declarations.
    decls: String,
    ntmp: u32,
    sites: Vec<FaultSite>,
    ninst: u32,
    /// The inline path: `(caller function, pc of its call)`, outermost first.
    path: Vec<(u32, u32)>,
    /// The fault handler's registers are declared.
    site_regs: bool,
    /// Byte offsets of the static shared arrays in the dynamic shared memory, and that of the
    /// dynamic array after them, when they live there ([`Lowered::static_in_dynamic`]).
    shared_offsets: Option<(Vec<u64>, u64)>,
}

type R<T> = Result<T, String>;

impl Emitter<'_> {
    fn ins(&mut self, s: impl AsRef<str>) {
        self.body.push('\t');
        self.body.push_str(s.as_ref());
        self.body.push_str(";\n");
    }

    /// A `{ … }` scope of instructions with its own temporaries (no trailing `;`).
    fn block(&mut self, s: impl AsRef<str>) {
        self.body.push('\t');
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }

    fn label(&mut self, l: &str) {
        let _ = writeln!(self.body, "{l}:");
    }

    /// A fresh temporary of PTX type `ty` (`b32`, `b64`, `f32`, `f64`, `pred`).
    fn tmp(&mut self, ty: &str) -> String {
        self.ntmp += 1;
        let name = format!("%t{}", self.ntmp);
        let _ = writeln!(self.decls, "\t.reg .{ty} {name};");
        name
    }

    fn declare_regs(&mut self, inst: u32, func: u32) -> R<()> {
        let f = &self.m.functions[func as usize];
        for (i, t) in f.regs.iter().enumerate() {
            let n = reg_name(inst, i as u16);
            let decl = match kind(*t) {
                Kind::B32(_) => format!("\t.reg .b32 {n};\n"),
                Kind::B64(_) => format!("\t.reg .b64 {n};\n"),
                Kind::F32 => format!("\t.reg .f32 {n};\n"),
                Kind::F64 => format!("\t.reg .f64 {n};\n"),
                Kind::Mem { .. } => format!("\t.reg .b64 {n}a;\n\t.reg .b64 {n}n;\n"),
                Kind::None => String::new(),
            };
            self.decls.push_str(&decl);
        }
        Ok(())
    }

    /// Zeroes registers `from..` of an instance: a register read before any write reads 0, as
    /// on `cpu` (ptxas drops the dead ones).
    fn zero_regs(&mut self, inst: u32, func: u32, from: usize) {
        let f = &self.m.functions[func as usize];
        for (i, t) in f.regs.iter().enumerate().skip(from) {
            let n = reg_name(inst, i as u16);
            let s = match kind(*t) {
                Kind::B32(_) => format!("mov.b32 {n}, 0"),
                Kind::B64(_) => format!("mov.b64 {n}, 0"),
                Kind::F32 => format!("mov.f32 {n}, 0f00000000"),
                Kind::F64 => format!("mov.f64 {n}, 0d0000000000000000"),
                Kind::Mem { .. } => format!("mov.b64 {n}a, 0;\n\tmov.b64 {n}n, 0"),
                Kind::None => continue,
            };
            self.ins(s);
        }
    }

    /// Records a fault site and returns its stub label; the stub stores `index`/`len` (64-bit
    /// registers or literals) into the handler's registers.
    fn site(&mut self, kind: SiteKind, func: u32, pc: u32, index: &str, len: &str) -> String {
        if !self.site_regs {
            self.site_regs = true;
            self.decls
                .push_str("\t.reg .b32 %fsite;\n\t.reg .b64 %fidx;\n\t.reg .b64 %flen;\n");
        }
        let mut frames = vec![(func, pc)];
        frames.extend(self.path.iter().rev().copied());
        let unsigned_index = self
            .m
            .functions
            .get(func as usize)
            .is_some_and(|f| f.index_holds_u64(pc));
        self.sites.push(FaultSite {
            kind,
            frames,
            unsigned_index,
        });
        let n = self.sites.len();
        let label = format!("$Lf{n}");
        let _ = writeln!(
            self.stubs,
            "{label}:\n\tmov.b32 %fsite, {n};\n\tmov.b64 %fidx, {index};\n\tmov.b64 %flen, {len};\n\tbra.uni $Lfault;"
        );
        label
    }

    /// Emits function `func` as instance `inst` (registers already declared and initialised).
    fn emit_instance(&mut self, func: u32, inst: u32, ret: Option<&RetTo>) -> R<()> {
        let m = self.m;
        let f = &m.functions[func as usize];
        let targets: BTreeSet<u32> = f
            .code
            .iter()
            .filter(|i| i.op.is_branch())
            .map(|i| i.bc())
            .collect();
        for (pc, &ins) in f.code.iter().enumerate() {
            let pc = pc as u32;
            if targets.contains(&pc) {
                self.label(&format!("$L{inst}_{pc}"));
            }
            self.emit_ins(func, inst, pc, ins, ret)
                .map_err(|e| format!("{} (instruction {pc} of {})", e, f.name))?;
        }
        Ok(())
    }

    /// The kind of register `r` of `func` (an error for a register outside the frame).
    fn rk(&self, func: u32, r: u16) -> R<Kind> {
        self.m.functions[func as usize]
            .regs
            .get(usize::from(r))
            .map(|t| kind(*t))
            .ok_or_else(|| format!("register r{r} outside the frame"))
    }

    /// Re-canonicalises a `.b32` register holding a result of type `s`.
    fn canon32(&mut self, d: &str, s: Scalar) {
        match s {
            Scalar::I8 => self.ins(format!("cvt.s32.s8 {d}, {d}")),
            Scalar::I16 => self.ins(format!("cvt.s32.s16 {d}, {d}")),
            Scalar::U8 => self.ins(format!("and.b32 {d}, {d}, 255")),
            Scalar::U16 => self.ins(format!("and.b32 {d}, {d}, 65535")),
            Scalar::Bool => self.ins(format!("and.b32 {d}, {d}, 1")),
            _ => {}
        }
    }

    /// The canonical 64-bit value of an integer-like register (a `.b64` register name).
    fn to64(&mut self, name: &str, k: Kind) -> R<String> {
        match k {
            Kind::B64(_) => Ok(name.to_string()),
            Kind::B32(s) => {
                let t = self.tmp("b64");
                let c = if s.is_signed() { "s64.s32" } else { "u64.u32" };
                self.ins(format!("cvt.{c} {t}, {name}"));
                Ok(t)
            }
            _ => Err("expected an integer register".into()),
        }
    }

    /// A shift amount: the low bits of `name` modulo `width`, as a `.b32` register.
    fn shift_amount(&mut self, name: &str, k: Kind, width: u32) -> R<String> {
        let t = self.tmp("b32");
        match k {
            Kind::B64(_) => self.ins(format!("cvt.u32.u64 {t}, {name}")),
            Kind::B32(_) => self.ins(format!("mov.b32 {t}, {name}")),
            _ => return Err("shift amount is not an integer".into()),
        }
        self.ins(format!("and.b32 {t}, {t}, {}", width - 1));
        Ok(t)
    }

    /// Bounds check of element `idx` (a `.b64` register) of memory register `mreg` and the
    /// element's address; returns (state space, address register).
    fn elem_addr(
        &mut self,
        func: u32,
        inst: u32,
        pc: u32,
        mreg: u16,
        idx: u16,
        width: usize,
    ) -> R<(&'static str, String)> {
        let Kind::Mem { shared, elem } = self.rk(func, mreg)? else {
            return Err("memory operand is not a buffer or shared array".into());
        };
        if elem.size() != width {
            return Err(format!(
                "access of width {width} to memory of {}",
                elem.name()
            ));
        }
        if !matches!(self.rk(func, idx)?, Kind::B64(_)) {
            return Err("index register is not 64-bit".into());
        }
        let m = reg_name(inst, mreg);
        let i = reg_name(inst, idx);
        let f = &self.m.functions[func as usize];
        let var = f
            .locals
            .iter()
            .find(|n| n.reg == mreg)
            .map_or_else(|| format!("r{mreg}"), |n| n.name.clone());
        let stub = self.site(
            SiteKind::Bounds { shared, var },
            func,
            pc,
            &i,
            &format!("{m}n"),
        );
        let p = self.tmp("pred");
        self.ins(format!("setp.ge.u64 {p}, {i}, {m}n"));
        self.ins(format!("@{p} bra {stub}"));
        let a = self.tmp("b64");
        let shift = width.trailing_zeros();
        if shift == 0 {
            self.ins(format!("add.s64 {a}, {m}a, {i}"));
        } else {
            self.ins(format!("shl.b64 {a}, {i}, {shift}"));
            self.ins(format!("add.s64 {a}, {m}a, {a}"));
        }
        Ok((if shared { "shared" } else { "global" }, a))
    }

    fn emit_ins(
        &mut self,
        func: u32,
        inst: u32,
        pc: u32,
        ins: Instr,
        ret: Option<&RetTo>,
    ) -> R<()> {
        let m = self.m;
        let r = |x: u16| reg_name(inst, x);
        let (a, b, c) = (r(ins.a), r(ins.b), r(ins.c));
        let label = |t: u32| format!("$L{inst}_{t}");
        match ins.op {
            Op::Nop => {}
            Op::Mov => match self.rk(func, ins.a)? {
                Kind::B32(_) => self.ins(format!("mov.b32 {a}, {b}")),
                Kind::B64(_) => self.ins(format!("mov.b64 {a}, {b}")),
                Kind::F32 => self.ins(format!("mov.f32 {a}, {b}")),
                Kind::F64 => self.ins(format!("mov.f64 {a}, {b}")),
                Kind::Mem { .. } => {
                    self.ins(format!("mov.b64 {a}a, {b}a"));
                    self.ins(format!("mov.b64 {a}n, {b}n"));
                }
                Kind::None => return Err("mov of a host reference".into()),
            },
            Op::LoadK => {
                let bits = match m.consts.get(ins.bc() as usize) {
                    Some(Const::Bits(b)) => *b,
                    _ => return Err("loadk of a non-numeric constant".into()),
                };
                self.load_bits(&a, self.rk(func, ins.a)?, bits)?;
            }
            Op::LoadI => {
                let v = ins.bc() as i32 as i64 as u64;
                self.load_bits(&a, self.rk(func, ins.a)?, v)?;
            }
            Op::Jmp => self.ins(format!("bra.uni {}", label(ins.bc()))),
            Op::JmpIf | Op::JmpIfNot => {
                let p = self.tmp("pred");
                let cmp = if ins.op == Op::JmpIf { "ne" } else { "eq" };
                self.ins(format!("setp.{cmp}.u32 {p}, {a}, 0"));
                self.ins(format!("@{p} bra {}", label(ins.bc())));
            }
            Op::Call => self.inline_call(func, inst, pc, ins)?,
            Op::Ret | Op::RetVoid => match ret {
                None => self.ins("ret"),
                Some(rt) => {
                    if let (Op::Ret, Some((dst, k))) = (ins.op, &rt.dst) {
                        let src_k = self.rk(func, ins.a)?;
                        if src_k != *k {
                            return Err("result type differs from the call's register".into());
                        }
                        self.copy(dst, &a, *k)?;
                    }
                    self.ins(format!("bra.uni {}", rt.end));
                }
            },
            Op::AddImmI32 => {
                let imm = ins.c as i16 as i32;
                self.ins(format!("add.s32 {a}, {b}, {imm}"));
            }
            Op::AddImmI64 => {
                let imm = ins.c as i16 as i64;
                self.ins(format!("add.s64 {a}, {b}, {imm}"));
            }
            Op::BufLength => {
                if !matches!(self.rk(func, ins.b)?, Kind::Mem { .. }) {
                    return Err("length of a non-buffer".into());
                }
                self.ins(format!("mov.b64 {a}, {b}n"));
            }
            Op::Geom => self.geom(&a, ins.b)?,
            Op::LNot => self.ins(format!("xor.b32 {a}, {b}, 1")),
            Op::Barrier => self.ins("bar.sync 0"),
            Op::SharedRef => {
                let kf = &m.functions[self.kernel_of_path(func) as usize];
                let Some(d) = kf.shared.get(usize::from(ins.b)) else {
                    return Err(format!("shared declaration {} does not exist", ins.b));
                };
                if func != self.kernel_of_path(func) {
                    return Err("shared.ref outside the kernel".into());
                }
                // Static arrays at their offsets in the dynamic memory when they live there.
                let (offset, dyn_offset) = match &self.shared_offsets {
                    Some((offs, end)) => (offs.get(usize::from(ins.b)).copied(), *end),
                    None => (None, 0),
                };
                if d.len == 0 {
                    // The dynamic array: the launch's dynamic shared memory (after the static
                    // arrays placed there), as many elements as fit in it.
                    let t = self.tmp("b32");
                    self.ins(format!("mov.u64 {a}a, cj_dyn"));
                    self.ins(format!("mov.u32 {t}, %dynamic_smem_size"));
                    if dyn_offset > 0 {
                        self.ins(format!("add.u64 {a}a, {a}a, {dyn_offset}"));
                        self.ins(format!("sub.u32 {t}, {t}, {dyn_offset}"));
                    }
                    self.ins(format!("div.u32 {t}, {t}, {}", d.elem.size()));
                    self.ins(format!("cvt.u64.u32 {a}n, {t}"));
                } else if let Some(off) = offset {
                    self.ins(format!("mov.u64 {a}a, cj_dyn"));
                    if off > 0 {
                        self.ins(format!("add.u64 {a}a, {a}a, {off}"));
                    }
                    self.ins(format!("mov.b64 {a}n, {}", d.len));
                } else {
                    self.ins(format!("mov.u64 {a}a, cj_sh{}", ins.b));
                    self.ins(format!("mov.b64 {a}n, {}", d.len));
                }
            }
            Op::CheckIndex => {
                // Unsigned: a negative index is above every length.
                let f = &m.functions[func as usize];
                let var = f
                    .locals
                    .iter()
                    .find(|n| n.reg == ins.c)
                    .map_or_else(|| format!("r{}", ins.c), |n| n.name.clone());
                let kind = match self.rk(func, ins.c)? {
                    Kind::Mem { shared, .. } => SiteKind::Bounds { shared, var },
                    _ => SiteKind::Lane { var },
                };
                let stub = self.site(kind, func, pc, &a, &b);
                let p = self.tmp("pred");
                self.ins(format!("setp.ge.u64 {p}, {a}, {b}"));
                self.ins(format!("@{p} bra {stub}"));
            }
            Op::WaveSumU32 => self.wave_sum(&a, &b, false),
            Op::WaveSumF32 => self.wave_sum(&a, &b, true),
            Op::WaveMaxU32 => self.wave_reduce(&a, &b, "max.u32", "0", "max.u32"),
            Op::WaveMinU32 => self.wave_reduce(&a, &b, "min.u32", "0xFFFFFFFF", "min.u32"),
            Op::WaveAndU32 => self.wave_reduce(&a, &b, "and.b32", "0xFFFFFFFF", "and.b32"),
            Op::WaveOrU32 => self.wave_reduce(&a, &b, "or.b32", "0", "or.b32"),
            Op::WaveXorU32 => self.wave_reduce(&a, &b, "xor.b32", "0", "xor.b32"),
            Op::WaveMaxF32 => self.wave_reduce(&a, &b, "", "0fFF800000", "max.f32"),
            Op::WaveScanAddU32 => self.wave_scan(&a, &b, "add.u32", "0"),
            Op::WaveScanMulU32 => self.wave_scan(&a, &b, "mul.lo.u32", "1"),
            Op::WaveShflU32 | Op::WaveRotU32 => {
                let (mask, src) = (self.tmp("b32"), self.tmp("b32"));
                self.ins(format!("activemask.b32 {mask}"));
                if ins.op == Op::WaveRotU32 {
                    self.ins(format!("mov.u32 {src}, %laneid"));
                    self.ins(format!("add.u32 {src}, {src}, {c}"));
                    self.ins(format!("and.b32 {src}, {src}, 31"));
                } else {
                    self.ins(format!("and.b32 {src}, {c}, 31"));
                }
                self.ins(format!("shfl.sync.idx.b32 {a}, {b}, {src}, 31, {mask}"));
            }
            Op::WaveBallot => {
                let (mask, bits) = (self.tmp("b32"), self.tmp("b32"));
                let p = self.tmp("pred");
                self.ins(format!("activemask.b32 {mask}"));
                self.ins(format!("setp.ne.u32 {p}, {b}, 0"));
                self.ins(format!("vote.sync.ballot.b32 {bits}, {p}, {mask}"));
                self.ins(format!("cvt.u64.u32 {a}, {bits}"));
            }
            Op::WaveBarrier => {
                let mask = self.tmp("b32");
                self.ins(format!("activemask.b32 {mask}"));
                self.ins(format!("bar.warp.sync {mask}"));
            }
            Op::Fence => self.ins(if ins.b == 0 {
                "membar.cta"
            } else {
                "membar.gl"
            }),
            // Checked at launch by the VM (a `@Wave` width other than 32 and a block above
            // `@Occupancy` are refused there); `@FastMath` only permits.
            Op::KernelAttr => {}
            Op::FmaF32 => self.ins(format!("fma.rn.f32 {a}, {a}, {b}, {c}")),
            Op::FmaF64 => self.ins(format!("fma.rn.f64 {a}, {a}, {b}, {c}")),
            Op::Math1F32 => self.math1(&a, &b, ins.c, false)?,
            Op::Math1F64 => self.math1(&a, &b, ins.c, true)?,
            Op::RemF32 => {
                let (x, y, d) = (self.tmp("f64"), self.tmp("f64"), self.tmp("f64"));
                self.ins(format!("cvt.f64.f32 {x}, {b}"));
                self.ins(format!("cvt.f64.f32 {y}, {c}"));
                self.fmod64(&d, &x, &y);
                self.ins(format!("cvt.rn.f32.f64 {a}, {d}"));
            }
            Op::RemF64 => self.fmod64(&a, &b, &c),
            Op::SToF32 | Op::UToF32 | Op::SToF64 | Op::UToF64 => {
                let to = if matches!(ins.op, Op::SToF32 | Op::UToF32) {
                    "f32"
                } else {
                    "f64"
                };
                let signed_op = matches!(ins.op, Op::SToF32 | Op::SToF64);
                match self.rk(func, ins.b)? {
                    Kind::B64(_) => {
                        let s = if signed_op { "s64" } else { "u64" };
                        self.ins(format!("cvt.rn.{to}.{s} {a}, {b}"));
                    }
                    Kind::B32(s) => {
                        if s.is_signed() && !signed_op {
                            // Unsigned reading of a negative canonical cell: 2^64 + x.
                            let t = self.to64(&b, Kind::B32(s))?;
                            self.ins(format!("cvt.rn.{to}.u64 {a}, {t}"));
                        } else {
                            let ty = if s.is_signed() { "s32" } else { "u32" };
                            self.ins(format!("cvt.rn.{to}.{ty} {a}, {b}"));
                        }
                    }
                    _ => return Err("conversion of a non-integer".into()),
                }
            }
            Op::F32ToF64 => self.ins(format!("cvt.f64.f32 {a}, {b}")),
            Op::F64ToF32 => self.ins(format!("cvt.rn.f32.f64 {a}, {b}")),
            // float16/bfloat16 registers are `.b32` cells holding the 16 bits (T2); the
            // conversions go through a scoped `.b16` / `.b32` temporary.
            Op::F16ToF32 => self.block(format!(
                "{{ .reg .b16 %hh; cvt.u16.u32 %hh, {b}; cvt.f32.f16 {a}, %hh; }}"
            )),
            Op::F32ToF16 | Op::F64ToF16 => {
                let from = if ins.op == Op::F32ToF16 { "f32" } else { "f64" };
                self.block(format!(
                    "{{ .reg .b16 %hh; cvt.rn.f16.{from} %hh, {b}; cvt.u32.u16 {a}, %hh; }}"
                ))
            }
            Op::BF16ToF32 => self.block(format!(
                "{{ .reg .b32 %hw; shl.b32 %hw, {b}, 16; mov.b32 {a}, %hw; }}"
            )),
            Op::F32ToBF16 => self.block(format!(
                "{{ .reg .b32 %hw, %hu; .reg .f32 %hf; .reg .pred %hp; \
                 mov.b32 %hw, {b}; mov.f32 %hf, {b}; {} }}",
                bf16_round(&a)
            )),
            Op::F64ToBF16 => {
                // One rounding: float64 -> float32 rounded to odd (toward zero, then the sticky
                // bit into the last place), then float32 -> bfloat16 to nearest-even; the 16
                // extra bits make the two roundings equal one.
                self.block(format!(
                    "{{ .reg .b32 %hw, %hu; .reg .f32 %hf; .reg .f64 %hd; .reg .pred %hp; \
                     cvt.rz.f32.f64 %hf, {b}; cvt.f64.f32 %hd, %hf; setp.neu.f64 %hp, %hd, {b}; \
                     mov.b32 %hw, %hf; @%hp or.b32 %hw, %hw, 1; {} }}",
                    bf16_round(&a)
                ))
            }
            op if op.mnemonic().starts_with("cvt.") => {
                // cvt.<int>.<float>: toward zero, saturating, NaN -> 0 (PTX cvt.rzi does all).
                let mut parts = op.mnemonic().split('.').skip(1);
                let (Some(to), Some(from)) = (
                    parts.next().and_then(suffix_scalar),
                    parts.next().and_then(suffix_scalar),
                ) else {
                    return Err(format!("cannot lower `{}`", op.mnemonic()));
                };
                let from_ty = if from == Scalar::F32 { "f32" } else { "f64" };
                match to.bits() {
                    64 => self.ins(format!("cvt.rzi.{}.{from_ty} {a}, {b}", int_ty(to))),
                    32 => self.ins(format!("cvt.rzi.{}.{from_ty} {a}, {b}", int_ty(to))),
                    bits => {
                        self.ins(format!("cvt.rzi.{}.{from_ty} {a}, {b}", int_ty(to)));
                        if to.is_signed() {
                            let hi = (1i32 << (bits - 1)) - 1;
                            self.ins(format!("min.s32 {a}, {a}, {hi}"));
                            self.ins(format!("max.s32 {a}, {a}, {}", -hi - 1));
                        } else {
                            self.ins(format!("min.u32 {a}, {a}, {}", (1u32 << bits) - 1));
                        }
                    }
                }
            }
            op if op.mnemonic().starts_with("wrap.") => {
                let to = op
                    .mnemonic()
                    .strip_prefix("wrap.")
                    .and_then(suffix_scalar)
                    .ok_or_else(|| format!("cannot lower `{}`", op.mnemonic()))?;
                let src = self.rk(func, ins.b)?;
                if to.bits() == 64 {
                    let v = self.to64(&b, src)?;
                    self.ins(format!("mov.b64 {a}, {v}"));
                } else {
                    match src {
                        Kind::B64(_) => self.ins(format!("cvt.u32.u64 {a}, {b}")),
                        Kind::B32(_) => self.ins(format!("mov.b32 {a}, {b}")),
                        _ => return Err("wrap of a non-integer".into()),
                    }
                    self.canon32(&a, to);
                }
            }
            op if op.mnemonic().starts_with("ld.") || op.mnemonic().starts_with("st.") => {
                let mn = op.mnemonic();
                let s = suffix_scalar(&mn[3..]).ok_or_else(|| format!("cannot lower `{mn}`"))?;
                let ty = match s {
                    Scalar::I8 => "s8",
                    Scalar::U8 => "u8",
                    Scalar::I16 => "s16",
                    Scalar::U16 | Scalar::F16 | Scalar::BF16 => "u16",
                    Scalar::I32 => "s32",
                    Scalar::U32 => "u32",
                    Scalar::I64 | Scalar::U64 => "u64",
                    Scalar::F32 => "f32",
                    Scalar::F64 => "f64",
                    _ => return Err(format!("cannot lower `{mn}`")),
                };
                if mn.starts_with("ld.") {
                    let (sp, addr) = self.elem_addr(func, inst, pc, ins.b, ins.c, s.size())?;
                    self.ins(format!("ld.{sp}.{ty} {a}, [{addr}]"));
                } else {
                    let (sp, addr) = self.elem_addr(func, inst, pc, ins.a, ins.b, s.size())?;
                    let ty = ty.replace('s', "u");
                    self.ins(format!("st.{sp}.{ty} [{addr}], {c}"));
                }
            }
            op if op.mnemonic().starts_with("atom.") && !op.mnemonic().starts_with("atom.add.") => {
                self.atomic_t2(func, inst, pc, ins)?
            }
            op if op.mnemonic().starts_with("atom.add.") => {
                let s = suffix_scalar(&op.mnemonic()[9..])
                    .ok_or_else(|| format!("cannot lower `{}`", op.mnemonic()))?;
                let ty = match s {
                    Scalar::I32 | Scalar::U32 => "u32",
                    Scalar::I64 | Scalar::U64 => "u64",
                    Scalar::F32 => "f32",
                    _ => return Err(format!("cannot lower `{}`", op.mnemonic())),
                };
                let (sp, addr) = self.elem_addr(func, inst, pc, ins.b, ins.c, s.size())?;
                self.ins(format!("atom.{sp}.add.{ty} {a}, [{addr}], {a}"));
            }
            // Bits and bit reinterpretation (XPU §2.12): registers of one width share bits.
            Op::PopcU32 => self.ins(format!("popc.b32 {a}, {b}")),
            Op::BrevU32 => self.ins(format!("brev.b32 {a}, {b}")),
            Op::RotlU32 => self.ins(format!("shf.l.wrap.b32 {a}, {b}, {b}, {c}")),
            Op::RotrU32 => self.ins(format!("shf.r.wrap.b32 {a}, {b}, {b}, {c}")),
            Op::F32Bits | Op::BitsF32 => self.ins(format!("mov.b32 {a}, {b}")),
            Op::F64Bits | Op::BitsF64 => self.ins(format!("mov.b64 {a}, {b}")),
            _ => self.arith(func, inst, pc, ins)?,
        }
        Ok(())
    }

    /// The kernel at the root of the inline path (`func` itself when not inlined).
    fn kernel_of_path(&self, func: u32) -> u32 {
        self.path.first().map_or(func, |p| p.0)
    }

    /// Copies a value register of kind `k`.
    fn copy(&mut self, dst: &str, src: &str, k: Kind) -> R<()> {
        match k {
            Kind::B32(_) => self.ins(format!("mov.b32 {dst}, {src}")),
            Kind::B64(_) => self.ins(format!("mov.b64 {dst}, {src}")),
            Kind::F32 => self.ins(format!("mov.f32 {dst}, {src}")),
            Kind::F64 => self.ins(format!("mov.f64 {dst}, {src}")),
            Kind::Mem { .. } => {
                self.ins(format!("mov.b64 {dst}a, {src}a"));
                self.ins(format!("mov.b64 {dst}n, {src}n"));
            }
            Kind::None => return Err("host reference in device code".into()),
        }
        Ok(())
    }

    /// Loads cell `bits` into a register of kind `k`.
    fn load_bits(&mut self, d: &str, k: Kind, bits: u64) -> R<()> {
        match k {
            Kind::B32(_) => self.ins(format!("mov.b32 {d}, {}", bits as u32)),
            Kind::B64(_) => self.ins(format!("mov.b64 {d}, {bits:#x}")),
            Kind::F32 => self.ins(format!("mov.f32 {d}, 0f{:08X}", bits as u32)),
            Kind::F64 => self.ins(format!("mov.f64 {d}, 0d{bits:016X}")),
            _ => return Err("constant into a non-scalar register".into()),
        }
        Ok(())
    }

    fn geom(&mut self, d: &str, sel: u16) -> R<()> {
        const AX: [&str; 3] = ["x", "y", "z"];
        let s = usize::from(sel);
        match s {
            0..=2 => self.ins(format!("mov.u32 {d}, %tid.{}", AX[s])),
            3..=5 => self.ins(format!("mov.u32 {d}, %ctaid.{}", AX[s - 3])),
            6..=8 => self.ins(format!("mov.u32 {d}, %ntid.{}", AX[s - 6])),
            9..=11 => {
                let ax = AX[s - 9];
                let (w, n, t) = (self.tmp("b32"), self.tmp("b32"), self.tmp("b32"));
                self.ins(format!("mov.u32 {w}, %ctaid.{ax}"));
                self.ins(format!("mov.u32 {n}, %ntid.{ax}"));
                self.ins(format!("mov.u32 {t}, %tid.{ax}"));
                self.ins(format!("mad.lo.u32 {d}, {w}, {n}, {t}"));
            }
            12..=14 => self.ins(format!("mov.u32 {d}, %nctaid.{}", AX[s - 12])),
            15 => self.ins(format!("mov.u32 {d}, {WAVE_WIDTH}")),
            16 => self.ins(format!("mov.u32 {d}, %laneid")),
            _ => return Err(format!("unknown geometry selector {sel}")),
        }
        Ok(())
    }

    /// Inlines `call a b c`: the callee's parameters come from caller registers `b..`, its
    /// result goes to `r[a]`.
    fn inline_call(&mut self, func: u32, inst: u32, pc: u32, ins: Instr) -> R<()> {
        let m = self.m;
        let callee_ix = u32::from(ins.c);
        let Some(callee) = m.functions.get(callee_ix as usize) else {
            return Err(format!("call of missing function {callee_ix}"));
        };
        if callee.kind != FnKind::Device {
            return Err(format!("call of non-device function `{}`", callee.name));
        }
        if callee_ix == func || self.path.iter().any(|p| p.0 == callee_ix) {
            return Err(format!("recursive device function `{}`", callee.name));
        }
        self.ninst += 1;
        if self.ninst > MAX_INSTANCES {
            return Err(format!("more than {MAX_INSTANCES} inlined calls"));
        }
        let ci = self.ninst;
        self.declare_regs(ci, callee_ix)?;
        for j in 0..callee.params {
            let k = kind(callee.regs[usize::from(j)]);
            let src_reg = ins.b.checked_add(j).ok_or("call window overflow")?;
            if self.rk(func, src_reg)? != k {
                return Err(format!(
                    "argument {j} of `{}` has another type",
                    callee.name
                ));
            }
            self.copy(&reg_name(ci, j), &reg_name(inst, src_reg), k)?;
        }
        self.zero_regs(ci, callee_ix, usize::from(callee.params));
        let dst = match callee.ret {
            Some(t) => {
                let k = kind(t);
                if self.rk(func, ins.a)? != k {
                    return Err("result register has another type".into());
                }
                Some((reg_name(inst, ins.a), k))
            }
            None => None,
        };
        let rt = RetTo {
            end: format!("$L{ci}_end"),
            dst,
        };
        self.path.push((func, pc));
        let res = self.emit_instance(callee_ix, ci, Some(&rt));
        self.path.pop();
        res?;
        self.label(&rt.end);
        Ok(())
    }

    /// `wave.sum.*`: the wrapping uint32 sum over the active lanes, or the float32 butterfly of
    /// XPU §5.3 emulated exactly for partial activity (see docs/notes/cuda.md).
    fn wave_sum(&mut self, d: &str, v: &str, float: bool) {
        if float {
            self.wave_reduce(d, v, "", "0f00000000", "add.rn.f32");
        } else {
            self.wave_reduce(d, v, "add.u32", "0", "add.u32");
        }
    }

    /// A wave reduction over the active lanes: `redux.sync` where sm_80 has it (named by
    /// `redux`, for order-independent integer operations), else the butterfly of XPU §5.3 with
    /// `op` and `identity` for missing lanes; for `add.rn.f32` and `max.f32` this is exactly the
    /// spec's float butterfly (PTX `max.f32` returns the non-NaN operand, as `maxNum`).
    fn wave_reduce(&mut self, d: &str, v: &str, redux: &str, identity: &str, op: &str) {
        let mask = self.tmp("b32");
        self.ins(format!("activemask.b32 {mask}"));
        if !redux.is_empty() && self.sm >= 80 {
            let (name, ty) = redux.split_once('.').unwrap_or((redux, "b32"));
            self.ins(format!("redux.sync.{name}.{ty} {d}, {v}, {mask}"));
            return;
        }
        let ty = if op.ends_with("f32") { "f32" } else { "b32" };
        let acc = self.tmp(ty);
        self.ins(format!("mov.{ty} {acc}, {v}"));
        let lane = self.tmp("b32");
        self.ins(format!("mov.u32 {lane}, %laneid"));
        let (src, blk, bm, act, hi, t) = (
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp(ty),
        );
        let p = self.tmp("pred");
        let mut dist = 1u32;
        while dist < WAVE_WIDTH {
            // After the steps below `dist`, every slot of a dist-aligned block holds the same
            // value: read it from the block's highest active lane, the identity if it has none.
            self.ins(format!("xor.b32 {src}, {lane}, {dist}"));
            self.ins(format!("and.b32 {blk}, {src}, {}", 31 & !(dist - 1)));
            self.ins(format!("shl.b32 {bm}, {}, {blk}", (1u64 << dist) - 1));
            self.ins(format!("and.b32 {act}, {mask}, {bm}"));
            self.ins(format!("setp.ne.u32 {p}, {act}, 0"));
            self.ins(format!("bfind.u32 {hi}, {act}"));
            self.ins(format!("shfl.sync.idx.b32 {t}, {acc}, {hi}, 31, {mask}"));
            self.ins(format!("selp.{ty} {t}, {t}, {identity}, {p}"));
            self.ins(format!("{op} {acc}, {acc}, {t}"));
            dist *= 2;
        }
        self.ins(format!("mov.{ty} {d}, {acc}"));
    }

    /// An exclusive scan over the active lanes of lower lane id (`Wave.prefixSum/Product`):
    /// every lane reads every lane's value and keeps those of active lanes below it.
    fn wave_scan(&mut self, d: &str, v: &str, op: &str, identity: &str) {
        let (mask, lane, acc, t, bit) = (
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
            self.tmp("b32"),
        );
        let (p, q) = (self.tmp("pred"), self.tmp("pred"));
        self.ins(format!("activemask.b32 {mask}"));
        self.ins(format!("mov.u32 {lane}, %laneid"));
        self.ins(format!("mov.b32 {acc}, {identity}"));
        for j in 0..WAVE_WIDTH {
            self.ins(format!("shfl.sync.idx.b32 {t}, {v}, {j}, 31, {mask}"));
            self.ins(format!("and.b32 {bit}, {mask}, {}", 1u64 << j));
            self.ins(format!("setp.ne.u32 {p}, {bit}, 0"));
            self.ins(format!("setp.gt.and.u32 {q}, {lane}, {j}, {p}"));
            self.ins(format!("@{q} {op} {acc}, {acc}, {t}"));
        }
        self.ins(format!("mov.b32 {d}, {acc}"));
    }

    fn math1(&mut self, d: &str, x: &str, sel: u16, f64_: bool) -> R<()> {
        let ty = if f64_ { "f64" } else { "f32" };
        let Some(f) = MathFn::from_u16(sel) else {
            return Err(format!("unknown Math function {sel}"));
        };
        match f {
            MathFn::Sqrt => self.ins(format!("sqrt.rn.{ty} {d}, {x}")),
            MathFn::Floor => self.ins(format!("cvt.rmi.{ty}.{ty} {d}, {x}")),
            MathFn::Ceil => self.ins(format!("cvt.rpi.{ty}.{ty} {d}, {x}")),
            MathFn::Trunc => self.ins(format!("cvt.rzi.{ty}.{ty} {d}, {x}")),
            MathFn::Abs => self.ins(format!("abs.{ty} {d}, {x}")),
            MathFn::Round => {
                // Half away from zero: t = trunc(x); |x - t| >= 0.5 ? t + copysign(1, x) : t
                // (x - t is exact; NaN and infinities stay as they are).
                let (t, diff, one) = (self.tmp(ty), self.tmp(ty), self.tmp(ty));
                let p = self.tmp("pred");
                let (half, unit) = if f64_ {
                    ("0d3FE0000000000000", "0d3FF0000000000000")
                } else {
                    ("0f3F000000", "0f3F800000")
                };
                self.ins(format!("cvt.rzi.{ty}.{ty} {t}, {x}"));
                self.ins(format!("sub.rn.{ty} {diff}, {x}, {t}"));
                self.ins(format!("abs.{ty} {diff}, {diff}"));
                self.ins(format!("setp.ge.{ty} {p}, {diff}, {half}"));
                self.ins(format!("copysign.{ty} {one}, {x}, {unit}"));
                self.ins(format!("@{p} add.rn.{ty} {t}, {t}, {one}"));
                self.ins(format!("mov.{ty} {d}, {t}"));
            }
            MathFn::Rsqrt => {
                // As the reference: 1 / sqrt(x) in float64 (two roundings), float32 rounded once
                // more from it.
                if f64_ {
                    let s = self.tmp("f64");
                    self.ins(format!("sqrt.rn.f64 {s}, {x}"));
                    self.ins(format!("div.rn.f64 {d}, 0d3FF0000000000000, {s}"));
                } else {
                    let s = self.tmp("f64");
                    self.ins(format!("cvt.f64.f32 {s}, {x}"));
                    self.ins(format!("sqrt.rn.f64 {s}, {s}"));
                    self.ins(format!("div.rn.f64 {s}, 0d3FF0000000000000, {s}"));
                    self.ins(format!("cvt.rn.f32.f64 {d}, {s}"));
                }
            }
            // float32 transcendentals: the hardware approximations (XPU §2.12 lets GPU
            // backends use their documented bounds; docs/notes/cuda.md lists them).
            MathFn::Exp2 if !f64_ => self.ins(format!("ex2.approx.f32 {d}, {x}")),
            MathFn::Exp if !f64_ => {
                let t = self.tmp("f32");
                self.ins(format!("mul.rn.f32 {t}, {x}, 0f3FB8AA3B")); // log2(e)
                self.ins(format!("ex2.approx.f32 {d}, {t}"));
            }
            MathFn::Log2 if !f64_ => self.ins(format!("lg2.approx.f32 {d}, {x}")),
            MathFn::Log | MathFn::Log10 if !f64_ => {
                let t = self.tmp("f32");
                // ln(2), log10(2)
                let k = if f == MathFn::Log {
                    "0f3F317218"
                } else {
                    "0f3E9A209B"
                };
                self.ins(format!("lg2.approx.f32 {t}, {x}"));
                self.ins(format!("mul.rn.f32 {d}, {t}, {k}"));
            }
            MathFn::Sin if !f64_ => self.ins(format!("sin.approx.f32 {d}, {x}")),
            MathFn::Cos if !f64_ => self.ins(format!("cos.approx.f32 {d}, {x}")),
            MathFn::Tan if !f64_ => {
                let (sn, cs) = (self.tmp("f32"), self.tmp("f32"));
                self.ins(format!("sin.approx.f32 {sn}, {x}"));
                self.ins(format!("cos.approx.f32 {cs}, {x}"));
                self.ins(format!("div.rn.f32 {d}, {sn}, {cs}"));
            }
            // float64 transcendentals PTX lacks: ours (`devmath`).
            f if f64_ && Recipe::for_math(f).is_some() => {
                let r = Recipe::for_math(f).ok_or("no recipe")?;
                self.recipe(&r, d, &[x]);
            }
            // float32 atan, asin, acos: computed in float64 and rounded once (XPU §2.12's
            // reference), by the same recipes.
            MathFn::Atan | MathFn::Asin | MathFn::Acos => {
                let r = Recipe::for_math(f).ok_or("no recipe")?;
                let (w, v) = (self.tmp("f64"), self.tmp("f64"));
                self.ins(format!("cvt.f64.f32 {w}, {x}"));
                self.recipe(&r, &v, &[&w]);
                self.ins(format!("cvt.rn.f32.f64 {d}, {v}"));
            }
            other => {
                return Err(format!(
                    "Math.{} on {} is not available on the cuda backend yet",
                    other.name(),
                    if f64_ { "float64" } else { "float32" }
                ))
            }
        }
        Ok(())
    }

    /// `d := ` recipe `r` (see [`crate::devmath`]) at float64 register `x`: one instruction per
    /// step; `.rn` on every float operation, so that ptxas fuses none into an `fma`.
    fn recipe(&mut self, r: &Recipe, d: &str, args: &[&str]) {
        let kinds = r.kinds();
        let mut v: Vec<String> = Vec::with_capacity(r.steps.len());
        for (step, kind) in r.steps.iter().zip(&kinds) {
            let w = match kind {
                devmath::Kind::F64 => self.tmp("f64"),
                devmath::Kind::I64 => self.tmp("b64"),
                devmath::Kind::Bool => self.tmp("pred"),
            };
            let line = match *step {
                Step::Arg(n) => format!("mov.f64 {w}, {}", args[usize::from(n)]),
                Step::F(c) => format!("mov.f64 {w}, 0d{:016X}", c.to_bits()),
                Step::I(c) => format!("mov.b64 {w}, 0x{:016X}", c as u64),
                Step::FAdd(p, q) => format!("add.rn.f64 {w}, {}, {}", v[p], v[q]),
                Step::FSub(p, q) => format!("sub.rn.f64 {w}, {}, {}", v[p], v[q]),
                Step::FMul(p, q) => format!("mul.rn.f64 {w}, {}, {}", v[p], v[q]),
                Step::FDiv(p, q) => format!("div.rn.f64 {w}, {}, {}", v[p], v[q]),
                Step::Floor(p) => format!("cvt.rmi.f64.f64 {w}, {}", v[p]),
                Step::Sqrt(p) => format!("sqrt.rn.f64 {w}, {}", v[p]),
                Step::FToI(p) => format!("cvt.rzi.s64.f64 {w}, {}", v[p]),
                Step::IToF(p) => format!("cvt.rn.f64.s64 {w}, {}", v[p]),
                Step::Bits(p) | Step::FromBits(p) => format!("mov.b64 {w}, {}", v[p]),
                Step::IAdd(p, q) => format!("add.s64 {w}, {}, {}", v[p], v[q]),
                Step::ISub(p, q) => format!("sub.s64 {w}, {}, {}", v[p], v[q]),
                Step::IMul(p, q) => format!("mul.lo.s64 {w}, {}, {}", v[p], v[q]),
                Step::IAnd(p, q) => format!("and.b64 {w}, {}, {}", v[p], v[q]),
                Step::IOr(p, q) => format!("or.b64 {w}, {}, {}", v[p], v[q]),
                Step::Shl(p, n) => format!("shl.b64 {w}, {}, {n}", v[p]),
                Step::Shr(p, n) => format!("shr.s64 {w}, {}, {n}", v[p]),
                Step::UShr(p, n) => format!("shr.u64 {w}, {}, {n}", v[p]),
                // A shift amount is a .u32 operand in PTX.
                Step::ShlV(p, n) | Step::UShrV(p, n) => {
                    let amount = self.tmp("b32");
                    self.ins(format!("cvt.u32.u64 {amount}, {}", v[n]));
                    let op = if matches!(step, Step::ShlV(..)) {
                        "shl.b64"
                    } else {
                        "shr.u64"
                    };
                    format!("{op} {w}, {}, {amount}", v[p])
                }
                // Ordered comparisons: false when either operand is NaN.
                Step::FLt(p, q) => format!("setp.lt.f64 {w}, {}, {}", v[p], v[q]),
                Step::FEq(p, q) => format!("setp.eq.f64 {w}, {}, {}", v[p], v[q]),
                Step::ILt(p, q) => format!("setp.lt.s64 {w}, {}, {}", v[p], v[q]),
                Step::ULt(p, q) => format!("setp.lt.u64 {w}, {}, {}", v[p], v[q]),
                Step::IEq(p, q) => format!("setp.eq.s64 {w}, {}, {}", v[p], v[q]),
                Step::Or(p, q) => format!("or.pred {w}, {}, {}", v[p], v[q]),
                Step::And(p, q) => format!("and.pred {w}, {}, {}", v[p], v[q]),
                Step::Not(p) => format!("not.pred {w}, {}", v[p]),
                Step::Select(c, p, q) => {
                    let ty = if kinds[p] == devmath::Kind::F64 {
                        "f64"
                    } else {
                        "b64"
                    };
                    format!("selp.{ty} {w}, {}, {}, {}", v[p], v[q], v[c])
                }
            };
            self.ins(line);
            v.push(w);
        }
        if let Some(last) = v.last() {
            self.ins(format!("mov.f64 {d}, {last}"));
        }
    }

    /// The T2 atomics (XPU §2.8): `atom.{sub,min,max,and,or,xor,xchg,cas}` on 32/64-bit
    /// integers, and float32 `min`/`max` as a compare-exchange loop on the bits (PTX has no
    /// float atomic min/max before sm_90; the new value is [`Self::fminmax`]'s).
    fn atomic_t2(&mut self, func: u32, inst: u32, pc: u32, ins: Instr) -> R<()> {
        let mn = ins.op.mnemonic();
        let mut parts = mn.split('.').skip(1);
        let (Some(op), Some(s)) = (parts.next(), parts.next().and_then(suffix_scalar)) else {
            return Err(format!("cannot lower `{mn}`"));
        };
        let a = reg_name(inst, ins.a);
        let (sp, addr) = self.elem_addr(func, inst, pc, ins.b, ins.c, s.size())?;
        let wide = s.bits() == 64;
        let bits = if wide { "b64" } else { "b32" };
        if s == Scalar::F32 {
            self.ntmp += 1;
            let top = format!("$Lam{}", self.ntmp);
            let (cur, got, nb) = (self.tmp("b32"), self.tmp("b32"), self.tmp("b32"));
            let (fo, fnew) = (self.tmp("f32"), self.tmp("f32"));
            let p = self.tmp("pred");
            self.ins(format!("ld.volatile.{sp}.u32 {cur}, [{addr}]"));
            self.label(&top);
            self.ins(format!("mov.b32 {fo}, {cur}"));
            self.fminmax(op, Scalar::F32, &fnew, &fo, &a);
            self.ins(format!("mov.b32 {nb}, {fnew}"));
            self.ins(format!("atom.{sp}.cas.b32 {got}, [{addr}], {cur}, {nb}"));
            self.ins(format!("setp.ne.u32 {p}, {got}, {cur}"));
            self.ins(format!("mov.b32 {cur}, {got}"));
            self.ins(format!("@{p} bra {top}"));
            self.ins(format!("mov.b32 {a}, {cur}"));
            return Ok(());
        }
        let it = int_ty(s);
        match op {
            "sub" => {
                let t = self.tmp(bits);
                self.ins(format!("neg.s{} {t}, {a}", if wide { 64 } else { 32 }));
                self.ins(format!("atom.{sp}.add.u{} {a}, [{addr}], {t}", s.bits()));
            }
            "min" | "max" => self.ins(format!("atom.{sp}.{op}.{it} {a}, [{addr}], {a}")),
            "and" | "or" | "xor" => self.ins(format!("atom.{sp}.{op}.{bits} {a}, [{addr}], {a}")),
            "xchg" => self.ins(format!("atom.{sp}.exch.{bits} {a}, [{addr}], {a}")),
            "cas" => {
                let desired = ins.a.checked_add(1).ok_or("cas register overflow")?;
                if self.rk(func, desired)? != self.rk(func, ins.a)? {
                    return Err("the desired value of a compare-exchange has another type".into());
                }
                let d = reg_name(inst, desired);
                self.ins(format!("atom.{sp}.cas.{bits} {a}, [{addr}], {a}, {d}"));
            }
            _ => return Err(format!("cannot lower `{mn}`")),
        }
        Ok(())
    }

    /// `d := fmod(x, y)` on float64 registers, exactly (musl's integer algorithm: align the
    /// significands and subtract shifted copies; every step is exact).
    fn fmod64(&mut self, d: &str, x: &str, y: &str) {
        self.ntmp += 1;
        let id = self.ntmp;
        let [ux, uy, ex, ey, sx, t, i] = [0; 7].map(|_| self.tmp("b64"));
        let n = self.tmp("b32");
        let [p, q] = [0; 2].map(|_| self.tmp("pred"));
        let l = |s: &str| format!("$Lfm{id}_{s}");
        let ins = |e: &mut Self, s: String| e.ins(s);
        ins(self, format!("mov.b64 {ux}, {x}"));
        ins(self, format!("mov.b64 {uy}, {y}"));
        ins(self, format!("shr.u64 {ex}, {ux}, 52"));
        ins(self, format!("and.b64 {ex}, {ex}, 2047"));
        ins(self, format!("shr.u64 {ey}, {uy}, 52"));
        ins(self, format!("and.b64 {ey}, {ey}, 2047"));
        ins(self, format!("and.b64 {sx}, {ux}, 0x8000000000000000"));
        // y == 0, y NaN or x not finite: NaN.
        ins(self, format!("shl.b64 {t}, {uy}, 1"));
        ins(self, format!("setp.eq.u64 {p}, {t}, 0"));
        ins(self, format!("setp.gt.u64 {q}, {t}, 0xFFE0000000000000"));
        ins(self, format!("or.pred {p}, {p}, {q}"));
        ins(self, format!("setp.eq.u64 {q}, {ex}, 2047"));
        ins(self, format!("or.pred {p}, {p}, {q}"));
        ins(self, format!("@{p} bra {}", l("nan")));
        // |x| <= |y|: x, or a zero of x's sign when equal.
        ins(self, format!("shl.b64 {i}, {ux}, 1"));
        ins(self, format!("setp.lt.u64 {p}, {i}, {t}"));
        ins(self, format!("@{p} bra {}", l("x")));
        ins(self, format!("setp.eq.u64 {p}, {i}, {t}"));
        ins(self, format!("@{p} bra {}", l("zero")));
        // Normalise both significands (subnormals by their leading zeros).
        for (u, e) in [(&ux, &ex), (&uy, &ey)] {
            ins(self, format!("setp.eq.u64 {p}, {e}, 0"));
            ins(self, format!("shl.b64 {i}, {u}, 12"));
            ins(self, format!("clz.b64 {n}, {i}"));
            ins(self, format!("cvt.u64.u32 {i}, {n}"));
            // subnormal: e = -n, u <<= n + 1
            ins(self, format!("@{p} neg.s64 {e}, {i}"));
            ins(self, format!("@{p} add.u32 {n}, {n}, 1"));
            ins(self, format!("@{p} shl.b64 {u}, {u}, {n}"));
            ins(self, format!("@!{p} and.b64 {u}, {u}, 0x000FFFFFFFFFFFFF"));
            ins(self, format!("@!{p} or.b64 {u}, {u}, 0x0010000000000000"));
        }
        self.label(&l("loop"));
        ins(self, format!("setp.le.s64 {p}, {ex}, {ey}"));
        ins(self, format!("@{p} bra {}", l("last")));
        ins(self, format!("sub.s64 {i}, {ux}, {uy}"));
        ins(self, format!("setp.eq.s64 {p}, {i}, 0"));
        ins(self, format!("@{p} bra {}", l("zero")));
        ins(self, format!("setp.gt.s64 {p}, {i}, 0"));
        ins(self, format!("@{p} mov.b64 {ux}, {i}"));
        ins(self, format!("shl.b64 {ux}, {ux}, 1"));
        ins(self, format!("sub.s64 {ex}, {ex}, 1"));
        ins(self, format!("bra.uni {}", l("loop")));
        self.label(&l("last"));
        ins(self, format!("sub.s64 {i}, {ux}, {uy}"));
        ins(self, format!("setp.eq.s64 {p}, {i}, 0"));
        ins(self, format!("@{p} bra {}", l("zero")));
        ins(self, format!("setp.gt.s64 {p}, {i}, 0"));
        ins(self, format!("@{p} mov.b64 {ux}, {i}"));
        // Renormalise: shift the leading one back to bit 52.
        ins(self, format!("clz.b64 {n}, {ux}"));
        ins(self, format!("sub.u32 {n}, {n}, 11"));
        ins(self, format!("shl.b64 {ux}, {ux}, {n}"));
        ins(self, format!("cvt.u64.u32 {i}, {n}"));
        ins(self, format!("sub.s64 {ex}, {ex}, {i}"));
        ins(self, format!("setp.gt.s64 {p}, {ex}, 0"));
        ins(self, format!("@!{p} bra {}", l("sub")));
        ins(self, format!("sub.u64 {ux}, {ux}, 0x0010000000000000"));
        ins(self, format!("shl.b64 {i}, {ex}, 52"));
        ins(self, format!("or.b64 {ux}, {ux}, {i}"));
        ins(self, format!("bra.uni {}", l("sign")));
        self.label(&l("sub"));
        // Subnormal result: shift right by 1 - e.
        ins(self, format!("cvt.u32.u64 {n}, {ex}"));
        ins(self, format!("neg.s32 {n}, {n}"));
        ins(self, format!("add.u32 {n}, {n}, 1"));
        ins(self, format!("shr.u64 {ux}, {ux}, {n}"));
        self.label(&l("sign"));
        ins(self, format!("or.b64 {ux}, {ux}, {sx}"));
        ins(self, format!("mov.b64 {d}, {ux}"));
        ins(self, format!("bra.uni {}", l("end")));
        self.label(&l("nan"));
        ins(self, format!("mov.f64 {d}, 0dFFF8000000000000"));
        ins(self, format!("bra.uni {}", l("end")));
        self.label(&l("x"));
        ins(self, format!("mov.f64 {d}, {x}"));
        ins(self, format!("bra.uni {}", l("end")));
        self.label(&l("zero"));
        ins(self, format!("mov.b64 {d}, {sx}"));
        self.label(&l("end"));
    }

    /// `d = min/max(x, y)` as `cajeta_bytecode::float` defines them: `min`/`max` (a NaN
    /// operand yields the other), with a tie settled on the bits of both or-ed (min) or
    /// and-ed (max), so -0.0 is below +0.0 (PTX leaves the sign of a zero tie open).
    fn fminmax(&mut self, name: &str, s: Scalar, d: &str, x: &str, y: &str) {
        let (ty, bt) = if s == Scalar::F32 {
            ("f32", "b32")
        } else {
            ("f64", "b64")
        };
        let [r, z] = [0; 2].map(|_| self.tmp(ty));
        let [xb, yb] = [0; 2].map(|_| self.tmp(bt));
        let tie = self.tmp("pred");
        let combine = if name == "min" { "or" } else { "and" };
        self.ins(format!("{name}.{ty} {r}, {x}, {y}"));
        self.ins(format!("setp.eq.{ty} {tie}, {x}, {y}"));
        self.ins(format!("mov.{bt} {xb}, {x}"));
        self.ins(format!("mov.{bt} {yb}, {y}"));
        self.ins(format!("{combine}.{bt} {xb}, {xb}, {yb}"));
        self.ins(format!("mov.{bt} {z}, {xb}"));
        self.ins(format!("selp.{ty} {d}, {z}, {r}, {tie}"));
    }

    /// `d = Math.pow(x, y)` on float32: `|x|^y` as `ex2.approx(y * lg2.approx(|x|))` (the
    /// hardware approximations, as `Math.exp2`/`log2`), with C's special cases chosen around
    /// it as the SPIR-V emitter does (XPU §2.12): the sign of `x` for an odd integer `y`, NaN
    /// for a finite `x < 0` with a non-integer `y` and for NaN operands, and 1 for
    /// `pow(x, ±0)`, `pow(1, y)` and `pow(-1, ±inf)`. Zero and infinite operands come out of
    /// `lg2`/`ex2` as C gives them (`lg2(0) = -inf`, `ex2(±inf) = inf, 0`).
    fn pow_f32(&mut self, d: &str, x: &str, y: &str) {
        let [ax, l, r, ty, hy, n] = [0; 6].map(|_| self.tmp("f32"));
        let [xb, rb] = [0; 2].map(|_| self.tmp("b32"));
        let [int, frac, odd, neg, fin, bad, nan, one, m1, y0, yinf] =
            [0; 11].map(|_| self.tmp("pred"));
        let ay = self.tmp("f32");
        self.ins(format!("abs.f32 {ax}, {x}"));
        self.ins(format!("lg2.approx.f32 {l}, {ax}"));
        self.ins(format!("mul.rn.f32 {l}, {y}, {l}"));
        self.ins(format!("ex2.approx.f32 {r}, {l}"));
        // The sign of x for an odd integer y.
        self.ins(format!("cvt.rzi.f32.f32 {ty}, {y}"));
        self.ins(format!("setp.eq.f32 {int}, {ty}, {y}"));
        self.ins(format!("mul.rn.f32 {hy}, {y}, 0f3F000000"));
        self.ins(format!("cvt.rzi.f32.f32 {ty}, {hy}"));
        self.ins(format!("setp.neu.f32 {frac}, {ty}, {hy}"));
        self.ins(format!("and.pred {odd}, {int}, {frac}"));
        self.ins(format!("mov.b32 {xb}, {x}"));
        self.ins(format!("and.b32 {xb}, {xb}, -2147483648"));
        self.ins(format!("mov.b32 {rb}, {r}"));
        self.ins(format!("or.b32 {rb}, {rb}, {xb}"));
        self.ins(format!("mov.b32 {n}, {rb}"));
        self.ins(format!("@{odd} mov.f32 {r}, {n}"));
        // NaN.
        self.ins(format!("setp.lt.f32 {neg}, {x}, 0f00000000"));
        self.ins(format!("setp.ne.f32 {fin}, {x}, 0fFF800000"));
        self.ins(format!("and.pred {bad}, {neg}, {fin}"));
        self.ins(format!("and.pred {bad}, {bad}, !{int}"));
        self.ins(format!("setp.nan.f32 {nan}, {x}, {y}"));
        self.ins(format!("or.pred {bad}, {bad}, {nan}"));
        self.ins(format!("@{bad} mov.f32 {r}, 0f7FFFFFFF"));
        // 1.
        self.ins(format!("setp.eq.f32 {one}, {x}, 0f3F800000"));
        self.ins(format!("abs.f32 {ay}, {y}"));
        self.ins(format!("setp.eq.f32 {yinf}, {ay}, 0f7F800000"));
        self.ins(format!("setp.eq.and.f32 {m1}, {ax}, 0f3F800000, {yinf}"));
        self.ins(format!("setp.eq.f32 {y0}, {y}, 0f00000000"));
        self.ins(format!("or.pred {one}, {one}, {m1}"));
        self.ins(format!("or.pred {one}, {one}, {y0}"));
        self.ins(format!("selp.f32 {d}, 0f3F800000, {r}, {one}"));
    }

    /// The remaining (table-shaped) operations: integer and float arithmetic, bitwise
    /// operations, comparisons, min/max/abs, pow/atan2.
    fn arith(&mut self, func: u32, inst: u32, pc: u32, ins: Instr) -> R<()> {
        let mn = ins.op.mnemonic();
        let unsupported = || format!("instruction `{mn}` is not available in device code");
        let (name, suffix) = mn.split_once('.').ok_or_else(unsupported)?;
        let s = suffix_scalar(suffix).ok_or_else(unsupported)?;
        let r = |x: u16| reg_name(inst, x);
        let (a, b, c) = (r(ins.a), r(ins.b), r(ins.c));
        if s.is_float() {
            let ty = if s == Scalar::F32 { "f32" } else { "f64" };
            match name {
                "add" | "sub" | "mul" | "div" => self.ins(format!("{name}.rn.{ty} {a}, {b}, {c}")),
                "neg" | "abs" => self.ins(format!("{name}.{ty} {a}, {b}")),
                "min" | "max" => self.fminmax(name, s, &a, &b, &c),
                "eq" | "ne" | "lt" | "le" => {
                    let cmp = if name == "ne" { "neu" } else { name };
                    let p = self.tmp("pred");
                    self.ins(format!("setp.{cmp}.{ty} {p}, {b}, {c}"));
                    self.ins(format!("selp.u32 {a}, 1, 0, {p}"));
                }
                "pow" if s == Scalar::F32 => self.pow_f32(&a, &b, &c),
                // atan2(y, x): ours (`devmath`); float32 computed in float64, rounded once.
                "atan2" if s == Scalar::F64 => self.recipe(&Recipe::atan2(), &a, &[&b, &c]),
                "atan2" => {
                    let (y, x, v) = (self.tmp("f64"), self.tmp("f64"), self.tmp("f64"));
                    self.ins(format!("cvt.f64.f32 {y}, {b}"));
                    self.ins(format!("cvt.f64.f32 {x}, {c}"));
                    self.recipe(&Recipe::atan2(), &v, &[&y, &x]);
                    self.ins(format!("cvt.rn.f32.f64 {a}, {v}"));
                }
                "pow" if s == Scalar::F64 => self.recipe(&Recipe::pow(), &a, &[&b, &c]),
                "pow" => {
                    return Err(format!(
                        "Math.{name} on {} is not available on the cuda backend yet",
                        s.name()
                    ))
                }
                _ => return Err(unsupported()),
            }
            return Ok(());
        }
        let it = int_ty(s);
        let bt = bit_ty(s);
        let wide = s.bits() == 64;
        match name {
            "add" | "sub" => {
                self.ins(format!("{name}.{it} {a}, {b}, {c}"));
                self.canon32_if(&a, s, wide);
            }
            "mul" => {
                self.ins(format!("mul.lo.{it} {a}, {b}, {c}"));
                self.canon32_if(&a, s, wide);
            }
            "neg" => {
                self.ins(format!("neg.s{} {a}, {b}", if wide { 64 } else { 32 }));
                self.canon32_if(&a, s, wide);
            }
            "div" | "rem" => {
                let zero = self.site(SiteKind::DivZero, func, pc, "0", "0");
                let p = self.tmp("pred");
                self.ins(format!("setp.eq.{it} {p}, {c}, 0"));
                self.ins(format!("@{p} bra {zero}"));
                let mut divisor = c.clone();
                if s.is_signed() {
                    let q = self.tmp("pred");
                    self.ins(format!("setp.eq.{it} {q}, {c}, -1"));
                    if name == "div" {
                        // MIN / -1 overflows.
                        let min = match s.bits() {
                            8 => "-128",
                            16 => "-32768",
                            32 => "-2147483648",
                            _ => "0x8000000000000000",
                        };
                        let ovf = self.site(SiteKind::Overflow, func, pc, "0", "0");
                        let p2 = self.tmp("pred");
                        self.ins(format!("setp.eq.{it} {p2}, {b}, {min}"));
                        self.ins(format!("and.pred {p2}, {p2}, {q}"));
                        self.ins(format!("@{p2} bra {ovf}"));
                    } else {
                        // x % -1 is 0 (also for MIN, which PTX leaves undefined): use 1.
                        divisor = self.tmp(bt);
                        self.ins(format!("selp.{it} {divisor}, 1, {c}, {q}"));
                    }
                }
                self.ins(format!("{name}.{it} {a}, {b}, {divisor}"));
            }
            "shl" | "shr" | "ushr" => {
                let amount = self.shift_amount(&c, self.rk(func, ins.c)?, s.bits())?;
                match name {
                    "shl" => {
                        self.ins(format!("shl.{bt} {a}, {b}, {amount}"));
                        self.canon32_if(&a, s, wide);
                    }
                    "shr" => self.ins(format!("shr.{it} {a}, {b}, {amount}")),
                    _ => {
                        // Logical at the type's width: zero-extend the value first.
                        if wide || s.bits() == 32 {
                            let u = if wide { "u64" } else { "u32" };
                            self.ins(format!("shr.{u} {a}, {b}, {amount}"));
                        } else {
                            let mask = (1u32 << s.bits()) - 1;
                            let t = self.tmp("b32");
                            self.ins(format!("and.b32 {t}, {b}, {mask}"));
                            self.ins(format!("shr.u32 {a}, {t}, {amount}"));
                            self.canon32(&a, s);
                        }
                    }
                }
            }
            "not" => {
                self.ins(format!("not.{bt} {a}, {b}"));
                if !s.is_signed() {
                    self.canon32_if(&a, s, wide);
                }
            }
            "and" | "or" | "xor" => self.ins(format!("{name}.{bt} {a}, {b}, {c}")),
            "min" | "max" => self.ins(format!("{name}.{it} {a}, {b}, {c}")),
            "abs" => {
                self.ins(format!("abs.{it} {a}, {b}"));
                self.canon32_if(&a, s, wide);
            }
            "eq" | "ne" | "lt" | "le" => {
                let p = self.tmp("pred");
                self.ins(format!("setp.{name}.{it} {p}, {b}, {c}"));
                self.ins(format!("selp.u32 {a}, 1, 0, {p}"));
            }
            _ => return Err(unsupported()),
        }
        Ok(())
    }

    fn canon32_if(&mut self, d: &str, s: Scalar, wide: bool) {
        if !wide {
            self.canon32(d, s);
        }
    }
}

/// The shared fault handler: keeps the fault of the smallest `(g, l)` in the record (a spin lock
/// at word 0; sm_70+ schedules diverged lanes independently, so a lane holding it progresses),
/// then exits the thread.
fn fault_handler() -> String {
    let mut h = String::from(
        "$Lfault:\n\
         \t.reg .b64 %fp, %fg, %fsg, %fx;\n\
         \t.reg .b32 %fl, %fsl, %fs, %fo, %fa, %fb, %fc, %fd;\n\
         \t.reg .pred %fq<4>;\n\
         \tld.param.u64 %fp, [fault];\n\
         \tcvta.to.global.u64 %fp, %fp;\n",
    );
    // g = wx + wy*gx + wz*gx*gy (64-bit); l = tx + ty*bx + tz*bx*by.
    h.push_str(
        "\tmov.u32 %fa, %ctaid.z;\n\tmov.u32 %fb, %nctaid.y;\n\tmul.wide.u32 %fg, %fa, %fb;\n\
         \tmov.u32 %fa, %ctaid.y;\n\tcvt.u64.u32 %fx, %fa;\n\tadd.u64 %fg, %fg, %fx;\n\
         \tmov.u32 %fa, %nctaid.x;\n\tcvt.u64.u32 %fx, %fa;\n\tmul.lo.u64 %fg, %fg, %fx;\n\
         \tmov.u32 %fa, %ctaid.x;\n\tcvt.u64.u32 %fx, %fa;\n\tadd.u64 %fg, %fg, %fx;\n\
         \tmov.u32 %fa, %tid.z;\n\tmov.u32 %fb, %ntid.y;\n\tmov.u32 %fc, %tid.y;\n\
         \tmad.lo.u32 %fl, %fa, %fb, %fc;\n\tmov.u32 %fb, %ntid.x;\n\tmov.u32 %fc, %tid.x;\n\
         \tmad.lo.u32 %fl, %fl, %fb, %fc;\n",
    );
    // Fast path: a recorded fault that is not larger than ours needs no lock.
    h.push_str(
        "\tld.volatile.global.u32 %fs, [%fp+4];\n\tsetp.eq.u32 %fq0, %fs, 0;\n\
         \t@%fq0 bra $Lfault_lock;\n\
         \tld.volatile.global.u64 %fsg, [%fp+8];\n\tld.volatile.global.u32 %fsl, [%fp+16];\n\
         \tsetp.lt.u64 %fq1, %fg, %fsg;\n\tsetp.eq.u64 %fq2, %fg, %fsg;\n\
         \tsetp.lt.u32 %fq3, %fl, %fsl;\n\tand.pred %fq2, %fq2, %fq3;\n\
         \tor.pred %fq1, %fq1, %fq2;\n\t@!%fq1 bra $Lfault_exit;\n\
         $Lfault_lock:\n\
         \tatom.global.cas.b32 %fo, [%fp], 0, 1;\n\tsetp.ne.u32 %fq0, %fo, 0;\n\
         \t@%fq0 bra $Lfault_lock;\n\tfence.acq_rel.gpu;\n\
         \tld.volatile.global.u32 %fs, [%fp+4];\n\
         \tld.volatile.global.u64 %fsg, [%fp+8];\n\tld.volatile.global.u32 %fsl, [%fp+16];\n\
         \tsetp.lt.u64 %fq1, %fg, %fsg;\n\tsetp.eq.u64 %fq2, %fg, %fsg;\n\
         \tsetp.lt.u32 %fq3, %fl, %fsl;\n\tand.pred %fq2, %fq2, %fq3;\n\
         \tor.pred %fq1, %fq1, %fq2;\n\tsetp.eq.u32 %fq0, %fs, 0;\n\
         \tor.pred %fq1, %fq1, %fq0;\n\t@!%fq1 bra $Lfault_unlock;\n\
         \tst.volatile.global.u64 [%fp+8], %fg;\n\tst.volatile.global.u32 [%fp+16], %fl;\n\
         \tst.volatile.global.u64 [%fp+24], %fidx;\n\tst.volatile.global.u64 [%fp+32], %flen;\n\
         \tmov.u32 %fa, %ctaid.x;\n\tst.volatile.global.u32 [%fp+40], %fa;\n\
         \tmov.u32 %fa, %ctaid.y;\n\tst.volatile.global.u32 [%fp+44], %fa;\n\
         \tmov.u32 %fa, %ctaid.z;\n\tst.volatile.global.u32 [%fp+48], %fa;\n\
         \tmov.u32 %fa, %tid.x;\n\tst.volatile.global.u32 [%fp+52], %fa;\n\
         \tmov.u32 %fa, %tid.y;\n\tst.volatile.global.u32 [%fp+56], %fa;\n\
         \tmov.u32 %fa, %tid.z;\n\tst.volatile.global.u32 [%fp+60], %fa;\n\
         \tst.volatile.global.u32 [%fp+4], %fsite;\n\
         $Lfault_unlock:\n\
         \tfence.acq_rel.gpu;\n\tatom.global.exch.b32 %fd, [%fp], 0;\n\
         $Lfault_exit:\n\
         \texit;\n",
    );
    h
}
