//! The Vulkan backend: kernel bytecode lowered to SPIR-V ([`spirv`]) and run through ash, which
//! loads the Vulkan loader at run time (no Vulkan needed to build).

pub mod spirv;

use crate::Backend;
use std::sync::Arc;

/// Opens the Vulkan backend, or says why it is unavailable (no loader, no device). A real GPU
/// is preferred; a CPU implementation (lavapipe) is taken only when `allow_cpu_device` is set
/// (an explicit `--backend vulkan`). Never panics.
pub fn open(allow_cpu_device: bool) -> Result<Arc<dyn Backend>, String> {
    let _ = allow_cpu_device;
    Err("the Vulkan runtime is not implemented yet".into())
}
