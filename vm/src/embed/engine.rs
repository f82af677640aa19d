//! The Wasmtime-shaped nouns of the embedding API: [`Config`] and [`Engine`] (settings shared
//! by every VM), [`Module`] (a verified program, compiled once, shared by any number of VMs)
//! and [`Vm::instantiate`], which makes a VM (the per-instance store) from the two.
//!
//! # Threading
//!
//! [`Engine`] and [`Module`] are immutable behind an `Arc`: `Send + Sync`, cheap to clone, and
//! meant to be shared between threads. A [`Vm`] is **not** `Send`: it holds the object table
//! (reference-counted device storage, shared by buffers and their views), the JIT's compiled
//! code with raw pointers into its own stack, and host functions, which are plain
//! `Fn` closures (neither `Send` nor `Sync` is asked of them). Run one VM per thread, each made
//! from the shared engine and module; to stop a VM from another thread use its
//! [`crate::InterruptHandle`], which is `Send + Sync`.

use std::path::Path;
use std::sync::Arc;

use cajeta_bytecode as bc;

use crate::api::{Vm, DEFAULT_MAX_DEPTH};
use crate::error::{ErrorCode, RuntimeError};
use crate::jit::JitMode;
use crate::output::Output;
use crate::xpu::BACKEND_NAMES;

/// The error type of the embedding API: a code (one of [`ErrorCode`]), a message and, for
/// runtime errors, the Cajeta trace. The same type as [`RuntimeError`].
pub type Error = RuntimeError;

/// Settings shared by every VM an [`Engine`] makes. Builder-style setters.
///
/// ```
/// # use cajeta_vm::{Config, Engine, JitMode};
/// let mut config = Config::new();
/// config.backend("cpu").jit(JitMode::Off).fuel(Some(1_000_000)).memory_limit(Some(64 << 20));
/// let engine = Engine::new(&config)?;
/// assert_eq!(engine.config().fuel_limit(), Some(1_000_000));
/// # Ok::<(), cajeta_vm::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    backend: Option<String>,
    jit: JitMode,
    fuel: Option<u64>,
    memory_limit: Option<u64>,
    max_depth: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            backend: None,
            jit: JitMode::Auto,
            fuel: None,
            memory_limit: None,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl Config {
    /// The defaults: the environment's backend (`CAJETA_XPU_BACKEND`, else `auto`),
    /// [`JitMode::Auto`], no fuel or memory limit, [`DEFAULT_MAX_DEPTH`] frames.
    pub fn new() -> Config {
        Config::default()
    }

    /// The device backend VMs select at their first device touch: `cpu`, `vulkan`, `cuda`
    /// or `auto` (XPU §8.1). Checked by [`Engine::new`].
    pub fn backend(&mut self, name: &str) -> &mut Config {
        self.backend = Some(name.to_string());
        self
    }

    /// When host functions are compiled to native code.
    pub fn jit(&mut self, mode: JitMode) -> &mut Config {
        self.jit = mode;
        self
    }

    /// The fuel each new VM starts with (`None`: unlimited); see [`Vm::set_fuel`].
    pub fn fuel(&mut self, fuel: Option<u64>) -> &mut Config {
        self.fuel = fuel;
        self
    }

    /// Each VM's memory limit in bytes, host plus device (`None`: none); see
    /// [`Vm::set_memory_limit`].
    pub fn memory_limit(&mut self, bytes: Option<u64>) -> &mut Config {
        self.memory_limit = bytes;
        self
    }

    /// The call depth limit in frames (at least 1; LANGUAGE §5.4 wants 10 000 available).
    pub fn max_call_depth(&mut self, frames: usize) -> &mut Config {
        self.max_depth = frames.max(1);
        self
    }

    /// The backend name set, if any.
    pub fn backend_name(&self) -> Option<&str> {
        self.backend.as_deref()
    }

    /// The JIT mode.
    pub fn jit_mode(&self) -> JitMode {
        self.jit
    }

    /// The initial fuel, if limited.
    pub fn fuel_limit(&self) -> Option<u64> {
        self.fuel
    }

    /// The memory limit, if any.
    pub fn memory_limit_bytes(&self) -> Option<u64> {
        self.memory_limit
    }

    /// The call depth limit.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }
}

