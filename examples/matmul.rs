//! A tiled matrix product: each 16×16 workgroup stages tiles of A and B in shared memory,
//! with barriers between filling a tile and reading it, and between reading it and
//! refilling it. Checked against a host product. `cargo run --release --example matmul [N]`.

use offload::prelude::*;

#[offload_kernel]
fn matmul(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let mut ta = Shared::<f32, 256>::new();
    let mut tb = Shared::<f32, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f32;
    let mut t = 0;
    while t < n {
        // Each thread fills its own slot, `ty * 16 + tx`, of both tiles.
        ta.write(if row < n && t + tx < n {
            a[row * n + t + tx]
        } else {
            0.0
        });
        tb.write(if col < n && t + ty < n {
            b[(t + ty) * n + col]
        } else {
            0.0
        });
        sync_threads();
        // `mul_add` is one fused instruction; Rust never fuses `a * b + c` by itself.
        for k in 0..16 {
            acc = ta[ty * 16 + k].mul_add(tb[k * 16 + tx], acc);
        }
        sync_threads();
        t += 16;
    }
    if let Some(v) = c.get_mut() {
        *v = acc;
    }
}

pub fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    println!("device: {}", offload::default_device()?);
    // Small integers, so every product and sum is exact in f32.
    let a: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    let mut c = vec![0.0f32; n * n];
    try_offload! {
        kernel = matmul,
        args = (Region::new_2d(&mut c, n), &a, &b, n),
        thread_dim = [16, 16, 1]
    }?;
    let mut wrong = 0;
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            wrong += (c[i * n + j] != want) as usize;
        }
    }
    if wrong == 0 {
        println!("ok: {n}x{n} product matches the host (c[0][0] = {})", c[0]);
        Ok(())
    } else {
        eprintln!(
            "FAILED: {wrong} of {} elements differ from the host product",
            n * n
        );
        std::process::exit(1);
    }
}
