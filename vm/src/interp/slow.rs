//! The interpreter's out-of-line paths: raising runtime errors (with their trace), stack
//! growth, allocation (with the string collector), string conversion and printing.
//!
//! Everything here is called from a dispatch arm but kept out of the loop body, so the loop
//! stays small enough for good code generation. Errors leave through one `#[cold]` function,
//! [`Vm::fault`], which turns a [`Fault`] into a [`RuntimeError`] with names and positions.

use cajeta_bytecode::{half, Elem, Op, Scalar, Type};

use super::lower::XInstr;

use crate::api::Vm;
use crate::error::{ErrorCode, RuntimeError, TraceFrame};
use crate::format;
use crate::heap::{AllocError, ArrData, Array, ElemError, Instance, Obj, NULL};

/// `str.format`'s format string and (argument text, argument value) pairs.
type FormatInputs<'a> = (&'a str, Vec<(&'a str, f64)>);

/// The exit status of a program whose stdout was closed under it: a shell's for `SIGPIPE`.
pub(crate) const SIGPIPE_STATUS: i32 = 128 + 13;

/// What went wrong, with just enough data to write the message later.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Fault {
    /// Integer division or remainder by zero.
    DivZero,
    /// Signed `MIN / -1`.
    Overflow,
    /// Call depth limit reached.
    Stack,
    /// Array index out of range.
    Bounds { index: i64, len: usize },
    /// Invalid array length.
    Size(i64),
    /// The object table is full.
    TableFull,
    /// A host allocation of `requested` bytes would pass the VM's memory limit.
    Memory { requested: u64, limit: u64 },
    /// The system refused a host allocation of `requested` bytes under the memory limit.
    OutOfMemory { requested: u64 },
    /// The fuel ran out (at a call or a backward jump).
    Fuel,
    /// The interrupt handle was triggered.
    Interrupted,
    /// `System.exit(status)`.
    Exit(i32),
    /// stdout cannot be written ([`crate::output`]).
    Output,
    /// `count()`/`size()` of a null String.
    NullString,
    /// `Cajeta.parseInt` of the string `handle` (0: null) that is not a decimal int64.
    ParseInt { handle: u64 },
    /// A device-only instruction in a host frame (excluded by V-SIDE; only an unverified
    /// module can get here).
    DeviceOnly,
    /// Register `reg` holds `handle`, which is null or not a live object of the right kind.
    BadRef {
        reg: u16,
        handle: u64,
        access: Access,
    },
}

impl From<AllocError> for Fault {
    fn from(e: AllocError) -> Fault {
        match e {
            AllocError::TableFull => Fault::TableFull,
            AllocError::Memory {
                requested, limit, ..
            } => Fault::Memory { requested, limit },
            AllocError::System { requested } => Fault::OutOfMemory { requested },
        }
    }
}

/// The kind of access a [`Fault::BadRef`] attempted (for the `E-NULL` message).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Access {
    /// An element read or write.
    Index,
    /// `count()`.
    Count,
    /// A field read or write (field index).
    Field(u16),
    /// A call of an instance method (function index) on the object.
    Call(u16),
}

/// The fault of a failed owns-flag access (`aown.get`/`aown.set`) to element `index` of the
/// array `handle`, held in register `reg`.
#[cold]
pub(crate) fn elem_fault(e: ElemError, reg: u16, handle: u64, index: u64) -> Fault {
    match e {
        ElemError::BadRef => Fault::BadRef {
            reg,
            handle,
            access: Access::Index,
        },
        ElemError::Bounds { len } => Fault::Bounds {
            index: index as i64,
            len,
        },
    }
}

impl Vm {
    /// Builds the runtime error for `fault` raised by the instruction before `ip` in the
    /// running frame, with the trace of every frame.
    #[cold]
    #[inline(never)]
    pub(crate) fn fault(&mut self, ip: *const XInstr, fault: Fault) -> RuntimeError {
        let at = self
            .frames
            .last()
            .map(|f| (f.func, self.pc_before(f.func, ip)));
        let (code, message) = self.describe(fault, at);
        RuntimeError {
            code: code.code(),
            message,
            trace: self.host_trace(ip),
        }
    }

