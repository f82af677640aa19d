//! Background compilation: a thread with a companion [`Jit`] (sharing the VM's function
//! table) compiles functions while the program goes on.
//!
//! The VM asks for two kinds of work ([`super`]'s policy): a loop-free function that reached
//! its call count (its calls stay interpreted until the code is ready), and the functions
//! with loops that a function the VM is compiling itself will call (so that they are ready,
//! or nearly, when they are first called). Each function is compiled once, by one of the two
//! JITs: a job the VM needs at once and the worker has not started is taken back
//! ([`Worker::claim`]).
//!
//! Results wait in the job table until the VM takes them (on the function's next call, or
//! when it drains the queue); the worker publishes the code in the function table as soon as
//! it has it, so compiled callers use it at once. The worker's code lives as long as the
//! worker's thread, which ends (after its current job) once the VM drops the worker; the VM
//! does that only when no compiled code runs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use cajeta_jit::{Jit, JitError, JitFn};

/// A function compiled by the worker, with what `--jit-verbose` reports of it.
pub(crate) struct Compiled {
    pub entry: JitFn,
    pub compile_time: Duration,
    pub code_size: usize,
    pub disassembly: Option<String>,
    pub inlined: Vec<u32>,
    pub tail_call: Option<u32>,
    pub single_pass: bool,
    /// Array elements its loops hold in variables.
    pub promoted: usize,
    /// The code has entries at the function's loop headers (`Jit::compile_osr`).
    pub osr: bool,
}

impl Compiled {
    /// What `jit` made of a function it compiled as `c`.
    pub fn new(jit: &Jit, c: cajeta_jit::CompiledFn) -> Compiled {
        Compiled {
            entry: c.entry(),
            compile_time: c.compile_time,
            code_size: c.code_size,
            disassembly: jit.disassembly(c.func).map(str::to_owned),
            inlined: jit.inlined(c.func).to_vec(),
            tail_call: c.tail_call,
            single_pass: c.single_pass,
            promoted: c.promoted,
            osr: c.osr,
        }
    }
}

/// Where one function stands with the worker.
enum Job {
    /// Never asked for (or taken back by the VM, which compiles it itself).
    None,
    Queued,
    Running,
    Done(Result<Compiled, JitError>),
    /// Its result has been taken.
    Taken,
}

struct Jobs {
    queue: VecDeque<u32>,
    state: Vec<Job>,
    /// The VM let the worker go: the thread ends.
    stop: bool,
    /// The compiler panicked: no more jobs are taken (the VM compiles them itself).
    broken: bool,
}

