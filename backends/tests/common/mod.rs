//! Helpers of the backend tests: a tiny assembler for hand-built kernel modules (every module is
//! verified before use) and typed buffer transfers.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use cajeta_backends::{Backend, Dims, KernelArg, LaunchError, MemoryKind, StorageId, StreamId};
use cajeta_bytecode::{
    verify, Const, FnKind, Function, Instr, LocalName, Module, Op, Scalar, SharedDecl, Type,
};

pub const BOOL: Type = Type::Scalar(Scalar::Bool);
pub const I32: Type = Type::Scalar(Scalar::I32);
pub const U32: Type = Type::Scalar(Scalar::U32);
pub const I64: Type = Type::Scalar(Scalar::I64);
pub const U64: Type = Type::Scalar(Scalar::U64);
pub const F32: Type = Type::Scalar(Scalar::F32);

/// `KernelBuffer<s>`.
pub fn buf(s: Scalar) -> Type {
    Type::Buffer(s)
}

/// Builds one function, with labels for jumps.
pub struct Asm {
    f: Function,
    labels: HashMap<&'static str, u32>,
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    fn new(name: &str, kind: FnKind, ret: Option<Type>) -> Asm {
        Asm {
            f: Function {
                name: name.into(),
                kind,
                params: 0,
                ret,
                regs: vec![],
                code: vec![],
                file: 0,
                lines: vec![],
                regions: vec![],
                locals: vec![],
                shared: vec![],
                inlined: vec![],
            },
            labels: HashMap::new(),
            fixups: vec![],
        }
    }

    /// A kernel.
    pub fn kernel(name: &str) -> Asm {
        Asm::new(name, FnKind::Kernel, None)
    }

    /// A device function.
    pub fn device(name: &str, ret: Option<Type>) -> Asm {
        Asm::new(name, FnKind::Device, ret)
    }

    /// A named parameter (declare all parameters before other registers).
    pub fn param(&mut self, name: &str, ty: Type) -> u16 {
        assert_eq!(self.f.regs.len(), usize::from(self.f.params));
        self.f.params += 1;
        self.local(name, ty)
    }

    /// A named register.
    pub fn local(&mut self, name: &str, ty: Type) -> u16 {
        let r = self.reg(ty);
        self.f.locals.push(LocalName {
            reg: r,
            name: name.into(),
        });
        r
    }

    /// An anonymous register.
    pub fn reg(&mut self, ty: Type) -> u16 {
        self.f.regs.push(ty);
        (self.f.regs.len() - 1) as u16
    }

    /// A shared declaration; returns its slot.
    pub fn shared(&mut self, elem: Scalar, len: u32) -> u16 {
        self.f.shared.push(SharedDecl { elem, len });
        (self.f.shared.len() - 1) as u16
    }

    /// The next pc.
    pub fn pc(&self) -> u32 {
        self.f.code.len() as u32
    }

    /// `op a b c`.
    pub fn op(&mut self, op: Op, a: u16, b: u16, c: u16) -> &mut Self {
        self.f.code.push(Instr::new(op, a, b, c));
        self
    }

    /// `op a bc`.
    pub fn bc(&mut self, op: Op, a: u16, bc: u32) -> &mut Self {
        self.f.code.push(Instr::with_bc(op, a, bc));
        self
    }

    /// `loadi r, v`.
    pub fn loadi(&mut self, r: u16, v: i32) -> &mut Self {
        self.bc(Op::LoadI, r, v as u32)
    }

    /// A jump (`jmp`, `jmpif`, `jmpifnot`) to `label`.
    pub fn jump(&mut self, op: Op, a: u16, label: &'static str) -> &mut Self {
        self.fixups.push((self.f.code.len(), label));
        self.bc(op, a, 0)
    }

    /// Places `label` at the next pc.
    pub fn label(&mut self, label: &'static str) -> &mut Self {
        self.labels.insert(label, self.pc());
        self
    }

    /// The function, jumps resolved.
    pub fn finish(mut self) -> Function {
        for (at, l) in self.fixups {
            let target = self.labels[l];
            self.f.code[at].set_bc(target);
        }
        self.f
    }
}

/// A verified module of `functions` with constant pool `consts`.
pub fn module(functions: Vec<Function>, consts: Vec<Const>) -> Arc<Module> {
    let m = Module {
        files: vec!["t.cajeta".into()],
        consts,
        functions,
        ..Module::default()
    };
    if let Err(e) = verify(&m) {
        panic!("test module does not verify: {e}");
    }
    Arc::new(m)
}

/// Grid and block with no dynamic shared memory.
pub fn dims(grid: [u32; 3], block: [u32; 3]) -> Dims {
    Dims {
        grid,
        block,
        shared_bytes: 0,
    }
}

/// Launches kernel `k` on the default stream.
pub fn launch(
    b: &dyn Backend,
    m: &Arc<Module>,
    k: u32,
    d: Dims,
    args: &[KernelArg],
) -> Result<(), LaunchError> {
    b.launch(m, k, d, args, StreamId::DEFAULT)
}

/// A whole-storage buffer argument of `len` elements.
pub fn arg(id: StorageId, len: usize) -> KernelArg {
    KernelArg::Buffer {
        storage: id,
        offset: 0,
        len: len as u64,
    }
}

/// Element types that travel as little-endian bytes.
pub trait Elem: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
elem!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// A new storage holding `data`.
pub fn upload<T: Elem>(b: &dyn Backend, data: &[T]) -> StorageId {
    let id = b
        .alloc((data.len() * T::SIZE) as u64, MemoryKind::Device, false)
        .unwrap();
    let mut bytes = Vec::new();
    for &x in data {
        x.put(&mut bytes);
    }
    b.write(id, 0, &bytes);
    id
}

/// The first `n` elements of a storage.
pub fn download<T: Elem>(b: &dyn Backend, id: StorageId, n: usize) -> Vec<T> {
    let mut bytes = vec![0u8; n * T::SIZE];
    b.read(id, 0, &mut bytes);
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}
