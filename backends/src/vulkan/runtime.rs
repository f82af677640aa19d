//! The Vulkan runtime: device selection, storage, pipelines and command batching with ash.
//!
//! * **Device**: the first physical device of the preferred type (discrete, integrated,
//!   virtual); a CPU implementation (lavapipe) only when the caller allows it. One compute
//!   queue. Optional features (8/16-bit storage, int64, float64, 64-bit and float atomics,
//!   subgroup arithmetic) are enabled where present; a kernel needing a missing one is refused
//!   with `XPU-E-LAUNCH` naming it.
//! * **Storage**: one `VkBuffer` + `VkDeviceMemory` per allocation. `Device` memory prefers
//!   device-local types, `Pinned`/`Unified` host-visible coherent ones. Host-visible memory is
//!   mapped persistently and copied with `memcpy`; other memory (and `Device` memory under
//!   `CAJETA_VULKAN_FORCE_STAGING=1`) goes through staging buffers.
//! * **Batching**: all streams share one queue and one open command buffer (XPU §4.1 allows
//!   `vulkan` to serialise streams). Launches, fills and staged uploads are recorded into it,
//!   separated by full memory barriers; the batch is submitted and waited for (one fence) at
//!   `sync()`, before a host access to a storage the batch uses, and when its launch slots run
//!   out. Recorded work keeps every storage it uses alive until the batch completes (§4.3).
//! * **Pipelines** are cached by the SPIR-V's content hash, one pipeline per block shape (the
//!   workgroup size is a specialization constant).
//! * **Faults**: each launch gets a 64-byte record in the batch's fault buffer; after the batch
//!   completes, the first launch (in submission order) whose record holds a fault becomes the
//!   pending fault that the next `stream_sync` reports (XPU §7.3).
//!
//! All Vulkan calls happen under the backend's mutex, which provides the external
//! synchronisation Vulkan requires for queues, pools and command buffers.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;
use cajeta_bytecode::{Module, Scalar};

use super::spirv::{self, Features, Lowered, Mem, ParamSlot, FAULT_WORDS};
use crate::{
    Backend, Capabilities, Dims, EventId, KernelArg, KernelFault, LaunchError, MemStats,
    MemoryKind, StorageId, StreamId, XpuError,
};

/// Launch slots (fault records) per batch.
const FAULT_SLOTS: u64 = 1024;
/// Bytes per fault record (a multiple of every `minStorageBufferOffsetAlignment` in practice;
/// the runtime rounds it up to the device's alignment).
const FAULT_RECORD: u64 = 64;

/// The instance and device, destroyed last (every other object holds an `Arc` of it).
struct Dev {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    mem_props: vk::PhysicalDeviceMemoryProperties,
}

impl Drop for Dev {
    fn drop(&mut self) {
        // SAFETY: every object created from the device holds an `Arc<Dev>` and was destroyed
        // before this runs; waiting for idle first makes the destruction legal.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// One buffer and its memory.
struct Storage {
    dev: Arc<Dev>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Size of the buffer (at least 4, a multiple of 4).
    size: u64,
    /// The persistent mapping of host-visible memory used directly.
    mapped: Option<*mut u8>,
    /// Requested bytes, and the statistics they count in (`None`: internal buffers).
    stats: Option<(u64, Arc<Mutex<MemStats>>)>,
}

// SAFETY: the mapping pointer is only dereferenced under the backend's mutex (or by the one
// owner of an internal staging buffer); Vulkan handles are plain integers.
unsafe impl Send for Storage {}
// SAFETY: as above; shared references never touch the mapping without the mutex.
unsafe impl Sync for Storage {}

impl Drop for Storage {
    fn drop(&mut self) {
        // SAFETY: the last reference is gone, so no recorded work uses the buffer any more
        // (batches hold references until their fence signalled).
        unsafe {
            self.dev.device.destroy_buffer(self.buffer, None);
            self.dev.device.free_memory(self.memory, None);
        }
        if let Some((bytes, stats)) = &self.stats {
            let mut s = stats.lock().unwrap_or_else(|e| e.into_inner());
            s.live = s.live.saturating_sub(*bytes);
            s.frees += 1;
        }
    }
}

/// A compiled kernel: the lowering, its layouts and its pipelines per block shape.
struct Kernel {
    dev: Arc<Dev>,
    lowered: Lowered,
    shader: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    /// By block shape and dynamic shared length in elements.
    pipelines: HashMap<([u32; 3], u32), vk::Pipeline>,
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: kernels are dropped with the backend, after the last batch completed.
        unsafe {
            for p in self.pipelines.values() {
                self.dev.device.destroy_pipeline(*p, None);
            }
            self.dev.device.destroy_pipeline_layout(self.layout, None);
            self.dev
                .device
                .destroy_descriptor_set_layout(self.set_layout, None);
            self.dev.device.destroy_shader_module(self.shader, None);
        }
    }
}

/// A launch recorded in the open batch, for fault reporting.
struct Recorded {
    kernel: Arc<Mutex<Kernel>>,
    slot: u64,
    /// Length in elements of each buffer argument (by parameter index).
    lens: Vec<u64>,
}

/// The open batch.
struct Batch {
    cmd: vk::CommandBuffer,
    recording: bool,
    used: HashSet<u64>,
    keep: Vec<Arc<Storage>>,
    launches: Vec<Recorded>,
    pools: Vec<vk::DescriptorPool>,
    /// The first pool that may still have free sets.
    pool_next: usize,
}

/// Mutable state.
struct State {
    storages: HashMap<u64, Arc<Storage>>,
    next_id: u64,
    next_stream: u64,
    kernels: HashMap<u64, Arc<Mutex<Kernel>>>,
    /// `(module address, kernel)` → content hash, with the module kept alive (no reuse).
    by_module: HashMap<(usize, u32), (Arc<Module>, u64)>,
    batch: Batch,
    pending: Option<KernelFault>,
    /// Batches submitted and completed so far; a recorded event names the batch (counted
    /// from 1) whose completion signals it.
    completed: u64,
}

/// The Vulkan backend (see the module documentation).
pub struct VulkanBackend {
    dev: Arc<Dev>,
    queue: vk::Queue,
    pool: vk::CommandPool,
    fence: vk::Fence,
    fault_buf: Arc<Storage>,
    fault_stride: u64,
    caps: Capabilities,
    have: Features,
    /// How kernels are lowered for this device (a lavapipe workaround).
    target: spirv::Target,
    /// The subgroup sizes a compute pipeline can require (`VK_EXT_subgroup_size_control`),
    /// `None` without it: `@Wave(width = N)` then needs `N` to be the default size.
    wave_sizes: Option<(u32, u32)>,
    force_staging: bool,
    host_device_memory: bool,
    /// Storage buffers one compute kernel may bind (the device's per-stage and per-set
    /// limits): buffer parameters plus the fault buffer.
    max_storage_buffers: u32,
    /// The device's workgroup counts per axis in one dispatch: a launch's grid is cut into
    /// dispatches of at most these, each at its base workgroup (`vkCmdDispatchBase`).
    dispatch_max: [u32; 3],
    stats: Arc<Mutex<MemStats>>,
    state: Mutex<State>,
}

fn vkerr(what: &str, e: vk::Result) -> String {
    format!("{what} failed: {e:?}")
}

impl VulkanBackend {
    /// Opens the first suitable device (see the module documentation).
    ///
    /// # Errors
    /// Why Vulkan is unavailable: no loader, no instance, no (allowed) device, no compute queue.
    pub fn new(allow_cpu_device: bool, force_staging: bool) -> Result<VulkanBackend, String> {
        // SAFETY: loading the Vulkan loader library runs its initialisers; that is the
        // documented way to use ash's `loaded` feature.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader ({e})"))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"cajeta")
            .api_version(vk::API_VERSION_1_2);
        // SAFETY: the create info and the application info outlive the call.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(|e| vkerr("vkCreateInstance", e))?;
        match Self::with_instance(
            entry.clone(),
            instance.clone(),
            allow_cpu_device,
            force_staging,
        ) {
            Ok(b) => Ok(b),
            Err(e) => {
                // SAFETY: the device creation failed, so no object of the instance exists.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn with_instance(
        entry: ash::Entry,
        instance: ash::Instance,
        allow_cpu_device: bool,
        force_staging: bool,
    ) -> Result<VulkanBackend, String> {
        // SAFETY: `instance` is a valid instance for all the queries below.
        let pds = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| vkerr("vkEnumeratePhysicalDevices", e))?;
        let rank = |t: vk::PhysicalDeviceType| match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => Some(0),
            vk::PhysicalDeviceType::INTEGRATED_GPU => Some(1),
            vk::PhysicalDeviceType::VIRTUAL_GPU => Some(2),
            vk::PhysicalDeviceType::CPU if allow_cpu_device => Some(3),
            _ => None,
        };
        let mut best: Option<(u32, vk::PhysicalDevice, vk::PhysicalDeviceProperties, u32)> = None;
        for pd in pds {
            // SAFETY: `pd` comes from this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let Some(r) = rank(props.device_type) else {
                continue;
            };
            if props.api_version < vk::API_VERSION_1_1 {
                continue;
            }
            // SAFETY: as above.
            let fams = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            let Some(fam) = fams
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            else {
                continue;
            };
            if best.as_ref().is_none_or(|b| r < b.0) {
                best = Some((r, pd, props, fam as u32));
            }
        }
        let Some((_, pd, props, family)) = best else {
            return Err(if allow_cpu_device {
                "no Vulkan 1.1 device with a compute queue".into()
            } else {
                "no GPU-type Vulkan device (a CPU implementation is used only with --backend vulkan)"
                    .into()
            });
        };
        let cpu = props.device_type == vk::PhysicalDeviceType::CPU;
        let lavapipe = cpu
            && props
                .device_name_as_c_str()
                .is_ok_and(|n| n.to_bytes().starts_with(b"llvmpipe"));
        let mut target = if lavapipe {
            spirv::Target::LAVAPIPE
        } else {
            spirv::Target::default()
        };
        let integrated = props.device_type == vk::PhysicalDeviceType::INTEGRATED_GPU;

