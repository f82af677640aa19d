//! The host side of the xpu runtime (XPU §2.1–2.2, §2.10, §3.4, §4, §7.2, §8.1): every host
//! xpu instruction and error message, backend selection, deterministic release and the
//! end-of-program wait. Most tests drive one instruction at a time through the wrappers of
//! `xpu_support` on a scripted [`Fake`] backend (which records launches instead of running
//! them); the `cpu_*` tests use the real `cpu` backend.

mod common;
mod xpu_support;

use cajeta_backends::{KernelArg, KernelFault, LaunchError, MemStats, StreamId, XpuError};
use cajeta_bytecode::{Module, Static};
use cajeta_vm::{run_program_in, Capture, Value, Vm};
use common::{asm, func, verified, BOOL, I64, U32, U64};
use std::sync::Arc;
use xpu_support::*;

fn r(h: u64) -> Value {
    Value::Ref(h)
}

fn s(text: &str) -> Value {
    Value::Str(Some(text.to_string()))
}

fn stats(live: u64, peak: u64, allocs: u64, frees: u64) -> MemStats {
    MemStats {
        live,
        peak,
        allocs,
        frees,
    }
}

fn pair(code: &str, message: &str) -> (String, String) {
    (code.to_string(), message.to_string())
}

#[test]
fn new_buffers_are_zero_filled_and_round_trip_on_cpu() {
    let mut t = T::cpu();
    assert_eq!(t.vm.active_backend(), None, "no device touch yet");
    assert_eq!(t.vm.mem_stats(), MemStats::default());
    let b = t.new_buf(4);
    assert_eq!(t.vm.active_backend(), Some("cpu"));
    assert_eq!(t.contents(b, 4), [0.0; 4]);
    t.fill(b, &[1.0, 2.5, -3.0, 4.0]);
    assert_eq!(t.contents(b, 4), [1.0, 2.5, -3.0, 4.0]);
    assert_eq!(t.vm.mem_stats(), stats(16, 16, 1, 0));
    t.ok("drop", &[r(b)]);
    assert_eq!(t.vm.mem_stats(), stats(0, 16, 1, 1));
}

#[test]
fn host_store_and_load_on_cpu_device_memory() {
    let mut t = T::cpu();
    let b = t.new_buf(3);
    let a = t.array(&[7.0, 8.0, 9.0]);
    t.ok("hostStore", &[r(b), r(a)]);
    let out = t.array(&[0.0; 3]);
    t.ok("hostLoad", &[r(b), r(out)]);
    assert_eq!(t.read(out, 3), [7.0, 8.0, 9.0]);
}

#[test]
fn async_copies_complete_by_sync_on_cpu() {
    let mut t = T::cpu();
    let b = t.new_buf(2);
    let st = t.handle("create", &[]);
    let a = t.array(&[5.0, 6.0]);
    t.ok("uploadAsync", &[r(b), r(a), r(st)]);
    let out = t.array(&[0.0; 2]);
    t.ok("downloadAsync", &[r(b), r(out), r(st)]);
    t.ok("sync", &[r(st)]);
    assert_eq!(t.read(out, 2), [5.0, 6.0]);
}

#[test]
fn length_survives_free_and_other_uses_are_freed() {
    let mut t = T::fake();
    let b = t.new_buf(5);
    t.ok("free", &[r(b)]);
    assert_eq!(t.ok("len", &[r(b)]), Some(Value::U64(5)));
    let a = t.array(&[0.0; 5]);
    assert_eq!(
        t.fails("upload", &[r(b), r(a)]),
        pair("XPU-E-FREED", "upload on a freed buffer")
    );
    assert_eq!(
        t.fails("download", &[r(b), r(a)]),
        pair("XPU-E-FREED", "download on a freed buffer")
    );
    assert_eq!(
        t.fails("slice", &[r(b), Value::U64(0), Value::U64(1)]),
        pair("XPU-E-FREED", "slice on a freed buffer")
    );
    t.ok("free", &[r(b)]);
    let fake = t.fake.clone().unwrap();
    assert_eq!(t.vm.mem_stats(), stats(0, 20, 1, 1), "free is idempotent");
    assert_eq!(fake.bad_releases(), 0);
    // allocate() gives it storage again.
    t.ok("reallocate", &[r(b), Value::I32(0)]);
    assert_eq!(t.contents(b, 5), [0.0; 5]);
    assert_eq!(t.vm.mem_stats(), stats(20, 20, 2, 1));
}

