//! SPIR-V emission: one kernel and the `@Device` functions it reaches, lowered to a Vulkan
//! compute module (SPIR-V 1.3, GLSL450 memory model, logical addressing).
//!
//! # Interface (what the runtime binds)
//!
//! * Buffer parameter `i` is a `StorageBuffer` variable at descriptor set 0, binding `i`: a
//!   block holding a runtime array of the element type. Views are bound as their whole storage;
//!   the view's element offset and length travel in the push constants.
//! * Scalar parameters, then one `(offset, length)` pair of `uint32` per buffer parameter, form
//!   the parameter block ([`Lowered::params`] gives each one's offset and type): the push
//!   constants, or — when it is larger than the device's push constants
//!   ([`Target::max_push_bytes`]) — a read-only storage buffer at binding
//!   [`Lowered::params_binding`], after the fault buffer's.
//! * The workgroup size is three specialization constants (ids 0, 1, 2) decorated as the
//!   `WorkgroupSize` built-in, so one module serves every block shape.
//! * Every element access is bounds-checked: an out-of-range access touches no memory (a read
//!   gives 0, a write or atomic is dropped) and records the fault in the hidden fault buffer
//!   (binding [`Lowered::fault_binding`]); see [`FAULT_WORDS`] for its layout.
//!
//! # Lowering
//!
//! * Registers become `Function` variables (the driver's mem2reg makes SSA of them). Integer
//!   registers of up to 32 bits are 32-bit words holding the low half of the canonical cell
//!   (sign-extended for signed types, zero-extended for unsigned ones), so every operation at a
//!   narrow width is the 32-bit operation followed by an explicit re-canonicalisation;
//!   64-bit integers are `uint64`, floats `float32`/`float64`, booleans `bool`.
//! * Buffer and shared registers never exist at run time: a flow-insensitive pass resolves each
//!   to the one buffer parameter or shared declaration it can hold (else the kernel is refused).
//! * `@Device` functions become one `OpFunction` per call path (the call path names the fault's
//!   device frames exactly), with the caller's buffers substituted for buffer parameters.
//! * Control flow follows the bytecode's region table: each loop region gets a header block with
//!   `OpLoopMerge`, each region its own merge block (merge blocks of regions ending at the same
//!   pc are chained, innermost first), an `if` region's conditional branch gets
//!   `OpSelectionMerge`. Any other jump must be a `break`/`continue` of the innermost loop, a
//!   back edge from the continue construct, or a forward jump inside the current region;
//!   anything else is refused with a [`LowerError`] (never an invalid module).

use std::collections::HashMap;

use cajeta_bytecode::{Const, FnKind, Function, MathFn, Module, Op, RegionKind, Scalar, Type};
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    self, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel, FunctionControl,
    GlslStd450Op as GLOp, GroupOperation, LoopControl, MemorySemantics, Scope, SelectionControl,
    StorageClass, Word,
};
use std::collections::HashSet;

use crate::devmath::{self, Recipe, Step};
use crate::LowerError;

mod drain;
mod fma;
mod fmod;
mod pow;
mod signs;

/// Words of one fault record: `[0]` the key `min(g, 2^22-1) << 10 | min(l, 1023)` of the
/// faulting item (`0xFFFF_FFFF`: none; the smallest key wins, by `OpAtomicUMin`), `[1]` the
/// access site ([`Lowered::sites`]), `[2..4]` the index (low, high word), `[4..7]` the
/// workgroup id, `[7..10]` the local id, `[10]` the length checked against (read for
/// `chk.idx` sites, [`Site::what`]). Records are 64 bytes apart.
pub const FAULT_WORDS: u32 = 11;

/// Specialization constant ids of the dynamic shared array (XPU §2.6, T2): its array
/// length (at least 1) and its length in elements (`sharedBytes / size`, may be 0). Ids 0–2
/// are the workgroup size.
pub const SPEC_DYN_ARRAY: u32 = 3;
/// See [`SPEC_DYN_ARRAY`].
pub const SPEC_DYN_LEN: u32 = 4;

/// How the runtime passes one kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamSlot {
    /// A scalar at `offset` in the push constants, stored as `ty`'s push type (booleans and
    /// integers of up to 32 bits as one `uint32`, 64-bit types as 8 bytes).
    Scalar {
        /// The parameter's type.
        ty: Scalar,
        /// Byte offset in the push constants.
        offset: u32,
    },
    /// A buffer at `binding`; its `(offset, length)` in elements at `info_offset` (two
    /// `uint32`).
    Buffer {
        /// Element type.
        elem: Scalar,
        /// Descriptor binding (set 0).
        binding: u32,
        /// Byte offset of the `(offset, length)` pair in the push constants.
        info_offset: u32,
    },
}

/// The memory a bounds-checked access uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mem {
    /// Buffer parameter number (kernel parameter index).
    Buffer(u16),
    /// Shared declaration number.
    Shared(u16),
}

/// One bounds-checked access, for the fault message and trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Device frames, innermost first: `(function, pc)` of the access, then each caller's call.
    pub frames: Vec<(u32, u32)>,
    /// The memory accessed.
    pub mem: Mem,
    /// The source name of the register naming the memory (`r<n>` if none).
    pub var: String,
    /// For a `chk.idx` site: what is indexed (`shared`, `lane of vector`), the length being
    /// the record's word 10; `None` for a memory access (the length is the memory's).
    pub what: Option<&'static str>,
    /// The index was a uint64 (it prints unsigned).
    pub unsigned_index: bool,
}

/// Device features a module needs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// 8-bit integers (storage and `Int8`).
    pub int8: bool,
    /// 16-bit integers (storage and `Int16`).
    pub int16: bool,
    /// 64-bit integers.
    pub int64: bool,
    /// 64-bit floats.
    pub float64: bool,
    /// 64-bit integer atomics on buffers or shared memory.
    pub atomic_int64: bool,
    /// float32 atomic add on buffers.
    pub atomic_f32_buffer: bool,
    /// float32 atomic add on shared memory.
    pub atomic_f32_shared: bool,
    /// Subgroup arithmetic (wave reductions and scans).
    pub subgroup_arithmetic: bool,
    /// Subgroup shuffles (`Wave.shuffleSync`, `Wave.rotate`).
    pub subgroup_shuffle: bool,
    /// Subgroup ballots (`Wave.ballotSync`).
    pub subgroup_ballot: bool,
    /// Subgroup votes (the exact float32 wave maximum).
    pub subgroup_vote: bool,
    /// The subgroup size / lane id built-ins.
    pub subgroup_basic: bool,
}

impl Features {
    /// Whether the kernel uses waves (subgroups) in any way: collectives, lane ids, sizes.
    pub fn uses_waves(&self) -> bool {
        self.subgroup_arithmetic
            || self.subgroup_shuffle
            || self.subgroup_ballot
            || self.subgroup_vote
            || self.subgroup_basic
    }
}

/// A lowered kernel: the module and what the runtime needs to launch it.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The SPIR-V words.
    pub words: Vec<u32>,
    /// The kernel's simple name (fault messages).
    pub name: String,
    /// One slot per kernel parameter.
    pub params: Vec<ParamSlot>,
    /// Size of the parameter block in bytes (0: none): the push constants, or the buffer at
    /// [`Lowered::params_binding`].
    pub push_size: u32,
    /// The binding of the storage buffer holding the parameter block, when it does not fit
    /// the device's push constants (`None`: it is the push constants).
    pub params_binding: Option<u32>,
    /// Byte offset in the push constants of the launch's whole grid (three `u32`), which
    /// the shader reads where it would read `NumWorkgroups`: a launch beyond the device's
    /// dispatch limits runs as several dispatches, each of which sees only its own count.
    pub grid_offset: u32,
    /// Binding of the fault buffer.
    pub fault_binding: u32,
    /// Bounds-checked accesses, by site number.
    pub sites: Vec<Site>,
    /// Required device features.
    pub features: Features,
    /// Bytes of the kernel's shared declarations.
    pub shared_bytes: u64,
    /// Length in elements of each shared declaration (0: the dynamic one).
    pub shared_lens: Vec<u32>,
    /// Element size in bytes of the dynamic shared array (0: none); its length is the
    /// launch's `sharedBytes` divided by it ([`SPEC_DYN_LEN`]).
    pub dynamic_elem_bytes: u32,
    /// `@Wave(width = N)`: the subgroup size the kernel requires (XPU §8.2).
    pub wave_width: Option<u32>,
}

/// What the lowering may assume of the device it targets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Emit atomics with no memory semantics (Relaxed). Only for a device that runs every
    /// atomic sequentially consistent whatever its semantics say, as lavapipe does (its
    /// gallivm emits LLVM `seq_cst` read-modify-writes); Mesa 22.3's lavapipe
    /// loses the updates of a whole subgroup when an acquire/release atomic sits in a loop
    /// that the subgroups of a workgroup leave after different trip counts
    /// (`tests/programs/xpu/t2_atomic_retry_loops.cajeta`).
    pub relaxed_atomics: bool,
    /// Keep items that returned at the workgroup's barriers until every item has finished
    /// (kernels with `Barrier.workgroup()`): lavapipe stops a workgroup's barriers once one of
    /// its subgroups has finished (see `spirv/drain.rs`).
    pub drain_returns: bool,
    /// Load float constants through a run-time zero (a push-constant word) so that the driver
    /// cannot see them. Mesa 22.3's gallivm short-cuts arithmetic with an operand that is the
    /// constant +0.0 (`x + 0 → x`, `x * 0 → 0`, `0 / x → 0`, `x / 0 → undef`), wrong for
    /// -0.0, infinities and NaN; and NIR folds constant expressions into such operands.
    pub opaque_float_constants: bool,
    /// Compute the float32 `Math` functions that have a float64 recipe in [`crate::devmath`]
    /// (`exp`, `exp2`, `log`, `log2`, `log10`, `atan`, `asin`, `acos`, `atan2`, `pow`) as XPU
    /// §2.12's reference does — in float64, rounded once — rather than with the driver's GLSL
    /// functions (lavapipe's `asin` is up to ~3 800 ulps off, its `log` of a subnormal that of
    /// 2^−127, its `sin` of 1e10 ±1). Needs float64 on the device.
    pub float32_math_in_float64: bool,
    /// The device's push-constant bytes (`maxPushConstantsSize`); a larger parameter block
    /// goes in a storage buffer. Vulkan guarantees 128, lavapipe offers no more.
    pub max_push_bytes: u32,
}

impl Default for Target {
    /// A device with no workaround, and the push constants every device has.
    fn default() -> Target {
        Target {
            relaxed_atomics: false,
            drain_returns: false,
            opaque_float_constants: false,
            float32_math_in_float64: false,
            max_push_bytes: MIN_PUSH_BYTES,
        }
    }
}

/// The push-constant bytes Vulkan guarantees (`maxPushConstantsSize`'s required minimum).
pub const MIN_PUSH_BYTES: u32 = 128;

impl Target {
    /// Mesa's lavapipe (llvmpipe), the software device: every workaround on.
    pub const LAVAPIPE: Target = Target {
        relaxed_atomics: true,
        drain_returns: true,
        opaque_float_constants: true,
        float32_math_in_float64: true,
        max_push_bytes: MIN_PUSH_BYTES,
    };
}

/// The SPIR-V module (words) of kernel function `kernel` of `module`.
///
/// # Errors
/// A [`LowerError`] naming what cannot be lowered (an instruction, an unstructured jump, a
/// float64 transcendental, …).
pub fn emit_spirv(module: &Module, kernel: u32) -> Result<Vec<u32>, LowerError> {
    lower(module, kernel).map(|l| l.words)
}

/// Lowers kernel `kernel` of `module` (see the module documentation).
///
/// # Errors
/// As [`emit_spirv`].
pub fn lower(module: &Module, kernel: u32) -> Result<Lowered, LowerError> {
    lower_for(module, kernel, Target::default())
}

/// Lowers kernel `kernel` of `module` for a device described by `target`.
///
/// # Errors
/// As [`emit_spirv`].
pub fn lower_for(module: &Module, kernel: u32, target: Target) -> Result<Lowered, LowerError> {
    let Some(k) = module.functions.get(kernel as usize) else {
        return Err(LowerError {
            kernel: format!("#{kernel}"),
            message: "no such function".into(),
        });
    };
    let err = |message: String| LowerError {
        kernel: k.name.clone(),
        message,
    };
    if k.kind != FnKind::Kernel {
        return Err(err("not a kernel".into()));
    }
    let mut cx = Cx::new(module, k, target).map_err(&err)?;
    cx.run(kernel).map_err(&err)?;
    let shared_bytes = k
        .shared
        .iter()
        .map(|d| d.elem.size() as u64 * u64::from(d.len))
        .sum();
    Ok(Lowered {
        words: cx.finish(),
        name: k.simple_name().to_string(),
        params: cx.params,
        push_size: cx.push_size,
        params_binding: cx.params_binding,
        grid_offset: cx.grid_offset,
        fault_binding: u32::from(k.params),
        sites: cx.sites,
        features: cx.features,
        shared_bytes,
        shared_lens: k.shared.iter().map(|d| d.len).collect(),
        dynamic_elem_bytes: k
            .shared
            .iter()
            .find(|d| d.len == 0)
            .map_or(0, |d| d.elem.size() as u32),
        wave_width: cajeta_bytecode::KernelAttrs::of(k).wave_width,
    })
}

type R<T> = Result<T, String>;

fn be(e: rspirv::dr::Error) -> String {
    format!("SPIR-V builder: {e:?}")
}

/// Call paths deeper than this are refused (device functions cannot recurse; this bounds
/// the work on malformed input).
const MAX_DEPTH: usize = 32;
/// At most this many function instances per kernel.
const MAX_INSTANCES: usize = 1024;

/// A device-function instance waiting to be emitted.
struct Pending {
    func: u32,
    id: Word,
    /// Memory bound to each parameter register (buffer parameters), `None` for scalars.
    mems: Vec<Option<Mem>>,
    /// Caller frames `(function, call pc)`, innermost first.
    callers: Vec<(u32, u32)>,
}

/// Shared state of one module's emission.
struct Cx<'m> {
    m: &'m Module,
    k: &'m Function,
    target: Target,
    b: Builder,
    t_void: Word,
    t_bool: Word,
    t_u32: Word,
    t_u64: Option<Word>,
    t_f32: Word,
    t_f64: Option<Word>,
    t_v3: Word,
    consts: HashMap<(Word, u64), Word>,
    ptrs: HashMap<(StorageClass, Word), Word>,
    elem_types: HashMap<Scalar, Word>,
    buf_structs: HashMap<Word, Word>,
    glsl: Word,
    inputs: HashMap<BuiltIn, (Word, bool)>,
    /// Per kernel parameter: the storage buffer variable of a buffer parameter.
    buf_vars: Vec<Option<Word>>,
    shared_vars: Vec<Word>,
    push_var: Option<Word>,
    /// Where the parameter block lives: `PushConstant`, or `StorageBuffer` (at
    /// `params_binding`) when it outgrows the device's push constants.
    push_class: StorageClass,
    params_binding: Option<u32>,
    /// Per kernel parameter: its push-constant member index (scalars) or the member index of
    /// its `(offset, length)` pair (buffers).
    push_member: Vec<u32>,
    push_types: Vec<Word>,
    params: Vec<ParamSlot>,
    push_size: u32,
    /// The push-constant member that always holds 0 ([`Target::opaque_float_constants`]).
    zero_member: Option<u32>,
    /// The push-constant members holding the whole grid (x, y, z from this one) and their
    /// byte offset ([`Lowered::grid_offset`]).
    grid_member: u32,
    grid_offset: u32,
    fault_var: Word,
    fault_fn: Word,
    wg_size: [Word; 3],
    /// The dynamic shared array's length in elements ([`SPEC_DYN_LEN`]), if it has one.
    dyn_len: Option<Word>,
    sites: Vec<Site>,
    features: Features,
    queue: Vec<Pending>,
    instances: usize,
    caps_added: Vec<Capability>,
    /// float32 elements are stored as `uint32` (and bit-cast at each access): the kernel uses
    /// float32 atomic min/max, a compare-and-swap loop on the bits.
    f32_bits: bool,
    /// Some function emitted so far has a workgroup barrier.
    wg_barriers: bool,
}