        // Features.
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut fatomic = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        // SAFETY: as above.
        let exts = unsafe { instance.enumerate_device_extension_properties(pd) }
            .map_err(|e| vkerr("vkEnumerateDeviceExtensionProperties", e))?;
        let has_ext = |name: &std::ffi::CStr| {
            exts.iter()
                .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
        };
        let has_float_atomics = has_ext(vk::EXT_SHADER_ATOMIC_FLOAT_NAME);
        let has_size_control = has_ext(vk::EXT_SUBGROUP_SIZE_CONTROL_NAME);
        let mut fsize = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
        let base = {
            let mut f2 = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut f11)
                .push_next(&mut f12);
            if has_float_atomics {
                f2 = f2.push_next(&mut fatomic);
            }
            if has_size_control {
                f2 = f2.push_next(&mut fsize);
            }
            // SAFETY: the chained structures live until the end of this block.
            unsafe { instance.get_physical_device_features2(pd, &mut f2) };
            f2.features
        };
        let mut sub = vk::PhysicalDeviceSubgroupProperties::default();
        let mut psize = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        {
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sub);
            if has_size_control {
                p2 = p2.push_next(&mut psize);
            }
            // SAFETY: as above.
            unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
        }
        let size_control = has_size_control
            && fsize.subgroup_size_control == vk::TRUE
            && psize
                .required_subgroup_size_stages
                .contains(vk::ShaderStageFlags::COMPUTE)
            && psize.min_subgroup_size > 0;
        let wave_sizes = size_control.then_some((psize.min_subgroup_size, psize.max_subgroup_size));
        let on = |b: vk::Bool32| b == vk::TRUE;
        let compute_sub = sub.supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
        let have = Features {
            int8: on(f12.shader_int8) && on(f12.storage_buffer8_bit_access),
            int16: on(base.shader_int16) && on(f11.storage_buffer16_bit_access),
            int64: on(base.shader_int64),
            float64: on(base.shader_float64),
            atomic_int64: on(f12.shader_buffer_int64_atomics)
                && on(f12.shader_shared_int64_atomics),
            atomic_f32_buffer: has_float_atomics && on(fatomic.shader_buffer_float32_atomic_add),
            atomic_f32_shared: has_float_atomics && on(fatomic.shader_shared_float32_atomic_add),
            subgroup_arithmetic: compute_sub
                && sub
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::ARITHMETIC),
            subgroup_basic: compute_sub
                && sub
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::BASIC),
            subgroup_shuffle: compute_sub
                && sub
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::SHUFFLE),
            subgroup_ballot: compute_sub
                && sub
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::BALLOT),
            subgroup_vote: compute_sub
                && sub
                    .supported_operations
                    .contains(vk::SubgroupFeatureFlags::VOTE),
        };
        // Enable exactly what we use and have.
        let feats = vk::PhysicalDeviceFeatures::default()
            .shader_int16(have.int16)
            .shader_int64(have.int64)
            .shader_float64(have.float64);
        let mut e11 =
            vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(have.int16);
        let mut e12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_int8(have.int8)
            .storage_buffer8_bit_access(have.int8)
            .shader_buffer_int64_atomics(have.atomic_int64)
            .shader_shared_int64_atomics(have.atomic_int64);
        let mut ea = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomic_add(have.atomic_f32_buffer)
            .shader_shared_float32_atomic_add(have.atomic_f32_shared);
        let prio = [1.0f32];
        let qinfo = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        let mut esize =
            vk::PhysicalDeviceSubgroupSizeControlFeatures::default().subgroup_size_control(true);
        let mut ext_names = vec![];
        if has_float_atomics {
            ext_names.push(vk::EXT_SHADER_ATOMIC_FLOAT_NAME.as_ptr());
        }
        if size_control {
            ext_names.push(vk::EXT_SUBGROUP_SIZE_CONTROL_NAME.as_ptr());
        }
        let mut dinfo = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qinfo)
            .enabled_features(&feats)
            .enabled_extension_names(&ext_names)
            .push_next(&mut e11)
            .push_next(&mut e12);
        if has_float_atomics {
            dinfo = dinfo.push_next(&mut ea);
        }
        if size_control {
            dinfo = dinfo.push_next(&mut esize);
        }
        // SAFETY: every structure referenced by `dinfo` lives until after the call.
        let device = unsafe { instance.create_device(pd, &dinfo, None) }
            .map_err(|e| vkerr("vkCreateDevice", e))?;
        // SAFETY: `pd` comes from this instance.
        let mem_props = unsafe { instance.get_physical_device_memory_properties(pd) };
        let dev = Arc::new(Dev {
            _entry: entry,
            instance,
            device,
            mem_props,
        });
        // SAFETY: the family was requested with one queue at creation.
        let queue = unsafe { dev.device.get_device_queue(family, 0) };
        let (pool, fence) = {
            let pinfo = vk::CommandPoolCreateInfo::default()
                .queue_family_index(family)
                .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
            // SAFETY: valid device and create infos.
            unsafe {
                (
                    dev.device
                        .create_command_pool(&pinfo, None)
                        .map_err(|e| vkerr("vkCreateCommandPool", e))?,
                    dev.device
                        .create_fence(&vk::FenceCreateInfo::default(), None)
                        .map_err(|e| vkerr("vkCreateFence", e))?,
                )
            }
        };
        // SAFETY: the pool was just created.
        let cmd = unsafe {
            dev.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
        }
        .map_err(|e| vkerr("vkAllocateCommandBuffers", e))?
        .first()
        .copied()
        .ok_or("no command buffer")?;
        let limits = props.limits;
        let align = limits.min_storage_buffer_offset_alignment.max(1);
        let fault_stride = FAULT_RECORD.next_multiple_of(align);
        let stats = Arc::new(Mutex::new(MemStats::default()));
        let fault_buf = Arc::new(
            create_storage(&dev, fault_stride * FAULT_SLOTS, true, true, None)
                .map_err(|e| e.message)?,
        );
        let wave = if sub.subgroup_size > 0 {
            sub.subgroup_size
        } else {
            1
        };
        let caps = Capabilities {
            name: "vulkan",
            wave_width: wave,
            max_items: limits.max_compute_work_group_invocations,
            max_block: limits.max_compute_work_group_size,
            // Any grid the spec allows (XPU §3.4): one beyond the device's dispatch limit
            // runs as several dispatches (`dispatch_max`).
            max_grid: [u32::MAX; 3],
            max_shared_bytes: u64::from(limits.max_compute_shared_memory_size),
            device_memory_host_accessible: (cpu || integrated) && !force_staging,
            atomics_64: have.atomic_int64,
            f64: have.float64,
        };
        target.max_push_bytes = limits.max_push_constants_size;
        let max_storage_buffers = limits
            .max_per_stage_descriptor_storage_buffers
            .min(limits.max_descriptor_set_storage_buffers);
        Ok(VulkanBackend {
            max_storage_buffers,
            dispatch_max: limits.max_compute_work_group_count,
            dev,
            queue,
            pool,
            fence,
            fault_buf,
            fault_stride,
            caps,
            have,
            wave_sizes,
            force_staging,
            host_device_memory: cpu || integrated,
            target,
            stats,
            state: Mutex::new(State {
                storages: HashMap::new(),
                next_id: 1,
                next_stream: 1,
                kernels: HashMap::new(),
                by_module: HashMap::new(),
                batch: Batch {
                    cmd,
                    recording: false,
                    used: HashSet::new(),
                    keep: vec![],
                    launches: vec![],
                    pools: vec![],
                    pool_next: 0,
                },
                pending: None,
                completed: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Begins recording the batch if needed.
    fn begin(&self, st: &mut State) -> Result<vk::CommandBuffer, String> {
        let b = &mut st.batch;
        if !b.recording {
            // SAFETY: the command buffer is not in use (the previous batch was waited for and
            // the buffer reset).
            unsafe {
                self.dev.device.begin_command_buffer(
                    b.cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
            }
            .map_err(|e| vkerr("vkBeginCommandBuffer", e))?;
            b.recording = true;
        }
        Ok(b.cmd)
    }

    /// A full memory barrier after recorded work (launches and copies run in order).
    fn barrier(&self, cmd: vk::CommandBuffer) {
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE | vk::AccessFlags::MEMORY_READ)
            .dst_access_mask(vk::AccessFlags::MEMORY_WRITE | vk::AccessFlags::MEMORY_READ)];
        // SAFETY: `cmd` is recording.
        unsafe {
            self.dev.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            );
        }
    }

    /// Submits the batch and waits for it; then collects its faults.
    fn flush(&self, st: &mut State) {
        if !st.batch.recording {
            return;
        }
        let cmd = st.batch.cmd;
        let dev = &self.dev.device;
        // SAFETY: `cmd` is recording; queue, fence and pools are externally synchronised by
        // the state mutex; the fence is unsignalled (reset after each wait).
        let ok = unsafe {
            dev.end_command_buffer(cmd).is_ok() && {
                let cmds = [cmd];
                let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
                dev.queue_submit(self.queue, &submit, self.fence).is_ok()
                    && dev.wait_for_fences(&[self.fence], true, u64::MAX).is_ok()
            }
        };
        // SAFETY: the batch completed (or failed to submit): nothing uses these any more.
        unsafe {
            let _ = dev.reset_fences(&[self.fence]);
            let _ = dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty());
            for p in &st.batch.pools {
                let _ = dev.reset_descriptor_pool(*p, vk::DescriptorPoolResetFlags::empty());
            }
        }
        st.batch.recording = false;
        st.completed += 1;
        st.batch.pool_next = 0;
        st.batch.used.clear();
        st.batch.keep.clear();
        let launches = std::mem::take(&mut st.batch.launches);
        if !ok && st.pending.is_none() {
            st.pending = Some(KernelFault {
                code: "XPU-E-LAUNCH",
                message: "the Vulkan device failed to run the submitted work".into(),
                frames: vec![],
            });
        }
        for r in launches {
            if st.pending.is_some() {
                break;
            }
            st.pending = self.fault_of(&r);
        }
    }

    /// The fault recorded for launch `r`, if any.
    fn fault_of(&self, r: &Recorded) -> Option<KernelFault> {
        let base = self.fault_buf.mapped?;
        let mut w = [0u32; FAULT_WORDS as usize];
        // SAFETY: the record lies inside the mapped fault buffer (slot < FAULT_SLOTS) and the
        // batch that wrote it has completed.
        unsafe {
            std::ptr::copy_nonoverlapping(
                base.add((r.slot * self.fault_stride) as usize),
                w.as_mut_ptr().cast::<u8>(),
                FAULT_WORDS as usize * 4,
            );
        }
        if w[0] == u32::MAX {
            return None;
        }
        let k = r.kernel.lock().unwrap_or_else(|e| e.into_inner());
        let l = &k.lowered;
        let site = l.sites.get(w[1] as usize)?;
        let index = (u64::from(w[2]) | (u64::from(w[3]) << 32)) as i64;
        let index = crate::index_text(index, site.unsigned_index);
        let (what, n) = match (site.what, site.mem) {
            // A `chk.idx` site: the length checked against is in the record.
            (Some(what), _) => (what, u64::from(w[10])),
            (None, Mem::Buffer(p)) => ("buffer", r.lens.get(usize::from(p)).copied().unwrap_or(0)),
            (None, Mem::Shared(d)) => (
                "shared",
                l.shared_lens
                    .get(usize::from(d))
                    .map_or(0, |&n| u64::from(n)),
            ),
        };
        Some(KernelFault {
            code: "XPU-E-BOUNDS",
            message: format!(
                "kernel {}: index {index} out of bounds for length {n} ({what} {}, workgroup ({},{},{}), item ({},{},{}))",
                l.name, site.var, w[4], w[5], w[6], w[7], w[8], w[9]
            ),
            frames: site.frames.clone(),
        })
    }

    /// The kernel for `(module, kernel)`, lowered and compiled once.
    fn kernel(
        &self,
        st: &mut State,
        module: &Arc<Module>,
        kernel: u32,
    ) -> Result<Arc<Mutex<Kernel>>, String> {
        let key = (Arc::as_ptr(module) as usize, kernel);
        if let Some((_, h)) = st.by_module.get(&key) {
            if let Some(k) = st.kernels.get(h) {
                return Ok(k.clone());
            }
        }
        let lowered = spirv::lower_for(module, kernel, self.target).map_err(|e| e.message)?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        lowered.words.hash(&mut hasher);
        let h = hasher.finish();
        st.by_module.insert(key, (module.clone(), h));
        if let Some(k) = st.kernels.get(&h) {
            return Ok(k.clone());
        }
        let k = self.compile(lowered)?;
        let k = Arc::new(Mutex::new(k));
        st.kernels.insert(h, k.clone());
        Ok(k)
    }

    fn compile(&self, lowered: Lowered) -> Result<Kernel, String> {
        let dev = &self.dev.device;
        let nbind = lowered.params_binding.unwrap_or(lowered.fault_binding) + 1;
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..nbind)
            .filter(|&b| {
                b == lowered.fault_binding
                    || Some(b) == lowered.params_binding
                    || matches!(
                        lowered.params.get(b as usize),
                        Some(ParamSlot::Buffer { .. })
                    )
            })
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // Beyond the limit lavapipe crashes instead of failing the pipeline's creation.
        if bindings.len() as u64 > u64::from(self.max_storage_buffers) {
            let hidden = if lowered.params_binding.is_some() {
                "two are the fault record and the parameters"
            } else {
                "one is the fault record"
            };
            return Err(format!(
                "{} buffer parameters exceed the device's limit of {} storage buffers per kernel ({hidden})",
                bindings.len() - 1 - usize::from(lowered.params_binding.is_some()),
                self.max_storage_buffers
            ));
        }
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(lowered.push_size)];
        // SAFETY: valid device; all create infos live across their calls; on failure the
        // objects created so far are destroyed.
        unsafe {
            let shader = dev
                .create_shader_module(
                    &vk::ShaderModuleCreateInfo::default().code(&lowered.words),
                    None,
                )
                .map_err(|e| vkerr("vkCreateShaderModule", e))?;
            let set_layout = match dev.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            ) {
                Ok(l) => l,
                Err(e) => {
                    dev.destroy_shader_module(shader, None);
                    return Err(vkerr("vkCreateDescriptorSetLayout", e));
                }
            };
            let sets = [set_layout];
            let mut info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
            if lowered.push_size > 0 && lowered.params_binding.is_none() {
                info = info.push_constant_ranges(&ranges);
            }
            let layout = match dev.create_pipeline_layout(&info, None) {
                Ok(l) => l,
                Err(e) => {
                    dev.destroy_descriptor_set_layout(set_layout, None);
                    dev.destroy_shader_module(shader, None);
                    return Err(vkerr("vkCreatePipelineLayout", e));
                }
            };
            Ok(Kernel {
                dev: self.dev.clone(),
                lowered,
                shader,
                set_layout,
                layout,
                pipelines: HashMap::new(),
            })
        }
    }

    /// The first device feature `need` asks for that the device lacks, in words.
    fn missing_feature(&self, need: &Features) -> Option<&'static str> {
        let have = self.have;
        [
            (need.int8, have.int8, "8-bit storage"),
            (need.int16, have.int16, "16-bit storage"),
            (need.int64, have.int64, "int64"),
            (need.float64, have.float64, "float64"),
            (need.atomic_int64, have.atomic_int64, "64-bit atomics"),
            (
                need.atomic_f32_buffer,
                have.atomic_f32_buffer,
                "float32 buffer atomics",
            ),
            (
                need.atomic_f32_shared,
                have.atomic_f32_shared,
                "float32 shared atomics",
            ),
            (
                need.subgroup_arithmetic,
                have.subgroup_arithmetic,
                "subgroup arithmetic",
            ),
            (need.subgroup_basic, have.subgroup_basic, "subgroups"),
            (
                need.subgroup_shuffle,
                have.subgroup_shuffle,
                "subgroup shuffles",
            ),
            (
                need.subgroup_ballot,
                have.subgroup_ballot,
                "subgroup ballots",
            ),
            (need.subgroup_vote, have.subgroup_vote, "subgroup votes"),
        ]
        .into_iter()
        .find(|&(needed, present, _)| needed && !present)
        .map(|(_, _, what)| what)
    }

    /// The pipeline of `k` for a block shape and a launch's `sharedBytes` (the length of the
    /// kernel's dynamic shared array, if it has one).
    fn pipeline(
        &self,
        k: &mut Kernel,
        block: [u32; 3],
        shared_bytes: u64,
    ) -> Result<vk::Pipeline, String> {
        let dyn_len = match k.lowered.dynamic_elem_bytes {
            0 => 0,
            size => u32::try_from(shared_bytes / u64::from(size)).unwrap_or(u32::MAX),
        };
        if let Some(p) = k.pipelines.get(&(block, dyn_len)) {
            return Ok(*p);
        }
        // Constants 0–2: the workgroup size; 3 and 4: the dynamic shared array's length
        // (`spirv::SPEC_DYN_ARRAY`, at least 1) and its length in elements
        // (`spirv::SPEC_DYN_LEN`); ids a module does not use are ignored.
        let entries: Vec<vk::SpecializationMapEntry> = (0..5)
            .map(|i| {
                vk::SpecializationMapEntry::default()
                    .constant_id(i)
                    .offset(i * 4)
                    .size(4)
            })
            .collect();
        let data: Vec<u8> = block
            .iter()
            .chain(&[dyn_len.max(1), dyn_len])
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default();
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(k.shader)
            .name(c"main")
            .specialization_info(&spec);
        // `@Wave(width = N)` other than the default size: checked by `launch` against the
        // sizes the device can require.
        if let (Some(w), Some(_)) = (k.lowered.wave_width, self.wave_sizes) {
            if w != self.caps.wave_width {
                required = required.required_subgroup_size(w);
                stage = stage.push_next(&mut required);
            }
        }
        let info = [vk::ComputePipelineCreateInfo::default()
            .flags(vk::PipelineCreateFlags::DISPATCH_BASE)
            .stage(stage)
            .layout(k.layout)];
        // SAFETY: the shader module and layout are alive; the create info lives across the
        // call.
        let p = unsafe {
            self.dev
                .device
                .create_compute_pipelines(vk::PipelineCache::null(), &info, None)
        }
        .map_err(|(_, e)| vkerr("vkCreateComputePipelines", e))?
        .first()
        .copied()
        .ok_or("no pipeline")?;
        k.pipelines.insert((block, dyn_len), p);
        Ok(p)
    }

    /// A descriptor set of `layout` from the batch's pools.
    fn descriptor_set(
        &self,
        st: &mut State,
        layout: vk::DescriptorSetLayout,
    ) -> Result<vk::DescriptorSet, String> {
        let dev = &self.dev.device;
        let layouts = [layout];
        loop {
            if st.batch.pool_next == st.batch.pools.len() {
                let sizes = [vk::DescriptorPoolSize::default()
                    .ty(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(8192)];
                // SAFETY: valid device and create info.
                let p = unsafe {
                    dev.create_descriptor_pool(
                        &vk::DescriptorPoolCreateInfo::default()
                            .max_sets(1024)
                            .pool_sizes(&sizes),
                        None,
                    )
                }
                .map_err(|e| vkerr("vkCreateDescriptorPool", e))?;
                st.batch.pools.push(p);
            }
            let pool = st.batch.pools[st.batch.pool_next];
            // SAFETY: the pool is externally synchronised by the state mutex.
            match unsafe {
                dev.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(pool)
                        .set_layouts(&layouts),
                )
            } {
                Ok(s) => return s.first().copied().ok_or_else(|| "no descriptor set".into()),
                Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY | vk::Result::ERROR_FRAGMENTED_POOL) => {
                    st.batch.pool_next += 1;
                }
                Err(e) => return Err(vkerr("vkAllocateDescriptorSets", e)),
            }
        }
    }

    fn launch_inner(
        &self,
        st: &mut State,
        module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
    ) -> Result<(), LaunchError> {
        let kname = module
            .functions
            .get(kernel as usize)
            .map_or_else(|| format!("#{kernel}"), |f| f.simple_name().to_string());
        let refuse = |why: String| {
            LaunchError::Refused(XpuError {
                code: "XPU-E-LAUNCH",
                message: format!("kernel {kname} refused by backend vulkan: {why}"),
            })
        };
        let k = self.kernel(st, module, kernel).map_err(&refuse)?;
        let mut kg = k.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(what) = self.missing_feature(&kg.lowered.features) {
            return Err(refuse(format!("the device lacks {what}")));
        }
        if let Some(w) = kg.lowered.wave_width {
            if !self.supports_wave_width(w) {
                let sizes = match self.wave_sizes {
                    Some((lo, hi)) => format!("subgroup sizes {lo} to {hi}"),
                    None => format!("subgroup size {}", self.caps.wave_width),
                };
                return Err(refuse(format!(
                    "@Wave(width = {w}) is not supported (the device has {sizes})"
                )));
            }
        }
        // XPU §5.3 numbers waves by the linear item index; Vulkan leaves the grouping of a
        // block's items into subgroups to the driver, and lavapipe forms them row by row (a
        // 3×5 block gives five waves of 3). Where a row is not whole waves the results would
        // silently differ from every other backend's.
        if kg.lowered.features.uses_waves() {
            let w = kg.lowered.wave_width.unwrap_or(self.caps.wave_width);
            let [x, y, z] = dims.block;
            if (y > 1 || z > 1) && w > 0 && x % w != 0 {
                return Err(refuse(format!(
                    "the waves of a {x}×{y}×{z} block need its x extent to be a multiple of the wave width {w} (the driver forms waves row by row)"
                )));
            }
        }
        if kg.lowered.shared_bytes + dims.shared_bytes > self.caps.max_shared_bytes {
            return Err(refuse(format!(
                "{} bytes of shared memory exceed the limit {}",
                kg.lowered.shared_bytes + dims.shared_bytes,
                self.caps.max_shared_bytes
            )));
        }
        if args.len() != kg.lowered.params.len() {
            return Err(refuse(format!(
                "{} arguments for {} parameters",
                args.len(),
                kg.lowered.params.len()
            )));
        }
        // Arguments: push constants and buffers.
        let mut push = vec![0u8; kg.lowered.push_size as usize];
        let mut bufs: Vec<(u32, u64, Arc<Storage>)> = vec![];
        let mut lens = vec![0u64; args.len()];
        for (i, (slot, arg)) in kg.lowered.params.iter().zip(args).enumerate() {
            match (slot, arg) {
                (ParamSlot::Scalar { ty, offset }, KernelArg::Scalar(cell)) => {
                    let o = *offset as usize;
                    let wide = matches!(ty, Scalar::I64 | Scalar::U64 | Scalar::F64);
                    let bytes = if wide {
                        cell.to_le_bytes().to_vec()
                    } else {
                        (*cell as u32).to_le_bytes().to_vec()
                    };
                    if let Some(d) = push.get_mut(o..o + bytes.len()) {
                        d.copy_from_slice(&bytes);
                    }
                }
                (
                    ParamSlot::Buffer {
                        elem,
                        binding,
                        info_offset,
                    },
                    KernelArg::Buffer {
                        storage,
                        offset,
                        len,
                    },
                ) => {
                    let Some(s) = st.storages.get(&storage.0).cloned() else {
                        return Err(LaunchError::Refused(XpuError {
                            code: "XPU-E-FREED",
                            message: format!("launch of {kname} on a freed buffer"),
                        }));
                    };
                    let size = elem.size() as u64;
                    let fits = offset
                        .checked_add(*len)
                        .and_then(|e| e.checked_mul(size))
                        .is_some_and(|e| e <= s.size);
                    let (Ok(o32), Ok(l32)) = (u32::try_from(*offset), u32::try_from(*len)) else {
                        return Err(refuse("buffer too large for the device".into()));
                    };
                    if !fits {
                        return Err(refuse(format!("argument {i} lies outside its storage")));
                    }
                    let o = *info_offset as usize;
                    if let Some(d) = push.get_mut(o..o + 8) {
                        d[..4].copy_from_slice(&o32.to_le_bytes());
                        d[4..].copy_from_slice(&l32.to_le_bytes());
                    }
                    lens[i] = *len;
                    bufs.push((*binding, storage.0, s));
                }
                _ => return Err(refuse(format!("argument {i} does not match its parameter"))),
            }
        }
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Ok(());
        }
        // The whole grid, which the shader reads instead of its dispatch's count.
        let g = kg.lowered.grid_offset as usize;
        for (a, &n) in dims.grid.iter().enumerate() {
            if let Some(d) = push.get_mut(g + 4 * a..g + 4 * a + 4) {
                d.copy_from_slice(&n.to_le_bytes());
            }
        }
        let pipeline = self
            .pipeline(&mut kg, dims.block, dims.shared_bytes)
            .map_err(&refuse)?;
        if st.batch.launches.len() as u64 >= FAULT_SLOTS {
            self.flush(st);
        }
        let slot = st.batch.launches.len() as u64;
        // Reset the fault record (host-coherent, and the batch using it is not running).
        if let Some(base) = self.fault_buf.mapped {
            let rec = [u32::MAX; FAULT_WORDS as usize];
            // SAFETY: the record lies inside the mapped fault buffer; no batch runs now.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    rec.as_ptr().cast::<u8>(),
                    base.add((slot * self.fault_stride) as usize),
                    rec.len() * 4,
                );
            }
        }
        let set = self.descriptor_set(st, kg.set_layout).map_err(&refuse)?;
        let mut infos: Vec<[vk::DescriptorBufferInfo; 1]> = bufs
            .iter()
            .map(|(_, _, s)| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(s.buffer)
                    .offset(0)
                    .range(vk::WHOLE_SIZE)]
            })
            .collect();
        infos.push([vk::DescriptorBufferInfo::default()
            .buffer(self.fault_buf.buffer)
            .offset(slot * self.fault_stride)
            .range(FAULT_RECORD)]);
        let mut bindings: Vec<u32> = bufs.iter().map(|(b, _, _)| *b).collect();
        bindings.push(kg.lowered.fault_binding);
        // A parameter block beyond the push constants: a host-visible buffer of its own.
        let params = match kg.lowered.params_binding {
            Some(b) => {
                let s = self.parameter_storage(&push).map_err(&refuse)?;
                infos.push([vk::DescriptorBufferInfo::default()
                    .buffer(s.buffer)
                    .offset(0)
                    .range(vk::WHOLE_SIZE)]);
                bindings.push(b);
                Some(s)
            }
            None => None,
        };
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .zip(&bindings)
            .map(|(info, &b)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        let cmd = self.begin(st).map_err(&refuse)?;
        // SAFETY: the set, pipeline and layout are alive; `cmd` is recording; the buffers are
        // kept alive by the batch until it completes.
        unsafe {
            let dev = &self.dev.device;
            dev.update_descriptor_sets(&writes, &[]);
            dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            dev.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                kg.layout,
                0,
                &[set],
                &[],
            );
            if !push.is_empty() && params.is_none() {
                dev.cmd_push_constants(cmd, kg.layout, vk::ShaderStageFlags::COMPUTE, 0, &push);
            }
            for (base, count) in dispatches(dims.grid, self.dispatch_max) {
                dev.cmd_dispatch_base(cmd, base[0], base[1], base[2], count[0], count[1], count[2]);
            }
        }
        self.barrier(cmd);
        drop(kg);
        for (_, id, s) in bufs {
            st.batch.used.insert(id);
            st.batch.keep.push(s);
        }
        st.batch.keep.extend(params);
        st.batch.launches.push(Recorded {
            kernel: k,
            slot,
            lens,
        });
        Ok(())
    }

    /// A host-visible storage holding a launch's parameter block `bytes` (see
    /// [`spirv::Lowered::params_binding`]).
    fn parameter_storage(&self, bytes: &[u8]) -> Result<Arc<Storage>, String> {
        let s = create_storage(&self.dev, bytes.len() as u64, true, true, None)
            .map_err(|e| e.message)?;
        let p = s.mapped.ok_or("parameter buffer not mapped")?;
        // SAFETY: the mapping holds at least `bytes.len()` bytes and is ours alone; no batch
        // uses the buffer yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
        Ok(Arc::new(s))
    }

    /// Copies `data` into storage `s` at `offset` through a staging buffer (recorded).
    fn staged_write(
        &self,
        st: &mut State,
        s: &Arc<Storage>,
        offset: u64,
        data: &[u8],
    ) -> Result<(), String> {
        let stage = Arc::new(
            create_storage(&self.dev, data.len() as u64, true, true, None)
                .map_err(|e| e.message)?,
        );
        let p = stage.mapped.ok_or("staging buffer not mapped")?;
        // SAFETY: the staging mapping holds at least `data.len()` bytes and is ours alone.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        let cmd = self.begin(st)?;
        let region = [vk::BufferCopy::default()
            .src_offset(0)
            .dst_offset(offset)
            .size(data.len() as u64)];
        // SAFETY: `cmd` is recording; both buffers stay alive until the batch completes.
        unsafe {
            self.dev
                .device
                .cmd_copy_buffer(cmd, stage.buffer, s.buffer, &region);
        }
        self.barrier(cmd);
        st.batch.keep.push(stage);
        st.batch.keep.push(s.clone());
        Ok(())
    }
}

