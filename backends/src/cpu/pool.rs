//! The `cpu` backend's persistent worker threads: created lazily by the first launch that wants
//! them, parked on a condition variable between launches, reused by every later launch and
//! joined when the backend is dropped.
//!
//! A launch hands the pool one *job*, a function of a slot number: the calling thread runs slot
//! 0 and up to `helpers` parked threads run slots `1..=helpers`, each at most once. The job
//! borrows the launch's data (the lane scheduler's [`super::lanes::Launch`], its workers'
//! memory), so it is passed to the threads as a pointer with its lifetime erased, and
//! [`Pool::run`] does not return — not even by unwinding — until no thread can call it any more:
//! the job is withdrawn (no thread starts it after that) and every thread that started it has
//! returned from it. That is the whole soundness argument; see the `SAFETY` comments.
//!
//! One job at a time: a launch that finds the pool busy (another host thread launching on the
//! same backend) runs its job on the calling thread alone, which gives the same results (the
//! scheduler's claims and fault selection do not depend on the number of workers).
//!
//! A panic inside the job (a bug of the backend: kernels cannot panic) is caught on every
//! thread and reported by [`Pool::run`]'s result; it neither hangs the launch nor kills a
//! pooled thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// A launch's work: called with slot 0 on the calling thread and slots `1..=helpers` on pooled
/// threads, each slot at most once.
pub(crate) type Job<'a> = dyn Fn(usize) + Sync + 'a;

/// A job with its lifetime erased (see the module docs for when it may be called).
#[derive(Copy, Clone)]
struct JobPtr(*const Job<'static>);

// SAFETY: the pointee is `Sync`, so calling it through a shared reference from another thread
// is allowed; the pointer is dereferenced only while the `Pool::run` that published it waits
// (see `Pool::run`).
unsafe impl Send for JobPtr {}

/// What the threads and the launching thread share.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is published or the pool shuts down.
    wake: Condvar,
    /// Signalled when the last thread running a job returns from it.
    done: Condvar,
}

/// The pool's state, under [`Shared::state`].
#[derive(Default)]
struct State {
    /// The published job, while its launch accepts helpers.
    job: Option<JobPtr>,
    /// Number of the current (or last) job; a thread runs each job at most once.
    epoch: u64,
    /// Helpers the current job asks for.
    wanted: usize,
    /// Helpers that have started the current job (their slots are `1..=taken`).
    taken: usize,
    /// Threads inside a job's call.
    running: usize,
    /// A job's call panicked (caught) since the job was published.
    panicked: bool,
    /// The backend is being dropped: threads exit.
    shutdown: bool,
}

/// The persistent worker threads of one [`super::CpuBackend`].
#[derive(Default)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
    /// The threads. The lock is held for a whole [`Pool::run`], so it also serialises jobs.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads())
            .finish()
    }
}