    /// The trace of every host frame, innermost first, the running one at the instruction
    /// before `ip`.
    pub(crate) fn host_trace(&self, ip: *const XInstr) -> Vec<TraceFrame> {
        let frames = self.frames.get(self.frames_floor..).unwrap_or(&[]);
        let mut trace = Vec::with_capacity(frames.len());
        for (depth, frame) in frames.iter().rev().enumerate() {
            // The running frame's saved `ip` is stale; the others resume after their call.
            let resume = if depth == 0 { ip } else { frame.ip };
            trace.extend(self.trace_frames(frame.func, resume));
        }
        trace
    }

    /// The trace lines of function `func` whose next instruction is `resume` (the failing or
    /// calling instruction is the one before it).
    fn trace_frames(&self, func: u32, resume: *const XInstr) -> Vec<TraceFrame> {
        self.frames_at(func, self.pc_before(func, resume))
    }

    /// The pc of the instruction before `resume` in function `func`'s lowered code (which
    /// keeps the bytecode's pcs).
    fn pc_before(&self, func: u32, resume: *const XInstr) -> u32 {
        let start = self.fns[func as usize].code() as usize;
        ((resume as usize).wrapping_sub(start) / std::mem::size_of::<XInstr>()).saturating_sub(1)
            as u32
    }

    /// The trace lines of instruction `pc` of function `func` (also the device frames of a
    /// kernel fault), innermost first: one, and one more for each call the compiler expanded
    /// in place there (`Function::inlined`), as if the call had been made.
    pub(crate) fn frames_at(&self, func: u32, pc: u32) -> Vec<TraceFrame> {
        let Some(f) = self.module.functions.get(func as usize) else {
            return vec![self.frame_of(func, (0, 0))];
        };
        let mut at = f.position(pc);
        let mut trace = Vec::new();
        for c in f.inlined_at(pc).iter().rev() {
            trace.push(self.frame_of(c.callee, at));
            at = (c.line, c.col);
        }
        trace.push(self.frame_of(func, at));
        trace
    }

    /// The trace line of function `func` at source position `(line, col)`; an unknown
    /// function reads `function#N`.
    fn frame_of(&self, func: u32, (line, col): (u32, u32)) -> TraceFrame {
        let module = &self.module;
        let Some(f) = module.functions.get(func as usize) else {
            return TraceFrame {
                function: format!("function#{func}"),
                file: "?".into(),
                line: 0,
                col: 0,
            };
        };
        let path = module
            .files
            .get(f.file as usize)
            .map(String::as_str)
            .unwrap_or("?");
        let file = path.rsplit(['/', '\\']).next().unwrap_or(path).to_string();
        TraceFrame {
            function: f.name.clone(),
            file,
            line,
            col,
        }
    }