/// Creates a buffer of `bytes` (rounded up to 4, at least 4) in host-visible memory (`host`)
/// or device-local memory, mapped when host-visible and `map`.
fn create_storage(
    dev: &Arc<Dev>,
    bytes: u64,
    host: bool,
    map: bool,
    stats: Option<(u64, Arc<Mutex<MemStats>>)>,
) -> Result<Storage, XpuError> {
    let oom = |what: String| XpuError {
        code: "XPU-E-OOM",
        message: what,
    };
    let size = bytes.max(4).next_multiple_of(4);
    let d = &dev.device;
    // SAFETY: valid device and create info; on failure the objects created so far are
    // destroyed before returning.
    unsafe {
        let buffer = d
            .create_buffer(
                &vk::BufferCreateInfo::default()
                    .size(size)
                    .usage(
                        vk::BufferUsageFlags::STORAGE_BUFFER
                            | vk::BufferUsageFlags::TRANSFER_SRC
                            | vk::BufferUsageFlags::TRANSFER_DST,
                    )
                    .sharing_mode(vk::SharingMode::EXCLUSIVE),
                None,
            )
            .map_err(|e| oom(vkerr("vkCreateBuffer", e)))?;
        let req = d.get_buffer_memory_requirements(buffer);
        let want = if host {
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
        } else {
            vk::MemoryPropertyFlags::DEVICE_LOCAL
        };
        let props = &dev.mem_props;
        let types = &props.memory_types[..props.memory_type_count.min(32) as usize];
        let pick = |need: vk::MemoryPropertyFlags| {
            types.iter().enumerate().find(|(i, t)| {
                req.memory_type_bits & (1 << i) != 0 && t.property_flags.contains(need)
            })
        };
        let Some((ti, t)) = pick(want).or_else(|| pick(vk::MemoryPropertyFlags::empty())) else {
            d.destroy_buffer(buffer, None);
            return Err(oom("no memory type for the buffer".into()));
        };
        let memory = match d.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ti as u32),
            None,
        ) {
            Ok(m) => m,
            Err(e) => {
                d.destroy_buffer(buffer, None);
                return Err(oom(vkerr("vkAllocateMemory", e)));
            }
        };
        if let Err(e) = d.bind_buffer_memory(buffer, memory, 0) {
            d.destroy_buffer(buffer, None);
            d.free_memory(memory, None);
            return Err(oom(vkerr("vkBindBufferMemory", e)));
        }
        let visible = t.property_flags.contains(
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
        );
        let mapped = if map && visible {
            match d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) {
                Ok(p) => Some(p.cast::<u8>()),
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    return Err(oom(vkerr("vkMapMemory", e)));
                }
            }
        } else {
            None
        };
        Ok(Storage {
            dev: dev.clone(),
            buffer,
            memory,
            size,
            mapped,
            stats,
        })
    }
}

