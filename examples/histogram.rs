//! A 64-bin histogram with atomic counters, checked against a host count.
//! `cargo run --release --example histogram [N]`.

use offload::prelude::*;

#[offload_kernel]
fn histogram(bins: Atomic<u32>, samples: &[f32], mut seen: Region<u8, Linear1D>) {
    let i = seen.index();
    if let Some(s) = seen.get_mut() {
        let bin = (samples[i] * 64.0) as usize;
        bins.fetch_add(bin.min(63), 1);
        *s = 1;
    }
}

pub fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 22);
    println!("device: {}", offload::devices()[0]);
    // A deterministic spread of samples in [0, 1).
    let samples: Vec<f32> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761) >> 8) % 1_000_000) as f32 / 1e6)
        .collect();
    let mut bins = vec![0u32; 64];
    let mut seen = vec![0u8; n];
    try_offload! { kernel = histogram, args = (&mut bins, &samples, &mut seen) }?;

    let mut expected = vec![0u32; 64];
    for s in &samples {
        expected[((s * 64.0) as usize).min(63)] += 1;
    }
    if bins == expected {
        println!(
            "ok: {n} samples, bins match the host count (first bins: {:?})",
            &bins[..4]
        );
        Ok(())
    } else {
        eprintln!("FAILED: bins {bins:?} differ from the host count {expected:?}");
        std::process::exit(1);
    }
}