impl<'m> Cx<'m> {
    fn new(m: &'m Module, k: &'m Function, target: Target) -> R<Cx<'m>> {
        let mut b = Builder::new();
        b.set_version(1, 3);
        b.capability(Capability::Shader);
        b.memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::GLSL450);
        let glsl = b.ext_inst_import("GLSL.std.450");
        let t_void = b.type_void();
        let t_bool = b.type_bool();
        let t_u32 = b.type_int(32, 0);
        let t_f32 = b.type_float(32, None);
        let t_v3 = b.type_vector(t_u32, 3);
        let mut cx = Cx {
            m,
            k,
            target,
            b,
            t_void,
            t_bool,
            t_u32,
            t_u64: None,
            t_f32,
            t_f64: None,
            t_v3,
            consts: HashMap::new(),
            ptrs: HashMap::new(),
            elem_types: HashMap::new(),
            buf_structs: HashMap::new(),
            glsl,
            inputs: HashMap::new(),
            buf_vars: vec![],
            shared_vars: vec![],
            push_var: None,
            push_class: StorageClass::PushConstant,
            params_binding: None,
            push_member: vec![],
            push_types: vec![],
            params: vec![],
            push_size: 0,
            zero_member: None,
            grid_member: 0,
            grid_offset: 0,
            fault_var: 0,
            fault_fn: 0,
            dyn_len: None,
            wg_size: [0; 3],
            sites: vec![],
            features: Features::default(),
            queue: vec![],
            instances: 0,
            caps_added: vec![],
            f32_bits: uses_float_cas(m, k),
            wg_barriers: false,
        };
        cx.interface()?;
        Ok(cx)
    }

    fn cap(&mut self, c: Capability) {
        if !self.caps_added.contains(&c) {
            self.caps_added.push(c);
            self.b.capability(c);
        }
    }

    fn u64t(&mut self) -> Word {
        if let Some(t) = self.t_u64 {
            return t;
        }
        self.cap(Capability::Int64);
        self.features.int64 = true;
        let t = self.b.type_int(64, 0);
        self.t_u64 = Some(t);
        t
    }

    fn f64t(&mut self) -> Word {
        if let Some(t) = self.t_f64 {
            return t;
        }
        self.cap(Capability::Float64);
        self.features.float64 = true;
        let t = self.b.type_float(64, None);
        self.t_f64 = Some(t);
        t
    }

    /// The register type of a scalar.
    fn reg_ty(&mut self, s: Scalar) -> Word {
        match s {
            Scalar::Bool => self.t_bool,
            Scalar::F32 => self.t_f32,
            Scalar::F64 => self.f64t(),
            Scalar::I64 | Scalar::U64 => self.u64t(),
            _ => self.t_u32,
        }
    }

    /// The memory type of an element (its natural width).
    fn elem_ty(&mut self, s: Scalar) -> R<Word> {
        if let Some(&t) = self.elem_types.get(&s) {
            return Ok(t);
        }
        let t = match s {
            Scalar::I8 | Scalar::U8 => {
                self.cap(Capability::Int8);
                self.cap(Capability::StorageBuffer8BitAccess);
                self.b.extension("SPV_KHR_8bit_storage");
                self.features.int8 = true;
                self.b.type_int(8, 0)
            }
            // float16/bfloat16 elements are their 16 bits (registers: the bits in a u32).
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => {
                self.cap(Capability::Int16);
                self.cap(Capability::StorageBuffer16BitAccess);
                self.b.extension("SPV_KHR_16bit_storage");
                self.features.int16 = true;
                self.b.type_int(16, 0)
            }
            Scalar::I32 | Scalar::U32 => self.t_u32,
            Scalar::I64 | Scalar::U64 => self.u64t(),
            Scalar::F32 if self.f32_bits => self.t_u32,
            Scalar::F32 => self.t_f32,
            Scalar::F64 => self.f64t(),
            Scalar::Bool | Scalar::Char => {
                return Err(format!("no device memory of element type {s}"));
            }
        };
        self.elem_types.insert(s, t);
        Ok(t)
    }

    fn ptr(&mut self, sc: StorageClass, t: Word) -> Word {
        if let Some(&p) = self.ptrs.get(&(sc, t)) {
            return p;
        }
        let p = self.b.type_pointer(None, sc, t);
        self.ptrs.insert((sc, t), p);
        p
    }

    fn k32(&mut self, v: u32) -> Word {
        self.konst(self.t_u32, u64::from(v))
    }

    /// A constant of type `t` with bits `v` (cached).
    fn konst(&mut self, t: Word, v: u64) -> Word {
        if let Some(&c) = self.consts.get(&(t, v)) {
            return c;
        }
        let c = if t == self.t_bool {
            if v != 0 {
                self.b.constant_true(t)
            } else {
                self.b.constant_false(t)
            }
        } else if Some(t) == self.t_u64 || Some(t) == self.t_f64 {
            self.b.constant_bit64(t, v)
        } else {
            self.b.constant_bit32(t, v as u32)
        };
        self.consts.insert((t, v), c);
        c
    }

    /// The struct `{ T data[]; }` of storage buffers of element `s` (decorated once).
    fn buf_struct(&mut self, s: Scalar) -> R<Word> {
        // Keyed by the element's SPIR-V type: int32 and uint32 share one.
        let e = self.elem_ty(s)?;
        if let Some(&t) = self.buf_structs.get(&e) {
            return Ok(t);
        }
        let arr = self.b.type_runtime_array(e);
        self.b.decorate(
            arr,
            Decoration::ArrayStride,
            [Operand::LiteralBit32(s.size() as u32)],
        );
        let id = self.b.id();
        let st = self.b.type_struct_id(Some(id), [arr]);
        self.b.decorate(st, Decoration::Block, []);
        self.b
            .member_decorate(st, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
        self.buf_structs.insert(e, st);
        Ok(st)
    }

    /// Declares the interface: buffers, push constants, shared arrays, the fault buffer, the
    /// workgroup size.
    fn interface(&mut self) -> R<()> {
        let k = self.k;
        let nparams = usize::from(k.params);
        let Some(ptys) = k.regs.get(..nparams) else {
            return Err("fewer registers than parameters".into());
        };
        // Push-constant layout: scalars first, then the buffers' (offset, length) pairs.
        let mut members: Vec<Word> = vec![];
        let mut offsets: Vec<u32> = vec![];
        let mut off = 0u32;
        self.params = Vec::with_capacity(nparams);
        self.push_member = vec![0; nparams];
        self.buf_vars = vec![None; nparams];
        for (i, t) in ptys.iter().enumerate() {
            if let Type::Scalar(s) = *t {
                let (ty, size) = match s {
                    Scalar::F32 => (self.t_f32, 4),
                    Scalar::F64 => (self.f64t(), 8),
                    Scalar::I64 | Scalar::U64 => (self.u64t(), 8),
                    _ => (self.t_u32, 4),
                };
                off = off.next_multiple_of(size);
                self.push_member[i] = members.len() as u32;
                members.push(ty);
                offsets.push(off);
                self.params.push(ParamSlot::Scalar { ty: s, offset: off });
                off += size;
            } else {
                self.params.push(ParamSlot::Scalar {
                    ty: Scalar::Bool,
                    offset: 0,
                });
            }
        }
        for (i, t) in ptys.iter().enumerate() {
            match *t {
                Type::Scalar(_) => {}
                Type::Buffer(s) => {
                    let st = self.buf_struct(s)?;
                    let p = self.ptr(StorageClass::StorageBuffer, st);
                    let v = self.b.variable(p, None, StorageClass::StorageBuffer, None);
                    self.b
                        .decorate(v, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
                    self.b
                        .decorate(v, Decoration::Binding, [Operand::LiteralBit32(i as u32)]);
                    // Views of one storage may be bound twice; barriers must order buffer
                    // memory (XPU §8.4).
                    self.b.decorate(v, Decoration::Aliased, []);
                    self.b.decorate(v, Decoration::Coherent, []);
                    self.buf_vars[i] = Some(v);
                    self.push_member[i] = members.len() as u32;
                    members.push(self.t_u32);
                    members.push(self.t_u32);
                    offsets.push(off);
                    offsets.push(off + 4);
                    self.params[i] = ParamSlot::Buffer {
                        elem: s,
                        binding: i as u32,
                        info_offset: off,
                    };
                    off += 8;
                }
                other => return Err(format!("kernel parameter of type {other}")),
            }
        }
        if self.target.opaque_float_constants {
            // The runtime zero-fills the push constants past the parameters.
            self.zero_member = Some(members.len() as u32);
            members.push(self.t_u32);
            offsets.push(off);
            off += 4;
        }
        self.grid_member = members.len() as u32;
        self.grid_offset = off;
        for _ in 0..3 {
            members.push(self.t_u32);
            offsets.push(off);
            off += 4;
        }
        self.push_size = off.next_multiple_of(8);
        if !members.is_empty() {
            let id = self.b.id();
            let st = self.b.type_struct_id(Some(id), members.iter().copied());
            self.b.decorate(st, Decoration::Block, []);
            for (n, o) in offsets.iter().enumerate() {
                self.b.member_decorate(
                    st,
                    n as u32,
                    Decoration::Offset,
                    [Operand::LiteralBit32(*o)],
                );
            }
            if self.push_size > self.target.max_push_bytes {
                // After the fault buffer's binding (`Lowered::fault_binding`).
                let binding = u32::from(k.params) + 1;
                self.push_class = StorageClass::StorageBuffer;
                self.params_binding = Some(binding);
                let p = self.ptr(StorageClass::StorageBuffer, st);
                let v = self.b.variable(p, None, StorageClass::StorageBuffer, None);
                self.b
                    .decorate(v, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
                self.b
                    .decorate(v, Decoration::Binding, [Operand::LiteralBit32(binding)]);
                self.b.decorate(v, Decoration::NonWritable, []);
                self.push_var = Some(v);
            } else {
                let p = self.ptr(StorageClass::PushConstant, st);
                self.push_var = Some(self.b.variable(p, None, StorageClass::PushConstant, None));
            }
            self.push_types = members;
        }
        // Shared arrays.
        for d in &k.shared {
            let e = self.elem_ty(d.elem)?;
            let n = if d.len == 0 {
                // The dynamic array: lengths set per launch (`sharedBytes`).
                let arr = self.b.spec_constant_bit32(self.t_u32, 1);
                self.b.decorate(
                    arr,
                    Decoration::SpecId,
                    [Operand::LiteralBit32(SPEC_DYN_ARRAY)],
                );
                let len = self.b.spec_constant_bit32(self.t_u32, 0);
                self.b.decorate(
                    len,
                    Decoration::SpecId,
                    [Operand::LiteralBit32(SPEC_DYN_LEN)],
                );
                self.dyn_len = Some(len);
                arr
            } else {
                self.k32(d.len)
            };
            let arr = self.b.type_array(e, n);
            let p = self.ptr(StorageClass::Workgroup, arr);
            let v = self.b.variable(p, None, StorageClass::Workgroup, None);
            self.shared_vars.push(v);
        }
        // The fault buffer.
        let st = self.buf_struct(Scalar::U32)?;
        let p = self.ptr(StorageClass::StorageBuffer, st);
        let v = self.b.variable(p, None, StorageClass::StorageBuffer, None);
        self.b
            .decorate(v, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
        self.b.decorate(
            v,
            Decoration::Binding,
            [Operand::LiteralBit32(u32::from(k.params))],
        );
        self.fault_var = v;
        // Workgroup size: specialization constants 0, 1, 2.
        let mut ws = [0; 3];
        for (i, w) in ws.iter_mut().enumerate() {
            *w = self.b.spec_constant_bit32(self.t_u32, 1);
            self.b
                .decorate(*w, Decoration::SpecId, [Operand::LiteralBit32(i as u32)]);
        }
        let comp = self.b.spec_constant_composite(self.t_v3, ws);
        self.b.decorate(
            comp,
            Decoration::BuiltIn,
            [Operand::BuiltIn(BuiltIn::WorkgroupSize)],
        );
        self.wg_size = ws;
        Ok(())
    }

    /// The Input variable of a built-in (`vec` for `uvec3` ones).
    fn input(&mut self, bi: BuiltIn, vec: bool) -> Word {
        if let Some(&(v, _)) = self.inputs.get(&bi) {
            return v;
        }
        let t = if vec { self.t_v3 } else { self.t_u32 };
        let p = self.ptr(StorageClass::Input, t);
        // Built-ins are declared lazily, possibly while a block is open: insert the variable
        // among the global declarations directly.
        let v = self.b.id();
        self.b
            .module_mut()
            .types_global_values
            .push(rspirv::dr::Instruction::new(
                spirv::Op::Variable,
                Some(p),
                Some(v),
                vec![Operand::StorageClass(StorageClass::Input)],
            ));
        self.b
            .decorate(v, Decoration::BuiltIn, [Operand::BuiltIn(bi)]);
        self.inputs.insert(bi, (v, vec));
        v
    }

    /// Component `c` of a `uvec3` built-in (or the scalar built-in when `c` is `None`).
    fn builtin(&mut self, bi: BuiltIn, c: Option<u32>) -> R<Word> {
        if let (BuiltIn::NumWorkgroups, Some(c)) = (bi, c) {
            // The launch's grid, not this dispatch's ([`Lowered::grid_offset`]).
            return self.push_load(self.grid_member + c);
        }
        let v = self.input(bi, c.is_some());
        match c {
            Some(c) => {
                let x = self.b.load(self.t_v3, None, v, None, []).map_err(be)?;
                self.b
                    .composite_extract(self.t_u32, None, x, [c])
                    .map_err(be)
            }
            None => self.b.load(self.t_u32, None, v, None, []).map_err(be),
        }
    }

    /// Emits everything: the fault helper, the kernel, then the device-function instances.
    fn run(&mut self, kernel: u32) -> R<()> {
        self.fault_helper()?;
        let kid = self.b.id();
        let nparams = usize::from(self.k.params);
        let mems = (0..nparams)
            .map(|i| match self.k.regs[i] {
                Type::Buffer(_) => Some(Mem::Buffer(i as u16)),
                _ => None,
            })
            .collect();
        self.queue.push(Pending {
            func: kernel,
            id: kid,
            mems,
            callers: vec![],
        });
        while let Some(p) = self.queue.pop() {
            self.instances += 1;
            if self.instances > MAX_INSTANCES {
                return Err(format!(
                    "more than {MAX_INSTANCES} device-function instances"
                ));
            }
            FnCx::emit(self, p, kernel)?;
        }
        let entry = if self.target.drain_returns && self.wg_barriers {
            self.drain_wrapper(kid)?
        } else {
            kid
        };
        let interface: Vec<Word> = self.inputs.values().map(|&(v, _)| v).collect();
        self.b
            .entry_point(ExecutionModel::GLCompute, entry, "main", interface);
        self.b
            .execution_mode(entry, ExecutionMode::LocalSize, [1, 1, 1]);
        Ok(())
    }

    /// `Barrier.workgroup()`: a rendezvous that makes the workgroup's buffer and shared
    /// writes visible (XPU §5.4).
    fn workgroup_barrier(&mut self) -> R<()> {
        let wg = self.k32(Scope::Workgroup as u32);
        let sem = self.k32(
            (MemorySemantics::ACQUIRE_RELEASE
                | MemorySemantics::WORKGROUP_MEMORY
                | MemorySemantics::UNIFORM_MEMORY)
                .bits(),
        );
        self.b.control_barrier(wg, wg, sem).map_err(be)
    }

    fn finish(&mut self) -> Vec<u32> {
        use rspirv::binary::Assemble;
        let b = std::mem::replace(&mut self.b, Builder::new());
        b.module().assemble()
    }

    /// `void fault(uint site, uint lo, uint hi)`: records the fault of the calling item if it
    /// is the smallest `(g, l)` so far.
    fn fault_helper(&mut self) -> R<()> {
        let u = self.t_u32;
        let ft = self.b.type_function(self.t_void, [u, u, u, u]);
        let f = self
            .b
            .begin_function(self.t_void, None, FunctionControl::DONT_INLINE, ft)
            .map_err(be)?;
        self.fault_fn = f;
        let site = self.b.function_parameter(u).map_err(be)?;
        let lo = self.b.function_parameter(u).map_err(be)?;
        let hi = self.b.function_parameter(u).map_err(be)?;
        let len = self.b.function_parameter(u).map_err(be)?;
        self.b.begin_block(None).map_err(be)?;
        let wid: Vec<Word> = (0..3)
            .map(|c| self.builtin(BuiltIn::WorkgroupId, Some(c)))
            .collect::<R<_>>()?;
        let nwg: Vec<Word> = (0..2)
            .map(|c| self.builtin(BuiltIn::NumWorkgroups, Some(c)))
            .collect::<R<_>>()?;
        let lid: Vec<Word> = (0..3)
            .map(|c| self.builtin(BuiltIn::LocalInvocationId, Some(c)))
            .collect::<R<_>>()?;
        let l = self.builtin(BuiltIn::LocalInvocationIndex, None)?;
        // g = wx + wy*gx + wz*gx*gy, clamped to 22 bits (computed in 64 bits: no wrap).
        let t64 = self.u64t();
        let w64: Vec<Word> = wid
            .iter()
            .map(|&w| self.b.u_convert(t64, None, w))
            .collect::<Result<_, _>>()
            .map_err(be)?;
        let gx = self.b.u_convert(t64, None, nwg[0]).map_err(be)?;
        let gy = self.b.u_convert(t64, None, nwg[1]).map_err(be)?;
        let gxy = self.b.i_mul(t64, None, gx, gy).map_err(be)?;
        let a = self.b.i_mul(t64, None, w64[1], gx).map_err(be)?;
        let c = self.b.i_mul(t64, None, w64[2], gxy).map_err(be)?;
        let g = self.b.i_add(t64, None, w64[0], a).map_err(be)?;
        let g = self.b.i_add(t64, None, g, c).map_err(be)?;
        let gmax = self.konst(t64, (1 << 22) - 1);
        let g = self.glsl2(t64, GLOp::UMin, g, gmax)?;
        let g = self.b.u_convert(u, None, g).map_err(be)?;
        let k1023 = self.k32(1023);
        let l = self.glsl2(u, GLOp::UMin, l, k1023)?;
        let k10 = self.k32(10);
        let key = self.b.shift_left_logical(u, None, g, k10).map_err(be)?;
        let key = self.b.bitwise_or(u, None, key, l).map_err(be)?;
        let p0 = self.fault_ptr(0)?;
        let dev = self.k32(Scope::Device as u32);
        let relaxed = self.k32(0);
        let old = self
            .b
            .atomic_u_min(u, None, p0, dev, relaxed, key)
            .map_err(be)?;
        let won = self
            .b
            .u_less_than(self.t_bool, None, key, old)
            .map_err(be)?;
        let (yes, done) = (self.b.id(), self.b.id());
        self.b
            .selection_merge(done, SelectionControl::NONE)
            .map_err(be)?;
        self.b.branch_conditional(won, yes, done, []).map_err(be)?;
        self.b.begin_block(Some(yes)).map_err(be)?;
        let vals = [
            site, lo, hi, wid[0], wid[1], wid[2], lid[0], lid[1], lid[2], len,
        ];
        for (i, v) in vals.iter().enumerate() {
            let p = self.fault_ptr(i as u32 + 1)?;
            self.b.store(p, *v, None, []).map_err(be)?;
        }
        self.b.branch(done).map_err(be)?;
        self.b.begin_block(Some(done)).map_err(be)?;
        self.b.ret().map_err(be)?;
        self.b.end_function().map_err(be)?;
        Ok(())
    }

    fn fault_ptr(&mut self, word: u32) -> R<Word> {
        let p = self.ptr(StorageClass::StorageBuffer, self.t_u32);
        let z = self.k32(0);
        let w = self.k32(word);
        self.b
            .access_chain(p, None, self.fault_var, [z, w])
            .map_err(be)
    }

    fn glsl1(&mut self, t: Word, op: GLOp, x: Word) -> R<Word> {
        self.b
            .ext_inst(t, None, self.glsl, op as u32, [Operand::IdRef(x)])
            .map_err(be)
    }

    fn glsl2(&mut self, t: Word, op: GLOp, x: Word, y: Word) -> R<Word> {
        self.b
            .ext_inst(
                t,
                None,
                self.glsl,
                op as u32,
                [Operand::IdRef(x), Operand::IdRef(y)],
            )
            .map_err(be)
    }

    /// A parameter-block member's value.
    fn push_load(&mut self, member: u32) -> R<Word> {
        let (Some(var), Some(&t)) = (self.push_var, self.push_types.get(member as usize)) else {
            return Err("push constant missing".into());
        };
        let p = self.ptr(self.push_class, t);
        let m = self.k32(member);
        let a = self.b.access_chain(p, None, var, [m]).map_err(be)?;
        self.b.load(t, None, a, None, []).map_err(be)
    }
}

/// Whether kernel `k` or a function it calls uses a float32 atomic min/max (its float32
/// memory is then stored as bits, see [`FnCx::float_cas_loop`]).
fn uses_float_cas(m: &Module, k: &Function) -> bool {
    let mut seen = vec![false; m.functions.len()];
    let mut todo = vec![k];
    while let Some(f) = todo.pop() {
        for i in &f.code {
            match i.op {
                Op::AtomicMinF32 | Op::AtomicMaxF32 => return true,
                Op::Call => {
                    let c = usize::from(i.c);
                    if let (Some(s), Some(g)) = (seen.get_mut(c), m.functions.get(c)) {
                        if !*s {
                            *s = true;
                            todo.push(g);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    false
}

/// A control-flow region of one function: the bytecode's region table, plus the switches
/// [`find_switches`] recognises (the table has no switch regions).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Reg {
    kind: Kind,
    /// If: the conditional branch; loop: the condition test; switch: the first case test.
    header: u32,
    /// The first instruction after the region.
    merge: u32,
    /// Loop: the continue block; switch: the dispatch's final `jmp`; if: unused.
    cont: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    If,
    Loop,
    Switch,
}

/// The switches of `f` (statements and expressions), each as a region and the pcs of its case
/// dispatch. A switch compiles to its case tests (`jmpif` to a group, with only loads and
/// comparisons between them, none an `if` header), then `jmp` to the default group or the
/// end, then the groups in order; `break`s jump to the end. The end is the furthest forward
/// target of the dispatch and of the jumps inside the groups, short of the enclosing
/// region's merge and ignoring jumps to an enclosing loop's continue block or merge.
fn find_switches(f: &Function, regions: &[Reg]) -> Vec<(Reg, Vec<u32>)> {
    let pure = |op: Op| {
        let m = op.mnemonic();
        matches!(op, Op::LoadI | Op::LoadK | Op::Mov | Op::LNot)
            || ["eq.", "ne.", "lt.", "le."]
                .iter()
                .any(|p| m.starts_with(p))
            || m == "and.bool"
            || m == "or.bool"
    };
    let headers: HashSet<u32> = regions.iter().map(|r| r.header).collect();
    let n = f.code.len() as u32;
    let mut out = vec![];
    for (j, ins) in f.code.iter().enumerate() {
        let j = j as u32;
        if ins.op != Op::Jmp || ins.bc() <= j {
            continue;
        }
        let mut tests = vec![j];
        let mut k = j;
        while k > 0 {
            let i = f.code[k as usize - 1];
            if i.op == Op::JmpIf && i.bc() > j && !headers.contains(&(k - 1)) {
                tests.push(k - 1);
            } else if !pure(i.op) || i.op.is_branch() {
                break;
            }
            k -= 1;
        }
        if tests.len() < 2 {
            continue;
        }
        let header = *tests.iter().min().unwrap_or(&j);
        // The innermost enclosing region bounds the switch; its loops' exits are not ends.
        let outer: Vec<&Reg> = regions
            .iter()
            .filter(|r| r.header <= header && header < r.merge)
            .collect();
        let bound = outer.iter().map(|r| r.merge).min().unwrap_or(n);
        let exits: HashSet<u32> = outer
            .iter()
            .filter(|r| r.kind == Kind::Loop)
            .flat_map(|r| [r.cont, r.merge])
            .collect();
        let mut end = tests
            .iter()
            .map(|&t| f.code[t as usize].bc())
            .max()
            .unwrap_or(j + 1);
        let mut pc = j + 1;
        while pc < end && pc < n {
            let i = f.code[pc as usize];
            if i.op.is_branch() {
                let t = i.bc();
                if t > end && t <= bound && !exits.contains(&t) {
                    end = t;
                }
            }
            pc += 1;
        }
        if end > bound || regions.iter().any(|r| r.header > header && r.header <= j) {
            continue;
        }
        out.push((
            Reg {
                kind: Kind::Switch,
                header,
                merge: end,
                cont: j,
            },
            tests,
        ));
    }
    out
}

/// Label plan of one function instance.
struct Labels {
    /// Label of the basic block starting at each leader pc (`code.len()`: the end block).
    block: HashMap<u32, Word>,
    /// Per region (index into the sorted table): merge label and loop header label.
    merge: Vec<Word>,
    head: Vec<Word>,
    /// Per region: a multi-level exit (a labelled `break`/`continue` of an outer loop) leaves
    /// this loop, so its merge block tests the pending-exit variable.
    exit_check: Vec<bool>,
    /// The `Function` variable holding the pending multi-level exit (target pc + 1; 0: none).
    exit_var: Option<Word>,
}

/// Emission of one function instance.
struct FnCx<'a, 'm> {
    cx: &'a mut Cx<'m>,
    fi: u32,
    f: &'m Function,
    vars: Vec<Option<Word>>,
    mems: Vec<Option<Mem>>,
    callers: Vec<(u32, u32)>,
    /// Regions sorted by (header, outermost first): the region table plus the switches.
    regions: Vec<Reg>,
    labels: Labels,
    is_kernel: bool,
    /// The `jmpif`s and final `jmp` of each switch's case dispatch, by pc: region index.
    dispatch: HashMap<u32, usize>,
    /// The dispatch being emitted: (a case matched so far, the chosen target pc).
    disp: Option<(Word, Word)>,
}

impl<'a, 'm> FnCx<'a, 'm> {
    fn emit(cx: &'a mut Cx<'m>, p: Pending, kernel: u32) -> R<()> {
        let m = cx.m;
        let Some(f) = m.functions.get(p.func as usize) else {
            return Err(format!("call of missing function {}", p.func));
        };
        if p.func != kernel && f.kind != FnKind::Device {
            return Err(format!("`{}` is not a device function", f.name));
        }
        let mut regions: Vec<Reg> = f
            .regions
            .iter()
            .map(|r| Reg {
                kind: match r.kind {
                    RegionKind::If => Kind::If,
                    RegionKind::Loop => Kind::Loop,
                },
                header: r.header,
                merge: r.merge,
                cont: r.cont,
            })
            .collect();
        let switches = find_switches(f, &regions);
        regions.extend(switches.iter().map(|(r, _)| *r));
        regions.sort_by_key(|r| (r.header, std::cmp::Reverse(r.merge)));
        let mut dispatch = HashMap::new();
        for (r, pcs) in &switches {
            let Some(i) = regions.iter().position(|x| x == r) else {
                continue;
            };
            for &pc in pcs {
                dispatch.insert(pc, i);
            }
        }
        let mut fc = FnCx {
            cx,
            fi: p.func,
            f,
            vars: vec![],
            mems: vec![None; f.regs.len()],
            callers: p.callers,
            regions,
            labels: Labels {
                block: HashMap::new(),
                merge: vec![],
                head: vec![],
                exit_check: vec![],
                exit_var: None,
            },
            is_kernel: p.func == kernel,
            dispatch,
            disp: None,
        };
        for (i, m) in p.mems.into_iter().enumerate() {
            if let Some(slot) = fc.mems.get_mut(i) {
                *slot = m;
            }
        }
        fc.resolve_mems()?;
        fc.body(p.id)
    }

    /// Binds every buffer/shared register to the one memory it can hold.
    fn resolve_mems(&mut self) -> R<()> {
        let f = self.f;
        for i in &f.code {
            if i.op == Op::SharedRef {
                let slot = usize::from(i.a);
                let s = Some(Mem::Shared(i.b));
                match self.mems.get(slot) {
                    Some(None) => self.mems[slot] = s,
                    Some(x) if *x == s => {}
                    _ => return Err("a shared register names several arrays".into()),
                }
            }
        }
        loop {
            let mut changed = false;
            for i in &f.code {
                if i.op != Op::Mov {
                    continue;
                }
                let (a, b) = (usize::from(i.a), usize::from(i.b));
                let Some(t) = f.regs.get(a) else { continue };
                if !matches!(t, Type::Buffer(_) | Type::Shared(_)) {
                    continue;
                }
                let Some(&src) = self.mems.get(b) else {
                    continue;
                };
                match (self.mems[a], src) {
                    (None, Some(_)) => {
                        self.mems[a] = src;
                        changed = true;
                    }
                    (Some(x), Some(y)) if x != y => {
                        // (SPIR-V's logical addressing has no pointer to choose at run
                        // time; docs/notes/conformance-gaps.md, "Still open".)
                        let what = if matches!(t, Type::Shared(_)) {
                            "shared arrays"
                        } else {
                            "buffers"
                        };
                        return Err(format!(
                            "`{}` chooses between {what} at run time (`?:`): that needs variable pointers, which the vulkan backend does not emit (XPU §8.4)",
                            f.simple_name()
                        ));
                    }
                    _ => {}
                }
            }
            if !changed {
                return Ok(());
            }
        }
    }

    fn b(&mut self) -> &mut Builder {
        &mut self.cx.b
    }

    fn reg_scalar(&self, r: u16) -> R<Scalar> {
        match self.f.regs.get(usize::from(r)) {
            Some(Type::Scalar(s)) => Ok(*s),
            Some(t) => Err(format!("register r{r} of type {t} used as a value")),
            None => Err(format!("register r{r} out of range")),
        }
    }

    fn load(&mut self, r: u16) -> R<Word> {
        let s = self.reg_scalar(r)?;
        let t = self.cx.reg_ty(s);
        let Some(Some(v)) = self.vars.get(usize::from(r)).copied() else {
            return Err(format!("register r{r} has no variable"));
        };
        self.b().load(t, None, v, None, []).map_err(be)
    }

    fn store(&mut self, r: u16, x: Word) -> R<()> {
        let Some(Some(v)) = self.vars.get(usize::from(r)).copied() else {
            return Err(format!("register r{r} has no variable"));
        };
        self.b().store(v, x, None, []).map_err(be)
    }

    fn mem_of(&self, r: u16) -> R<Mem> {
        self.mems
            .get(usize::from(r))
            .copied()
            .flatten()
            .ok_or_else(|| format!("register r{r} of `{}` names no buffer", self.f.name))
    }

    /// Plans labels, then emits the function.
    fn body(&mut self, id: Word) -> R<()> {
        let f = self.f;
        let n = f.code.len() as u32;
        for r in &self.regions {
            let ok = match r.kind {
                Kind::Loop | Kind::Switch => r.header <= r.cont && r.cont < r.merge && r.merge <= n,
                Kind::If => r.header < r.merge && r.merge <= n,
            };
            if !ok {
                return Err(format!("malformed region {r:?} in `{}`", f.name));
            }
        }
        // Leaders.
        let mut leaders: Vec<u32> = vec![0, n];
        for (pc, i) in f.code.iter().enumerate() {
            let pc = pc as u32;
            if i.op.is_branch() {
                leaders.push(i.bc());
            }
            // A switch's case tests stay in one block (they choose the case; see `dispatch`).
            let test = i.op == Op::JmpIf && self.dispatch.contains_key(&pc);
            if (i.op.is_branch() || i.op.is_terminator()) && !test {
                leaders.push(pc + 1);
            }
        }
        for r in &self.regions {
            leaders.extend([r.header, r.merge]);
            if r.kind == Kind::Loop {
                leaders.push(r.cont);
            }
        }
        leaders.sort_unstable();
        leaders.dedup();
        for &l in &leaders {
            if l > n {
                return Err(format!("jump outside the code of `{}`", f.name));
            }
            let id = self.b().id();
            self.labels.block.insert(l, id);
        }
        for _ in 0..self.regions.len() {
            let (m, h) = (self.b().id(), self.b().id());
            self.labels.merge.push(m);
            self.labels.head.push(h);
        }
        self.plan_exits();

        // Signature.
        let ret = match f.ret {
            None => self.cx.t_void,
            Some(Type::Scalar(s)) if !self.is_kernel => self.cx.reg_ty(s),
            Some(t) => return Err(format!("device function returning {t}")),
        };
        let mut ptys = vec![];
        let np = usize::from(f.params);
        for r in 0..np {
            if let Some(Type::Scalar(s)) = f.regs.get(r) {
                ptys.push(self.cx.reg_ty(*s));
            }
        }
        if self.is_kernel {
            ptys.clear();
        }
        let ft = self.b().type_function(ret, ptys.iter().copied());
        self.b()
            .begin_function(ret, Some(id), FunctionControl::NONE, ft)
            .map_err(be)?;
        let mut pvals = vec![];
        for &t in &ptys {
            pvals.push(self.b().function_parameter(t).map_err(be)?);
        }
        self.b().begin_block(None).map_err(be)?;
        // Variables (all in the entry block), zero-initialised like the cpu backend's frames.
        for t in &f.regs {
            let v = match t {
                Type::Scalar(s) => {
                    let ty = self.cx.reg_ty(*s);
                    let p = self.cx.ptr(StorageClass::Function, ty);
                    let z = self.cx.konst(ty, 0);
                    Some(self.b().variable(p, None, StorageClass::Function, Some(z)))
                }
                _ => None,
            };
            self.vars.push(v);
        }
        if self.labels.exit_check.contains(&true) {
            let u = self.cx.t_u32;
            let p = self.cx.ptr(StorageClass::Function, u);
            let z = self.cx.k32(0);
            self.labels.exit_var =
                Some(self.b().variable(p, None, StorageClass::Function, Some(z)));
        }
        // Parameters.
        if self.is_kernel {
            for r in 0..np {
                if let Some(Type::Scalar(s)) = f.regs.get(r) {
                    let member = self.cx.push_member[r];
                    let raw = self.cx.push_load(member)?;
                    let v = self.push_value(*s, raw)?;
                    self.store(r as u16, v)?;
                }
            }
        } else {
            let mut it = pvals.into_iter();
            for r in 0..np {
                if let Some(Type::Scalar(_)) = f.regs.get(r) {
                    let v = it.next().ok_or("parameter count")?;
                    self.store(r as u16, v)?;
                }
            }
        }
        let first = self.entry_label(0);
        self.b().branch(first).map_err(be)?;

        // Blocks in pc order.
        let mut open = false;
        for pc in 0..=n {
            if self.labels.block.contains_key(&pc) {
                if open {
                    self.jump(pc.saturating_sub(1), pc)?;
                }
                self.begin_leader(pc)?;
                open = true;
                if pc == n {
                    self.b().unreachable().map_err(be)?;
                    break;
                }
            }
            if !open {
                continue;
            }
            open = self.instr(pc)?;
        }
        self.b().end_function().map_err(be)?;
        Ok(())
    }

    /// Emits the merge chain and loop headers at leader `pc`, then begins its block.
    fn begin_leader(&mut self, pc: u32) -> R<()> {
        // Merge blocks of regions ending here, innermost (largest header) first.
        let mut ending: Vec<usize> = (0..self.regions.len())
            .filter(|&i| self.regions[i].merge == pc)
            .collect();
        ending.reverse();
        for (k, &i) in ending.iter().enumerate() {
            let next = match ending.get(k + 1) {
                Some(&j) => self.labels.merge[j],
                None => self.entry_label(pc),
            };
            let m = self.labels.merge[i];
            self.b().begin_block(Some(m)).map_err(be)?;
            if self.labels.exit_check.get(i) == Some(&true) {
                self.exit_check(i, next)?;
            } else {
                self.b().branch(next).map_err(be)?;
            }
        }
        // Loop headers starting here, outermost first.
        let heads: Vec<usize> = (0..self.regions.len())
            .filter(|&i| self.regions[i].header == pc && self.regions[i].kind == Kind::Loop)
            .collect();
        for (k, &i) in heads.iter().enumerate() {
            let next = match heads.get(k + 1) {
                Some(&j) => self.labels.head[j],
                None => self.labels.block[&pc],
            };
            let r = self.regions[i];
            let h = self.labels.head[i];
            let (mrg, cont) = (self.labels.merge[i], self.labels.block[&r.cont]);
            self.b().begin_block(Some(h)).map_err(be)?;
            self.b()
                .loop_merge(mrg, cont, LoopControl::NONE, [])
                .map_err(be)?;
            self.b().branch(next).map_err(be)?;
        }
        let l = self.labels.block[&pc];
        self.b().begin_block(Some(l)).map_err(be)?;
        Ok(())
    }

    /// Where control entering `pc` from outside its loops goes: the outermost loop header
    /// starting there, else the block.
    fn entry_label(&self, pc: u32) -> Word {
        (0..self.regions.len())
            .find(|&i| self.regions[i].header == pc && self.regions[i].kind == Kind::Loop)
            .map_or_else(|| self.labels.block[&pc], |i| self.labels.head[i])
    }

    /// Regions containing `pc`, innermost first.
    fn containing(&self, pc: u32) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.regions.len())
            .filter(|&i| self.regions[i].header <= pc && pc < self.regions[i].merge)
            .collect();
        v.reverse();
        v
    }

    /// If a jump from `src` to `t` leaves several loops at once (a labelled `break` to the
    /// merge of an outer loop, or a labelled `continue` to its continue block), the region
    /// index of that outer loop and of the innermost loop containing `src`.
    fn multi_exit(&self, src: u32, t: u32) -> Option<(usize, usize)> {
        let inside = self.containing(src);
        let loops: Vec<usize> = inside
            .iter()
            .copied()
            .filter(|&i| self.regions[i].kind == Kind::Loop)
            .collect();
        let inner = *loops.first()?;
        loops.iter().skip(1).find_map(|&e| {
            let r = self.regions[e];
            // Nested loops ending at the same pc: the innermost merge chain already gets there.
            let leaves =
                (t == r.merge && self.regions[inner].merge != t) || (t == r.cont && src < r.cont);
            leaves.then_some((e, inner))
        })
    }

    /// Marks the loops every multi-level exit of the function leaves: their merge blocks test
    /// the pending exit ([`FnCx::exit_check`]).
    fn plan_exits(&mut self) {
        self.labels.exit_check = vec![false; self.regions.len()];
        let f = self.f;
        for (pc, i) in f.code.iter().enumerate() {
            let pc = pc as u32;
            let mut targets = vec![];
            if i.op.is_branch() {
                targets.push(i.bc());
            }
            if !i.op.is_terminator() && i.op != Op::Jmp {
                targets.push(pc + 1);
            }
            for t in targets {
                let Some((outer, _)) = self.multi_exit(pc, t) else {
                    continue;
                };
                let oh = self.regions[outer].header;
                for j in self.containing(pc) {
                    let r = self.regions[j];
                    if r.kind == Kind::Loop && r.header >= oh && j != outer {
                        self.labels.exit_check[j] = true;
                    }
                }
            }
        }
    }

    /// An unconditional jump (or fall-through) from `src` to `t`; a multi-level exit records
    /// its target in the pending-exit variable and breaks out of the innermost loop.
    fn jump(&mut self, src: u32, t: u32) -> R<()> {
        if let Some((_, inner)) = self.multi_exit(src, t) {
            let var = self.labels.exit_var.ok_or("exit variable missing")?;
            let code = self.cx.k32(t + 1);
            self.b().store(var, code, None, []).map_err(be)?;
            let m = self.labels.merge[inner];
            return self.b().branch(m).map_err(be);
        }
        let l = self.target(src, t)?;
        self.b().branch(l).map_err(be)
    }

    /// The merge block of loop `i`, left by a multi-level exit: a pending exit to the enclosing
    /// loop's continue block or merge goes there (and is cleared); any other pending exit
    /// breaks the enclosing loop too; without one, control goes on to `next`.
    fn exit_check(&mut self, i: usize, next: Word) -> R<()> {
        let hdr = self.regions[i].header;
        let Some(e) = self
            .containing(hdr)
            .into_iter()
            .find(|&j| j != i && self.regions[j].kind == Kind::Loop)
        else {
            return Err(format!(
                "multi-level exit without an enclosing loop in `{}`",
                self.f.name
            ));
        };
        let r = self.regions[e];
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        let var = self.labels.exit_var.ok_or("exit variable missing")?;
        let p = self.b().load(u, None, var, None, []).map_err(be)?;
        let kc = self.cx.k32(r.cont + 1);
        let km = self.cx.k32(r.merge + 1);
        let z = self.cx.k32(0);
        let to_cont = self.b().i_equal(tb, None, p, kc).map_err(be)?;
        let to_merge = self.b().i_equal(tb, None, p, km).map_err(be)?;
        let here = self
            .b()
            .logical_or(tb, None, to_cont, to_merge)
            .map_err(be)?;
        let left = self.b().select(u, None, here, z, p).map_err(be)?;
        self.b().store(var, left, None, []).map_err(be)?;
        let leave = self.b().i_not_equal(tb, None, p, z).map_err(be)?;
        let (cont, merge) = (self.labels.block[&r.cont], self.labels.merge[e]);
        let (mid1, mid2) = (self.b().id(), self.b().id());
        self.b()
            .selection_merge(mid1, SelectionControl::NONE)
            .map_err(be)?;
        self.b()
            .branch_conditional(to_cont, cont, mid1, [])
            .map_err(be)?;
        self.b().begin_block(Some(mid1)).map_err(be)?;
        self.b()
            .selection_merge(mid2, SelectionControl::NONE)
            .map_err(be)?;
        self.b()
            .branch_conditional(leave, merge, mid2, [])
            .map_err(be)?;
        self.b().begin_block(Some(mid2)).map_err(be)?;
        self.b().branch(next).map_err(be)
    }

    /// The label a jump (or fall-through) from `src` to `t` must branch to.
    fn target(&self, src: u32, t: u32) -> R<Word> {
        let bad = || {
            format!(
                "unstructured jump from pc {src} to pc {t} in `{}`",
                self.f.name
            )
        };
        let inside = self.containing(src);
        for (depth, &i) in inside.iter().enumerate() {
            let r = self.regions[i];
            let crossed_loop = inside[..depth]
                .iter()
                .any(|&j| self.regions[j].kind == Kind::Loop);
            if r.merge == t {
                // Leaving region `r`: allowed for its own merge, or a break from selections
                // nested in a loop.
                if depth > 0 && (crossed_loop || r.kind == Kind::If) {
                    // Where an `if` ends may also be where its loop continues (`if (a) { …
                    // if (b) { continue; } … }` as a loop's last statement): a continue edge.
                    let innermost_loop = inside[depth..]
                        .iter()
                        .map(|&j| self.regions[j])
                        .find(|l| l.kind == Kind::Loop);
                    if !crossed_loop && innermost_loop.is_some_and(|l| l.cont == t && src < l.cont)
                    {
                        return Ok(self.labels.block[&t]);
                    }
                    return Err(bad());
                }
                return Ok(self.labels.merge[i]);
            }
            if r.kind == Kind::Loop {
                if t == r.cont && src < r.cont {
                    if crossed_loop {
                        return Err(bad());
                    }
                    return Ok(self.labels.block[&t]);
                }
                if t == r.header {
                    if src >= r.cont && depth == 0 {
                        return Ok(self.labels.head[i]);
                    }
                    return Err(bad());
                }
            }
        }
        // A forward jump inside the innermost region, possibly into a nested region's header.
        if t <= src {
            return Err(bad());
        }
        if let Some(&i) = inside.first() {
            let r = self.regions[i];
            if t >= r.merge || (r.kind == Kind::Loop && src < r.cont && t > r.cont) {
                return Err(bad());
            }
        }
        for &j in &self.containing(t) {
            if !inside.contains(&j) && self.regions[j].header != t {
                return Err(bad());
            }
        }
        self.labels
            .block
            .get(&t)
            .copied()
            .map(|_| self.entry_label(t))
            .ok_or_else(bad)
    }

    /// A scalar parameter from its push type.
    fn push_value(&mut self, s: Scalar, raw: Word) -> R<Word> {
        if s == Scalar::Bool {
            let z = self.cx.k32(0);
            let tb = self.cx.t_bool;
            return self.b().i_not_equal(tb, None, raw, z).map_err(be);
        }
        // Re-canonicalise: the host passes canonical cells, but a narrow value is cheap to
        // make exact.
        if s.is_int() && s.bits() < 32 {
            return self.canon(s, raw);
        }
        Ok(raw)
    }

    /// Re-canonicalises a 32-bit word holding a value of `s` (narrow types only change).
    fn canon(&mut self, s: Scalar, x: Word) -> R<Word> {
        let u = self.cx.t_u32;
        match s {
            Scalar::I8 | Scalar::I16 => {
                let sh = self.cx.k32(32 - s.bits());
                let y = self.b().shift_left_logical(u, None, x, sh).map_err(be)?;
                self.b().shift_right_arithmetic(u, None, y, sh).map_err(be)
            }
            Scalar::U8 | Scalar::U16 => {
                let mask = self.cx.k32(((1u64 << s.bits()) - 1) as u32);
                self.b().bitwise_and(u, None, x, mask).map_err(be)
            }
            _ => Ok(x),
        }
    }

    /// The value of register `r` (any integer-like type) as a 64-bit canonical cell.
    fn as_u64(&mut self, r: u16) -> R<Word> {
        let s = self.reg_scalar(r)?;
        let x = self.load(r)?;
        let t64 = self.cx.u64t();
        match s {
            Scalar::I64 | Scalar::U64 => Ok(x),
            Scalar::Bool => {
                let (one, zero) = (self.cx.konst(t64, 1), self.cx.konst(t64, 0));
                self.b().select(t64, None, x, one, zero).map_err(be)
            }
            // Sign extension by shifts, not `OpSConvert`: lavapipe (Mesa 22.3) miscompiles a
            // comparison of an `OpSConvert` result with a constant (`(int64) s < 0` is false
            // for every negative `s`; `tests/programs/xpu/simd_affine_compare.cajeta`).
            _ if s.is_signed() => {
                let wide = self.b().u_convert(t64, None, x).map_err(be)?;
                let k32 = self.cx.konst(t64, 32);
                let high = self
                    .b()
                    .shift_left_logical(t64, None, wide, k32)
                    .map_err(be)?;
                self.b()
                    .shift_right_arithmetic(t64, None, high, k32)
                    .map_err(be)
            }
            _ => self.b().u_convert(t64, None, x).map_err(be),
        }
    }

    /// The value of register `r` (any integer-like type) as a 32-bit word (truncated).
    fn as_u32(&mut self, r: u16) -> R<Word> {
        let s = self.reg_scalar(r)?;
        let x = self.load(r)?;
        let u = self.cx.t_u32;
        match s {
            Scalar::I64 | Scalar::U64 => self.b().u_convert(u, None, x).map_err(be),
            Scalar::Bool => {
                let (one, zero) = (self.cx.k32(1), self.cx.k32(0));
                self.b().select(u, None, x, one, zero).map_err(be)
            }
            _ => Ok(x),
        }
    }

    /// Emits instruction `pc`; returns whether its block is still open.
    fn instr(&mut self, pc: u32) -> R<bool> {
        let i = self.f.code[pc as usize];
        let (a, b, c) = (i.a, i.b, i.c);
        let tb = self.cx.t_bool;
        let u = self.cx.t_u32;
        macro_rules! bin {
            ($s:expr, $f:ident) => {{
                let s = $s;
                let x = self.load(b)?;
                let y = self.load(c)?;
                let t = self.cx.reg_ty(s);
                let v = self.b().$f(t, None, x, y).map_err(be)?;
                let v = self.canon(s, v)?;
                self.store(a, v)?;
            }};
        }
        macro_rules! fbin {
            ($s:expr, $f:ident) => {{
                let x = self.load(b)?;
                let y = self.load(c)?;
                let t = self.cx.reg_ty($s);
                let v = self.b().$f(t, None, x, y).map_err(be)?;
                self.b().decorate(v, Decoration::NoContraction, []);
                self.store(a, v)?;
            }};
        }
        macro_rules! cmp {
            ($f:ident) => {{
                let x = self.load(b)?;
                let y = self.load(c)?;
                let v = self.b().$f(tb, None, x, y).map_err(be)?;
                self.store(a, v)?;
            }};
        }
        use Scalar::*;
        if let Some(&ri) = self.dispatch.get(&pc) {
            return self.dispatch_step(pc, ri);
        }
        match i.op {
            Op::Nop | Op::LoadNull | Op::SharedRef => {}
            Op::Mov => {
                // Buffer and shared registers were resolved statically.
                if self.reg_scalar(a).is_ok() {
                    let x = self.load(b)?;
                    self.store(a, x)?;
                }
            }
            Op::LoadK => {
                let s = self.reg_scalar(a)?;
                let bits = match self.cx.m.consts.get(i.bc() as usize) {
                    Some(Const::Bits(x)) => *x,
                    _ => return Err(format!("constant {} is not a number", i.bc())),
                };
                let v = self.register_const(s, bits)?;
                self.store(a, v)?;
            }
            Op::LoadI => {
                let s = self.reg_scalar(a)?;
                let v = self.register_const(s, i.bc() as i32 as i64 as u64)?;
                self.store(a, v)?;
            }
            Op::Jmp => {
                self.jump(pc, i.bc())?;
                return Ok(false);
            }
            Op::JmpIf | Op::JmpIfNot => {
                self.cond_branch(pc, i.op == Op::JmpIf, a, i.bc())?;
                return Ok(false);
            }
            Op::Ret => {
                let x = self.load(a)?;
                if self.is_kernel {
                    self.b().ret().map_err(be)?;
                } else {
                    self.b().ret_value(x).map_err(be)?;
                }
                return Ok(false);
            }
            Op::RetVoid => {
                self.b().ret().map_err(be)?;
                return Ok(false);
            }
            Op::Call => self.call(pc, a, b, c)?,

            // Integer arithmetic at every width.
            Op::AddI8 => bin!(I8, i_add),
            Op::SubI8 => bin!(I8, i_sub),
            Op::MulI8 => bin!(I8, i_mul),
            Op::AddU8 => bin!(U8, i_add),
            Op::SubU8 => bin!(U8, i_sub),
            Op::MulU8 => bin!(U8, i_mul),
            Op::AddI16 => bin!(I16, i_add),
            Op::SubI16 => bin!(I16, i_sub),
            Op::MulI16 => bin!(I16, i_mul),
            Op::AddU16 => bin!(U16, i_add),
            Op::SubU16 => bin!(U16, i_sub),
            Op::MulU16 => bin!(U16, i_mul),
            Op::AddI32 => bin!(I32, i_add),
            Op::SubI32 => bin!(I32, i_sub),
            Op::MulI32 => bin!(I32, i_mul),
            Op::AddU32 => bin!(U32, i_add),
            Op::SubU32 => bin!(U32, i_sub),
            Op::MulU32 => bin!(U32, i_mul),
            Op::AddI64 => bin!(I64, i_add),
            Op::SubI64 => bin!(I64, i_sub),
            Op::MulI64 => bin!(I64, i_mul),
            Op::AddU64 => bin!(U64, i_add),
            Op::SubU64 => bin!(U64, i_sub),
            Op::MulU64 => bin!(U64, i_mul),
            Op::DivI8 | Op::DivI16 | Op::DivI32 | Op::DivI64 => self.sdiv(a, b, c, false)?,
            Op::RemI8 | Op::RemI16 | Op::RemI32 | Op::RemI64 => self.sdiv(a, b, c, true)?,
            Op::DivU8 | Op::DivU16 | Op::DivU32 | Op::DivU64 => self.udiv(a, b, c, false)?,
            Op::RemU8 | Op::RemU16 | Op::RemU32 | Op::RemU64 => self.udiv(a, b, c, true)?,
            Op::NegI8
            | Op::NegU8
            | Op::NegI16
            | Op::NegU16
            | Op::NegI32
            | Op::NegU32
            | Op::NegI64
            | Op::NegU64 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let v = self.b().s_negate(t, None, x).map_err(be)?;
                let v = self.canon(s, v)?;
                self.store(a, v)?;
            }
            Op::AddImmI32 | Op::AddImmI64 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let k = self.scalar_const(s, c as i16 as i64 as u64);
                let v = self.b().i_add(t, None, x, k).map_err(be)?;
                self.store(a, v)?;
            }

            // Floats.
            Op::AddF32 => fbin!(F32, f_add),
            Op::SubF32 => fbin!(F32, f_sub),
            Op::MulF32 => fbin!(F32, f_mul),
            Op::DivF32 => fbin!(F32, f_div),
            Op::RemF32 | Op::RemF64 => {
                let s = if i.op == Op::RemF64 { F64 } else { F32 };
                let x = self.load(b)?;
                let y = self.load(c)?;
                let v = self.fmod(s, x, y)?;
                self.store(a, v)?;
            }
            Op::AddF64 => fbin!(F64, f_add),
            Op::SubF64 => fbin!(F64, f_sub),
            Op::MulF64 => fbin!(F64, f_mul),
            Op::DivF64 => fbin!(F64, f_div),
            Op::NegF32 | Op::NegF64 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let v = self.b().f_negate(t, None, x).map_err(be)?;
                self.store(a, v)?;
            }

            // Shifts, bitwise, min/max/abs.
            Op::ShlI8
            | Op::ShlU8
            | Op::ShlI16
            | Op::ShlU16
            | Op::ShlI32
            | Op::ShlU32
            | Op::ShlI64
            | Op::ShlU64 => self.shift(a, b, c, 0)?,
            Op::ShrI8 | Op::ShrI16 | Op::ShrI32 | Op::ShrI64 => self.shift(a, b, c, 1)?,
            Op::ShrU8
            | Op::ShrU16
            | Op::ShrU32
            | Op::ShrU64
            | Op::UshrU8
            | Op::UshrU16
            | Op::UshrU32
            | Op::UshrU64
            | Op::UshrI64 => self.shift(a, b, c, 2)?,
            Op::UshrI8 | Op::UshrI16 | Op::UshrI32 => self.shift(a, b, c, 3)?,
            Op::NotI8
            | Op::NotI16
            | Op::NotI32
            | Op::NotI64
            | Op::NotU64
            | Op::NotU8
            | Op::NotU16
            | Op::NotU32 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let v = self.b().not(t, None, x).map_err(be)?;
                let v = self.canon(s, v)?;
                self.store(a, v)?;
            }
            Op::AndI8
            | Op::AndU8
            | Op::AndI16
            | Op::AndU16
            | Op::AndI32
            | Op::AndU32
            | Op::AndI64
            | Op::AndU64 => bin!(self.reg_scalar(a)?, bitwise_and),
            Op::OrI8
            | Op::OrU8
            | Op::OrI16
            | Op::OrU16
            | Op::OrI32
            | Op::OrU32
            | Op::OrI64
            | Op::OrU64 => bin!(self.reg_scalar(a)?, bitwise_or),
            Op::XorI8
            | Op::XorU8
            | Op::XorI16
            | Op::XorU16
            | Op::XorI32
            | Op::XorU32
            | Op::XorI64
            | Op::XorU64 => bin!(self.reg_scalar(a)?, bitwise_xor),
            Op::AndBool => cmp!(logical_and),
            Op::OrBool => cmp!(logical_or),
            Op::XorBool | Op::NeBool => cmp!(logical_not_equal),
            Op::EqBool => cmp!(logical_equal),
            Op::LNot => {
                let x = self.load(b)?;
                let v = self.b().logical_not(tb, None, x).map_err(be)?;
                self.store(a, v)?;
            }
            Op::MinI8 | Op::MinI16 | Op::MinI32 | Op::MinI64 => self.minmax(a, b, c, GLOp::SMin)?,
            Op::MaxI8 | Op::MaxI16 | Op::MaxI32 | Op::MaxI64 => self.minmax(a, b, c, GLOp::SMax)?,
            Op::MinU8 | Op::MinU16 | Op::MinU32 | Op::MinU64 => self.minmax(a, b, c, GLOp::UMin)?,
            Op::MaxU8 | Op::MaxU16 | Op::MaxU32 | Op::MaxU64 => self.minmax(a, b, c, GLOp::UMax)?,
            Op::MinF32 | Op::MinF64 => self.minmax(a, b, c, GLOp::NMin)?,
            Op::MaxF32 | Op::MaxF64 => self.minmax(a, b, c, GLOp::NMax)?,
            Op::AbsI8 | Op::AbsI16 | Op::AbsI32 | Op::AbsI64 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let z = self.cx.konst(t, 0);
                let neg = self.b().s_less_than(tb, None, x, z).map_err(be)?;
                let nx = self.b().s_negate(t, None, x).map_err(be)?;
                let v = self.b().select(t, None, neg, nx, x).map_err(be)?;
                let v = self.canon(s, v)?;
                self.store(a, v)?;
            }

            // Comparisons: one compare on canonical words serves every width.
            Op::EqChar
            | Op::EqI8
            | Op::EqU8
            | Op::EqI16
            | Op::EqU16
            | Op::EqI32
            | Op::EqU32
            | Op::EqI64
            | Op::EqU64 => cmp!(i_equal),
            Op::NeChar
            | Op::NeI8
            | Op::NeU8
            | Op::NeI16
            | Op::NeU16
            | Op::NeI32
            | Op::NeU32
            | Op::NeI64
            | Op::NeU64 => cmp!(i_not_equal),
            Op::LtI8 | Op::LtI16 | Op::LtI32 | Op::LtI64 => cmp!(s_less_than),
            Op::LeI8 | Op::LeI16 | Op::LeI32 | Op::LeI64 => cmp!(s_less_than_equal),
            Op::LtU8 | Op::LtU16 | Op::LtU32 | Op::LtU64 => cmp!(u_less_than),
            Op::LeU8 | Op::LeU16 | Op::LeU32 | Op::LeU64 => cmp!(u_less_than_equal),
            Op::EqF32 | Op::EqF64 => cmp!(f_ord_equal),
            Op::NeF32 | Op::NeF64 => cmp!(f_unord_not_equal),
            Op::LtF32 | Op::LtF64 => cmp!(f_ord_less_than),
            Op::LeF32 | Op::LeF64 => cmp!(f_ord_less_than_equal),

            // Conversions.
            Op::WrapI8
            | Op::WrapU8
            | Op::WrapI16
            | Op::WrapU16
            | Op::WrapI32
            | Op::WrapU32
            | Op::WrapChar => {
                let s = self.reg_scalar(a)?;
                let x = self.as_u32(b)?;
                let v = self.canon(s, x)?;
                self.store(a, v)?;
            }
            Op::WrapI64 | Op::WrapU64 => {
                let v = self.as_u64(b)?;
                self.store(a, v)?;
            }
            Op::SToF32 | Op::UToF32 | Op::SToF64 | Op::UToF64 => {
                let signed_op = matches!(i.op, Op::SToF32 | Op::SToF64);
                let ds = self.reg_scalar(a)?;
                let dt = self.cx.reg_ty(ds);
                let ss = self.reg_scalar(b)?;
                let wide = matches!(ss, I64 | U64);
                // An integer the driver can fold (`l - l`) must not become a constant float
                // (see [`Target::opaque_float_constants`]).
                let v = if !wide && !ss.is_signed() {
                    // Non-negative 32-bit value: both readings agree.
                    let x = self.as_u32(b)?;
                    let x = self.opaque_int(x, false)?;
                    self.b().convert_u_to_f(dt, None, x).map_err(be)?
                } else if !wide && signed_op {
                    let x = self.load(b)?;
                    let x = self.opaque_int(x, false)?;
                    self.b().convert_s_to_f(dt, None, x).map_err(be)?
                } else {
                    let x = self.as_u64(b)?;
                    let x = self.opaque_int(x, true)?;
                    if signed_op {
                        self.b().convert_s_to_f(dt, None, x).map_err(be)?
                    } else {
                        self.b().convert_u_to_f(dt, None, x).map_err(be)?
                    }
                };
                self.store(a, v)?;
            }
            Op::F32ToI8
            | Op::F32ToU8
            | Op::F32ToI16
            | Op::F32ToU16
            | Op::F32ToI32
            | Op::F32ToU32
            | Op::F32ToI64
            | Op::F32ToU64
            | Op::F64ToI8
            | Op::F64ToU8
            | Op::F64ToI16
            | Op::F64ToU16
            | Op::F64ToI32
            | Op::F64ToU32
            | Op::F64ToI64
            | Op::F64ToU64 => self.f_to_i(a, b)?,
            Op::F16ToF32 => {
                let x = self.load(b)?;
                let v = self.f16_to_f32(x)?;
                self.store(a, v)?;
            }
            Op::BF16ToF32 => {
                let x = self.load(b)?;
                let (u, f) = (self.cx.t_u32, self.cx.t_f32);
                let k16 = self.cx.k32(16);
                let w = self.b().shift_left_logical(u, None, x, k16).map_err(be)?;
                let v = self.b().bitcast(f, None, w).map_err(be)?;
                self.store(a, v)?;
            }
            Op::F32ToF16 => {
                let x = self.load(b)?;
                let v = self.f32_to_f16(x)?;
                self.store(a, v)?;
            }
            Op::F32ToBF16 => {
                let x = self.load(b)?;
                let v = self.f32_to_bf16(x)?;
                self.store(a, v)?;
            }
            Op::F64ToF16 | Op::F64ToBF16 => {
                // One rounding from float64: to float32 rounding to odd (24 bits keep the
                // narrow format's rounding decision), then the float32 path.
                let x = self.load(b)?;
                let odd = self.f64_to_f32_odd(x)?;
                let v = if i.op == Op::F64ToF16 {
                    self.f32_to_f16(odd)?
                } else {
                    self.f32_to_bf16(odd)?
                };
                self.store(a, v)?;
            }
            Op::F32ToF64 | Op::F64ToF32 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let v = self.b().f_convert(t, None, x).map_err(be)?;
                self.store(a, v)?;
            }

            // Math.
            Op::Math1F32 | Op::Math1F64 => self.math1(a, b, c)?,
            Op::PowF32 => {
                let x = self.load(b)?;
                let y = self.load(c)?;
                let v = if self.cx.target.float32_math_in_float64 {
                    self.f32_by_recipe(&Recipe::pow(), &[x, y])?
                } else {
                    self.pow_f32(x, y)?
                };
                self.store(a, v)?;
            }
            Op::Atan2F32 => {
                let x = self.load(b)?;
                let y = self.load(c)?;
                let t = self.cx.t_f32;
                let v = if self.cx.target.float32_math_in_float64 {
                    self.f32_by_recipe(&Recipe::atan2(), &[x, y])?
                } else {
                    let v = self.cx.glsl2(t, GLOp::Atan2, x, y)?;
                    self.atan2_signs(x, y, v)?
                };
                self.store(a, v)?;
            }
            Op::Atan2F64 => {
                // GLSL.std.450 has no float64 atan2: ours (`devmath`).
                let y = self.load(b)?;
                let x = self.load(c)?;
                let v = self.recipe(&Recipe::atan2(), &[y, x])?;
                self.store(a, v)?;
            }
            Op::PowF64 => {
                // GLSL.std.450 has no float64 pow: ours (`devmath`).
                let x = self.load(b)?;
                let y = self.load(c)?;
                let v = self.recipe(&Recipe::pow(), &[x, y])?;
                self.store(a, v)?;
            }
            Op::FmaF32 | Op::FmaF64 => {
                // Not GLSL `Fma`: drivers may evaluate it unfused (`spirv/fma.rs`).
                let (x, y, z) = (self.load(a)?, self.load(b)?, self.load(c)?);
                let v = if i.op == Op::FmaF32 {
                    self.fma_f32(x, y, z)?
                } else {
                    self.fma_f64(x, y, z)?
                };
                self.store(a, v)?;
            }

            // Device operations.
            Op::CheckIndex => self.check_index(pc, a, b, c)?,
            Op::BufLength => {
                let mem = self.mem_of(b)?;
                let len = self.mem_len(mem)?;
                let t64 = self.cx.u64t();
                let v = self.b().u_convert(t64, None, len).map_err(be)?;
                self.store(a, v)?;
            }
            Op::Geom => {
                let v = self.geom(b)?;
                self.store(a, v)?;
            }
            Op::Barrier => {
                self.cx.wg_barriers = true;
                self.cx.workgroup_barrier()?;
            }
            Op::DevGetI8
            | Op::DevGetU8
            | Op::DevGetI16
            | Op::DevGetU16
            | Op::DevGetI32
            | Op::DevGetU32
            | Op::DevGetI64
            | Op::DevGetU64
            | Op::DevGetF32
            | Op::DevGetF64
            | Op::DevGetF16
            | Op::DevGetBF16 => self.mem_access(pc, Access::Load, a, b, c)?,
            Op::DevSetI8
            | Op::DevSetU8
            | Op::DevSetI16
            | Op::DevSetU16
            | Op::DevSetI32
            | Op::DevSetU32
            | Op::DevSetI64
            | Op::DevSetU64
            | Op::DevSetF32
            | Op::DevSetF64
            | Op::DevSetF16
            | Op::DevSetBF16 => self.mem_access(pc, Access::Store, c, a, b)?,
            Op::AtomicAddI32
            | Op::AtomicAddU32
            | Op::AtomicAddI64
            | Op::AtomicAddU64
            | Op::AtomicAddF32 => self.mem_access(pc, Access::Atomic(Rmw::Add), a, b, c)?,
            Op::AtomicSubI32 | Op::AtomicSubU32 | Op::AtomicSubI64 | Op::AtomicSubU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::Sub), a, b, c)?
            }
            Op::AtomicMinI32 | Op::AtomicMinI64 => {
                self.mem_access(pc, Access::Atomic(Rmw::SMin), a, b, c)?
            }
            Op::AtomicMinU32 | Op::AtomicMinU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::UMin), a, b, c)?
            }
            Op::AtomicMaxI32 | Op::AtomicMaxI64 => {
                self.mem_access(pc, Access::Atomic(Rmw::SMax), a, b, c)?
            }
            Op::AtomicMaxU32 | Op::AtomicMaxU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::UMax), a, b, c)?
            }
            Op::AtomicAndI32 | Op::AtomicAndU32 | Op::AtomicAndI64 | Op::AtomicAndU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::And), a, b, c)?
            }
            Op::AtomicOrI32 | Op::AtomicOrU32 | Op::AtomicOrI64 | Op::AtomicOrU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::Or), a, b, c)?
            }
            Op::AtomicXorI32 | Op::AtomicXorU32 | Op::AtomicXorI64 | Op::AtomicXorU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::Xor), a, b, c)?
            }
            Op::AtomicXchgI32 | Op::AtomicXchgU32 | Op::AtomicXchgI64 | Op::AtomicXchgU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::Xchg), a, b, c)?
            }
            Op::AtomicCasI32 | Op::AtomicCasU32 | Op::AtomicCasI64 | Op::AtomicCasU64 => {
                self.mem_access(pc, Access::Atomic(Rmw::Cas), a, b, c)?
            }
            Op::AtomicMinF32 => self.mem_access(pc, Access::Atomic(Rmw::FMin), a, b, c)?,
            Op::AtomicMaxF32 => self.mem_access(pc, Access::Atomic(Rmw::FMax), a, b, c)?,

            // Bits and bit casts.
            Op::PopcU32 => {
                let x = self.load(b)?;
                let v = self.b().bit_count(u, None, x).map_err(be)?;
                self.store(a, v)?;
            }
            Op::BrevU32 => {
                let x = self.load(b)?;
                let v = self.b().bit_reverse(u, None, x).map_err(be)?;
                self.store(a, v)?;
            }
            Op::RotlU32 | Op::RotrU32 => {
                // x << n | x >> (32 - n) with both counts taken mod 32, so a count of 0 shifts
                // by 0 twice instead of by 32 (undefined in SPIR-V).
                let x = self.load(b)?;
                let n = self.load(c)?;
                let k31 = self.cx.k32(31);
                let k32 = self.cx.k32(32);
                let n = self.b().bitwise_and(u, None, n, k31).map_err(be)?;
                let m = self.b().i_sub(u, None, k32, n).map_err(be)?;
                let m = self.b().bitwise_and(u, None, m, k31).map_err(be)?;
                let (l, r) = if i.op == Op::RotlU32 { (n, m) } else { (m, n) };
                let hi = self.b().shift_left_logical(u, None, x, l).map_err(be)?;
                let lo = self.b().shift_right_logical(u, None, x, r).map_err(be)?;
                let v = self.b().bitwise_or(u, None, hi, lo).map_err(be)?;
                self.store(a, v)?;
            }
            Op::F32Bits | Op::F64Bits | Op::BitsF32 | Op::BitsF64 => {
                let s = self.reg_scalar(a)?;
                let t = self.cx.reg_ty(s);
                let x = self.load(b)?;
                let v = self.b().bitcast(t, None, x).map_err(be)?;
                self.store(a, v)?;
            }
            Op::WaveSumU32
            | Op::WaveSumF32
            | Op::WaveMaxU32
            | Op::WaveMinU32
            | Op::WaveAndU32
            | Op::WaveOrU32
            | Op::WaveXorU32
            | Op::WaveScanAddU32
            | Op::WaveScanMulU32 => self.wave_arith(i.op, a, b)?,
            Op::WaveMaxF32 => self.wave_max_f32(a, b)?,
            Op::WaveShflU32 | Op::WaveRotU32 => {
                self.wave_shuffle(i.op == Op::WaveRotU32, a, b, c)?
            }
            Op::WaveBallot => {
                self.cx.cap(Capability::GroupNonUniformBallot);
                self.cx.features.subgroup_ballot = true;
                let x = self.load(b)?;
                let sg = self.cx.k32(Scope::Subgroup as u32);
                let v4 = self.b().type_vector(u, 4);
                let m = self
                    .b()
                    .group_non_uniform_ballot(v4, None, sg, x)
                    .map_err(be)?;
                // Lanes 0..31 in the first word, 32..63 in the second (W ≤ 64).
                let lo = self.b().composite_extract(u, None, m, [0]).map_err(be)?;
                let hi = self.b().composite_extract(u, None, m, [1]).map_err(be)?;
                let t64 = self.cx.u64t();
                let lo = self.b().u_convert(t64, None, lo).map_err(be)?;
                let hi = self.b().u_convert(t64, None, hi).map_err(be)?;
                let k32 = self.cx.konst(t64, 32);
                let hi = self
                    .b()
                    .shift_left_logical(t64, None, hi, k32)
                    .map_err(be)?;
                let v = self.b().bitwise_or(t64, None, hi, lo).map_err(be)?;
                self.store(a, v)?;
            }
            Op::WaveBarrier => {
                self.cx.cap(Capability::GroupNonUniform);
                self.cx.features.subgroup_basic = true;
                let sg = self.cx.k32(Scope::Subgroup as u32);
                let wg = self.cx.k32(Scope::Workgroup as u32);
                let sem = self.cx.k32(
                    (MemorySemantics::ACQUIRE_RELEASE
                        | MemorySemantics::WORKGROUP_MEMORY
                        | MemorySemantics::UNIFORM_MEMORY)
                        .bits(),
                );
                self.b().control_barrier(sg, wg, sem).map_err(be)?;
            }
            Op::Fence => {
                let scope = match b {
                    0 => Scope::Workgroup,
                    1 => Scope::Device,
                    _ => return Err(format!("unknown fence scope {b}")),
                };
                let scope = self.cx.k32(scope as u32);
                let sem = self.cx.k32(
                    (MemorySemantics::ACQUIRE_RELEASE
                        | MemorySemantics::WORKGROUP_MEMORY
                        | MemorySemantics::UNIFORM_MEMORY)
                        .bits(),
                );
                self.b().memory_barrier(scope, sem).map_err(be)?;
            }
            // Kernel attributes act at launch (the runtime reads them); nothing runs here.
            Op::KernelAttr => {}
            op => {
                return Err(format!(
                    "instruction `{}` is not available in device code",
                    op.mnemonic()
                ))
            }
        }
        Ok(true)
    }

    /// A constant of scalar type `s` from a canonical cell.
    fn scalar_const(&mut self, s: Scalar, bits: u64) -> Word {
        let t = self.cx.reg_ty(s);
        let v = match s {
            Scalar::Bool => u64::from(bits != 0),
            Scalar::I64 | Scalar::U64 | Scalar::F64 => bits,
            _ => bits & 0xffff_ffff,
        };
        self.cx.konst(t, v)
    }

    /// The constant a `loadk`/`loadi` puts in a register of type `s`: a float one computed
    /// from a run-time zero where the target asks ([`Target::opaque_float_constants`]).
    fn register_const(&mut self, s: Scalar, bits: u64) -> R<Word> {
        let k = self.scalar_const(s, bits);
        if self.cx.zero_member.is_none() || !s.is_float() {
            return Ok(k);
        }
        Ok(match s {
            Scalar::F32 => {
                let kb = self.cx.k32(bits as u32);
                let v = self.opaque_int(kb, false)?;
                let f = self.cx.t_f32;
                self.b().bitcast(f, None, v).map_err(be)?
            }
            Scalar::F64 => {
                let u64t = self.cx.u64t();
                let f64t = self.cx.f64t();
                let kb = self.cx.konst(u64t, bits);
                let v = self.opaque_int(kb, true)?;
                self.b().bitcast(f64t, None, v).map_err(be)?
            }
            // float16/bfloat16 registers hold their bits in a u32.
            _ => self.opaque_int(k, false)?,
        })
    }

    /// `x` (a u32, or a u64 if `wide`) plus the run-time zero of
    /// [`Target::opaque_float_constants`], so that the driver cannot know its value; `x`
    /// itself where the target needs no such zero.
    fn opaque_int(&mut self, x: Word, wide: bool) -> R<Word> {
        let Some(member) = self.cx.zero_member else {
            return Ok(x);
        };
        let zero = self.cx.push_load(member)?;
        if wide {
            let u64t = self.cx.u64t();
            let z = self.b().u_convert(u64t, None, zero).map_err(be)?;
            self.b().i_add(u64t, None, x, z).map_err(be)
        } else {
            let u = self.cx.t_u32;
            self.b().i_add(u, None, x, zero).map_err(be)
        }
    }

    /// One instruction of switch `ri`'s case dispatch: a case test (`jmpif`) folds into the
    /// chosen target (the first test that holds wins), the final `jmp` (to the default group,
    /// or the end) becomes `OpSwitch` on the chosen target's pc, in pc order so that
    /// fall-through goes to the next case. Returns whether the block is still open.
    fn dispatch_step(&mut self, pc: u32, ri: usize) -> R<bool> {
        let i = self.f.code[pc as usize];
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        let (matched, chosen) = match self.disp {
            Some(d) => d,
            None => {
                let no = self.cx.konst(tb, 0);
                let d = self.cx.k32(self.regions[ri].merge);
                (no, d)
            }
        };
        if i.op == Op::JmpIf {
            let cond = self.load(i.a)?;
            let fresh = self.b().logical_not(tb, None, matched).map_err(be)?;
            let take = self.b().logical_and(tb, None, cond, fresh).map_err(be)?;
            let k = self.cx.k32(i.bc());
            let chosen = self.b().select(u, None, take, k, chosen).map_err(be)?;
            let matched = self.b().logical_or(tb, None, matched, cond).map_err(be)?;
            self.disp = Some((matched, chosen));
            return Ok(true);
        }
        // The final jump: the default target when no test held.
        let d = self.cx.k32(i.bc());
        let chosen = self.b().select(u, None, matched, chosen, d).map_err(be)?;
        self.disp = None;
        let end = self.regions[ri].merge;
        let mut targets: Vec<u32> = self
            .dispatch
            .iter()
            .filter(|&(_, &r)| r == ri)
            .map(|(&p, _)| self.f.code[p as usize].bc())
            .filter(|&t| t != end)
            .collect();
        targets.sort_unstable();
        targets.dedup();
        let mut cases = vec![];
        for t in targets {
            cases.push((Operand::LiteralBit32(t), self.target(pc, t)?));
        }
        let m = self.labels.merge[ri];
        self.b()
            .selection_merge(m, SelectionControl::NONE)
            .map_err(be)?;
        self.b().switch(chosen, m, cases).map_err(be)?;
        Ok(false)
    }

    fn cond_branch(&mut self, pc: u32, if_true: bool, r: u16, to: u32) -> R<()> {
        let cond = self.load(r)?;
        // A side that leaves several loops records its exit and breaks the innermost loop
        // (the variable is 0 whenever no exit is pending, so the other side stores 0).
        for (t, taken) in [(to, if_true), (pc + 1, !if_true)] {
            let Some((_, inner)) = self.multi_exit(pc, t) else {
                continue;
            };
            let var = self.labels.exit_var.ok_or("exit variable missing")?;
            let (u, code, z) = (self.cx.t_u32, self.cx.k32(t + 1), self.cx.k32(0));
            let (a, b) = if taken { (code, z) } else { (z, code) };
            let v = self.b().select(u, None, cond, a, b).map_err(be)?;
            self.b().store(var, v, None, []).map_err(be)?;
            let m = self.labels.merge[inner];
            let other = if t == to { pc + 1 } else { to };
            let o = self.target(pc, other)?;
            let (tl, fl) = if taken { (m, o) } else { (o, m) };
            return self.branch_exit(pc, cond, tl, fl);
        }
        let jump = self.target(pc, to)?;
        let fall = self.target(pc, pc + 1)?;
        let (t, f) = if if_true { (jump, fall) } else { (fall, jump) };
        self.branch_exit(pc, cond, t, f)
    }

    /// The conditional branch at `pc` to labels `t` (if `cond`) and `f`, with the merge
    /// instruction its structure needs: an `if` region's header, a continue construct's
    /// latch, or a loop exit (one side leaves to a loop's merge or continue block).
    fn branch_exit(&mut self, pc: u32, cond: Word, t: Word, f: Word) -> R<()> {
        if let Some(i) = (0..self.regions.len())
            .find(|&i| self.regions[i].header == pc && self.regions[i].kind == Kind::If)
        {
            let m = self.labels.merge[i];
            self.b()
                .selection_merge(m, SelectionControl::NONE)
                .map_err(be)?;
            return self.b().branch_conditional(cond, t, f, []).map_err(be);
        }
        // A conditional back edge of a continue construct needs no merge instruction.
        if let Some(&i) = self.containing(pc).first() {
            let r = self.regions[i];
            if r.kind == Kind::Loop && pc >= r.cont {
                let (h, m) = (self.labels.head[i], self.labels.merge[i]);
                if (t == h && f == m) || (t == m && f == h) {
                    return self.b().branch_conditional(cond, t, f, []).map_err(be);
                }
            }
        }
        // Otherwise one side must leave to a loop's merge or continue target (a loop exit
        // test, a break): the other side goes through a fresh selection merge block.
        let exits: Vec<Word> = self
            .containing(pc)
            .iter()
            .filter(|&&i| self.regions[i].kind == Kind::Loop)
            .flat_map(|&i| {
                [
                    self.labels.merge[i],
                    self.labels.block[&self.regions[i].cont],
                ]
            })
            .collect();
        let (n, stay) = if exits.contains(&f) {
            (true, t)
        } else if exits.contains(&t) {
            (false, f)
        } else {
            return Err(format!(
                "conditional jump at pc {pc} of `{}` outside the region table",
                self.f.name
            ));
        };
        let mid = self.b().id();
        self.b()
            .selection_merge(mid, SelectionControl::NONE)
            .map_err(be)?;
        if n {
            self.b().branch_conditional(cond, mid, f, []).map_err(be)?;
        } else {
            self.b().branch_conditional(cond, t, mid, []).map_err(be)?;
        }
        self.b().begin_block(Some(mid)).map_err(be)?;
        self.b().branch(stay).map_err(be)
    }

    fn call(&mut self, pc: u32, a: u16, b: u16, c: u16) -> R<()> {
        let m = self.cx.m;
        let Some(callee) = m.functions.get(usize::from(c)) else {
            return Err(format!("call of missing function {c}"));
        };
        if callee.kind != FnKind::Device {
            return Err(format!("call of non-device function `{}`", callee.name));
        }
        if self.callers.len() + 1 >= MAX_DEPTH {
            return Err(format!(
                "device calls nested deeper than {MAX_DEPTH} (recursion?)"
            ));
        }
        let mut args = vec![];
        let mut mems = vec![];
        for p in 0..callee.params {
            let r = b
                .checked_add(p)
                .ok_or_else(|| "call window out of range".to_string())?;
            match callee.regs.get(usize::from(p)) {
                Some(Type::Scalar(_)) => {
                    args.push(self.load(r)?);
                    mems.push(None);
                }
                Some(Type::Buffer(_)) | Some(Type::Shared(_)) => {
                    mems.push(Some(self.mem_of(r)?));
                }
                Some(t) => return Err(format!("device parameter of type {t}")),
                None => return Err("callee has fewer registers than parameters".into()),
            }
        }
        let id = self.b().id();
        let mut callers = vec![(self.fi, pc)];
        callers.extend(self.callers.iter().copied());
        self.cx.queue.push(Pending {
            func: u32::from(c),
            id,
            mems,
            callers,
        });
        let ret = match callee.ret {
            None => self.cx.t_void,
            Some(Type::Scalar(s)) => self.cx.reg_ty(s),
            Some(t) => return Err(format!("device function returning {t}")),
        };
        let v = self.b().function_call(ret, None, id, args).map_err(be)?;
        if callee.ret.is_some() {
            self.store(a, v)?;
        }
        Ok(())
    }

    fn sdiv(&mut self, a: u16, b: u16, c: u16, rem: bool) -> R<()> {
        // Division by zero and MIN / -1 are unspecified on GPUs (XPU §6); they must not be
        // undefined behaviour in the driver: the divisor becomes 1 there, and MIN / -1 wraps.
        let s = self.reg_scalar(a)?;
        let t = self.cx.reg_ty(s);
        let tb = self.cx.t_bool;
        let n = self.load(b)?;
        let d = self.load(c)?;
        let zero = self.cx.konst(t, 0);
        let one = self.cx.konst(t, 1);
        let m1 = self.cx.konst(
            t,
            if t == self.cx.t_u32 {
                0xffff_ffff
            } else {
                u64::MAX
            },
        );
        let is0 = self.b().i_equal(tb, None, d, zero).map_err(be)?;
        let ism1 = self.b().i_equal(tb, None, d, m1).map_err(be)?;
        let bad = self.b().logical_or(tb, None, is0, ism1).map_err(be)?;
        let safe = self.b().select(t, None, bad, one, d).map_err(be)?;
        let v = if rem {
            let r = self.b().s_rem(t, None, n, safe).map_err(be)?;
            self.b().select(t, None, ism1, zero, r).map_err(be)?
        } else {
            let q = self.b().s_div(t, None, n, safe).map_err(be)?;
            let neg = self.b().s_negate(t, None, n).map_err(be)?;
            self.b().select(t, None, ism1, neg, q).map_err(be)?
        };
        let v = self.canon(s, v)?;
        self.store(a, v)
    }

    fn udiv(&mut self, a: u16, b: u16, c: u16, rem: bool) -> R<()> {
        let s = self.reg_scalar(a)?;
        let t = self.cx.reg_ty(s);
        let tb = self.cx.t_bool;
        let n = self.load(b)?;
        let d = self.load(c)?;
        let zero = self.cx.konst(t, 0);
        let one = self.cx.konst(t, 1);
        let is0 = self.b().i_equal(tb, None, d, zero).map_err(be)?;
        let safe = self.b().select(t, None, is0, one, d).map_err(be)?;
        let v = if rem {
            self.b().u_mod(t, None, n, safe).map_err(be)?
        } else {
            self.b().u_div(t, None, n, safe).map_err(be)?
        };
        self.store(a, v)
    }

    /// Shifts: `kind` 0 left, 1 arithmetic right, 2 logical right, 3 logical right at a
    /// signed narrow width.
    fn shift(&mut self, a: u16, b: u16, c: u16, kind: u8) -> R<()> {
        let s = self.reg_scalar(a)?;
        let t = self.cx.reg_ty(s);
        let wide = matches!(s, Scalar::I64 | Scalar::U64);
        let x = self.load(b)?;
        let n = if wide {
            self.as_u64(c)?
        } else {
            self.as_u32(c)?
        };
        let mask = self.cx.konst(t, u64::from(s.bits() - 1));
        let n = self.b().bitwise_and(t, None, n, mask).map_err(be)?;
        let v = match kind {
            0 => self.b().shift_left_logical(t, None, x, n).map_err(be)?,
            1 => self.b().shift_right_arithmetic(t, None, x, n).map_err(be)?,
            2 => self.b().shift_right_logical(t, None, x, n).map_err(be)?,
            _ => {
                let m = self.cx.konst(t, (1u64 << s.bits()) - 1);
                let y = self.b().bitwise_and(t, None, x, m).map_err(be)?;
                self.b().shift_right_logical(t, None, y, n).map_err(be)?
            }
        };
        let v = self.canon(s, v)?;
        self.store(a, v)
    }

    /// Integer min/max, and float `NMin`/`NMax` (a NaN operand yields the other) with ties
    /// settled as `cajeta_bytecode::float` does: the bits of both or-ed (min) or and-ed (max),
    /// so -0.0 is below +0.0 (GLSL leaves the sign of a zero tie open).
    fn minmax(&mut self, a: u16, b: u16, c: u16, op: GLOp) -> R<()> {
        let s = self.reg_scalar(a)?;
        let t = self.cx.reg_ty(s);
        let x = self.load(b)?;
        let y = self.load(c)?;
        let v = self.cx.glsl2(t, op, x, y)?;
        if !matches!(op, GLOp::NMin | GLOp::NMax) {
            return self.store(a, v);
        }
        let it = if s == Scalar::F64 {
            self.cx.u64t()
        } else {
            self.cx.t_u32
        };
        let v = self.settle_zero_tie(op == GLOp::NMin, t, it, x, y, v)?;
        self.store(a, v)
    }

    /// `v` (the float min or max of `x` and `y`, of float type `t` with bits of type `it`)
    /// with a tie settled as `cajeta_bytecode::float` does: the bits of both or-ed (min) or
    /// and-ed (max), so -0.0 is below +0.0 (GLSL leaves the sign of a zero tie open).
    fn settle_zero_tie(
        &mut self,
        min: bool,
        t: Word,
        it: Word,
        x: Word,
        y: Word,
        v: Word,
    ) -> R<Word> {
        let tb = self.cx.t_bool;
        let tie = self.b().f_ord_equal(tb, None, x, y).map_err(be)?;
        let xb = self.b().bitcast(it, None, x).map_err(be)?;
        let yb = self.b().bitcast(it, None, y).map_err(be)?;
        let zb = if min {
            self.b().bitwise_or(it, None, xb, yb)
        } else {
            self.b().bitwise_and(it, None, xb, yb)
        }
        .map_err(be)?;
        let z = self.b().bitcast(t, None, zb).map_err(be)?;
        self.b().select(t, None, tie, z, v).map_err(be)
    }

    /// Saturating float-to-integer conversion, NaN to 0 (LANGUAGE §3.1).
    fn f_to_i(&mut self, a: u16, b: u16) -> R<()> {
        let ds = self.reg_scalar(a)?;
        let ss = self.reg_scalar(b)?;
        let dt = self.cx.reg_ty(ds);
        let ft = self.cx.reg_ty(ss);
        let tb = self.cx.t_bool;
        let x = self.load(b)?;
        let fk = |cx: &mut Cx<'_>, v: f64| {
            if ss == Scalar::F32 {
                cx.konst(ft, u64::from((v as f32).to_bits()))
            } else {
                cx.konst(ft, v.to_bits())
            }
        };
        let bits = ds.bits();
        let (lo, hi, min_bits, max_bits) = if ds.is_signed() {
            let lo = -(2f64.powi(bits as i32 - 1));
            let hi = 2f64.powi(bits as i32 - 1);
            let min = (i64::MIN >> (64 - bits)) as u64;
            let max = (i64::MAX >> (64 - bits)) as u64;
            (lo, hi, min, max)
        } else {
            (0.0, 2f64.powi(bits as i32), 0, u64::MAX >> (64 - bits))
        };
        let keep = |v: u64| if bits == 64 { v } else { v & 0xffff_ffff };
        let lo_k = fk(self.cx, lo);
        let hi_k = fk(self.cx, hi);
        let min_k = self.cx.konst(dt, keep(min_bits));
        let max_k = self.cx.konst(dt, keep(max_bits));
        let zero = self.cx.konst(dt, 0);
        // Clamp into range first so the conversion itself is always defined.
        let big = self
            .b()
            .f_ord_greater_than_equal(tb, None, x, hi_k)
            .map_err(be)?;
        let small = self.b().f_ord_less_than(tb, None, x, lo_k).map_err(be)?;
        let nan = self.b().is_nan(tb, None, x).map_err(be)?;
        let zf = fk(self.cx, 0.0);
        let oob = self.b().logical_or(tb, None, big, small).map_err(be)?;
        let oob = self.b().logical_or(tb, None, oob, nan).map_err(be)?;
        let safe = self.b().select(ft, None, oob, zf, x).map_err(be)?;
        let conv = if ds.is_signed() {
            self.b().convert_f_to_s(dt, None, safe).map_err(be)?
        } else {
            self.b().convert_f_to_u(dt, None, safe).map_err(be)?
        };
        let v = self.b().select(dt, None, big, max_k, conv).map_err(be)?;
        let v = self.b().select(dt, None, small, min_k, v).map_err(be)?;
        let v = self.b().select(dt, None, nan, zero, v).map_err(be)?;
        self.store(a, v)
    }

    fn math1(&mut self, a: u16, b: u16, sel: u16) -> R<()> {
        let s = self.reg_scalar(a)?;
        let t = self.cx.reg_ty(s);
        let x = self.load(b)?;
        let Some(f) = MathFn::from_u16(sel) else {
            return Err(format!("unknown Math function {sel}"));
        };
        let one = if s == Scalar::F32 {
            self.cx.konst(t, u64::from(1f32.to_bits()))
        } else {
            self.cx.konst(t, 1f64.to_bits())
        };
        let v = match f {
            MathFn::Sqrt => self.cx.glsl1(t, GLOp::Sqrt, x)?,
            MathFn::Floor => self.cx.glsl1(t, GLOp::Floor, x)?,
            MathFn::Ceil => self.cx.glsl1(t, GLOp::Ceil, x)?,
            MathFn::Trunc => {
                // lavapipe's float64 Trunc gives +0 for -0.5 (XPU §2.12 keeps the sign).
                let v = self.cx.glsl1(t, GLOp::Trunc, x)?;
                self.with_sign_of(s == Scalar::F64, t, x, v)?
            }
            MathFn::Abs => self.cx.glsl1(t, GLOp::FAbs, x)?,
            MathFn::Round => {
                // Half away from zero: trunc(x), plus sign(x) when |x - trunc(x)| >= 0.5
                // (x - trunc(x) is exact).
                let tr = self.cx.glsl1(t, GLOp::Trunc, x)?;
                let d = self.b().f_sub(t, None, x, tr).map_err(be)?;
                let d = self.cx.glsl1(t, GLOp::FAbs, d)?;
                let half = if s == Scalar::F32 {
                    self.cx.konst(t, u64::from(0.5f32.to_bits()))
                } else {
                    self.cx.konst(t, 0.5f64.to_bits())
                };
                let tb = self.cx.t_bool;
                let up = self
                    .b()
                    .f_ord_greater_than_equal(tb, None, d, half)
                    .map_err(be)?;
                let sg = self.cx.glsl1(t, GLOp::FSign, x)?;
                let r = self.b().f_add(t, None, tr, sg).map_err(be)?;
                let v = self.b().select(t, None, up, r, tr).map_err(be)?;
                self.with_sign_of(s == Scalar::F64, t, x, v)?
            }
            MathFn::Rsqrt if s == Scalar::F32 && self.cx.target.float32_math_in_float64 => {
                // As the reference: 1 / sqrt(x) in float64, rounded once to float32 (in
                // float32 the quotient of a rounded root is a second rounding, 1 ulp off).
                let d = self.cx.f64t();
                let wide = self.b().f_convert(d, None, x).map_err(be)?;
                let q = self.cx.glsl1(d, GLOp::Sqrt, wide)?;
                let one = self.cx.konst(d, 1f64.to_bits());
                let r = self.b().f_div(d, None, one, q).map_err(be)?;
                self.b().f_convert(t, None, r).map_err(be)?
            }
            MathFn::Rsqrt => {
                let q = self.cx.glsl1(t, GLOp::Sqrt, x)?;
                self.b().f_div(t, None, one, q).map_err(be)?
            }
            _ if s == Scalar::F64 => match Recipe::for_math(f) {
                // GLSL.std.450 has no float64 transcendentals: ours (`devmath`).
                Some(r) => self.recipe(&r, &[x])?,
                None => {
                    return Err(format!(
                        "Math.{} on float64 (GLSL.std.450 has no float64 transcendentals)",
                        f.name()
                    ))
                }
            },
            _ if self.cx.target.float32_math_in_float64 && Recipe::for_math(f).is_some() => {
                let r = Recipe::for_math(f).ok_or("no recipe")?;
                self.f32_by_recipe(&r, &[x])?
            }
            MathFn::Sin => {
                let v = self.cx.glsl1(t, GLOp::Sin, x)?;
                self.zero_fixed_f32(x, v)?
            }
            MathFn::Cos => self.cx.glsl1(t, GLOp::Cos, x)?,
            MathFn::Tan => {
                let v = self.cx.glsl1(t, GLOp::Tan, x)?;
                self.zero_fixed_f32(x, v)?
            }
            MathFn::Asin => {
                let v = self.cx.glsl1(t, GLOp::Asin, x)?;
                self.odd_f32(x, v)?
            }
            MathFn::Acos => self.cx.glsl1(t, GLOp::Acos, x)?,
            MathFn::Atan => {
                let v = self.cx.glsl1(t, GLOp::Atan, x)?;
                self.odd_f32(x, v)?
            }
            MathFn::Exp => self.cx.glsl1(t, GLOp::Exp, x)?,
            MathFn::Exp2 => self.cx.glsl1(t, GLOp::Exp2, x)?,
            MathFn::Log => self.cx.glsl1(t, GLOp::Log, x)?,
            MathFn::Log2 => self.cx.glsl1(t, GLOp::Log2, x)?,
            MathFn::Log10 => {
                let l = self.cx.glsl1(t, GLOp::Log2, x)?;
                let k = self.cx.konst(
                    t,
                    u64::from((std::f32::consts::LN_2 / std::f32::consts::LN_10).to_bits()),
                );
                self.b().f_mul(t, None, l, k).map_err(be)?
            }
        };
        self.store(a, v)
    }

    /// The float64 value of recipe `r` (see [`crate::devmath`]) at `x`: one instruction per
    /// step, float operations without contraction (each rounds once, as the recipe assumes).
    fn recipe(&mut self, r: &Recipe, args: &[Word]) -> R<Word> {
        let (f, i, tb) = (self.cx.f64t(), self.cx.u64t(), self.cx.t_bool);
        let mut v: Vec<Word> = Vec::with_capacity(r.steps.len());
        let kinds = r.kinds();
        for step in &r.steps {
            let w = match *step {
                Step::Arg(n) => *args.get(usize::from(n)).ok_or("a recipe argument")?,
                Step::F(c) => self.cx.konst(f, c.to_bits()),
                Step::I(c) => self.cx.konst(i, c as u64),
                Step::FAdd(p, q) | Step::FSub(p, q) | Step::FMul(p, q) | Step::FDiv(p, q) => {
                    let (p, q) = (v[p], v[q]);
                    let w = match *step {
                        Step::FAdd(..) => self.b().f_add(f, None, p, q),
                        Step::FSub(..) => self.b().f_sub(f, None, p, q),
                        Step::FMul(..) => self.b().f_mul(f, None, p, q),
                        _ => self.b().f_div(f, None, p, q),
                    }
                    .map_err(be)?;
                    self.b().decorate(w, Decoration::NoContraction, []);
                    w
                }
                Step::Floor(p) => self.cx.glsl1(f, GLOp::Floor, v[p])?,
                Step::Sqrt(p) => self.cx.glsl1(f, GLOp::Sqrt, v[p])?,
                Step::FToI(p) => self.b().convert_f_to_s(i, None, v[p]).map_err(be)?,
                Step::IToF(p) => self.b().convert_s_to_f(f, None, v[p]).map_err(be)?,
                Step::Bits(p) => self.b().bitcast(i, None, v[p]).map_err(be)?,
                Step::FromBits(p) => self.b().bitcast(f, None, v[p]).map_err(be)?,
                Step::IAdd(p, q) => self.b().i_add(i, None, v[p], v[q]).map_err(be)?,
                Step::ISub(p, q) => self.b().i_sub(i, None, v[p], v[q]).map_err(be)?,
                Step::IMul(p, q) => self.b().i_mul(i, None, v[p], v[q]).map_err(be)?,
                Step::IAnd(p, q) => self.b().bitwise_and(i, None, v[p], v[q]).map_err(be)?,
                Step::IOr(p, q) => self.b().bitwise_or(i, None, v[p], v[q]).map_err(be)?,
                Step::Shl(p, n) | Step::Shr(p, n) | Step::UShr(p, n) => {
                    let n = self.cx.konst(i, u64::from(n));
                    match step {
                        Step::Shl(..) => self.b().shift_left_logical(i, None, v[p], n),
                        Step::Shr(..) => self.b().shift_right_arithmetic(i, None, v[p], n),
                        _ => self.b().shift_right_logical(i, None, v[p], n),
                    }
                    .map_err(be)?
                }
                Step::ShlV(p, n) => self
                    .b()
                    .shift_left_logical(i, None, v[p], v[n])
                    .map_err(be)?,
                Step::UShrV(p, n) => self
                    .b()
                    .shift_right_logical(i, None, v[p], v[n])
                    .map_err(be)?,
                Step::FLt(p, q) => self.b().f_ord_less_than(tb, None, v[p], v[q]).map_err(be)?,
                Step::FEq(p, q) => self.b().f_ord_equal(tb, None, v[p], v[q]).map_err(be)?,
                Step::ILt(p, q) => self.b().s_less_than(tb, None, v[p], v[q]).map_err(be)?,
                Step::ULt(p, q) => self.b().u_less_than(tb, None, v[p], v[q]).map_err(be)?,
                Step::IEq(p, q) => self.b().i_equal(tb, None, v[p], v[q]).map_err(be)?,
                Step::Or(p, q) => self.b().logical_or(tb, None, v[p], v[q]).map_err(be)?,
                Step::And(p, q) => self.b().logical_and(tb, None, v[p], v[q]).map_err(be)?,
                Step::Not(p) => self.b().logical_not(tb, None, v[p]).map_err(be)?,
                Step::Select(c, p, q) => {
                    let t = if kinds[p] == devmath::Kind::F64 { f } else { i };
                    self.b().select(t, None, v[c], v[p], v[q]).map_err(be)?
                }
            };
            v.push(w);
        }
        v.last()
            .copied()
            .ok_or_else(|| "an empty recipe".to_string())
    }

    /// A float32 function computed by float64 recipe `r` on float32 `args`, rounded once.
    fn f32_by_recipe(&mut self, r: &Recipe, args: &[Word]) -> R<Word> {
        let (f, d) = (self.cx.t_f32, self.cx.f64t());
        let mut wide = Vec::with_capacity(args.len());
        for &a in args {
            wide.push(self.b().f_convert(d, None, a).map_err(be)?);
        }
        let v = self.recipe(r, &wide)?;
        self.b().f_convert(f, None, v).map_err(be)
    }

    fn geom(&mut self, sel: u16) -> R<Word> {
        let c = u32::from(sel % 3);
        match sel {
            0..=2 => self.cx.builtin(BuiltIn::LocalInvocationId, Some(c)),
            3..=5 => self.cx.builtin(BuiltIn::WorkgroupId, Some(c)),
            6..=8 => Ok(self.cx.wg_size[c as usize]),
            9..=11 => self.cx.builtin(BuiltIn::GlobalInvocationId, Some(c)),
            12..=14 => self.cx.builtin(BuiltIn::NumWorkgroups, Some(c)),
            15 | 16 => {
                self.cx.cap(Capability::GroupNonUniform);
                self.cx.features.subgroup_basic = true;
                let w = self.cx.builtin(BuiltIn::SubgroupSize, None)?;
                if sel == 15 {
                    return Ok(w);
                }
                // laneId = l mod W (XPU §2.7).
                let l = self.cx.builtin(BuiltIn::LocalInvocationIndex, None)?;
                let u = self.cx.t_u32;
                self.b().u_mod(u, None, l, w).map_err(be)
            }
            _ => Err(format!("unknown geometry selector {sel}")),
        }
    }

    /// The length in elements (uint32) of a memory.
    fn mem_len(&mut self, mem: Mem) -> R<Word> {
        match mem {
            Mem::Buffer(p) => {
                let m = self.cx.push_member[usize::from(p)] + 1;
                self.cx.push_load(m)
            }
            Mem::Shared(s) => {
                let d = self
                    .cx
                    .k
                    .shared
                    .get(usize::from(s))
                    .ok_or("unknown shared array")?;
                match (d.len, self.cx.dyn_len) {
                    (0, Some(len)) => Ok(len),
                    (0, None) => Err("dynamic shared array without a length".into()),
                    (n, _) => Ok(self.cx.k32(n)),
                }
            }
        }
    }

    /// A load, store or atomic add on element `r[idx]` of memory register `mreg`; `val` is
    /// the destination (load), the source (store) or both (atomic).
    /// float16 bits (in a u32) to float32, exactly, with integer operations (no Float16
    /// capability, no dependence on the driver's denormal handling).
    fn f16_to_f32(&mut self, h: Word) -> R<Word> {
        let (u, f, tb) = (self.cx.t_u32, self.cx.t_f32, self.cx.t_bool);
        let (k10, k13, k16) = (self.cx.k32(10), self.cx.k32(13), self.cx.k32(16));
        let (k1f, k3ff, k8000) = (self.cx.k32(0x1f), self.cx.k32(0x3ff), self.cx.k32(0x8000));
        let (z, k112, k23) = (self.cx.k32(0), self.cx.k32(112), self.cx.k32(23));
        let kinf = self.cx.k32(0x7f80_0000);
        let two_m24 = self.cx.konst(f, u64::from(2f32.powi(-24).to_bits()));
        let b = self.b();
        let sh = b.shift_right_logical(u, None, h, k10).map_err(be)?;
        let e = b.bitwise_and(u, None, sh, k1f).map_err(be)?;
        let m = b.bitwise_and(u, None, h, k3ff).map_err(be)?;
        let s = b.bitwise_and(u, None, h, k8000).map_err(be)?;
        let sign = b.shift_left_logical(u, None, s, k16).map_err(be)?;
        let m13 = b.shift_left_logical(u, None, m, k13).map_err(be)?;
        // Normal: rebias the exponent (127 - 15 = 112).
        let eb = b.i_add(u, None, e, k112).map_err(be)?;
        let e23 = b.shift_left_logical(u, None, eb, k23).map_err(be)?;
        let normal = b.bitwise_or(u, None, e23, m13).map_err(be)?;
        // Infinity / NaN: all-ones exponent, the fraction kept.
        let special = b.bitwise_or(u, None, kinf, m13).map_err(be)?;
        // Zero / subnormal: m * 2^-24, exact in float32.
        let mf = b.convert_u_to_f(f, None, m).map_err(be)?;
        let sub = b.f_mul(f, None, mf, two_m24).map_err(be)?;
        let subb = b.bitcast(u, None, sub).map_err(be)?;
        let is_sub = b.i_equal(tb, None, e, z).map_err(be)?;
        let is_special = b.i_equal(tb, None, e, k1f).map_err(be)?;
        let t = b.select(u, None, is_special, special, normal).map_err(be)?;
        let t = b.select(u, None, is_sub, subb, t).map_err(be)?;
        let bits = b.bitwise_or(u, None, t, sign).map_err(be)?;
        b.bitcast(f, None, bits).map_err(be)
    }

    /// float32 to float16 bits (in a u32), to nearest-even, as `cajeta_bytecode::half`:
    /// overflow to infinity, subnormals by one correctly rounded float32 add, NaN quiet with
    /// its top payload bits.
    fn f32_to_f16(&mut self, x: Word) -> R<Word> {
        let (u, f, tb) = (self.cx.t_u32, self.cx.t_f32, self.cx.t_bool);
        let (k1, k13, k16) = (self.cx.k32(1), self.cx.k32(13), self.cx.k32(16));
        let (kabs, k8000, k3ff) = (
            self.cx.k32(0x7fff_ffff),
            self.cx.k32(0x8000),
            self.cx.k32(0x3ff),
        );
        let (kfff, krebias) = (self.cx.k32(0xfff), self.cx.k32(0x3800_0000));
        let (kover, knormal, kinf32) = (
            self.cx.k32(0x477f_f000),
            self.cx.k32(0x3880_0000),
            self.cx.k32(0x7f80_0000),
        );
        let (kinf, kqnan, khalf) = (
            self.cx.k32(0x7c00),
            self.cx.k32(0x7e00),
            self.cx.k32(0x3f00_0000),
        );
        let half = self.cx.konst(f, u64::from(0.5f32.to_bits()));
        let b = self.b();
        let bits = b.bitcast(u, None, x).map_err(be)?;
        let mag = b.bitwise_and(u, None, bits, kabs).map_err(be)?;
        let hi = b.shift_right_logical(u, None, bits, k16).map_err(be)?;
        let sign = b.bitwise_and(u, None, hi, k8000).map_err(be)?;
        // Normal range: (mag - rebias + 0xfff + lsb) >> 13, a carry rounding up the exponent.
        let sh = b.shift_right_logical(u, None, mag, k13).map_err(be)?;
        let lsb = b.bitwise_and(u, None, sh, k1).map_err(be)?;
        let n1 = b.i_sub(u, None, mag, krebias).map_err(be)?;
        let n2 = b.i_add(u, None, n1, kfff).map_err(be)?;
        let n3 = b.i_add(u, None, n2, lsb).map_err(be)?;
        let normal = b.shift_right_logical(u, None, n3, k13).map_err(be)?;
        // Below 2^-14: |x| + 0.5 rounds |x| to a multiple of 2^-24 (the float16 subnormal
        // step); the bits above 0.5's are the result.
        let magf = b.bitcast(f, None, mag).map_err(be)?;
        let sum = b.f_add(f, None, magf, half).map_err(be)?;
        let sumb = b.bitcast(u, None, sum).map_err(be)?;
        let subn = b.i_sub(u, None, sumb, khalf).map_err(be)?;
        // NaN: quiet, the top 10 fraction bits kept.
        let frac = b.bitwise_and(u, None, sh, k3ff).map_err(be)?;
        let nan = b.bitwise_or(u, None, kqnan, frac).map_err(be)?;
        let is_nan = b.u_greater_than(tb, None, mag, kinf32).map_err(be)?;
        let is_over = b.u_greater_than_equal(tb, None, mag, kover).map_err(be)?;
        let is_normal = b.u_greater_than_equal(tb, None, mag, knormal).map_err(be)?;
        let t = b.select(u, None, is_normal, normal, subn).map_err(be)?;
        let t = b.select(u, None, is_over, kinf, t).map_err(be)?;
        let t = b.select(u, None, is_nan, nan, t).map_err(be)?;
        b.bitwise_or(u, None, t, sign).map_err(be)
    }

    /// float64 to float32 rounding to odd: truncated toward zero, the last bit set when
    /// inexact. Rounding that to a format at least two bits narrower (float16, bfloat16) to
    /// nearest-even gives the once-rounded result. Built from the nearest-even `OpFConvert`:
    /// where it rounded away from zero, one step back toward it.
    fn f64_to_f32_odd(&mut self, x: Word) -> R<Word> {
        let (u, f, tb) = (self.cx.t_u32, self.cx.t_f32, self.cx.t_bool);
        let d = self.cx.f64t();
        let k1 = self.cx.k32(1);
        let glsl = self.cx.glsl;
        let b = self.b();
        let near = b.f_convert(f, None, x).map_err(be)?;
        let back = b.f_convert(d, None, near).map_err(be)?;
        let exact = b.f_ord_equal(tb, None, back, x).map_err(be)?;
        let abs = |b: &mut Builder, v: Word| {
            b.ext_inst(d, None, glsl, GLOp::FAbs as u32, [Operand::IdRef(v)])
                .map_err(be)
        };
        let (ab, ax) = (abs(b, back)?, abs(b, x)?);
        let away = b.f_ord_greater_than(tb, None, ab, ax).map_err(be)?;
        let bits = b.bitcast(u, None, near).map_err(be)?;
        let less = b.i_sub(u, None, bits, k1).map_err(be)?;
        let toward = b.select(u, None, away, less, bits).map_err(be)?;
        let odd = b.bitwise_or(u, None, toward, k1).map_err(be)?;
        let r = b.select(u, None, exact, bits, odd).map_err(be)?;
        b.bitcast(f, None, r).map_err(be)
    }

    /// float32 to bfloat16 bits (in a u32): nearest-even on the float32 bits, NaN quiet with
    /// its top payload bits.
    fn f32_to_bf16(&mut self, x: Word) -> R<Word> {
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        let (k1, k16, k7fff, k40) = (
            self.cx.k32(1),
            self.cx.k32(16),
            self.cx.k32(0x7fff),
            self.cx.k32(0x40),
        );
        let b = self.b();
        let bits = b.bitcast(u, None, x).map_err(be)?;
        let hi = b.shift_right_logical(u, None, bits, k16).map_err(be)?;
        let lsb = b.bitwise_and(u, None, hi, k1).map_err(be)?;
        let r1 = b.i_add(u, None, bits, k7fff).map_err(be)?;
        let r2 = b.i_add(u, None, r1, lsb).map_err(be)?;
        let rounded = b.shift_right_logical(u, None, r2, k16).map_err(be)?;
        let nan = b.bitwise_or(u, None, hi, k40).map_err(be)?;
        let is_nan = b.is_nan(tb, None, x).map_err(be)?;
        b.select(u, None, is_nan, nan, rounded).map_err(be)
    }

    fn mem_access(&mut self, pc: u32, kind: Access, val: u16, mreg: u16, idx: u16) -> R<()> {
        let mem = self.mem_of(mreg)?;
        let (var, elem, sc) = match mem {
            Mem::Buffer(p) => {
                let v = self.cx.buf_vars[usize::from(p)].ok_or("buffer parameter")?;
                let Some(Type::Buffer(e)) = self.cx.k.regs.get(usize::from(p)) else {
                    return Err("buffer parameter type".into());
                };
                (v, *e, StorageClass::StorageBuffer)
            }
            Mem::Shared(s) => {
                let v = *self
                    .cx
                    .shared_vars
                    .get(usize::from(s))
                    .ok_or("unknown shared array")?;
                (
                    v,
                    self.cx.k.shared[usize::from(s)].elem,
                    StorageClass::Workgroup,
                )
            }
        };
        let rs = self.reg_scalar(val)?;
        let rt = self.cx.reg_ty(rs);
        let et = self.cx.elem_ty(elem)?;
        let tb = self.cx.t_bool;
        let u = self.cx.t_u32;
        let t64 = self.cx.u64t();
        // Bounds check on the 64-bit index against the length.
        let i64v = self.load(idx)?;
        let len = self.mem_len(mem)?;
        let len64 = self.b().u_convert(t64, None, len).map_err(be)?;
        let ok = self.b().u_less_than(tb, None, i64v, len64).map_err(be)?;
        let (yes, no, done) = (self.b().id(), self.b().id(), self.b().id());
        self.b()
            .selection_merge(done, SelectionControl::NONE)
            .map_err(be)?;
        self.b().branch_conditional(ok, yes, no, []).map_err(be)?;
        // In range.
        self.b().begin_block(Some(yes)).map_err(be)?;
        let i32v = self.b().u_convert(u, None, i64v).map_err(be)?;
        let pt = self.cx.ptr(sc, et);
        let ptr = match mem {
            Mem::Buffer(p) => {
                let off = self.cx.push_load(self.cx.push_member[usize::from(p)])?;
                let at = self.b().i_add(u, None, off, i32v).map_err(be)?;
                let z = self.cx.k32(0);
                self.b().access_chain(pt, None, var, [z, at]).map_err(be)?
            }
            Mem::Shared(_) => self.b().access_chain(pt, None, var, [i32v]).map_err(be)?,
        };
        let narrow = elem.bits() < 32;
        match kind {
            Access::Load => {
                let x = self.b().load(et, None, ptr, None, []).map_err(be)?;
                let v = if et != rt && !narrow {
                    // A float32 element stored as its bits.
                    self.b().bitcast(rt, None, x).map_err(be)?
                } else if narrow && elem.is_signed() {
                    self.b().s_convert(rt, None, x).map_err(be)?
                } else if narrow {
                    self.b().u_convert(rt, None, x).map_err(be)?
                } else {
                    x
                };
                self.store(val, v)?;
            }
            Access::Store => {
                let x = self.load(val)?;
                let v = if narrow {
                    self.b().u_convert(et, None, x).map_err(be)?
                } else if et != rt {
                    self.b().bitcast(et, None, x).map_err(be)?
                } else {
                    x
                };
                self.b().store(ptr, v, None, []).map_err(be)?;
            }
            Access::Atomic(op) => {
                let old = self.atomic(op, mem, elem, ptr, val)?;
                self.store(val, old)?;
            }
        }
        self.b().branch(done).map_err(be)?;
        // Out of range: record the fault; a read or atomic gives 0.
        self.b().begin_block(Some(no)).map_err(be)?;
        self.record_fault(pc, mem, mreg, None, i64v, len)?;
        if kind != Access::Store {
            let z = self.cx.konst(rt, 0);
            self.store(val, z)?;
        }
        self.b().branch(done).map_err(be)?;
        self.b().begin_block(Some(done)).map_err(be)?;
        Ok(())
    }

    /// Calls the fault helper for a new site at `pc` (memory `mem` named by register `mreg`;
    /// `what` for a `chk.idx` site) with the 64-bit index `i64v` and the uint32 length `len`.
    fn record_fault(
        &mut self,
        pc: u32,
        mem: Mem,
        mreg: u16,
        what: Option<&'static str>,
        i64v: Word,
        len: Word,
    ) -> R<()> {
        let (u, t64) = (self.cx.t_u32, self.cx.u64t());
        let site = self.cx.sites.len() as u32;
        let var_name = self
            .f
            .locals
            .iter()
            .find(|n| n.reg == mreg)
            .map_or_else(|| format!("r{mreg}"), |n| n.name.clone());
        let mut frames = vec![(self.fi, pc)];
        frames.extend(self.callers.iter().copied());
        self.cx.sites.push(Site {
            frames,
            mem,
            var: var_name,
            what,
            unsigned_index: self.f.index_holds_u64(pc),
        });
        let site_k = self.cx.k32(site);
        let lo = self.b().u_convert(u, None, i64v).map_err(be)?;
        let k32 = self.cx.konst(t64, 32);
        let hi = self
            .b()
            .shift_right_logical(t64, None, i64v, k32)
            .map_err(be)?;
        let hi = self.b().u_convert(u, None, hi).map_err(be)?;
        let ff = self.cx.fault_fn;
        let tv = self.cx.t_void;
        self.b()
            .function_call(tv, None, ff, [site_k, lo, hi, len])
            .map_err(be)?;
        Ok(())
    }

    /// `chk.idx a b c`: records an `XPU-E-BOUNDS` fault unless `0 <= r[a] < r[b]` (int64;
    /// compared unsigned, so a negative index fails); `r[c]` names what is indexed.
    fn check_index(&mut self, pc: u32, a: u16, b: u16, c: u16) -> R<()> {
        let (tb, u) = (self.cx.t_bool, self.cx.t_u32);
        let i64v = self.load(a)?;
        let n64 = self.load(b)?;
        let (mem, what) = match self.f.regs.get(usize::from(c)) {
            Some(Type::Shared(_)) => (self.mem_of(c)?, "shared"),
            _ => (Mem::Shared(0), "lane of vector"),
        };
        let ok = self.b().u_less_than(tb, None, i64v, n64).map_err(be)?;
        let (no, done) = (self.b().id(), self.b().id());
        self.b()
            .selection_merge(done, SelectionControl::NONE)
            .map_err(be)?;
        self.b().branch_conditional(ok, done, no, []).map_err(be)?;
        self.b().begin_block(Some(no)).map_err(be)?;
        let len = self.b().u_convert(u, None, n64).map_err(be)?;
        self.record_fault(pc, mem, c, Some(what), i64v, len)?;
        self.b().branch(done).map_err(be)?;
        self.b().begin_block(Some(done)).map_err(be)?;
        Ok(())
    }

    /// A subgroup reduction or exclusive scan of a uint32/float32 register (`wave.sum.*`,
    /// `wave.{max,min,and,or,xor}.u32`, `wave.scan{add,mul}.u32`).
    fn wave_arith(&mut self, op: Op, a: u16, b: u16) -> R<()> {
        self.cx.cap(Capability::GroupNonUniform);
        self.cx.cap(Capability::GroupNonUniformArithmetic);
        self.cx.features.subgroup_arithmetic = true;
        let x = self.load(b)?;
        let sg = self.cx.k32(Scope::Subgroup as u32);
        let (u, f) = (self.cx.t_u32, self.cx.t_f32);
        let (red, scan) = (GroupOperation::Reduce, GroupOperation::ExclusiveScan);
        let bl = &mut self.cx.b;
        let v = match op {
            Op::WaveSumU32 => bl.group_non_uniform_i_add(u, None, sg, red, x, None),
            Op::WaveSumF32 => bl.group_non_uniform_f_add(f, None, sg, red, x, None),
            Op::WaveMaxU32 => bl.group_non_uniform_u_max(u, None, sg, red, x, None),
            Op::WaveMinU32 => bl.group_non_uniform_u_min(u, None, sg, red, x, None),
            Op::WaveAndU32 => bl.group_non_uniform_bitwise_and(u, None, sg, red, x, None),
            Op::WaveOrU32 => bl.group_non_uniform_bitwise_or(u, None, sg, red, x, None),
            Op::WaveXorU32 => bl.group_non_uniform_bitwise_xor(u, None, sg, red, x, None),
            Op::WaveScanAddU32 => bl.group_non_uniform_i_add(u, None, sg, scan, x, None),
            Op::WaveScanMulU32 => bl.group_non_uniform_i_mul(u, None, sg, scan, x, None),
            _ => return Err(format!("`{}` is not a wave reduction", op.mnemonic())),
        }
        .map_err(be)?;
        self.store(a, v)
    }

    /// `wave.max.f32` with the maxNum butterfly's result made exact where
    /// `OpGroupNonUniformFMax` leaves room: NaN operands are dropped (as `-inf`, the identity)
    /// unless all W lanes are active and NaN, and a zero result is `+0.0` if any lane holds
    /// `+0.0` (maxNum orders `-0.0` below `+0.0`).
    fn wave_max_f32(&mut self, a: u16, b: u16) -> R<()> {
        self.cx.cap(Capability::GroupNonUniform);
        self.cx.cap(Capability::GroupNonUniformArithmetic);
        self.cx.cap(Capability::GroupNonUniformVote);
        self.cx.features.subgroup_arithmetic = true;
        self.cx.features.subgroup_basic = true;
        self.cx.features.subgroup_vote = true;
        let (u, f, tb) = (self.cx.t_u32, self.cx.t_f32, self.cx.t_bool);
        let sg = self.cx.k32(Scope::Subgroup as u32);
        let x = self.load(b)?;
        let ninf = self.cx.konst(f, u64::from(f32::NEG_INFINITY.to_bits()));
        let nan = self.b().is_nan(tb, None, x).map_err(be)?;
        let y = self.b().select(f, None, nan, ninf, x).map_err(be)?;
        let r = self
            .b()
            .group_non_uniform_f_max(f, None, sg, GroupOperation::Reduce, y, None)
            .map_err(be)?;
        // NaN only if every one of the W lanes holds NaN: a missing lane counts as -inf.
        let all_nan = self
            .b()
            .group_non_uniform_all(tb, None, sg, nan)
            .map_err(be)?;
        let one = self.cx.k32(1);
        let active = self
            .b()
            .group_non_uniform_i_add(u, None, sg, GroupOperation::Reduce, one, None)
            .map_err(be)?;
        let w = self.cx.builtin(BuiltIn::SubgroupSize, None)?;
        let full = self.b().i_equal(tb, None, active, w).map_err(be)?;
        let all_nan = self.b().logical_and(tb, None, all_nan, full).map_err(be)?;
        let bits = self.b().bitcast(u, None, x).map_err(be)?;
        let z = self.cx.k32(0);
        let pz = self.b().i_equal(tb, None, bits, z).map_err(be)?;
        let any_pz = self
            .b()
            .group_non_uniform_any(tb, None, sg, pz)
            .map_err(be)?;
        let fz = self.cx.konst(f, 0);
        let fnz = self.cx.konst(f, u64::from((-0.0f32).to_bits()));
        let is_zero = self.b().f_ord_equal(tb, None, r, fz).map_err(be)?;
        let zero = self.b().select(f, None, any_pz, fz, fnz).map_err(be)?;
        let r = self.b().select(f, None, is_zero, zero, r).map_err(be)?;
        let r = self.b().select(f, None, all_nan, x, r).map_err(be)?;
        self.store(a, r)
    }

    /// `wave.shfl.u32` (lane `r[c] mod W`) and `wave.rot.u32` (lane `(laneId + r[c]) mod W`).
    fn wave_shuffle(&mut self, rotate: bool, a: u16, b: u16, c: u16) -> R<()> {
        self.cx.cap(Capability::GroupNonUniform);
        self.cx.cap(Capability::GroupNonUniformShuffle);
        self.cx.features.subgroup_basic = true;
        self.cx.features.subgroup_shuffle = true;
        let u = self.cx.t_u32;
        let sg = self.cx.k32(Scope::Subgroup as u32);
        let x = self.load(b)?;
        let n = self.load(c)?;
        let w = self.cx.builtin(BuiltIn::SubgroupSize, None)?;
        let one = self.cx.k32(1);
        // W is a power of two: mod W is a mask.
        let mask = self.b().i_sub(u, None, w, one).map_err(be)?;
        let n = if rotate {
            let lane = self.cx.builtin(BuiltIn::SubgroupLocalInvocationId, None)?;
            self.b().i_add(u, None, lane, n).map_err(be)?
        } else {
            n
        };
        let src = self.b().bitwise_and(u, None, n, mask).map_err(be)?;
        let v = self
            .b()
            .group_non_uniform_shuffle(u, None, sg, x, src)
            .map_err(be)?;
        self.store(a, v)
    }

    /// The atomic `op` on the in-range element at `ptr` with value register `val`; returns
    /// the old element as a register value.
    fn atomic(&mut self, op: Rmw, mem: Mem, elem: Scalar, ptr: Word, val: u16) -> R<Word> {
        let et = self.cx.elem_ty(elem)?;
        let (scope, storage) = match mem {
            Mem::Buffer(_) => (Scope::Device, MemorySemantics::UNIFORM_MEMORY),
            Mem::Shared(_) => (Scope::Workgroup, MemorySemantics::WORKGROUP_MEMORY),
        };
        let semantics = |order: MemorySemantics| match self.cx.target.relaxed_atomics {
            true => 0,
            false => (storage | order).bits(),
        };
        let (acq_rel, acquire) = (
            semantics(MemorySemantics::ACQUIRE_RELEASE),
            semantics(MemorySemantics::ACQUIRE),
        );
        let sc = AtomicScope {
            scope: self.cx.k32(scope as u32),
            acq_rel: self.cx.k32(acq_rel),
            acquire: self.cx.k32(acquire),
        };
        if elem.bits() == 64 {
            self.cx.cap(Capability::Int64Atomics);
            self.cx.features.atomic_int64 = true;
        }
        let x = self.load(val)?;
        if elem == Scalar::F32 {
            if op == Rmw::Add && et == self.cx.t_f32 {
                self.cx.cap(Capability::AtomicFloat32AddEXT);
                self.cx.b.extension("SPV_EXT_shader_atomic_float_add");
                match mem {
                    Mem::Buffer(_) => self.cx.features.atomic_f32_buffer = true,
                    Mem::Shared(_) => self.cx.features.atomic_f32_shared = true,
                }
                return self
                    .b()
                    .atomic_f_add_ext(et, None, ptr, sc.scope, sc.acq_rel, x)
                    .map_err(be);
            }
            return self.float_cas_loop(op, ptr, sc, x);
        }
        let (s, m) = (sc.scope, sc.acq_rel);
        let b = &mut self.cx.b;
        match op {
            Rmw::Add => b.atomic_i_add(et, None, ptr, s, m, x),
            Rmw::Sub => b.atomic_i_sub(et, None, ptr, s, m, x),
            Rmw::SMin => b.atomic_s_min(et, None, ptr, s, m, x),
            Rmw::UMin => b.atomic_u_min(et, None, ptr, s, m, x),
            Rmw::SMax => b.atomic_s_max(et, None, ptr, s, m, x),
            Rmw::UMax => b.atomic_u_max(et, None, ptr, s, m, x),
            Rmw::And => b.atomic_and(et, None, ptr, s, m, x),
            Rmw::Or => b.atomic_or(et, None, ptr, s, m, x),
            Rmw::Xor => b.atomic_xor(et, None, ptr, s, m, x),
            Rmw::Xchg => b.atomic_exchange(et, None, ptr, s, m, x),
            Rmw::Cas => {
                // The desired value is in the register after the expected one (V-DEVMEM).
                let next = val
                    .checked_add(1)
                    .ok_or("compare-exchange register out of range")?;
                if self.reg_scalar(next)? != self.reg_scalar(val)? {
                    return Err(format!(
                        "compare-exchange: r{next} does not have the type of r{val}"
                    ));
                }
                let d = self.load(next)?;
                self.b()
                    .atomic_compare_exchange(et, None, ptr, s, m, sc.acquire, d, x)
            }
            Rmw::FMin | Rmw::FMax => {
                return Err("a float atomic on an integer element".into());
            }
        }
        .map_err(be)
    }

    /// A float32 read-modify-write as a compare-and-swap loop on the element's bits (the
    /// element is stored as `uint32`: SPIR-V has no float compare-exchange); `x` is the
    /// operand. Returns the old element.
    fn float_cas_loop(&mut self, op: Rmw, ptr: Word, sc: AtomicScope, x: Word) -> R<Word> {
        let (u, f, tb) = (self.cx.t_u32, self.cx.t_f32, self.cx.t_bool);
        let [pre, head, body, cont, merge, got] = [0; 6].map(|_| self.b().id());
        self.b().branch(pre).map_err(be)?;
        self.b().begin_block(Some(pre)).map_err(be)?;
        let init = self
            .b()
            .atomic_load(u, None, ptr, sc.scope, sc.acquire)
            .map_err(be)?;
        self.b().branch(head).map_err(be)?;
        self.b().begin_block(Some(head)).map_err(be)?;
        let cur = self
            .b()
            .phi(u, None, [(init, pre), (got, cont)])
            .map_err(be)?;
        self.b()
            .loop_merge(merge, cont, LoopControl::NONE, [])
            .map_err(be)?;
        self.b().branch(body).map_err(be)?;
        self.b().begin_block(Some(body)).map_err(be)?;
        let old = self.b().bitcast(f, None, cur).map_err(be)?;
        let new = match op {
            Rmw::Add => {
                let v = self.b().f_add(f, None, old, x).map_err(be)?;
                self.b().decorate(v, Decoration::NoContraction, []);
                v
            }
            Rmw::FMin | Rmw::FMax => {
                // minNum/maxNum: the operand wins if it is better or the element is NaN; a
                // NaN operand is never better, so the element stays.
                let better = if op == Rmw::FMin {
                    self.b().f_ord_less_than(tb, None, x, old)
                } else {
                    self.b().f_ord_greater_than(tb, None, x, old)
                }
                .map_err(be)?;
                let nan = self.b().is_nan(tb, None, old).map_err(be)?;
                let take = self.b().logical_or(tb, None, better, nan).map_err(be)?;
                let v = self.b().select(f, None, take, x, old).map_err(be)?;
                // A tie combines the bits as `min.f32`/`max.f32` do (-0.0 below +0.0).
                self.settle_zero_tie(op == Rmw::FMin, f, u, x, old, v)?
            }
            _ => return Err("an integer atomic on a float32 element".into()),
        };
        let nb = self.b().bitcast(u, None, new).map_err(be)?;
        self.b()
            .atomic_compare_exchange(u, Some(got), ptr, sc.scope, sc.acq_rel, sc.acquire, nb, cur)
            .map_err(be)?;
        self.b().branch(cont).map_err(be)?;
        self.b().begin_block(Some(cont)).map_err(be)?;
        // Compared as bits: a NaN element must not retry forever.
        let same = self.b().i_equal(tb, None, got, cur).map_err(be)?;
        self.b()
            .branch_conditional(same, merge, head, [])
            .map_err(be)?;
        self.b().begin_block(Some(merge)).map_err(be)?;
        Ok(old)
    }
}

/// Scope and memory-semantics constants of one atomic.
#[derive(Copy, Clone)]
struct AtomicScope {
    scope: Word,
    acq_rel: Word,
    acquire: Word,
}

/// What a memory access does.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Access {
    Load,
    Store,
    Atomic(Rmw),
}

/// The read-modify-write of an atomic (XPU §2.8); the old element goes to the value register.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Rmw {
    /// Wrapping add (float32: IEEE add).
    Add,
    /// Wrapping subtract.
    Sub,
    SMin,
    UMin,
    SMax,
    UMax,
    And,
    Or,
    Xor,
    /// Exchange.
    Xchg,
    /// Compare-exchange: expected in the value register, desired in the next one.
    Cas,
    /// float32 minNum / maxNum (a NaN operand yields the other).
    FMin,
    FMax,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_kernels_are_refused() {
        let m = Module::default();
        assert!(emit_spirv(&m, 0).is_err());
    }
}
