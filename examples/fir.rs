//! A 16-tap FIR filter whose taps are a constant array of the kernel: a loop over a
//! constant range unrolls, and on a GPU the taps become immediates of the instructions.
//! Checked against the host. `cargo run --release --example fir [N]`.

use offload::prelude::*;

#[offload_kernel]
fn fir(mut y: Region<f32, Linear1D>, x: &[f32]) {
    const TAPS: [f32; 16] = [
        0.01, -0.02, 0.03, 0.05, -0.08, 0.13, 0.21, 0.34, 0.34, 0.21, 0.13, -0.08, 0.05, 0.03,
        -0.02, 0.01,
    ];
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..TAPS.len() {
            acc = TAPS[k].mul_add(x[i + k], acc);
        }
        *v = acc;
    }
}

pub fn main() -> Result<(), Error> {
    const TAPS: [f32; 16] = [
        0.01, -0.02, 0.03, 0.05, -0.08, 0.13, 0.21, 0.34, 0.34, 0.21, 0.13, -0.08, 0.05, 0.03,
        -0.02, 0.01,
    ];
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    println!("device: {}", offload::default_device()?);
    // One output per input with 15 inputs of lookahead.
    let x: Vec<f32> = (0..n + 15).map(|i| ((i * 37) % 101) as f32 * 0.1).collect();
    let mut y = vec![0.0f32; n];
    try_offload! { kernel = fir, args = (&mut y, &x) }?;
    let want: Vec<f32> = (0..n)
        .map(|i| (0..16).fold(0.0f32, |acc, k| TAPS[k].mul_add(x[i + k], acc)))
        .collect();
    let wrong = y.iter().zip(&want).filter(|(g, w)| g != w).count();
    if wrong == 0 {
        println!("ok: {n} outputs of a 16-tap filter match the host");
        Ok(())
    } else {
        eprintln!("FAILED: {wrong} outputs differ from the host's");
        std::process::exit(1);
    }
}