/// Shared, immutable settings ([`Config`]) for compiling modules and making VMs. Cheap to
/// clone (an `Arc`), `Send + Sync`.
///
/// ```
/// # use cajeta_vm::Engine;
/// let engine = Engine::default();
/// let copy = engine.clone();
/// std::thread::spawn(move || drop(copy)).join().unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct Engine {
    config: Arc<Config>,
}

impl Engine {
    /// An engine with `config`.
    ///
    /// # Errors
    ///
    /// * `XPU-E-BACKEND` if the backend name is not one of `cpu`, `vulkan`, `cuda`, `auto`
    ///   (whether the device opens is known only at a VM's first device touch).
    pub fn new(config: &Config) -> Result<Engine, Error> {
        if let Some(name) = &config.backend {
            if !BACKEND_NAMES.contains(&name.as_str()) {
                return Err(RuntimeError::new(
                    ErrorCode::XpuBackend,
                    format!(
                        "backend {name} is not available: unknown backend name (expected cpu, \
                         vulkan, cuda or auto)"
                    ),
                ));
            }
        }
        Ok(Engine {
            config: Arc::new(config.clone()),
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// A verified Cajeta program: compiled from source or decoded from a `.cjb`, then checked by
/// the bytecode verifier. Immutable; cheap to clone (an `Arc`); `Send + Sync`, so one module
/// serves VMs on many threads.
///
/// ```
/// # use cajeta_vm::{Engine, Module};
/// let engine = Engine::default();
/// let module = Module::from_source(&engine, "Math.cajeta", "class Math { static int32 sq(int32 x) { return x * x; } }")?;
/// assert!(module.function("Math.sq").is_some());
/// let err = Module::from_source(&engine, "Bad.cajeta", "class Bad { int32 }").unwrap_err();
/// assert_eq!(err.code, "E-COMPILE");
/// assert!(err.message.contains("Bad.cajeta:1:"), "{}", err.message);
/// # Ok::<(), cajeta_vm::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Module {
    name: Arc<str>,
    bytecode: Arc<bc::Module>,
}

impl Module {
    /// Compiles Cajeta source `text`; `name` is the file name diagnostics and traces show
    /// (`Main.cajeta`).
    ///
    /// # Errors
    ///
    /// * `E-COMPILE` if the source does not compile: the message holds every error
    ///   diagnostic, rendered as the CLI prints them (`file:line:col: error[CODE]: …` and the
    ///   source line);
    /// * `E-VERIFY` if the compiled bytecode fails verification (a compiler bug).
    pub fn from_source(_engine: &Engine, name: &str, text: &str) -> Result<Module, Error> {
        Module::compile(name, vec![(name.to_string(), text.as_bytes().to_vec())])
    }

    /// Loads a `.cjb` file (decoded and verified) or compiles a `.cajeta` source file.
    ///
    /// # Errors
    ///
    /// * `E-CALL` if the file cannot be read;
    /// * as [`Module::from_cjb`] for a `.cjb` file, as [`Module::from_source`] otherwise.
    pub fn from_file(engine: &Engine, path: impl AsRef<Path>) -> Result<Module, Error> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            RuntimeError::new(
                ErrorCode::Call,
                format!("cannot read '{}': {e}", path.display()),
            )
        })?;
        if path.extension().is_some_and(|e| e == "cjb") {
            return Module::from_cjb(engine, &bytes);
        }
        let name = path.display().to_string();
        Module::compile(&name, vec![(name.clone(), bytes)])
    }

