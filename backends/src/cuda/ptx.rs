//! PTX emission: one kernel (with its `@Device` callees inlined) to PTX text.

use crate::LowerError;
use cajeta_bytecode::Module;

/// The default target architecture (`--cuda-arch`).
pub const DEFAULT_ARCH: &str = "sm_80";

/// The PTX module of kernel function `kernel` of `module`, for `arch` (`sm_80`, `sm_90`, …).
pub fn emit_ptx(module: &Module, kernel: u32, arch: &str) -> Result<String, LowerError> {
    let _ = arch;
    Err(LowerError {
        kernel: module.functions[kernel as usize].name.clone(),
        message: "PTX emission is not implemented yet".into(),
    })
}
