//! The host side of the kernel ABI of [`super::ptx`], independent of the driver: launch
//! validation against the device limits, packing the arguments into parameter cells, and
//! decoding a launch's fault record into the [`KernelFault`] the `cpu` backend would raise.

use super::ptx::{FaultSite, Lowered, ParamAbi, SiteKind, FAULT_RECORD_BYTES};
use crate::{Dims, KernelArg, KernelFault, StorageId};
use cajeta_bytecode::Scalar;

/// The device limits a launch is checked against (XPU §8.3).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Limits {
    /// Items per workgroup.
    pub max_items: u32,
    /// Block size per axis.
    pub max_block: [u32; 3],
    /// Grid size per axis.
    pub max_grid: [u32; 3],
    /// Shared bytes per workgroup (opt-in maximum).
    pub max_shared: u64,
}

/// Checks a launch's geometry and shared memory (static declarations plus `sharedBytes`).
///
/// # Errors
/// The reason, for `kernel <k> refused by backend cuda: <reason>`.
pub fn check_dims(dims: &Dims, static_shared: u64, lim: &Limits) -> Result<(), String> {
    const AXES: [&str; 3] = ["x", "y", "z"];
    for (axis, name) in AXES.iter().enumerate() {
        if dims.block[axis] > lim.max_block[axis] {
            return Err(format!(
                "block dimension {name} of {} exceeds the limit {}",
                dims.block[axis], lim.max_block[axis]
            ));
        }
    }
    let items: u64 = dims.block.iter().map(|&b| u64::from(b)).product();
    if items > u64::from(lim.max_items) {
        return Err(format!(
            "block of {items} items exceeds the limit {}",
            lim.max_items
        ));
    }
    for (axis, name) in AXES.iter().enumerate() {
        let g = dims.grid[axis];
        if g > lim.max_grid[axis] {
            return Err(format!(
                "grid dimension {name} of {g} exceeds the limit {}",
                lim.max_grid[axis]
            ));
        }
        let total = u64::from(g) * u64::from(dims.block[axis]);
        if total > 1 << 32 {
            return Err(format!(
                "grid × block on axis {name} is {total} (at most 2^32)"
            ));
        }
    }
    match static_shared.checked_add(dims.shared_bytes) {
        Some(n) if n <= lim.max_shared => Ok(()),
        _ => Err(format!(
            "{} bytes of shared memory ({static_shared} static + {} dynamic) exceed the limit {}",
            u128::from(static_shared) + u128::from(dims.shared_bytes),
            dims.shared_bytes,
            lim.max_shared
        )),
    }
}

/// Re-canonicalises a scalar argument cell (see `bytecode::types`) and keeps what its `.param`
/// holds: the low 32 bits for types of at most 32 bits.
pub fn scalar_cell(s: Scalar, bits: u64) -> u64 {
    match s {
        Scalar::Bool => u64::from(bits != 0),
        Scalar::I8 => u64::from(bits as i8 as i32 as u32),
        Scalar::U8 => bits & 0xff,
        Scalar::I16 => u64::from(bits as i16 as i32 as u32),
        Scalar::U16 | Scalar::F16 | Scalar::BF16 => bits & 0xffff,
        Scalar::Char | Scalar::I32 | Scalar::U32 | Scalar::F32 => bits & 0xffff_ffff,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => bits,
    }
}

/// A storage as a launch sees it: its device address and size in bytes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct BoundStorage {
    /// Device address of byte 0 (0 for empty storage).
    pub address: u64,
    /// Size in bytes.
    pub bytes: u64,
}

/// Why arguments could not be packed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PackError {
    /// A refusal reason (`XPU-E-LAUNCH`).
    Refused(String),
    /// A buffer argument whose storage was released (`XPU-E-FREED`); the parameter index.
    Freed(usize),
}