impl Drop for VulkanBackend {
    fn drop(&mut self) {
        let mut st = self.lock();
        self.flush(&mut st);
        st.kernels.clear();
        st.by_module.clear();
        st.storages.clear();
        // SAFETY: the last batch completed; nothing uses the pools, fence or command pool.
        unsafe {
            let d = &self.dev.device;
            for p in st.batch.pools.drain(..) {
                d.destroy_descriptor_pool(p, None);
            }
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

impl Backend for VulkanBackend {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn alloc(&self, bytes: u64, kind: MemoryKind, poison: bool) -> Result<StorageId, XpuError> {
        let oom = || XpuError {
            code: "XPU-E-OOM",
            message: format!(
                "cannot allocate {bytes} bytes of {} memory on backend vulkan",
                kind.name()
            ),
        };
        if bytes > (1 << 40) {
            return Err(oom());
        }
        let host = kind != MemoryKind::Device;
        let map = host || !self.force_staging;
        let s = create_storage(
            &self.dev,
            bytes,
            host || (self.host_device_memory && !self.force_staging),
            map,
            Some((bytes, self.stats.clone())),
        )
        .map_err(|_| oom())?;
        let s = Arc::new(s);
        let fill = if poison { 0xFFu8 } else { 0 };
        let mut st = self.lock();
        match s.mapped {
            // SAFETY: the mapping covers `size` bytes and nothing else uses the new storage.
            Some(p) => unsafe { std::ptr::write_bytes(p, fill, s.size as usize) },
            None => {
                let cmd = self.begin(&mut st).map_err(|_| oom())?;
                // SAFETY: `cmd` is recording; the batch keeps the storage alive.
                unsafe {
                    self.dev.device.cmd_fill_buffer(
                        cmd,
                        s.buffer,
                        0,
                        vk::WHOLE_SIZE,
                        u32::from_ne_bytes([fill; 4]),
                    );
                }
                self.barrier(cmd);
                st.batch.keep.push(s.clone());
            }
        }
        {
            let mut m = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            m.live += bytes;
            m.peak = m.peak.max(m.live);
            m.allocs += 1;
        }
        let id = st.next_id;
        st.next_id += 1;
        if s.mapped.is_none() {
            st.batch.used.insert(id);
        }
        st.storages.insert(id, s);
        Ok(StorageId(id))
    }

    fn release(&self, id: StorageId) {
        let mut st = self.lock();
        // Recorded work keeps the storage alive anyway (XPU §4.3); completing it now releases
        // the memory at once, so `--mem-stats` counts as on the other backends.
        if st.batch.used.contains(&id.0) {
            self.flush(&mut st);
        }
        st.storages.remove(&id.0);
    }

    fn write(&self, id: StorageId, offset: u64, data: &[u8]) {
        let mut st = self.lock();
        let Some(s) = st.storages.get(&id.0).cloned() else {
            return;
        };
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|e| e > s.size)
            || data.is_empty()
        {
            return;
        }
        match s.mapped {
            Some(p) => {
                if st.batch.used.contains(&id.0) {
                    self.flush(&mut st);
                }
                // SAFETY: the range lies inside the mapping and no recorded work uses it.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), p.add(offset as usize), data.len())
                };
            }
            None => {
                if self.staged_write(&mut st, &s, offset, data).is_ok() {
                    st.batch.used.insert(id.0);
                }
            }
        }
    }

    fn read(&self, id: StorageId, offset: u64, out: &mut [u8]) {
        let mut st = self.lock();
        let Some(s) = st.storages.get(&id.0).cloned() else {
            return;
        };
        if offset
            .checked_add(out.len() as u64)
            .is_none_or(|e| e > s.size)
            || out.is_empty()
        {
            return;
        }
        if let Some(p) = s.mapped {
            if st.batch.used.contains(&id.0) {
                self.flush(&mut st);
            }
            // SAFETY: the range lies inside the mapping and the batch completed.
            unsafe {
                std::ptr::copy_nonoverlapping(p.add(offset as usize), out.as_mut_ptr(), out.len())
            };
            return;
        }
        let Ok(stage) = create_storage(&self.dev, out.len() as u64, true, true, None) else {
            return;
        };
        let Ok(cmd) = self.begin(&mut st) else {
            return;
        };
        let region = [vk::BufferCopy::default()
            .src_offset(offset)
            .dst_offset(0)
            .size(out.len() as u64)];
        // SAFETY: `cmd` is recording; both buffers outlive the flush below.
        unsafe {
            self.dev
                .device
                .cmd_copy_buffer(cmd, s.buffer, stage.buffer, &region);
        }
        self.barrier(cmd);
        self.flush(&mut st);
        if let Some(p) = stage.mapped {
            // SAFETY: the staging mapping holds `out.len()` bytes, written by the completed
            // batch.
            unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
        }
    }

    /// A transfer flushed the batch that used its storage; a fault found then (or at an
    /// earlier flush) is pending.
    fn transfer_fault(&self) -> Result<(), KernelFault> {
        match self.lock().pending.take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    fn host_accessible(&self, id: StorageId) -> bool {
        let st = self.lock();
        st.storages.get(&id.0).is_some_and(|s| s.mapped.is_some())
    }

    fn launch(
        &self,
        module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
        _stream: StreamId,
    ) -> Result<(), LaunchError> {
        let mut st = self.lock();
        self.launch_inner(&mut st, module, kernel, dims, args)
    }

    fn stream_create(&self) -> StreamId {
        let mut st = self.lock();
        let id = st.next_stream;
        st.next_stream += 1;
        StreamId(id)
    }

    fn stream_sync(&self, _stream: StreamId) -> Result<(), KernelFault> {
        let mut st = self.lock();
        self.flush(&mut st);
        match st.pending.take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Every stream shares the queue: a flush waits for all work and leaves a fault pending.
    fn stream_wait(&self, _stream: StreamId) {
        let mut st = self.lock();
        self.flush(&mut st);
    }

    fn stream_destroy(&self, stream: StreamId) {
        self.stream_wait(stream);
    }

    fn mem_stats(&self) -> MemStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open batch's number, or signalled when nothing is open (every stream shares the
    /// queue, so the open batch holds all work submitted so far).
    fn event_record(&self, _stream: StreamId) -> EventId {
        let st = self.lock();
        if st.batch.recording {
            EventId(st.completed + 1)
        } else {
            EventId::SIGNALLED
        }
    }

    /// Submits the event's batch if it is still open (a flush waits for it), then reports
    /// the pending fault, as `sync()` does.
    fn event_wait(&self, event: EventId) -> Result<(), KernelFault> {
        let mut st = self.lock();
        if event.0 > st.completed {
            self.flush(&mut st);
        }
        match st.pending.take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Batches only run when submitted: an event whose batch is still open is completed now
    /// (so a polling loop ends); its fault stays pending for the next synchronisation.
    fn event_query(&self, event: EventId) -> bool {
        let mut st = self.lock();
        if event.0 > st.completed {
            self.flush(&mut st);
        }
        true
    }

    /// The default subgroup size, or any size subgroup size control can require (XPU §8.2).
    fn supports_wave_width(&self, w: u32) -> bool {
        w == self.caps.wave_width || self.wave_sizes.is_some_and(|(lo, hi)| lo <= w && w <= hi)
    }

    /// The total size of the device-local memory heaps.
    fn memory_bytes(&self) -> i64 {
        let p = &self.dev.mem_props;
        let n = (p.memory_heap_count as usize).min(p.memory_heaps.len());
        let bytes: u64 = p.memory_heaps[..n]
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .sum();
        i64::try_from(bytes).unwrap_or(i64::MAX)
    }

    /// Whether the kernel lowers to SPIR-V, the device has every feature it needs and its
    /// `@Wave` width is supported.
    fn kernel_available(&self, module: &Arc<Module>, kernel: u32) -> bool {
        spirv::lower_for(module, kernel, self.target).is_ok_and(|l| {
            self.missing_feature(&l.features).is_none()
                && l.wave_width.is_none_or(|w| self.supports_wave_width(w))
        })
    }
}

/// A grid cut into dispatches of at most `max` workgroups per axis: (base workgroup, count)
/// for each, in order (x fastest). The workgroups of one launch run in no particular order,
/// so its dispatches need no barrier between them.
fn dispatches(grid: [u32; 3], max: [u32; 3]) -> Vec<([u32; 3], [u32; 3])> {
    let starts = |a: usize| {
        let step = max[a].max(1);
        (0..grid[a])
            .step_by(step as usize)
            .map(move |b| (b, step.min(grid[a] - b)))
    };
    let mut out = Vec::new();
    for (bz, cz) in starts(2) {
        for (by, cy) in starts(1) {
            for (bx, cx) in starts(0) {
                out.push(([bx, by, bz], [cx, cy, cz]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::dispatches;

    #[test]
    fn a_grid_is_cut_into_dispatches_within_the_limit_covering_it_once() {
        assert_eq!(
            dispatches([10, 1, 1], [65535; 3]),
            vec![([0, 0, 0], [10, 1, 1])]
        );
        let d = dispatches([70000, 2, 1], [65535, 1, 65535]);
        assert_eq!(
            d,
            vec![
                ([0, 0, 0], [65535, 1, 1]),
                ([65535, 0, 0], [4465, 1, 1]),
                ([0, 1, 0], [65535, 1, 1]),
                ([65535, 1, 0], [4465, 1, 1]),
            ]
        );
        // The largest grid: every workgroup of every axis in exactly one dispatch.
        let d = dispatches([u32::MAX, 3, 1], [65535, 2, 1]);
        let x: u64 = d
            .iter()
            .filter(|(b, _)| b[1] == 0)
            .map(|(_, c)| u64::from(c[0]))
            .sum();
        assert_eq!(x, u64::from(u32::MAX));
        assert!(d
            .iter()
            .all(|(_, c)| c[0] <= 65535 && c[1] <= 2 && c[2] == 1));
        assert!(dispatches([0, 1, 1], [65535; 3]).is_empty());
    }
}