    /// Decodes and verifies a `.cjb` image (`cajeta build`'s output).
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module};
    /// let engine = Engine::default();
    /// let e = Module::from_cjb(&engine, b"not bytecode").unwrap_err();
    /// assert_eq!(e.code, "E-VERIFY");
    /// ```
    ///
    /// # Errors
    ///
    /// * `E-VERIFY` if the bytes do not decode or the module fails verification (the
    ///   message starts with the `CJB-E-…` code the CLI shows, and says which invariant,
    ///   function and pc, or which byte).
    pub fn from_cjb(_engine: &Engine, bytes: &[u8]) -> Result<Module, Error> {
        // The message leads with the decoder's own code (`CJB-E-MAGIC`, …), as the CLI shows.
        let module = bc::decode(bytes).map_err(|e| {
            RuntimeError::new(
                ErrorCode::Verify,
                format!("{}: {} (at byte {})", e.code, e.message, e.offset),
            )
        })?;
        Module::from_bytecode(module)
    }

    /// Wraps a bytecode module built in memory, after verifying it.
    ///
    /// # Errors
    ///
    /// * `E-VERIFY` if it fails verification.
    pub fn from_bytecode(module: bc::Module) -> Result<Module, Error> {
        bc::verify(&module).map_err(|e| RuntimeError::unverified(&e))?;
        let name = module
            .files
            .first()
            .cloned()
            .unwrap_or_else(|| "<module>".to_string());
        Ok(Module {
            name: name.into(),
            bytecode: Arc::new(module),
        })
    }

    fn compile(name: &str, inputs: Vec<(String, Vec<u8>)>) -> Result<Module, Error> {
        let c = cajeta_compiler::driver::compile_sources(inputs);
        let Some(module) = c.module.filter(|_| c.errors.is_empty()) else {
            let text: String = c
                .errors
                .iter()
                .map(|d| cajeta_compiler::driver::render(&c.sources, d))
                .collect();
            return Err(RuntimeError::new(
                ErrorCode::Compile,
                format!("{name} does not compile:\n{}", text.trim_end()),
            ));
        };
        let mut m = Module::from_bytecode(module)?;
        m.name = name.into();
        Ok(m)
    }

    /// The name given at creation (the file name for sources).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The verified bytecode.
    pub fn bytecode(&self) -> &Arc<bc::Module> {
        &self.bytecode
    }

    /// The index of the function with qualified name `name` (`pkg.Class.method`).
    pub fn function(&self, name: &str) -> Option<u32> {
        self.bytecode.function_by_name(name)
    }
}

impl Vm {
    /// A VM (the per-instance store: statics, object table, live buffers, limits) running
    /// `module` with `engine`'s settings.
    ///
    /// Static initialisers run before the first by-name call ([`Vm::call`],
    /// [`Vm::call_dynamic`], [`crate::TypedFunc::call`]), so host functions they use can be
    /// defined first; [`Vm::run_static_init`] runs them at once.
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Vm};
    /// let engine = Engine::default();
    /// let src = "class Counter { static int32 n = 40; static int32 next() { n = n + 1; return n; } }";
    /// let module = Module::from_source(&engine, "Counter.cajeta", src)?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// assert_eq!(vm.call::<(), i32>("Counter.next", ())?, 41);
    /// assert_eq!(vm.call::<(), i32>("Counter.next", ())?, 42);
    /// let mut other = Vm::instantiate(&engine, &module);
    /// assert_eq!(other.call::<(), i32>("Counter.next", ())?, 41, "each VM has its statics");
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    pub fn instantiate(engine: &Engine, module: &Module) -> Vm {
        let config = engine.config();
        let mut vm = Vm::with_sinks(Arc::clone(&module.bytecode), Output::std());
        vm.set_backend_choice(config.backend.clone());
        vm.set_max_depth(config.max_depth);
        vm.set_memory_limit(config.memory_limit);
        if config.fuel.is_some() {
            vm.set_fuel(config.fuel);
        }
        vm.set_jit(config.jit, false);
        vm.needs_init = true;
        vm
    }
}