/// Packs `args` for a kernel with parameters `params` into one 64-bit cell per `.param`
/// (scalars, then address and length per buffer; the fault record pointer is appended by the
/// caller). `storage` resolves a storage id (`None` once released). Also returns the storages
/// used, in argument order.
///
/// # Errors
/// A wrong argument count or kind, a view outside its storage, or a released storage.
pub fn pack_args(
    params: &[ParamAbi],
    args: &[KernelArg],
    mut storage: impl FnMut(StorageId) -> Option<BoundStorage>,
) -> Result<(Vec<u64>, Vec<StorageId>), PackError> {
    if args.len() != params.len() {
        return Err(PackError::Refused(format!(
            "{} arguments for {} parameters",
            args.len(),
            params.len()
        )));
    }
    let mut cells = Vec::with_capacity(params.len() * 2 + 1);
    let mut used = vec![];
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match (*p, *a) {
            (ParamAbi::Scalar(s), KernelArg::Scalar(bits)) => cells.push(scalar_cell(s, bits)),
            (
                ParamAbi::Buffer(s),
                KernelArg::Buffer {
                    storage: id,
                    offset,
                    len,
                },
            ) => {
                let st = storage(id).ok_or(PackError::Freed(i))?;
                let size = s.size() as u64;
                let fits = offset
                    .checked_add(len)
                    .and_then(|end| end.checked_mul(size))
                    .is_some_and(|end| end <= st.bytes);
                if !fits {
                    return Err(PackError::Refused(format!(
                        "buffer argument {i} ({len} elements at {offset}) lies outside its storage of {} bytes",
                        st.bytes
                    )));
                }
                // In range, so offset * size <= bytes: no overflow.
                cells.push(st.address + offset * size);
                cells.push(len);
                used.push(id);
            }
            (ParamAbi::Scalar(_), _) => {
                return Err(PackError::Refused(format!("argument {i} must be a scalar")))
            }
            (ParamAbi::Buffer(_), _) => {
                return Err(PackError::Refused(format!("argument {i} must be a buffer")))
            }
        }
    }
    Ok((cells, used))
}

/// A little-endian `u32` at `at` of `rec`.
fn u32_at(rec: &[u8; FAULT_RECORD_BYTES], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&rec[at..at + 4]);
    u32::from_le_bytes(b)
}

