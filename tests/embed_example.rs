//! Runs `examples/embed.rs` (which `cargo test` only builds) through its `run` function, and
//! the host function's error path the example does not take.

#[allow(dead_code)]
#[path = "../examples/embed.rs"]
mod example;

#[test]
fn the_embedding_example_scales_a_buffer_on_the_device() {
    let input: Vec<f32> = (0..1000).map(|i| (i as f32) * 0.25).collect();
    let out = example::run(&input).unwrap();
    assert_eq!(out.len(), input.len());
    for (y, x) in out.iter().zip(&input) {
        assert_eq!(*y, 3.0 * x);
    }
}

#[test]
fn a_failing_host_function_is_a_runtime_error_with_a_trace() {
    use cajeta::{Engine, Module, Vm};
    let engine = Engine::default();
    let src = include_str!("../examples/embed.cajeta");
    let module = Module::from_source(&engine, "embed.cajeta", src).unwrap();
    let mut vm = Vm::instantiate(&engine, &module);
    vm.define_native(
        "demo.Embed.gain",
        |c: i32| -> Result<f32, cajeta::HostError> { Err(format!("no channel {c}").into()) },
    )
    .unwrap();
    let buf = vm.buffer_from_slice(&[1.0f32]).unwrap();
    let e = vm
        .call::<(&_, i32), f32>("demo.Embed.amplify", (&buf, 9))
        .unwrap_err();
    assert_eq!(e.code, "E-NATIVE");
    assert_eq!(
        e.message,
        "native method demo.Embed.gain failed: no channel 9"
    );
    assert_eq!(
        e.trace.last().map(|f| f.function.as_str()),
        Some("demo.Embed.amplify")
    );
}