    /// The code and message of `fault` raised by instruction `at` = (function, pc), naming
    /// classes and fields from that function's register types (`None`: the running
    /// interpreter frame's function, pc unknown).
    pub(crate) fn describe(&self, fault: Fault, at: Option<(u32, u32)>) -> (ErrorCode, String) {
        let func = at.map(|(f, _)| f);
        let shown = |n: i64| {
            if n < 0 && at.is_some_and(|(f, pc)| self.operand_was_u64(f, pc)) {
                (n as u64).to_string()
            } else {
                n.to_string()
            }
        };
        match fault {
            Fault::DivZero => (ErrorCode::DivZero, "integer division by zero".into()),
            Fault::Overflow => (ErrorCode::Overflow, "integer overflow in division".into()),
            Fault::Stack => (ErrorCode::Stack, "call depth limit exceeded".into()),
            Fault::Bounds { index, len } => (
                ErrorCode::Bounds,
                format!("index {} out of bounds for length {len}", shown(index)),
            ),
            Fault::Size(n) => (
                ErrorCode::Size,
                format!("invalid array length {}", shown(n)),
            ),
            Fault::Exit(status) => (ErrorCode::Exit, status.to_string()),
            // A closed pipe ends the program as SIGPIPE would (128 + 13), quietly.
            Fault::Output => match self.out.failure() {
                Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    (ErrorCode::Exit, SIGPIPE_STATUS.to_string())
                }
                e => (
                    ErrorCode::Output,
                    format!(
                        "cannot write the program's output: {}",
                        e.map_or_else(|| "unknown error".into(), ToString::to_string)
                    ),
                ),
            },
            Fault::NullString => (
                ErrorCode::Null,
                match at.and_then(|(f, pc)| self.string_method_at(f, pc)) {
                    Some(m) => format!("null reference: method 'String.{m}' called on null"),
                    None => "null reference: method call on a null String".into(),
                },
            ),
            Fault::ParseInt { handle } => match self.heap.str(handle) {
                Some(text) => (ErrorCode::Format, format!("invalid integer '{text}'")),
                None => (
                    ErrorCode::Null,
                    "null reference: Cajeta.parseInt(null)".into(),
                ),
            },
            Fault::DeviceOnly => (
                ErrorCode::Call,
                "device-only instruction in host code (the module was not verified)".into(),
            ),
            Fault::TableFull => (
                ErrorCode::Size,
                "object table full (2^32 - 1 live objects)".into(),
            ),
            // What is in use depends on when the executor last collected garbage (the
            // interpreter and the JIT differ): the message names only what every executor
            // shares, so that their errors are identical.
            Fault::Memory { requested, limit } => (
                ErrorCode::Memory,
                format!(
                    "memory limit exceeded: allocating {requested} bytes would pass the limit of \
                     {limit} bytes"
                ),
            ),
            Fault::OutOfMemory { requested } => (
                ErrorCode::Memory,
                format!("out of memory: the system refused {requested} bytes"),
            ),
            Fault::Fuel => (ErrorCode::Fuel, "fuel exhausted".into()),
            Fault::Interrupted => (ErrorCode::Interrupted, "interrupted".into()),
            Fault::BadRef {
                reg,
                handle,
                access,
            } => {
                let ty = match func {
                    Some(f) => self
                        .module
                        .functions
                        .get(f as usize)
                        .and_then(|f| f.regs.get(reg as usize).copied()),
                    None => self.current_reg_type(reg),
                };
                if handle == NULL {
                    let msg = match access {
                        Access::Index => "null reference: index into null array".to_string(),
                        Access::Count => "null reference: count() of null array".to_string(),
                        Access::Call(f) => format!(
                            "null reference: method '{}' called on null",
                            self.method_name(f)
                        ),
                        Access::Field(f) => {
                            let (class, name) = match ty {
                                Some(Type::Object(c)) => {
                                    let class = self.module.classes.get(c as usize);
                                    let field = class.and_then(|c| c.fields.get(f as usize));
                                    (class.map(|c| c.name.clone()), field.map(|f| f.name.clone()))
                                }
                                _ => (None, None),
                            };
                            match (class, name) {
                                // A library class's hidden state (`KernelTimer`'s `$state`):
                                // its methods read it, so the user called one on null.
                                (Some(class), Some(name)) if name.starts_with('$') => {
                                    format!("null reference: method of a null {class}")
                                }
                                (_, name) => format!(
                                    "null reference: field '{}' of null",
                                    name.unwrap_or_else(|| format!("#{f}"))
                                ),
                            }
                        }
                    };
                    (ErrorCode::Null, msg)
                } else {
                    let name = ty
                        .map(|t| self.type_name(t))
                        .unwrap_or_else(|| "object".into());
                    let msg = match access {
                        Access::Call(f) => format!(
                            "method '{}' called on a dropped {name} object",
                            self.method_name(f)
                        ),
                        _ => format!("use of dropped {name} object"),
                    };
                    (ErrorCode::Dropped, msg)
                }
            }
        }
    }

    /// Whether the index or length that instruction `pc` of `func` failed on holds a uint64
    /// value ([`cajeta_bytecode::Function::index_holds_u64`]), so that its bits print unsigned.
    fn operand_was_u64(&self, func: u32, pc: u32) -> bool {
        self.module
            .functions
            .get(func as usize)
            .is_some_and(|f| f.index_holds_u64(pc))
    }

    /// The String method whose receiver instruction `pc` of `func` found null: `count`
    /// (`str.count`) or `size` (`str.size`), or `equals`, whose receiver the compiler checks
    /// with a `str.size` right before the `eq.str` of the same receiver.
    fn string_method_at(&self, func: u32, pc: u32) -> Option<&'static str> {
        let code = &self.module.functions.get(func as usize)?.code;
        let ins = code.get(pc as usize)?;
        match ins.op {
            Op::StrCount => Some("count"),
            Op::StrSize => match code.get(pc as usize + 1) {
                Some(next) if next.op == Op::EqStr && next.b == ins.b => Some("equals"),
                _ => Some("size"),
            },
            _ => None,
        }
    }

    /// An instance method's name as the user wrote the call (`Counter.add`).
    fn method_name(&self, func: u16) -> String {
        self.module.functions.get(usize::from(func)).map_or_else(
            || format!("#{func}"),
            |f| {
                let mut parts = f.name.rsplit('.');
                match (parts.next(), parts.next()) {
                    (Some(m), Some(c)) => format!("{c}.{m}"),
                    _ => f.name.clone(),
                }
            },
        )
    }

    /// The type of register `reg` of the running function.
    pub(crate) fn current_reg_type(&self, reg: u16) -> Option<Type> {
        let frame = self.frames.last()?;
        self.module
            .functions
            .get(frame.func as usize)?
            .regs
            .get(reg as usize)
            .copied()
    }

    /// A type as the user wrote it: simple class names, `int32[]`, `String`.
    fn type_name(&self, ty: Type) -> String {
        let class = |c: u32| {
            self.module
                .classes
                .get(c as usize)
                .map(|c| c.name.rsplit('.').next().unwrap_or(&c.name).to_string())
                .unwrap_or_else(|| format!("class#{c}"))
        };
        match ty {
            Type::Object(c) => class(c),
            Type::Array(Elem::Object(c)) => format!("{}[]", class(c)),
            other => other.to_string(),
        }
    }

    /// The fault of a check point that stopped: an interrupt (which the error consumes: the
    /// flag is cleared, so the next call runs) before exhausted fuel.
    #[cold]
    #[inline(never)]
    pub(crate) fn meter_fault(&mut self) -> Fault {
        if self
            .interrupt
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            Fault::Interrupted
        } else {
            Fault::Fuel
        }
    }

    /// Grows the register stack to at least `top` cells: doubling, or when that would pass
    /// the memory limit by half the room left under it (so that a recursion approaching the
    /// limit grows the stack a few more times, not at every call), or only to `top`. The
    /// caller re-derives its register pointer afterwards. The growth counts towards the limit
    /// (`E-MEMORY` past it, or when the system refuses the memory; never an abort).
    #[cold]
    #[inline(never)]
    pub(crate) fn grow_stack(&mut self, top: usize) -> Result<(), Fault> {
        let old = self.stack.len();
        let mut refused = Fault::OutOfMemory {
            requested: (top.saturating_sub(old) as u64).saturating_mul(8),
        };
        let half_room = usize::try_from(self.heap.room() / 16).unwrap_or(usize::MAX);
        for len in [
            top.max(old.saturating_mul(2)),
            top.max(old.saturating_add(half_room)),
            top,
        ] {
            let extra = len.saturating_sub(old);
            let bytes = (extra as u64).saturating_mul(8);
            if let Err(e) = self.heap.check_room(bytes) {
                refused = Fault::from(e);
                continue;
            }
            if self.stack.try_reserve_exact(extra).is_err() {
                continue;
            }
            self.heap.reserve_stack(bytes)?;
            self.stack.resize(len, 0);
            return Ok(());
        }
        Err(refused)
    }

    /// Allocates a string, first collecting if the live-string count or bytes have doubled.
    #[inline(never)]
    pub(crate) fn new_string(&mut self, s: String) -> Result<u64, Fault> {
        if self.heap.wants_collection() {
            self.collect_strings();
        }
        self.heap.alloc_str(s).map_err(Fault::from)
    }

    /// Checks that `bytes` more fit under the memory limit, collecting unreachable strings
    /// first when they do not (their bytes count until a collection frees them).
    pub(crate) fn make_room(&mut self, bytes: u64) -> Result<(), Fault> {
        if self.heap.check_room(bytes).is_err() {
            self.collect_strings();
        }
        Ok(self.heap.check_room(bytes)?)
    }

    /// Runs the string collector with the VM's roots: the String registers of every frame, the
    /// String statics and the constant cells (the first module's constants are also pinned;
    /// those of a module installed by `Vm::replace_module` are not, so they are rooted here;
    /// arrays and instances are scanned by the heap).
    #[cold]
    #[inline(never)]
    pub(crate) fn collect_strings(&mut self) {
        let scan_all = self.jit_active();
        let Vm {
            heap,
            frames,
            stack,
            fns,
            statics,
            static_str,
            class_str_fields,
            kvals,
            ..
        } = self;
        let cells = stack.as_slice();
        heap.collect(class_str_fields, |m| {
            if scan_all {
                // Compiled frames are not in `frames` and their String registers are wherever
                // their windows are: every cell is a possible root (a stale one only keeps a
                // string alive a little longer).
                for &cell in cells {
                    m.mark(cell);
                }
            }
            for frame in frames.iter() {
                for &r in fns[frame.func as usize].str_regs.iter() {
                    if let Some(&cell) = cells.get(frame.base + r as usize) {
                        m.mark(cell);
                    }
                }
            }
            for &s in static_str.iter() {
                if let Some(&cell) = statics.get(s as usize) {
                    m.mark(cell);
                }
            }
            // Numbers among the cells are ignored by `mark` (not a live string's handle).
            for &cell in kvals.iter() {
                m.mark(cell);
            }
        });
    }

    /// `tostr.*`: the §3.5 conversion of a cell of type `s`.
    #[inline(never)]
    pub(crate) fn convert_to_string(&mut self, s: Scalar, x: u64) -> Result<u64, Fault> {
        let text = match s {
            Scalar::Bool => (if x != 0 { "true" } else { "false" }).to_string(),
            Scalar::Char => format::char_text(x).to_string(),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => (x as i64).to_string(),
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => x.to_string(),
            Scalar::F32 => format::fmt_g(f32::from_bits(x as u32) as f64),
            Scalar::F16 => format::fmt_g(f64::from(half::f16_to_f32(x as u16))),
            Scalar::BF16 => format::fmt_g(f64::from(half::bf16_to_f32(x as u16))),
            Scalar::F64 => format::fmt_g(f64::from_bits(x)),
        };
        self.new_string(text)
    }

    /// `concat`: joins two strings, null reading as `null`.
    #[inline(never)]
    pub(crate) fn concat(&mut self, x: u64, y: u64) -> Result<u64, Fault> {
        let text = |vm: &Vm, h| vm.heap.str(h).unwrap_or("null").len();
        let len = text(self, x).saturating_add(text(self, y));
        self.make_room(len as u64)?;
        let a = self.heap.str(x).unwrap_or("null");
        let b = self.heap.str(y).unwrap_or("null");
        let mut s = self.heap.text_buffer(len)?;
        s.push_str(a);
        s.push_str(b);
        self.new_string(s)
    }

    /// `fmt.fixed`: C `%.Nf`.
    #[inline(never)]
    pub(crate) fn fmt_fixed(&mut self, x: u64, decimals: u16) -> Result<u64, Fault> {
        let s = format::fmt_fixed(f64::from_bits(x), decimals as usize);
        self.new_string(s)
    }

    /// `str.parseint`: a decimal int64 with an optional sign (`Cajeta.parseInt`).
    #[inline(never)]
    pub(crate) fn parse_int(&self, h: u64) -> Result<u64, Fault> {
        let text = self.heap.str(h).ok_or(Fault::ParseInt { handle: NULL })?;
        let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Fault::ParseInt { handle: h });
        }
        text.parse::<i64>()
            .map(|v| v as u64)
            .map_err(|_| Fault::ParseInt { handle: h })
    }

    /// `str.format`: the `{}` / `{:.N}` format form with a run-time format string: `strs`
    /// holds each argument's string conversion, `vals` its float64 value (NaN if not numeric).
    #[inline(never)]
    pub(crate) fn format_dyn(&mut self, fmt: u64, strs: u64, vals: u64) -> Result<u64, Fault> {
        // The text is at most the format's characters, each argument once, and for each `{`
        // a fixed-point number (309 digits, a sign, a point and 340 decimals at most).
        let bound = {
            let (f, args) = self.format_inputs(fmt, strs, vals)?;
            let arg_bytes = args.iter().fold(0usize, |n, a| n.saturating_add(a.0.len()));
            (f.len() as u64)
                .saturating_add(arg_bytes as u64)
                .saturating_add(660 * f.matches('{').count() as u64)
        };
        self.make_room(bound)?;
        let (f, args) = self.format_inputs(fmt, strs, vals)?;
        let text = format::format_args(f, &args);
        self.new_string(text)
    }

    /// The format string of `str.format` and its arguments' (text, value) pairs.
    fn format_inputs(&self, fmt: u64, strs: u64, vals: u64) -> Result<FormatInputs<'_>, Fault> {
        let fmt = self.heap.str(fmt).unwrap_or("null");
        let (
            Some(Obj::Array(Array {
                data: ArrData::Ref(sv),
                ..
            })),
            Some(Obj::Array(Array {
                data: ArrData::F64(fv),
                ..
            })),
        ) = (self.heap.get(strs), self.heap.get(vals))
        else {
            return Err(Fault::BadRef {
                reg: 0,
                handle: NULL,
                access: Access::Index,
            });
        };
        let args = sv
            .iter()
            .zip(fv.iter())
            .map(|(&h, &v)| (self.heap.str(h).unwrap_or("null"), v))
            .collect();
        Ok((fmt, args))
    }

    /// `eq.str`: equal contents; null equals only null.
    #[inline(never)]
    pub(crate) fn str_eq(&self, x: u64, y: u64) -> bool {
        if x == y {
            return true;
        }
        match (self.heap.str(x), self.heap.str(y)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// `print`: writes string `h` (null: `null`); `flags` bit 0 selects stderr, bit 1 adds a
    /// newline. Fails once stdout cannot be written (see [`crate::output`]).
    #[inline(never)]
    pub(crate) fn print(&mut self, h: u64, flags: u16) -> Result<(), Fault> {
        let Vm { heap, out, .. } = self;
        let text = heap.str(h).unwrap_or("null");
        out.write(flags & 1 != 0, text, flags & 2 != 0);
        match out.failure() {
            None => Ok(()),
            Some(_) => Err(Fault::Output),
        }
    }

    /// `newarr`: a zero-filled array of `n` elements of the element type of register `dst`.
    #[inline(never)]
    pub(crate) fn new_array(&mut self, dst: u16, n: u64) -> Result<u64, Fault> {
        let len = n as i64;
        let elem = match self.current_reg_type(dst) {
            Some(Type::Array(e)) => e,
            // Excluded by the verifier (newarr's destination is an array register).
            _ => return Err(Fault::Size(len)),
        };
        self.alloc_array(elem, len)
    }

    /// A zero-filled array of `len` elements of `elem` (`newarr` in both tiers): `E-SIZE` for
    /// a negative or unallocatable length (past [`crate::system_memory_limit`] alone),
    /// `E-MEMORY` past the VM's memory limit beside what is live (checked before
    /// the elements are allocated).
    pub(crate) fn alloc_array(&mut self, elem: Elem, len: i64) -> Result<u64, Fault> {
        if len < 0 {
            return Err(Fault::Size(len));
        }
        let size = match elem {
            Elem::Scalar(s) => s.size() as u64,
            _ => 8,
        };
        // Unallocatable (E-SIZE): more bytes than the machine could ever give this process.
        let bytes = (len as u64)
            .checked_mul(size)
            .filter(|&b| b <= isize::MAX as u64 && crate::embed::machine_allows(b))
            .ok_or(Fault::Size(len))?;
        self.make_room(bytes)?;
        let data = ArrData::zeroed(elem, len as usize).ok_or(Fault::Size(len))?;
        Ok(self.heap.alloc(Obj::Array(Array { elem, data }))?)
    }

    /// `newobj`: a zero-filled instance of class `class`.
    #[inline(never)]
    pub(crate) fn new_instance(&mut self, class: u32) -> Result<u64, Fault> {
        let n = self
            .module
            .classes
            .get(class as usize)
            .map_or(0, |c| c.fields.len());
        let fields = vec![0u64; n].into_boxed_slice();
        Ok(self.heap.alloc(Obj::Instance(Instance { class, fields }))?)
    }
}

/// `System.currentTimeMillis()` (selector 0) or `System.nanoTime()` (1, monotonic from the
/// first call in the process).
#[inline(never)]
pub(crate) fn clock(selector: u16) -> i64 {
    use std::sync::OnceLock;
    use std::time::{Instant, SystemTime, UNIX_EPOCH};
    static START: OnceLock<Instant> = OnceLock::new();
    if selector == 0 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    } else {
        START.get_or_init(Instant::now).elapsed().as_nanos() as i64
    }
}
