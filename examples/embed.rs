//! Embedding Cajeta in a Rust program: compile a module from source, register a host
//! function, make a device buffer in Rust, call a Cajeta function that launches a kernel on
//! it, and read the result back.
//!
//! Run it with `cargo run --release --example embed` (the Cajeta code is
//! `examples/embed.cajeta`; `tests/embed_example.rs` runs the same code under `cargo test`).

use cajeta::{Config, Engine, Error, HostError, Module, Vm};

/// The Cajeta module of this example.
const SOURCE: &str = include_str!("embed.cajeta");

/// Scales `input` by channel 2's gain on the `cpu` backend and returns the buffer's contents.
pub fn run(input: &[f32]) -> Result<Vec<f32>, Error> {
    // Settings shared by every VM: the device backend and a bound on executed work.
    let engine = Engine::new(Config::new().backend("cpu").fuel(Some(10_000_000)))?;
    let module = Module::from_source(&engine, "embed.cajeta", SOURCE)?;
    let mut vm = Vm::instantiate(&engine, &module);
    // `static native float32 gain(int32 channel)` is implemented here, in Rust.
    vm.define_native(
        "demo.Embed.gain",
        |channel: i32| -> Result<f32, HostError> {
            match channel {
                0..=3 => Ok(1.5 * channel as f32),
                _ => Err(HostError::new(format!("no channel {channel}"))),
            }
        },
    )?;
    let buffer = vm.buffer_from_slice(input)?;
    let gain = vm.call::<(&_, i32), f32>("demo.Embed.amplify", (&buffer, 2))?;
    assert_eq!(gain, 3.0);
    let out = vm.read_buffer(&buffer)?;
    vm.release_buffer(buffer);
    Ok(out)
}

fn main() {
    let input: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    match run(&input) {
        Ok(out) => {
            assert!(out.iter().zip(&input).all(|(y, x)| *y == 3.0 * x));
            println!(
                "scaled {} elements on the device: y[999] = {}",
                out.len(),
                out[999]
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(70);
        }
    }
}
