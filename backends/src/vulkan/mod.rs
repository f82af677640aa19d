//! The Vulkan backend: kernel bytecode lowered to SPIR-V ([`spirv`]) and run through ash
//! ([`runtime`]), which loads the Vulkan loader at run time (no Vulkan needed to build).
//!
//! `CAJETA_VULKAN_FORCE_STAGING=1` makes every `Device`-kind storage device-only for the host:
//! transfers go through staging buffers even where the memory is host-visible (lavapipe has a
//! single host-visible memory type, so the staging path would otherwise never run).

mod icd;
pub mod runtime;
pub mod spirv;

use crate::Backend;
use std::sync::Arc;

/// Opens the Vulkan backend, or says why it is unavailable (no loader, no device). A real GPU
/// is preferred; a CPU implementation (lavapipe) is taken only when `allow_cpu_device` is set
/// (an explicit `--backend vulkan`). Without it, where the installed drivers' manifests show
/// that no GPU-type device can exist, Vulkan is not loaded at all (see `icd.rs`). Never panics.
pub fn open(allow_cpu_device: bool) -> Result<Arc<dyn Backend>, String> {
    if !allow_cpu_device {
        // Settled without loading any driver when the installed ones cannot report a GPU.
        if let Some(why) = icd::no_gpu_device() {
            return Err(why);
        }
    }
    let force_staging = std::env::var("CAJETA_VULKAN_FORCE_STAGING").is_ok_and(|v| v == "1");
    let b = runtime::VulkanBackend::new(allow_cpu_device, force_staging)?;
    Ok(Arc::new(b))
}