impl Pool {
    /// The number of threads the pool has started (for tests and debugging); `None` while a
    /// launch uses it.
    pub(crate) fn threads(&self) -> Option<usize> {
        match self.threads.try_lock() {
            Ok(t) => Some(t.len()),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner().len()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Runs `job(0)` on the calling thread and `job(1)` … `job(helpers)` on pooled threads
    /// (starting threads the first time they are needed), and returns when every call has
    /// returned. Fewer helpers run when threads cannot be started, when a parked thread wakes
    /// only after the others have finished the work (it then does not start the job), or when
    /// the pool is busy with another launch; the job must not depend on how many slots run.
    ///
    /// Returns `false` if a call panicked (the panic is caught).
    pub(crate) fn run(&self, helpers: usize, job: &Job<'_>) -> bool {
        let mut threads = match self.threads.try_lock() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            // Another launch holds the pool.
            Err(std::sync::TryLockError::WouldBlock) => {
                return catch_unwind(AssertUnwindSafe(|| job(0))).is_ok()
            }
        };
        self.grow(&mut threads, helpers);
        let helpers = helpers.min(threads.len());
        if helpers == 0 {
            return catch_unwind(AssertUnwindSafe(|| job(0))).is_ok();
        }
        // SAFETY: only the lifetime is changed (same pointer, same vtable). The erased pointer
        // is dereferenced only by threads that took it from `State::job` and counted
        // themselves in `State::running` under the lock; `Withdraw::drop` below removes it from
        // `State::job` and waits until `running` is 0 before this function returns or unwinds,
        // so no call outlives the borrow `job` (or anything it borrows).
        let ptr =
            JobPtr(unsafe { std::mem::transmute::<*const Job<'_>, *const Job<'static>>(job) });
        {
            let mut st = self.lock();
            st.job = Some(ptr);
            st.epoch = st.epoch.wrapping_add(1);
            st.wanted = helpers;
            st.taken = 0;
            st.panicked = false;
        }
        self.shared.wake.notify_all();
        let withdraw = Withdraw(&self.shared);
        let mine = catch_unwind(AssertUnwindSafe(|| job(0))).is_ok();
        drop(withdraw);
        let helpers_ok = !self.lock().panicked;
        drop(threads);
        mine && helpers_ok
    }

    /// Starts threads until there are `n` (or a start fails: the launch then uses fewer).
    fn grow(&self, threads: &mut Vec<JoinHandle<()>>, n: usize) {
        while threads.len() < n {
            let shared = Arc::clone(&self.shared);
            let started = std::thread::Builder::new()
                .name("cajeta-cpu-worker".into())
                .spawn(move || helper(&shared));
            match started {
                Ok(h) => threads.push(h),
                Err(_) => break,
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Pool {
    /// Ends and joins the threads (no launch can be running: it would borrow the pool).
    fn drop(&mut self) {
        self.lock().shutdown = true;
        self.shared.wake.notify_all();
        let threads = std::mem::take(
            self.threads
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for t in threads {
            // A thread never panics outside a job's call, and those panics are caught.
            let _ = t.join();
        }
    }
}

/// Withdraws the published job and waits until no thread runs it; on drop, so also when the
/// launching thread unwinds.
struct Withdraw<'a>(&'a Shared);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.job = None;
        while st.running > 0 {
            st = self.0.done.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A pooled thread: waits for a job it has not run, runs its slot, repeats until shutdown.
fn helper(shared: &Shared) {
    let mut seen = 0u64;
    loop {
        let (job, slot) = {
            let mut st = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if st.shutdown {
                    return;
                }
                if st.epoch != seen {
                    // Whether or not a slot is left, this job is seen.
                    seen = st.epoch;
                    if let Some(job) = st.job.filter(|_| st.taken < st.wanted) {
                        st.taken += 1;
                        st.running += 1;
                        break (job, st.taken);
                    }
                }
                st = shared.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        // SAFETY: this thread counted itself in `running` while the job was published, and the
        // publishing `Pool::run` does not return before `running` is back to 0 (see there), so
        // the job and everything it borrows are alive for this call.
        let call = catch_unwind(AssertUnwindSafe(|| unsafe { (*job.0)(slot) }));
        let mut st = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.panicked |= call.is_err();
        st.running -= 1;
        if st.running == 0 {
            shared.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_slot_runs_at_most_once_and_threads_are_reused() {
        let pool = Pool::default();
        for _ in 0..200 {
            let calls: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
            assert!(pool.run(3, &|slot| {
                calls[slot].fetch_add(1, Ordering::Relaxed);
            }));
            assert_eq!(calls[0].load(Ordering::Relaxed), 1);
            for c in &calls[1..] {
                assert!(c.load(Ordering::Relaxed) <= 1);
            }
        }
        assert_eq!(pool.threads(), Some(3));
    }

    #[test]
    fn helpers_take_part_while_the_caller_waits_for_them() {
        let pool = Pool::default();
        // The caller spins until both helpers have started: it only ends if they run.
        let started = AtomicUsize::new(0);
        assert!(pool.run(2, &|slot| {
            if slot == 0 {
                while started.load(Ordering::Acquire) < 2 {
                    std::thread::yield_now();
                }
            } else {
                started.fetch_add(1, Ordering::AcqRel);
            }
        }));
    }

    #[test]
    fn a_panic_is_reported_and_the_pool_still_works() {
        let pool = Pool::default();
        // The caller waits until the helper has started, so the helper's panic is certain.
        let started = AtomicUsize::new(0);
        assert!(!pool.run(1, &|slot| {
            if slot == 1 {
                started.store(1, Ordering::Release);
                panic!("a helper's panic (expected by this test)");
            }
            while started.load(Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
        }));
        assert!(!pool.run(1, &|slot| {
            if slot == 0 {
                panic!("the caller's panic (expected by this test)");
            }
        }));
        // The same thread serves the next launch.
        let ran = AtomicUsize::new(0);
        assert!(pool.run(1, &|slot| {
            if slot == 0 {
                while ran.load(Ordering::Acquire) == 0 {
                    std::thread::yield_now();
                }
            } else {
                ran.store(1, Ordering::Release);
            }
        }));
        assert_eq!(pool.threads(), Some(1));
    }
}
