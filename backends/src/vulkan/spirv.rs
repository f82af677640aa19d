//! SPIR-V emission: one kernel (with its `@Device` callees inlined) to a SPIR-V module.

use crate::LowerError;
use cajeta_bytecode::Module;

/// The SPIR-V module (words) of kernel function `kernel` of `module`.
pub fn emit_spirv(module: &Module, kernel: u32) -> Result<Vec<u32>, LowerError> {
    Err(LowerError {
        kernel: module.functions[kernel as usize].name.clone(),
        message: "SPIR-V emission is not implemented yet".into(),
    })
}
