//! A scripted in-memory [`Backend`] for the xpu runtime tests: exact accounting, a
//! configurable allocation limit, host access only for `Pinned`/`Unified` storage (like a
//! discrete GPU), and launches that are recorded instead of run (optionally answered with a
//! fault or a refusal).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cajeta_backends::{
    Backend, Capabilities, Dims, KernelArg, KernelFault, LaunchError, MemStats, MemoryKind,
    StorageId, StreamId, XpuError,
};
use cajeta_bytecode::Module;

/// One recorded launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launched {
    pub kernel: u32,
    pub dims: Dims,
    pub args: Vec<KernelArg>,
    pub stream: StreamId,
}

#[derive(Default)]
struct State {
    mem: HashMap<u64, (Vec<u8>, MemoryKind)>,
    stats: MemStats,
    next_id: u64,
    next_stream: u64,
    launches: Vec<Launched>,
    destroyed: Vec<StreamId>,
    synced: Vec<StreamId>,
    released_unknown: u64,
}

/// The fake backend.
pub struct Fake {
    caps: Capabilities,
    /// Allocations above this many bytes fail with `XPU-E-OOM`.
    pub limit: u64,
    /// The answer of every launch (`None`: success).
    pub launch_error: Mutex<Option<LaunchError>>,
    /// A fault reported by the next `stream_sync` (asynchronous backends).
    pub pending: Mutex<Option<KernelFault>>,
    state: Mutex<State>,
}

impl Fake {
    /// A fake named `fake` with the `cpu` limits except a 65535 grid and 48 KiB of shared memory.
    pub fn new() -> Arc<Fake> {
        Arc::new(Fake {
            caps: Capabilities {
                name: "fake",
                wave_width: 32,
                max_items: 1024,
                max_block: [1024, 1024, 64],
                max_grid: [65535, 65535, 65535],
                max_shared_bytes: 48 * 1024,
                device_memory_host_accessible: false,
                atomics_64: true,
                f64: true,
            },
            limit: 1 << 30,
            launch_error: Mutex::new(None),
            pending: Mutex::new(None),
            state: Mutex::new(State {
                next_id: 1,
                next_stream: 1,
                ..Default::default()
            }),
        })
    }

    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The launches so far.
    pub fn launches(&self) -> Vec<Launched> {
        self.st().launches.clone()
    }

    /// The streams destroyed so far.
    pub fn destroyed(&self) -> Vec<StreamId> {
        self.st().destroyed.clone()
    }

    /// The streams synchronised so far.
    pub fn synced(&self) -> Vec<StreamId> {
        self.st().synced.clone()
    }

    /// The bytes of storage `id` (empty if released).
    pub fn bytes(&self, id: StorageId) -> Vec<u8> {
        self.st()
            .mem
            .get(&id.0)
            .map(|m| m.0.clone())
            .unwrap_or_default()
    }

    /// Releases of unknown or already released storage (must stay 0).
    pub fn bad_releases(&self) -> u64 {
        self.st().released_unknown
    }
}

impl Backend for Fake {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn alloc(&self, bytes: u64, kind: MemoryKind, poison: bool) -> Result<StorageId, XpuError> {
        if bytes > self.limit {
            return Err(XpuError {
                code: "XPU-E-OOM",
                message: format!(
                    "cannot allocate {bytes} bytes of {} memory on backend fake",
                    kind.name()
                ),
            });
        }
        let mut st = self.st();
        let id = st.next_id;
        st.next_id += 1;
        st.mem.insert(
            id,
            (vec![if poison { 0xFF } else { 0 }; bytes as usize], kind),
        );
        st.stats.live += bytes;
        st.stats.peak = st.stats.peak.max(st.stats.live);
        st.stats.allocs += 1;
        Ok(StorageId(id))
    }

    fn release(&self, id: StorageId) {
        let mut st = self.st();
        match st.mem.remove(&id.0) {
            Some((v, _)) => {
                st.stats.live -= v.len() as u64;
                st.stats.frees += 1;
            }
            None => st.released_unknown += 1,
        }
    }

    fn write(&self, id: StorageId, offset: u64, data: &[u8]) {
        let mut st = self.st();
        let (v, _) = st.mem.get_mut(&id.0).expect("write to live storage");
        v[offset as usize..offset as usize + data.len()].copy_from_slice(data);
    }

    fn read(&self, id: StorageId, offset: u64, out: &mut [u8]) {
        let st = self.st();
        let (v, _) = st.mem.get(&id.0).expect("read from live storage");
        out.copy_from_slice(&v[offset as usize..offset as usize + out.len()]);
    }

    fn host_accessible(&self, id: StorageId) -> bool {
        self.st()
            .mem
            .get(&id.0)
            .is_some_and(|(_, k)| *k != MemoryKind::Device)
    }

    fn launch(
        &self,
        _module: &Arc<Module>,
        kernel: u32,
        dims: Dims,
        args: &[KernelArg],
        stream: StreamId,
    ) -> Result<(), LaunchError> {
        self.st().launches.push(Launched {
            kernel,
            dims,
            args: args.to_vec(),
            stream,
        });
        match self
            .launch_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn stream_create(&self) -> StreamId {
        let mut st = self.st();
        let id = st.next_stream;
        st.next_stream += 1;
        StreamId(id)
    }

    fn stream_sync(&self, stream: StreamId) -> Result<(), KernelFault> {
        self.st().synced.push(stream);
        match self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    fn stream_destroy(&self, stream: StreamId) {
        self.st().destroyed.push(stream);
    }

    fn mem_stats(&self) -> MemStats {
        self.st().stats
    }
}
