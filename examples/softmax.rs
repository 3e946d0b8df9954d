//! A row softmax: each thread normalises one row of `COLS` values, which a `Chunked`
//! strategy hands it; the row length is a `const` item. Checked against the host.
//! `cargo run --release --example softmax [ROWS]`.

use offload::prelude::*;

/// Values per row.
const COLS: usize = 100;

#[offload_kernel]
fn softmax(mut rows: Region<f32, Chunked<COLS>>) {
    if let Some(row) = rows.get_mut() {
        let mut top = row[0];
        for k in 1..row.len() {
            top = f32::max(top, row[k]);
        }
        let mut sum = 0.0f32;
        for k in 0..row.len() {
            row[k] = (row[k] - top).exp();
            sum += row[k];
        }
        for k in 0..row.len() {
            row[k] /= sum;
        }
    }
}

pub fn main() -> Result<(), Error> {
    let rows: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    println!("device: {}", offload::default_device()?);
    let x: Vec<f32> = (0..rows * COLS)
        .map(|i| ((i * 7919) % 1013) as f32 * 0.01 - 5.0)
        .collect();
    let mut y = x.clone();
    try_offload! { kernel = softmax, args = (&mut y,) }?;

    let mut worst = 0.0f32;
    for (got, row) in y.chunks(COLS).zip(x.chunks(COLS)) {
        let top = row.iter().cloned().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|v| (v - top).exp()).sum();
        for (g, v) in got.iter().zip(row) {
            worst = worst.max((g - (v - top).exp() / sum).abs());
        }
    }
    if worst <= 1e-6 {
        println!("ok: {rows} rows of {COLS}, largest difference from the host {worst:e}");
        Ok(())
    } else {
        eprintln!("FAILED: a softmax value differs from the host's by {worst:e}");
        std::process::exit(1);
    }
}
