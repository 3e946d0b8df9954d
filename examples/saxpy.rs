//! The demo: saxpy on the GPU if there is one, else on the CPU backend, checked against a
//! host loop. `cargo run --release --example saxpy [N]`.

use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

pub fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    let device = offload::devices()
        .into_iter()
        .next()
        .expect("the CPU is always listed");
    let selected = std::env::var("OFFLOAD_DEVICE").unwrap_or_else(|_| device.to_string());
    println!(
        "devices: {}",
        offload::devices()
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("running saxpy on {selected} with n = {n}");

    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let expected: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 3.0 * x + y).collect();

    let start = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }?;
    println!(
        "launch took {:.1} ms (first launch includes compilation)",
        start.elapsed().as_secs_f64() * 1e3
    );

    let wrong = y.iter().zip(&expected).filter(|(a, b)| a != b).count();
    if wrong == 0 {
        println!("ok: all {n} elements match the host reference");
        Ok(())
    } else {
        eprintln!("FAILED: {wrong} of {n} elements differ from the host reference");
        std::process::exit(1);
    }
}