struct Shared {
    jobs: Mutex<Jobs>,
    /// Signalled when a job is queued (the worker waits) and when one is done (the VM may
    /// wait for it).
    changed: Condvar,
    /// Per function: its result is waiting (`Job::Done`); read without the lock on calls.
    ready: Box<[AtomicBool]>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Jobs> {
        // A panic while the lock is held (there is no code that could) leaves the table as
        // it was: keep using it.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What [`Worker::claim`] found.
pub(crate) enum Claim {
    /// The caller compiles the function itself (the worker will not).
    CompileHere,
    /// The worker compiled it (the caller may have waited for that).
    Done(Result<Compiled, JitError>),
}

/// The background compiler thread and its job table.
pub(crate) struct Worker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread with `jit` (a companion of the VM's own JIT), compiling functions
    /// with entries at their loop headers if `osr` (`Jit::compile_osr`). `None` if the
    /// thread cannot be started: the VM then compiles everything itself.
    pub(crate) fn start(jit: Jit, osr: bool) -> Option<Worker> {
        let n = jit.module().functions.len();
        let shared = Arc::new(Shared {
            jobs: Mutex::new(Jobs {
                queue: VecDeque::new(),
                state: (0..n).map(|_| Job::None).collect(),
                stop: false,
                broken: false,
            }),
            changed: Condvar::new(),
            ready: (0..n).map(|_| AtomicBool::new(false)).collect(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("cajeta-jit".into())
            .spawn(move || run(jit, osr, &for_thread))
            .ok()?;
        Some(Worker {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `func` unless the worker already has (or had) it.
    pub(crate) fn request(&self, func: u32) {
        let mut jobs = self.shared.lock();
        if jobs.broken {
            return;
        }
        if let Some(job @ Job::None) = jobs.state.get_mut(func as usize) {
            *job = Job::Queued;
            jobs.queue.push_back(func);
            self.shared.changed.notify_all();
        }
    }

    /// Whether the result for `func` is waiting (one load).
    pub(crate) fn ready(&self, func: u32) -> bool {
        self.shared
            .ready
            .get(func as usize)
            .is_some_and(|r| r.load(Ordering::Relaxed))
    }

    /// The result for `func` if it is ready (cheap when it is not).
    pub(crate) fn poll(&self, func: u32) -> Option<Result<Compiled, JitError>> {
        let ready = self.shared.ready.get(func as usize)?;
        if !ready.load(Ordering::Acquire) {
            return None;
        }
        take(&mut self.shared.lock(), &self.shared.ready, func)
    }

    /// The VM needs `func` compiled now: takes a job the worker has not started back (the
    /// caller compiles it), or waits for the one it is running.
    pub(crate) fn claim(&self, func: u32) -> Claim {
        let mut jobs = self.shared.lock();
        loop {
            match jobs.state.get(func as usize) {
                Some(Job::Running) => {
                    jobs = self
                        .shared
                        .changed
                        .wait(jobs)
                        .unwrap_or_else(|e| e.into_inner());
                }
                Some(Job::Done(_)) => {
                    return take(&mut jobs, &self.shared.ready, func)
                        .map_or(Claim::CompileHere, Claim::Done)
                }
                Some(Job::Queued) => {
                    jobs.queue.retain(|&g| g != func);
                    jobs.state[func as usize] = Job::Taken;
                    return Claim::CompileHere;
                }
                Some(Job::None) => {
                    jobs.state[func as usize] = Job::Taken;
                    return Claim::CompileHere;
                }
                Some(Job::Taken) | None => return Claim::CompileHere,
            }
        }
    }

    /// Waits until every queued job is done and returns the results not taken yet, in
    /// function order.
    pub(crate) fn drain(&self) -> Vec<(u32, Result<Compiled, JitError>)> {
        let mut jobs = self.shared.lock();
        while !jobs.queue.is_empty() || jobs.state.iter().any(|j| matches!(j, Job::Running)) {
            jobs = self
                .shared
                .changed
                .wait(jobs)
                .unwrap_or_else(|e| e.into_inner());
        }
        (0..jobs.state.len() as u32)
            .filter_map(|g| take(&mut jobs, &self.shared.ready, g).map(|r| (g, r)))
            .collect()
    }
}

impl Drop for Worker {
    /// Stops the worker without waiting for the job it may be running (a program's end
    /// should not wait for code it will never use): the thread finishes that job, sees the
    /// stop and returns, freeing its JIT and code. The VM drops the worker only when no
    /// compiled code runs, and the function table the worker may still publish into is
    /// shared (`Arc`), so that is safe.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        drop(self.thread.take());
    }
}

/// Takes `func`'s result out of the table if it is done.
fn take(jobs: &mut Jobs, ready: &[AtomicBool], func: u32) -> Option<Result<Compiled, JitError>> {
    let job = jobs.state.get_mut(func as usize)?;
    if !matches!(job, Job::Done(_)) {
        return None;
    }
    ready[func as usize].store(false, Ordering::Relaxed);
    match std::mem::replace(job, Job::Taken) {
        Job::Done(r) => Some(r),
        _ => None,
    }
}

/// The worker thread: compiles queued functions in order until told to stop; its JIT, and
/// the code in it, is freed when it returns.
fn run(mut jit: Jit, osr: bool, shared: &Shared) {
    loop {
        let func = {
            let mut jobs = shared.lock();
            loop {
                if jobs.stop {
                    return;
                }
                if let Some(g) = jobs.queue.pop_front() {
                    jobs.state[g as usize] = Job::Running;
                    break g;
                }
                jobs = shared.changed.wait(jobs).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A panic in the compiler (a bug) must not leave the VM waiting for this job: it
        // fails, and so does every queued job, since the JIT may be left half-way.
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let compiled = if osr {
                jit.compile_osr(func)
            } else {
                jit.compile(func)
            };
            compiled.map(|c| Compiled::new(&jit, c))
        }));
        let panicked = compiled.is_err();
        let failed = |g: u32| {
            let message = "the background compiler stopped after an internal error".into();
            Job::Done(Err(JitError {
                func: Some(g),
                pc: None,
                message,
            }))
        };
        let mut jobs = shared.lock();
        jobs.state[func as usize] = match compiled {
            Ok(result) => Job::Done(result),
            Err(_) => failed(func),
        };
        shared.ready[func as usize].store(true, Ordering::Release);
        if panicked {
            // Its code stays (the VM may be running it) until the VM lets the worker go.
            jobs.broken = true;
            while let Some(g) = jobs.queue.pop_front() {
                jobs.state[g as usize] = failed(g);
                shared.ready[g as usize].store(true, Ordering::Release);
            }
        }
        shared.changed.notify_all();
    }
}