/// A little-endian `u64` at `at` of `rec`.
fn u64_at(rec: &[u8; FAULT_RECORD_BYTES], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&rec[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The fault a launch's record holds, if any, with the `cpu` backend's message (XPU §7.2).
/// `kernel` is the kernel's simple name. A site number outside the table (a corrupted record)
/// is reported as an internal error rather than ignored.
pub fn decode_fault(
    rec: &[u8; FAULT_RECORD_BYTES],
    lowered: &Lowered,
    kernel: &str,
) -> Option<KernelFault> {
    let site = u32_at(rec, 4);
    if site == 0 {
        return None;
    }
    let at = format!(
        "workgroup ({},{},{}), item ({},{},{})",
        u32_at(rec, 40),
        u32_at(rec, 44),
        u32_at(rec, 48),
        u32_at(rec, 52),
        u32_at(rec, 56),
        u32_at(rec, 60)
    );
    let Some(FaultSite {
        kind,
        frames,
        unsigned_index,
    }) = lowered.sites.get(site as usize - 1)
    else {
        return Some(KernelFault {
            code: "XPU-E-LAUNCH",
            message: format!(
                "kernel {kernel}: internal error of backend cuda: fault site {site} ({at})"
            ),
            frames: vec![],
        });
    };
    let (code, message) = match kind {
        SiteKind::Bounds { shared, var } => (
            "XPU-E-BOUNDS",
            format!(
                "kernel {kernel}: index {} out of bounds for length {} ({} {var}, {at})",
                crate::index_text(u64_at(rec, 24) as i64, *unsigned_index),
                u64_at(rec, 32),
                if *shared { "shared" } else { "buffer" }
            ),
        ),
        SiteKind::Lane { var } => (
            "XPU-E-BOUNDS",
            format!(
                "kernel {kernel}: index {} out of bounds for length {} (lane of vector {var}, {at})",
                crate::index_text(u64_at(rec, 24) as i64, *unsigned_index),
                u64_at(rec, 32)
            ),
        ),
        SiteKind::DivZero => (
            "E-DIVZERO",
            format!("kernel {kernel}: integer division by zero ({at})"),
        ),
        SiteKind::Overflow => (
            "E-OVERFLOW",
            format!("kernel {kernel}: integer overflow in division ({at})"),
        ),
    };
    Some(KernelFault {
        code,
        message,
        frames: frames.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::ptx;
    use cajeta_bytecode::{FnKind, Function, Instr, LocalName, Module, Op, Type};

    const LIM: Limits = Limits {
        max_items: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [(1 << 31) - 1, 65535, 65535],
        max_shared: 48 << 10,
    };

    fn dims(grid: [u32; 3], block: [u32; 3], shared_bytes: u64) -> Dims {
        Dims {
            grid,
            block,
            shared_bytes,
        }
    }

    #[test]
    fn launch_limits() {
        assert_eq!(
            check_dims(&dims([4, 1, 1], [256, 1, 1], 0), 1024, &LIM),
            Ok(())
        );
        let e = check_dims(&dims([1, 1, 1], [2048, 1, 1], 0), 0, &LIM).unwrap_err();
        assert_eq!(e, "block dimension x of 2048 exceeds the limit 1024");
        let e = check_dims(&dims([1, 1, 1], [64, 32, 1], 0), 0, &LIM).unwrap_err();
        assert_eq!(e, "block of 2048 items exceeds the limit 1024");
        let e = check_dims(&dims([1, 65536, 1], [1, 1, 1], 0), 0, &LIM).unwrap_err();
        assert_eq!(e, "grid dimension y of 65536 exceeds the limit 65535");
        let e = check_dims(&dims([(1 << 31) - 1, 1, 1], [4, 1, 1], 0), 0, &LIM).unwrap_err();
        assert!(e.contains("at most 2^32"), "{e}");
        let e = check_dims(&dims([1, 1, 1], [1, 1, 1], 49153 - 1024), 1024, &LIM).unwrap_err();
        assert!(e.starts_with("49153 bytes of shared memory"), "{e}");
        assert!(check_dims(&dims([1, 1, 1], [1, 1, 1], u64::MAX), 8, &LIM).is_err());
    }

    #[test]
    fn scalar_cells_are_canonical_param_bits() {
        assert_eq!(scalar_cell(Scalar::I8, (-3i64) as u64), 0xffff_fffd);
        assert_eq!(scalar_cell(Scalar::I8, 0x1ff), 0xffff_ffff);
        assert_eq!(scalar_cell(Scalar::U16, 0x1_2345), 0x2345);
        assert_eq!(scalar_cell(Scalar::Bool, 7), 1);
        assert_eq!(scalar_cell(Scalar::I32, (-1i64) as u64), 0xffff_ffff);
        assert_eq!(
            scalar_cell(Scalar::F32, u64::from(1.5f32.to_bits())),
            0x3fc0_0000
        );
        assert_eq!(scalar_cell(Scalar::I64, u64::MAX), u64::MAX);
    }

    #[test]
    fn packing_buffers_and_scalars() {
        let params = [
            ParamAbi::Buffer(Scalar::F32),
            ParamAbi::Scalar(Scalar::I16),
            ParamAbi::Buffer(Scalar::I64),
        ];
        let st = |id: StorageId| match id.0 {
            1 => Some(BoundStorage {
                address: 0x1000,
                bytes: 400,
            }),
            2 => Some(BoundStorage {
                address: 0x8000,
                bytes: 80,
            }),
            _ => None,
        };
        let buf = |s, offset, len| KernelArg::Buffer {
            storage: StorageId(s),
            offset,
            len,
        };
        let args = [buf(1, 10, 90), KernelArg::Scalar(0xffff), buf(2, 0, 10)];
        let (cells, used) = pack_args(&params, &args, st).unwrap();
        assert_eq!(cells, vec![0x1000 + 40, 90, 0xffff_ffff, 0x8000, 10]);
        assert_eq!(used, vec![StorageId(1), StorageId(2)]);

        // A view one element past its storage, a released storage, wrong kinds and counts.
        let args = [buf(1, 10, 91), KernelArg::Scalar(0), buf(2, 0, 10)];
        assert!(matches!(
            pack_args(&params, &args, st),
            Err(PackError::Refused(_))
        ));
        let args = [buf(1, u64::MAX, 2), KernelArg::Scalar(0), buf(2, 0, 10)];
        assert!(matches!(
            pack_args(&params, &args, st),
            Err(PackError::Refused(_))
        ));
        let args = [buf(1, 0, 1), KernelArg::Scalar(0), buf(3, 0, 1)];
        assert_eq!(pack_args(&params, &args, st), Err(PackError::Freed(2)));
        let args = [KernelArg::Scalar(0), KernelArg::Scalar(0), buf(2, 0, 1)];
        assert!(matches!(
            pack_args(&params, &args, st),
            Err(PackError::Refused(_))
        ));
        assert!(matches!(
            pack_args(&params, &args[..2], st),
            Err(PackError::Refused(_))
        ));
    }

    /// A kernel `t.K.k(KernelBuffer<int32> ys, int64 i)` doing `ys[i] = ys[i] / ys[i]`.
    fn faulting_kernel() -> Module {
        let f = Function {
            name: "t.K.k".into(),
            kind: FnKind::Kernel,
            params: 2,
            ret: None,
            regs: vec![
                Type::Buffer(Scalar::I32),
                Type::Scalar(Scalar::I64),
                Type::Scalar(Scalar::I32),
            ],
            code: vec![
                Instr::new(Op::DevGetI32, 2, 0, 1),
                Instr::new(Op::DivI32, 2, 2, 2),
                Instr::new(Op::DevSetI32, 0, 1, 2),
                Instr::new(Op::RetVoid, 0, 0, 0),
            ],
            file: 0,
            lines: vec![],
            regions: vec![],
            locals: vec![LocalName {
                reg: 0,
                name: "ys".into(),
            }],
            shared: vec![],
            inlined: vec![],
        };
        Module {
            functions: vec![f],
            ..Module::default()
        }
    }

    fn record(site: u32, index: i64, len: u64, wg: [u32; 3], item: [u32; 3]) -> [u8; 64] {
        let mut r = [0u8; FAULT_RECORD_BYTES];
        r[4..8].copy_from_slice(&site.to_le_bytes());
        r[24..32].copy_from_slice(&index.to_le_bytes());
        r[32..40].copy_from_slice(&len.to_le_bytes());
        for (i, v) in wg.iter().chain(&item).enumerate() {
            r[40 + 4 * i..44 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        r
    }

    #[test]
    fn fault_records_decode_to_the_cpu_messages() {
        let m = faulting_kernel();
        let l = ptx::lower(&m, 0, "sm_90").unwrap();
        // Sites: bounds (load), divide by zero, overflow, bounds (store).
        let kinds: Vec<_> = l.sites.iter().map(|s| s.kind.clone()).collect();
        assert_eq!(kinds.len(), 4, "{kinds:?}");
        assert_eq!(decode_fault(&[0; 64], &l, "k"), None);

        let f = decode_fault(&record(1, -5, 1000, [3, 0, 0], [232, 0, 0]), &l, "k").unwrap();
        assert_eq!(f.code, "XPU-E-BOUNDS");
        assert_eq!(
            f.message,
            "kernel k: index -5 out of bounds for length 1000 (buffer ys, workgroup (3,0,0), item (232,0,0))"
        );
        assert_eq!(f.frames, vec![(0, 0)]);

        let f = decode_fault(&record(2, 0, 0, [0, 1, 2], [2, 0, 0]), &l, "k").unwrap();
        assert_eq!(f.code, "E-DIVZERO");
        assert_eq!(
            f.message,
            "kernel k: integer division by zero (workgroup (0,1,2), item (2,0,0))"
        );
        assert_eq!(f.frames, vec![(0, 1)]);

        let f = decode_fault(&record(3, 0, 0, [0, 0, 0], [0, 0, 0]), &l, "k").unwrap();
        assert_eq!(f.code, "E-OVERFLOW");

        let f = decode_fault(&record(99, 0, 0, [0; 3], [0; 3]), &l, "k").unwrap();
        assert_eq!(f.code, "XPU-E-LAUNCH");
    }
}
