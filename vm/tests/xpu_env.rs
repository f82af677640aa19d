//! Backend selection and poisoning from the environment (`CAJETA_XPU_BACKEND`,
//! `CAJETA_XPU_POISON`, XPU §8.1, §8.5). One test in its own process, since the environment
//! is process-wide.

mod common;
mod xpu_support;

use cajeta_vm::Value;
use xpu_support::T;

#[test]
fn environment_selects_and_poisons() {
    // SAFETY (of the test): this binary runs a single test, so no other thread reads the
    // environment while it changes.
    std::env::set_var("CAJETA_XPU_BACKEND", "bogus");
    let mut t = T::cpu();
    assert_eq!(
        t.fails("new", &[Value::U64(1)]),
        (
            "XPU-E-BACKEND".to_string(),
            "backend bogus is not available: unknown backend name in CAJETA_XPU_BACKEND \
             (expected cpu, vulkan, cuda or auto)"
                .to_string()
        )
    );
    // The run option wins over the environment.
    let mut t = T::cpu();
    t.vm.set_backend_choice(Some("auto".into()));
    assert_eq!(t.ok("backend", &[]), Some(Value::Str(Some("cpu".into()))));

    std::env::set_var("CAJETA_XPU_BACKEND", "cuda");
    let mut t = T::cpu();
    assert_eq!(t.fails("current", &[]).0, "XPU-E-BACKEND");

    std::env::set_var("CAJETA_XPU_BACKEND", "cpu");
    std::env::set_var("CAJETA_XPU_POISON", "1");
    let mut t = T::cpu();
    let b = t.new_buf(3);
    let bits: Vec<u32> = t.contents(b, 3).iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits, [0xFFFF_FFFF; 3], "poisoned storage is all 0xFF bytes");

    std::env::set_var("CAJETA_XPU_POISON", "0");
    std::env::set_var("CAJETA_XPU_BACKEND", "");
    let mut t = T::cpu();
    let b = t.new_buf(3);
    assert_eq!(t.contents(b, 3), [0.0; 3]);
    assert_eq!(
        t.vm.active_backend(),
        Some("cpu"),
        "an empty value means auto"
    );
}