#[test]
fn unallocated_buffers() {
    let mut t = T::fake();
    let b = t.handle("empty", &[Value::U64(3)]);
    assert_eq!(t.ok("len", &[r(b)]), Some(Value::U64(3)));
    assert_eq!(t.vm.mem_stats(), MemStats::default(), "nothing allocated");
    let a = t.array(&[1.0, 2.0, 3.0]);
    assert_eq!(
        t.fails("upload", &[r(b), r(a)]),
        pair("XPU-E-FREED", "upload on an unallocated buffer")
    );
    assert_eq!(
        t.fails("slice", &[r(b), Value::U64(0), Value::U64(1)]),
        pair("XPU-E-FREED", "slice on an unallocated buffer")
    );
    let cur = t.handle("current", &[]);
    assert_eq!(
        t.fails("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, b, 3)),
        pair(
            "XPU-E-FREED",
            "launch of k on an unallocated buffer (argument y)"
        )
    );
    t.ok("free", &[r(b)]);
    assert_eq!(
        t.fails("upload", &[r(b), r(a)]),
        pair("XPU-E-FREED", "upload on an unallocated buffer"),
        "free() of an unallocated buffer changes nothing"
    );
    t.ok("reallocate", &[r(b), Value::I32(0)]);
    t.ok("upload", &[r(b), r(a)]);
    assert_eq!(t.contents(b, 3), [1.0, 2.0, 3.0]);
    assert_eq!(t.vm.mem_stats(), stats(12, 12, 1, 0));
}

#[test]
fn allocate_kinds_and_errors() {
    let mut t = T::fake();
    let b = t.new_buf(2);
    let a = t.array(&[1.0, 2.0]);
    // Device memory of the fake (a discrete GPU) is not host-accessible.
    assert_eq!(
        t.fails("hostStore", &[r(b), r(a)]),
        pair(
            "XPU-E-HOSTACCESS",
            "hostStore on Device memory is not host-accessible on backend fake"
        )
    );
    assert_eq!(
        t.fails("hostLoad", &[r(b), r(a)]),
        pair(
            "XPU-E-HOSTACCESS",
            "hostLoad on Device memory is not host-accessible on backend fake"
        )
    );
    t.fill(b, &[4.0, 5.0]);
    let v = t.handle("slice", &[r(b), Value::U64(1), Value::U64(1)]);
    // allocate(2): Unified, released first, contents zero again.
    t.ok("allocate", &[r(b), Value::I32(2)]);
    assert_eq!(
        t.vm.mem_stats(),
        stats(8, 8, 2, 1),
        "released before reallocating"
    );
    t.ok("hostStore", &[r(b), r(a)]);
    let out = t.array(&[0.0; 2]);
    t.ok("hostLoad", &[r(b), r(out)]);
    assert_eq!(t.read(out, 2), [1.0, 2.0]);
    // The view belonged to the old storage.
    assert_eq!(
        t.fails("download", &[r(v), r(out)]),
        pair("XPU-E-FREED", "download on a freed buffer")
    );
    // -1 keeps the current kind (Unified: still host-accessible).
    t.ok("reallocate", &[r(b), Value::I32(0)]);
    t.ok("hostStore", &[r(b), r(a)]);
    t.ok("allocate", &[r(b), Value::I32(1)]);
    t.ok("hostStore", &[r(b), r(a)]);
    t.ok("allocate", &[r(b), Value::I32(0)]);
    assert_eq!(t.fails("hostStore", &[r(b), r(a)]).0, "XPU-E-HOSTACCESS");
    for k in [3, -2, i32::MIN] {
        assert_eq!(
            t.fails("allocate", &[r(b), Value::I32(k)]),
            pair(
                "XPU-E-KIND",
                &format!("allocate({k}): not a MemoryKind ordinal (0 Device, 1 Pinned, 2 Unified)")
            )
        );
    }
    let v = t.handle("slice", &[r(b), Value::U64(0), Value::U64(1)]);
    let (code, msg) = t.fails("allocate", &[r(v), Value::I32(0)]);
    assert_eq!(code, "XPU-E-SLICE", "{msg}");
    assert_eq!(t.vm.mem_stats().live, 8);
}

#[test]
fn out_of_memory() {
    let mut t = T::cpu();
    assert_eq!(
        t.fails("new", &[Value::U64(1 << 62)]),
        pair(
            "XPU-E-OOM",
            "cannot allocate 18446744073709551616 bytes of Device memory on backend cpu"
        )
    );
    assert_eq!(
        t.fails("new", &[Value::U64(u64::MAX)]).1,
        "cannot allocate 73786976294838206460 bytes of Device memory on backend cpu"
    );
    let mut t = T::fake();
    assert_eq!(
        t.fails("new", &[Value::U64(1 << 29)]),
        pair(
            "XPU-E-OOM",
            "cannot allocate 2147483648 bytes of Device memory on backend fake"
        )
    );
    let b = t.handle("empty", &[Value::U64(1 << 29)]);
    assert_eq!(
        t.fails("allocate", &[r(b), Value::I32(1)]).1,
        "cannot allocate 2147483648 bytes of Pinned memory on backend fake"
    );
    let a = t.array(&[]);
    assert_eq!(
        t.fails("upload", &[r(b), r(a)]).1,
        "upload on an unallocated buffer"
    );
    assert_eq!(t.vm.mem_stats(), MemStats::default());
    // Zero-length buffers are valid.
    let z = t.new_buf(0);
    t.ok("upload", &[r(z), r(a)]);
    assert_eq!(t.ok("len", &[r(z)]), Some(Value::U64(0)));
}

#[test]
fn transfers_need_equal_lengths() {
    let mut t = T::fake();
    let b = t.new_buf(4);
    t.ok("allocate", &[r(b), Value::I32(2)]);
    let a = t.array(&[1.0, 2.0, 3.0]);
    let cur = t.handle("current", &[]);
    for (name, args) in [
        ("upload", vec![r(b), r(a)]),
        ("download", vec![r(b), r(a)]),
        ("uploadAsync", vec![r(b), r(a), r(cur)]),
        ("downloadAsync", vec![r(b), r(a), r(cur)]),
        ("hostStore", vec![r(b), r(a)]),
        ("hostLoad", vec![r(b), r(a)]),
    ] {
        assert_eq!(
            t.fails(name, &args),
            pair(
                "XPU-E-LENGTH",
                &format!("{name}: host array has 3 elements, buffer has 4")
            )
        );
    }
    assert_eq!(t.read(a, 3), [1.0, 2.0, 3.0], "nothing was copied");
}

#[test]
fn prefix_forms_clamp() {
    let mut t = T::fake();
    let b = t.new_buf(4);
    t.fill(b, &[1.0, 2.0, 3.0, 4.0]);
    let a = t.array(&[9.0; 6]);
    t.ok("downloadn", &[r(b), r(a), Value::I64(2)]);
    assert_eq!(t.read(a, 6), [1.0, 2.0, 9.0, 9.0, 9.0, 9.0]);
    t.ok("downloadn", &[r(b), r(a), Value::I64(-5)]);
    t.ok("downloadn", &[r(b), r(a), Value::I64(i64::MIN)]);
    assert_eq!(t.read(a, 6), [1.0, 2.0, 9.0, 9.0, 9.0, 9.0]);
    t.ok("downloadn", &[r(b), r(a), Value::I64(100)]);
    assert_eq!(t.read(a, 6), [1.0, 2.0, 3.0, 4.0, 9.0, 9.0]);
    let sevens = t.array(&[7.0, 7.0]);
    t.ok("uploadn", &[r(b), r(sevens), Value::I64(i64::MAX)]);
    assert_eq!(t.contents(b, 4), [7.0, 7.0, 3.0, 4.0]);
    t.ok("uploadn", &[r(b), r(a), Value::I64(3)]);
    assert_eq!(t.contents(b, 4), [1.0, 2.0, 3.0, 4.0]);
    t.ok("free", &[r(b)]);
    assert_eq!(
        t.fails("uploadn", &[r(b), r(a), Value::I64(0)]),
        pair("XPU-E-FREED", "upload on a freed buffer")
    );
    assert_eq!(
        t.fails("downloadn", &[r(b), r(a), Value::I64(0)]),
        pair("XPU-E-FREED", "download on a freed buffer")
    );
}

#[test]
fn null_references() {
    let mut t = T::fake();
    let b = t.new_buf(1);
    let a = t.array(&[0.0]);
    let e = |m: &str| pair("E-NULL", &format!("null reference: {m}"));
    assert_eq!(t.fails("len", &[r(0)]), e("length() on null buffer"));
    assert_eq!(
        t.fails("upload", &[r(0), r(a)]),
        e("upload() on null buffer")
    );
    assert_eq!(
        t.fails("download", &[r(b), r(0)]),
        e("download() with null host array")
    );
    assert_eq!(
        t.fails("uploadAsync", &[r(b), r(a), r(0)]),
        e("uploadAsync() on null stream")
    );
    assert_eq!(
        t.fails("allocate", &[r(0), Value::I32(0)]),
        e("allocate() on null buffer")
    );
    assert_eq!(t.fails("free", &[r(0)]), e("free() on null buffer"));
    assert_eq!(
        t.fails("slice", &[r(0), Value::U64(0), Value::U64(0)]),
        e("slice() on null buffer")
    );
    assert_eq!(t.fails("sync", &[r(0)]), e("sync() on null stream"));
    assert_eq!(t.fails("destroy", &[r(0)]), e("destroy() on null stream"));
    assert_eq!(
        t.fails("force", &[Value::Str(None)]),
        e("Device.force(null)")
    );
    let cur = t.handle("current", &[]);
    assert_eq!(
        t.fails("launch", &T::window(0, [1, 1, 1], [1, 1, 1], 0, b, 1)),
        e("launch of k on null stream")
    );
    assert_eq!(
        t.fails("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, 0, 1)),
        e("launch of k: argument y is null")
    );
    // A dropped host array is E-DROPPED, as for any array.
    let gone = t.array(&[0.0]);
    t.ok("dropArr", &[r(gone)]);
    assert_eq!(
        t.fails("upload", &[r(b), r(gone)]),
        pair("E-DROPPED", "use of dropped float32[] object")
    );
}

#[test]
fn slices_share_storage_with_relative_offsets() {
    let mut t = T::fake();
    let b = t.new_buf(10);
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    t.fill(b, &xs);
    let v = t.handle("slice", &[r(b), Value::U64(2), Value::U64(5)]);
    assert_eq!(t.ok("len", &[r(v)]), Some(Value::U64(5)));
    assert_eq!(t.contents(v, 5), [2.0, 3.0, 4.0, 5.0, 6.0]);
    let w = t.handle("slice", &[r(v), Value::U64(1), Value::U64(3)]);
    assert_eq!(t.contents(w, 3), [3.0, 4.0, 5.0]);
    t.fill(w, &[30.0, 40.0, 50.0]);
    assert_eq!(
        t.contents(b, 10),
        [0.0, 1.0, 2.0, 30.0, 40.0, 50.0, 6.0, 7.0, 8.0, 9.0]
    );
    let slice_err = |off: u64, c: u64, n: u64| {
        pair(
            "XPU-E-SLICE",
            &format!("slice({off}, {c}) exceeds buffer length {n}"),
        )
    };
    assert_eq!(
        t.fails("slice", &[r(b), Value::U64(8), Value::U64(3)]),
        slice_err(8, 3, 10)
    );
    assert_eq!(
        t.fails("slice", &[r(v), Value::U64(0), Value::U64(6)]),
        slice_err(0, 6, 5)
    );
    assert_eq!(
        t.fails("slice", &[r(b), Value::U64(1), Value::U64(u64::MAX)]),
        slice_err(1, u64::MAX, 10)
    );
    let empty = t.handle("slice", &[r(b), Value::U64(10), Value::U64(0)]);
    assert_eq!(t.ok("len", &[r(empty)]), Some(Value::U64(0)));
    // Views release nothing: free() and drop of a view leave the parent usable.
    t.ok("free", &[r(w)]);
    t.ok("drop", &[r(v)]);
    assert_eq!(t.contents(b, 10)[3], 30.0);
    assert_eq!(t.vm.mem_stats(), stats(40, 40, 1, 0));
    // A launch gets the view's storage, offset and length.
    let x = t.handle("slice", &[r(b), Value::U64(4), Value::U64(2)]);
    let cur = t.handle("current", &[]);
    t.ok("launch", &T::window(cur, [1, 1, 1], [2, 1, 1], 0, x, 2));
    let fake = t.fake.clone().unwrap();
    let KernelArg::Buffer { offset, len, .. } = fake.launches()[0].args[0] else {
        panic!("not a buffer argument");
    };
    assert_eq!((offset, len), (4, 2));
}

#[test]
fn views_die_with_their_parents_storage() {
    for how in ["free", "drop", "allocate"] {
        let mut t = T::fake();
        let b = t.new_buf(4);
        let v = t.handle("slice", &[r(b), Value::U64(1), Value::U64(2)]);
        let w = t.handle("slice", &[r(v), Value::U64(1), Value::U64(1)]);
        match how {
            "allocate" => t.ok("reallocate", &[r(b), Value::I32(0)]),
            other => t.ok(other, &[r(b)]),
        };
        let a = t.array(&[0.0; 2]);
        assert_eq!(t.ok("len", &[r(v)]), Some(Value::U64(2)), "{how}");
        assert_eq!(t.ok("len", &[r(w)]), Some(Value::U64(1)), "{how}");
        assert_eq!(
            t.fails("download", &[r(v), r(a)]),
            pair("XPU-E-FREED", "download on a freed buffer"),
            "{how}"
        );
        let one = t.array(&[0.0]);
        assert_eq!(
            t.fails("upload", &[r(w), r(one)]),
            pair("XPU-E-FREED", "upload on a freed buffer"),
            "{how}"
        );
        let cur = t.handle("current", &[]);
        assert_eq!(
            t.fails("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, v, 2)),
            pair("XPU-E-FREED", "launch of k on a freed buffer (argument y)"),
            "{how}"
        );
        assert_eq!(
            t.fails("slice", &[r(v), Value::U64(0), Value::U64(1)]),
            pair("XPU-E-FREED", "slice on a freed buffer"),
            "{how}"
        );
        // Dropping the views afterwards releases nothing more.
        t.ok("drop", &[r(w)]);
        t.ok("drop", &[r(v)]);
        let expect_live = if how == "allocate" { 16 } else { 0 };
        assert_eq!(t.vm.mem_stats().live, expect_live, "{how}");
        assert_eq!(t.fake.as_ref().unwrap().bad_releases(), 0, "{how}");
    }
}

#[test]
fn dropped_buffers_are_freed_for_their_borrowers() {
    let mut t = T::fake();
    let b = t.new_buf(8);
    t.ok("drop", &[r(b)]);
    assert_eq!(t.vm.mem_stats(), stats(0, 32, 1, 1));
    t.ok("drop", &[r(b)]);
    t.ok("free", &[r(b)]);
    assert_eq!(t.vm.mem_stats(), stats(0, 32, 1, 1), "no second release");
    let a = t.array(&[0.0; 8]);
    assert_eq!(
        t.fails("upload", &[r(b), r(a)]),
        pair("XPU-E-FREED", "upload on a freed buffer")
    );
    // XPU §2.1: `length()` still answers after a drop, as after `free()`.
    assert_eq!(t.ok("len", &[r(b)]), Some(Value::U64(8)));
    assert_eq!(
        t.fails("allocate", &[r(b), Value::I32(0)]),
        pair("XPU-E-FREED", "allocate on a freed buffer")
    );
    let cur = t.handle("current", &[]);
    assert_eq!(
        t.fails("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, b, 8)),
        pair("XPU-E-FREED", "launch of k on a freed buffer (argument y)")
    );
    assert_eq!(t.fake.as_ref().unwrap().bad_releases(), 0);
}

#[test]
fn streams() {
    let mut t = T::fake();
    let fake = t.fake.clone().unwrap();
    let b = t.new_buf(1);
    let a = t.array(&[1.0]);
    let cur = t.handle("current", &[]);
    // The default stream: drop and destroy do nothing.
    t.ok("dropStream", &[r(cur)]);
    t.ok("destroy", &[r(cur)]);
    t.ok("sync", &[r(cur)]);
    t.ok("uploadAsync", &[r(b), r(a), r(cur)]);
    t.ok("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, b, 1));
    assert_eq!(fake.destroyed(), []);
    assert_eq!(fake.synced(), [StreamId::DEFAULT]);
    assert_eq!(fake.launches()[0].stream, StreamId::DEFAULT);
    // A created stream.
    let c = t.handle("create", &[]);
    t.ok("launch", &T::window(c, [1, 1, 1], [1, 1, 1], 0, b, 1));
    let id = fake.launches()[1].stream;
    assert_ne!(id, StreamId::DEFAULT);
    t.ok("sync", &[r(c)]);
    assert_eq!(fake.synced(), [StreamId::DEFAULT, id]);
    t.ok("destroy", &[r(c)]);
    t.ok("destroy", &[r(c)]);
    assert_eq!(fake.destroyed(), [id], "destroy is idempotent");
    t.ok("sync", &[r(c)]);
    assert_eq!(
        fake.synced().len(),
        2,
        "sync of a destroyed stream is a no-op"
    );
    assert_eq!(
        t.fails("uploadAsync", &[r(b), r(a), r(c)]),
        pair("XPU-E-FREED", "uploadAsync on a destroyed stream")
    );
    assert_eq!(
        t.fails("downloadAsync", &[r(b), r(a), r(c)]),
        pair("XPU-E-FREED", "downloadAsync on a destroyed stream")
    );
    assert_eq!(
        t.fails("launch", &T::window(c, [1, 1, 1], [1, 1, 1], 0, b, 1)),
        pair("XPU-E-FREED", "launch of k on a destroyed stream")
    );
    t.ok("dropStream", &[r(c)]);
    assert_eq!(
        fake.destroyed(),
        [id],
        "dropping a destroyed stream destroys nothing"
    );
    // Dropping a created stream destroys it; its handle then reads as destroyed.
    let d = t.handle("create", &[]);
    t.ok("dropStream", &[r(d)]);
    assert_eq!(fake.destroyed().len(), 2);
    assert_eq!(
        t.fails("launch", &T::window(d, [1, 1, 1], [1, 1, 1], 0, b, 1)),
        pair("XPU-E-FREED", "launch of k on a destroyed stream")
    );
    t.ok("sync", &[r(d)]);
    t.ok("destroy", &[r(d)]);
    assert_eq!(fake.destroyed().len(), 2);
}

#[test]
fn default_stream_outlives_drops_and_failed_calls() {
    // A failed call releases what it allocated, but the default stream is not owned by it.
    let mut m = lib(|m| {
        m.functions.push(func(
            "currentThenFail",
            0,
            None,
            vec![STREAM, common::I32],
            asm("stream.current 0; loadi 1 0; div.i32 1 1 1; retvoid"),
        ));
    });
    m = verified(m);
    let mut t = T::with(m, Some(common::fake::Fake::new()));
    assert_eq!(t.fails("currentThenFail", &[]).0, "E-DIVZERO");
    let cur = t.handle("current", &[]);
    t.ok("sync", &[r(cur)]);
    let b = t.new_buf(1);
    t.ok("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, b, 1));
}

#[test]
fn pending_fault_is_reported_at_sync() {
    let mut t = T::fake();
    let fake = t.fake.clone().unwrap();
    let cur = t.handle("current", &[]);
    let k = t.f("demo.Demo.k");
    *fake.pending.lock().unwrap() = Some(KernelFault {
        code: "XPU-E-BOUNDS",
        message: "kernel k: index 9 out of bounds for length 4 (buffer y, workgroup (2,0,0), item (1,0,0))".into(),
        frames: vec![(k, 0)],
    });
    let e = t.call("sync", &[r(cur)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cajeta: runtime error: XPU-E-BOUNDS: kernel k: index 9 out of bounds for length 4 \
         (buffer y, workgroup (2,0,0), item (1,0,0))\n  at demo.Demo.k (Main.cajeta:1:1)\n  \
         at sync (Main.cajeta:1:1)"
    );
}

#[test]
fn device_force_and_backend_selection() {
    let mut t = T::cpu();
    t.ok("force", &[s("cpu")]);
    assert_eq!(t.vm.active_backend(), None, "force is not a device touch");
    assert_eq!(t.ok("backend", &[]), Some(s("cpu")));
    t.ok("force", &[s("cpu")]);
    t.ok("force", &[s("auto")]);
    assert_eq!(
        t.fails("force", &[s("cuda")]),
        pair(
            "XPU-E-BACKEND",
            "backend cuda is not available: backend cpu is already active (Device.force after \
             the first device touch)"
        )
    );
    assert_eq!(
        t.fails("force", &[s("bogus")]),
        pair(
            "XPU-E-BACKEND",
            "backend bogus is not available: unknown backend name in Device.force (expected \
             cpu, vulkan, cuda or auto)"
        )
    );

    // A forced GPU backend that cannot open fails at the first touch, not at force(), and
    // never falls back. Which GPU backends open depends on the machine: ask the backend.
    match cajeta_backends::cuda::open() {
        Ok(_) => {
            println!("skipped: cuda opens on this machine, its unavailable path is not tested")
        }
        Err(reason) => {
            let mut t = T::cpu();
            t.ok("force", &[s("cuda")]);
            let unavailable = pair(
                "XPU-E-BACKEND",
                &format!("backend cuda is not available: {reason}"),
            );
            assert_eq!(t.fails("new", &[Value::U64(1)]), unavailable);
            assert_eq!(t.fails("current", &[]), unavailable);
            assert_eq!(t.fails("backend", &[]), unavailable);
            assert_eq!(t.vm.active_backend(), None);
            t.ok("force", &[s("auto")]);
            let auto = t.ok("backend", &[]);
            assert!(
                auto == Some(s("cpu")) || auto == Some(s("vulkan")),
                "{auto:?}"
            );

            // The run option, below Device.force.
            let mut t = T::cpu();
            t.vm.set_backend_choice(Some("cuda".into()));
            assert_eq!(
                t.fails("create", &[]).1,
                format!("backend cuda is not available: {reason}")
            );
            t.ok("force", &[s("cpu")]);
            assert_eq!(t.ok("backend", &[]), Some(s("cpu")));
        }
    }
    let mut t = T::cpu();
    t.vm.set_backend_choice(Some("gpu".into()));
    assert_eq!(
        t.fails("new", &[Value::U64(1)]),
        pair(
            "XPU-E-BACKEND",
            "backend gpu is not available: unknown backend name in --backend (expected cpu, \
             vulkan, cuda or auto)"
        )
    );
    let mut t = T::cpu();
    t.vm.set_backend_choice(Some("cpu".into()));
    assert_eq!(t.ok("backend", &[]), Some(s("cpu")));
    assert_eq!(
        t.vm.set_backend(common::fake::Fake::new())
            .unwrap_err()
            .code,
        "XPU-E-BACKEND"
    );
    // An injected backend answers device.backend.
    let mut t = T::fake();
    assert_eq!(t.ok("backend", &[]), Some(s("fake")));
}

/// `kernel k refused by backend fake: <reason>`.
fn refused(reason: &str) -> (String, String) {
    pair(
        "XPU-E-LAUNCH",
        &format!("kernel k refused by backend fake: {reason}"),
    )
}

#[test]
fn launch_passes_geometry_and_arguments() {
    let mut t = T::fake();
    let fake = t.fake.clone().unwrap();
    let b = t.new_buf(4);
    let cur = t.handle("current", &[]);
    t.ok("launch", &T::window(cur, [2, 3, 4], [64, 2, 1], 128, b, -7));
    let l = &fake.launches()[0];
    assert_eq!(l.kernel, t.f("demo.Demo.k"));
    assert_eq!(l.dims.grid, [2, 3, 4]);
    assert_eq!(l.dims.block, [64, 2, 1]);
    assert_eq!(l.dims.shared_bytes, 128);
    assert!(matches!(
        l.args[..],
        [KernelArg::Buffer { offset: 0, len: 4, .. }, KernelArg::Scalar(c)] if c == (-7i64) as u64
    ));
}

#[test]
fn launch_geometry_is_validated() {
    let mut t = T::fake();
    let fake = t.fake.clone().unwrap();
    let b = t.new_buf(4);
    let cur = t.handle("current", &[]);
    let mut launch = |grid: [i64; 3], block: [i64; 3], shared: i64| {
        t.fails("launch", &T::window(cur, grid, block, shared, b, 4))
    };
    assert_eq!(
        launch([-1, 1, 1], [1, 1, 1], 0),
        refused("grid x = -1 is outside 0..4294967295")
    );
    assert_eq!(
        launch([1, 1, 1], [1, 1, 1 << 32], 0),
        refused("block z = 4294967296 is outside 0..4294967295")
    );
    assert_eq!(
        launch([1, 1 << 22, 1], [1, 2048, 1], 0),
        refused("grid × block along y is 8589934592 items, more than 2^32")
    );
    assert_eq!(
        launch([1, 1, 1], [2048, 1, 1], 0),
        refused("block x of 2048 exceeds the limit 1024")
    );
    assert_eq!(
        launch([1, 1, 1], [32, 32, 2], 0),
        refused("block of 2048 items exceeds the limit 1024")
    );
    assert_eq!(
        launch([65536, 1, 1], [1, 1, 1], 0),
        refused("grid x of 65536 exceeds the limit 65535")
    );
    assert_eq!(
        launch([1, 1, 1], [1, 1, 1], -1),
        refused("sharedBytes -1 is negative")
    );
    assert_eq!(
        launch([1, 1, 1], [1, 1, 1], 49153),
        refused("49153 bytes of shared memory exceed the limit 49152")
    );
    // Validation happens even when nothing would run.
    assert_eq!(
        launch([0, 1, 1], [2048, 1, 1], 0),
        refused("block x of 2048 exceeds the limit 1024")
    );
    assert!(fake.launches().is_empty());
    // Zero dimensions: nothing runs.
    for (grid, block) in [
        ([0, 1, 1], [64, 1, 1]),
        ([4, 4, 4], [8, 0, 1]),
        ([1, 1, 0], [1, 1, 1]),
    ] {
        t.ok("launch", &T::window(cur, grid, block, 0, b, 4));
    }
    assert!(fake.launches().is_empty());
    // The largest admissible geometry passes.
    t.ok(
        "launch",
        &T::window(cur, [65535, 65535, 65535], [1024, 1, 1], 49152, b, 4),
    );
    assert_eq!(fake.launches().len(), 1);
}

#[test]
fn launch_checks_static_shared_memory() {
    let m = lib(|m| {
        let k = kernel(
            m,
            "demo.Demo.sh",
            &[("y", BUF), ("n", I64)],
            vec![],
            "retvoid",
        );
        m.functions[k as usize].shared = vec![cajeta_bytecode::SharedDecl {
            elem: cajeta_bytecode::Scalar::F64,
            len: 6000,
        }];
        let mut window = vec![STREAM];
        window.extend([I64; 7]);
        window.extend([BUF, I64]);
        m.functions.push(func(
            "launchSh",
            10,
            None,
            window,
            asm(&format!("launch 0 {k}; retvoid")),
        ));
    });
    let mut t = T::with(m, Some(common::fake::Fake::new()));
    let b = t.new_buf(1);
    let cur = t.handle("current", &[]);
    t.ok(
        "launchSh",
        &T::window(cur, [1, 1, 1], [1, 1, 1], 1152, b, 1),
    );
    assert_eq!(
        t.fails("launchSh", &T::window(cur, [1, 1, 1], [1, 1, 1], 1153, b, 1)),
        pair(
            "XPU-E-LAUNCH",
            "kernel sh refused by backend fake: 49153 bytes of shared memory exceed the limit 49152"
        )
    );
}

#[test]
fn backend_refusals_and_faults_of_a_launch() {
    let m = lib(|m| {
        // A device helper with a line table of its own (line 3 at pc 0).
        let mut h = func("demo.Demo.helper", 0, None, vec![], asm("retvoid"));
        h.kind = cajeta_bytecode::FnKind::Device;
        h.lines[0].line = 3;
        h.lines[0].col = 5;
        m.functions.push(h);
        // The launch one call deep, for a two-frame host trace.
        let launch = m.function_by_name("launch").unwrap();
        let mut regs = vec![STREAM];
        regs.extend([I64; 7]);
        regs.extend([BUF, I64]);
        m.functions.push(func(
            "demo.Demo.run",
            10,
            None,
            regs,
            asm(&format!("nop; call 0 0 {launch}; retvoid")),
        ));
    });
    let mut t = T::with(m, Some(common::fake::Fake::new()));
    let fake = t.fake.clone().unwrap();
    let b = t.new_buf(4);
    let cur = t.handle("current", &[]);
    let refusal = XpuError {
        code: "XPU-E-LAUNCH",
        message: "kernel k refused by backend fake: @Wave(width = 64) is not supported".into(),
    };
    *fake.launch_error.lock().unwrap() = Some(LaunchError::Refused(refusal.clone()));
    assert_eq!(
        t.fails("launch", &T::window(cur, [1, 1, 1], [1, 1, 1], 0, b, 4)),
        (refusal.code.to_string(), refusal.message)
    );
    let (k, helper) = (t.f("demo.Demo.k"), t.f("demo.Demo.helper"));
    *fake.launch_error.lock().unwrap() = Some(LaunchError::Fault(KernelFault {
        code: "E-DIVZERO",
        message: "kernel k: integer division by zero (workgroup (0,0,0), item (3,0,0))".into(),
        frames: vec![(helper, 0), (k, 0)],
    }));
    let e = t
        .call(
            "demo.Demo.run",
            &T::window(cur, [1, 1, 1], [4, 1, 1], 0, b, 4),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "cajeta: runtime error: E-DIVZERO: kernel k: integer division by zero (workgroup \
         (0,0,0), item (3,0,0))\n  at demo.Demo.helper (Main.cajeta:3:5)\n  at demo.Demo.k \
         (Main.cajeta:1:1)\n  at launch (Main.cajeta:1:1)\n  at demo.Demo.run (Main.cajeta:2:1)"
    );
}

/// `inc(KernelBuffer<float32> y, int64 n)`: `y[i] += 1` for `i < n` (global id x), or without
/// the guard (`bad`).
fn with_inc_kernels(m: &mut Module) {
    let one = kf32(m, 1.0);
    let body = |guard: bool| {
        format!(
            "geom 2 9; wrap.i64 3 2; lt.i64 4 3 1; {} ld.f32 5 0 3; loadk 6 {one}; add.f32 5 5 6; st.f32 0 3 5; retvoid",
            if guard { "jmpifnot 4 8;" } else { "nop;" }
        )
    };
    let extra = vec![U32, I64, BOOL, F32, F32];
    for (name, guard) in [("demo.Demo.inc", true), ("demo.Demo.bad", false)] {
        let k = kernel(
            m,
            name,
            &[("y", BUF), ("n", I64)],
            extra.clone(),
            &body(guard),
        );
        let mut window = vec![STREAM];
        window.extend([I64; 7]);
        window.extend([BUF, I64]);
        let host = if guard { "launchInc" } else { "launchBad" };
        m.functions.push(func(
            host,
            10,
            None,
            window,
            asm(&format!("launch 0 {k}; retvoid")),
        ));
    }
}

#[test]
fn cpu_kernel_runs_on_buffers_and_views() {
    let mut t = T::with(lib(with_inc_kernels), None);
    let b = t.new_buf(10);
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    t.fill(b, &xs);
    let cur = t.handle("current", &[]);
    t.ok("launchInc", &T::window(cur, [3, 1, 1], [4, 1, 1], 0, b, 10));
    let ys: Vec<f32> = (1..11).map(|i| i as f32).collect();
    assert_eq!(t.contents(b, 10), ys);
    let v = t.handle("slice", &[r(b), Value::U64(2), Value::U64(5)]);
    let st = t.handle("create", &[]);
    t.ok("launchInc", &T::window(st, [1, 1, 1], [8, 1, 1], 0, v, 5));
    t.ok("sync", &[r(st)]);
    assert_eq!(
        t.contents(b, 10),
        [1.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 9.0, 10.0]
    );
}

#[test]
fn cpu_kernel_fault_has_device_then_host_frames() {
    let mut t = T::with(lib(with_inc_kernels), None);
    let b = t.new_buf(10);
    let cur = t.handle("current", &[]);
    let e = t
        .call(
            "launchBad",
            &T::window(cur, [1, 1, 1], [16, 1, 1], 0, b, 10),
        )
        .unwrap_err();
    assert_eq!(e.code, "XPU-E-BOUNDS", "{e}");
    // Items 10..15 all fault; which one is reported is the backend's schedule (XPU §5.5).
    let i: u32 = e
        .message
        .strip_prefix("kernel bad: index ")
        .and_then(|m| m.split(' ').next())
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("unexpected message: {e}"));
    assert!((10..16).contains(&i), "{e}");
    assert_eq!(
        e.message,
        format!(
            "kernel bad: index {i} out of bounds for length 10 (buffer y, workgroup (0,0,0), \
             item ({i},0,0))"
        )
    );
    let names: Vec<&str> = e.trace.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(names, ["demo.Demo.bad", "launchBad"]);
    assert_eq!((e.trace[0].line, e.trace[1].line), (5, 1), "{e}");
}

#[test]
fn a_runtime_error_releases_what_the_call_allocated() {
    let m = lib(|m| {
        // new buffer, a view, a created stream, then a division by zero.
        m.functions.push(func(
            "leaky",
            1,
            None,
            vec![U64, BUF, BUF, STREAM, U64, U64, common::I32],
            asm("buf.new 1 0; loadi 4 0; loadi 5 1; buf.slice 2 1 4; stream.create 3; loadi 6 0; div.i32 6 6 6; retvoid"),
        ));
    });
    for fake in [true, false] {
        let f = fake.then(common::fake::Fake::new);
        let mut t = T::with(m.clone(), f.clone());
        let kept = t.new_buf(2);
        assert_eq!(t.fails("leaky", &[Value::U64(1000)]).0, "E-DIVZERO");
        assert_eq!(
            t.vm.mem_stats().live,
            8,
            "back to the level before the call"
        );
        assert_eq!(t.vm.mem_stats().frees, 1);
        if let Some(f) = f {
            assert_eq!(f.destroyed().len(), 1, "the stream was destroyed");
            assert_eq!(f.bad_releases(), 0);
        }
        assert_eq!(t.contents(kept, 2), [0.0, 0.0], "earlier objects stay");
    }
}

/// `loop(int64 n)`: `n` times `{ KernelBuffer<float32> b = new (16 Mi elements = 64 MiB); }`.
fn loop_module() -> Module {
    lib(|m| {
        m.functions.push(func(
            "loop",
            1,
            None,
            vec![I64, I64, BOOL, U64, BUF, BOOL],
            asm("loadi 1 0; loadi 3 16777216; loadi 5 1
                 lt.i64 2 1 0; jmpifnot 2 9
                 buf.new 4 3; drop 4 5
                 addi.i64 1 1 1; jmp 0 3
                 retvoid"),
        ));
    })
}

#[test]
fn deterministic_release_keeps_one_64_mib_buffer_live() {
    // 1000 iterations on the fake (whose storage is lazily zeroed pages), a few on `cpu`
    // (which writes its zero fill: 0.2 s per 64 MiB in a debug build).
    let mut t = T::with(loop_module(), Some(common::fake::Fake::new()));
    t.ok("loop", &[Value::I64(1000)]);
    assert_eq!(t.vm.mem_stats(), stats(0, 64 << 20, 1000, 1000));
    let mut t = T::with(loop_module(), None);
    t.ok("loop", &[Value::I64(5)]);
    assert_eq!(t.vm.mem_stats(), stats(0, 64 << 20, 5, 5));
}

#[test]
fn early_return_and_scopes_release() {
    // `int32 f(boolean early) { { KernelBuffer b = new(4); if (early) return 1; } return 2; }`
    // as the compiler lowers it: the drop runs on both paths.
    let m = lib(|m| {
        m.functions.push(func(
            "scoped",
            1,
            Some(common::I32),
            vec![BOOL, U64, BUF, BOOL, common::I32],
            asm("loadi 1 4; buf.new 2 1; loadi 3 1
                 jmpifnot 0 7
                 drop 2 3; loadi 4 1; ret 4
                 drop 2 3; loadi 4 2; ret 4"),
        ));
    });
    let mut t = T::with(m, Some(common::fake::Fake::new()));
    assert_eq!(t.ok("scoped", &[Value::Bool(true)]), Some(Value::I32(1)));
    assert_eq!(t.vm.mem_stats(), stats(0, 16, 1, 1));
    assert_eq!(t.ok("scoped", &[Value::Bool(false)]), Some(Value::I32(2)));
    assert_eq!(t.vm.mem_stats(), stats(0, 16, 2, 2));
}

/// A program with a static buffer made by `<clinit>` and a `main` that uploads into it, then
/// optionally divides by zero.
fn static_program(fail: bool) -> Module {
    lib(|m| {
        m.statics.push(Static {
            name: "demo.Main.buf".into(),
            ty: BUF,
        });
        m.functions.push(func(
            "demo.Main.<clinit>",
            0,
            None,
            vec![U64, BUF],
            asm("loadi 0 4; buf.new 1 0; setstatic 1 0; retvoid"),
        ));
        m.init.push((m.functions.len() - 1) as u32);
        let tail = if fail {
            "loadi 3 0; div.i32 3 3 3; retvoid"
        } else {
            "retvoid"
        };
        m.functions.push(func(
            "demo.Main.main",
            0,
            None,
            vec![BUF, U64, BUF, common::I32],
            asm(&format!("getstatic 0 0; loadi 1 2; buf.new 2 1; {tail}")),
        ));
    })
}

fn run_captured(m: Module, fake: Option<Arc<common::fake::Fake>>) -> (i32, String, String) {
    let out = Capture::new();
    let err = Capture::new();
    let entry = m.function_by_name("demo.Main.main").unwrap();
    let mut vm = Vm::with_output(Arc::new(m), out.sink(), err.sink());
    if let Some(f) = fake {
        vm.set_backend(f).unwrap();
    }
    let status = run_program_in(&mut vm, entry, &[]);
    vm.print_mem_stats();
    vm.flush();
    (status, out.text(), err.text())
}

#[test]
fn program_end_drops_statics_and_waits_for_device_work() {
    let fake = common::fake::Fake::new();
    let (status, _, err) = run_captured(static_program(false), Some(fake.clone()));
    assert_eq!(status, 0);
    // main's own buffer (8 bytes) is leaked by this hand-written main (no drop): mem-stats
    // shows it; the static's 16 bytes were released at the end.
    assert_eq!(err, "mem-stats: live=8 peak=24 allocs=2 frees=1\n");
    assert_eq!(
        fake.synced().last(),
        Some(&StreamId::DEFAULT),
        "waited for all work"
    );

    let (status, _, err) = run_captured(static_program(true), None);
    assert_eq!(status, 70);
    assert_eq!(
        err,
        "cajeta: runtime error: E-DIVZERO: integer division by zero\n  at demo.Main.main \
         (Main.cajeta:5:1)\nmem-stats: live=0 peak=24 allocs=2 frees=2\n",
        "the failed call's buffer is released, and at the program's end the static's too"
    );

    // Without any device touch.
    let m = lib(|m| {
        m.functions
            .push(func("demo.Main.main", 0, None, vec![], asm("retvoid")));
    });
    let (status, _, err) = run_captured(m, None);
    assert_eq!(
        (status, err.as_str()),
        (0, "mem-stats: live=0 peak=0 allocs=0 frees=0\n")
    );
}

#[test]
fn a_device_fault_found_at_program_end_is_a_runtime_error() {
    let fake = common::fake::Fake::new();
    let k = 0; // the first function of `lib` is the kernel
    *fake.pending.lock().unwrap() = Some(KernelFault {
        code: "XPU-E-BOUNDS",
        message: "kernel k: index 4 out of bounds for length 4 (buffer y, workgroup (0,0,0), item (4,0,0))".into(),
        frames: vec![(k, 0)],
    });
    let (status, out, err) = run_captured(static_program(false), Some(fake));
    assert_eq!((status, out.as_str()), (70, ""));
    assert!(
        err.starts_with(
            "cajeta: runtime error: XPU-E-BOUNDS: kernel k: index 4 out of bounds for length 4 \
             (buffer y, workgroup (0,0,0), item (4,0,0))\n  at demo.Demo.k (Main.cajeta:1:1)\n\
             mem-stats:"
        ),
        "{err}"
    );
}

#[test]
fn run_program_with_defaults_matches_run_program() {
    // No device touch, no options: the same status as `run_program`.
    let m = lib(|m| {
        m.functions.push(func(
            "demo.Main.main",
            0,
            Some(common::I32),
            vec![common::I32],
            asm("loadi 0 7; ret 0"),
        ));
    });
    let entry = m.function_by_name("demo.Main.main").unwrap();
    let m = Arc::new(m);
    let opts = cajeta_vm::RunOptions::default();
    assert_eq!(
        cajeta_vm::run_program_with(Arc::clone(&m), entry, &[], &opts),
        7
    );
    assert_eq!(cajeta_vm::run_program(m, entry, &[]), 7);
}
