//! A safe scatter: particles deposit their charge into the cells a host-side sort put
//! them in charge of, one particle per cell in each pass (`Indexed`: thread `t` owns
//! `cells[owner[t]]`). The launch checks the indices are in bounds and distinct, so no
//! atomics are needed and no two threads can write one cell. Checked against the host.
//! `cargo run --release --example scatter [CELLS]`.

use offload::prelude::*;

#[offload_kernel]
fn deposit(mut cells: Region<f32, Indexed>, charge: &[f32], weight: f32) {
    let t = cells.index();
    if let Some(cell) = cells.get_mut() {
        *cell += weight * charge[t];
    }
}

pub fn main() -> Result<(), Error> {
    let cells_n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    println!("device: {}", offload::default_device()?);
    // Particles in scrambled cells; some cells hold several particles, so the host splits
    // them into passes in which every cell appears at most once.
    let particles = cells_n * 3 / 2;
    let cell_of: Vec<usize> = (0..particles).map(|p| (p * 7919) % cells_n).collect();
    let charge: Vec<f32> = (0..particles)
        .map(|p| ((p % 13) as f32 - 6.0) * 0.5)
        .collect();
    let mut passes: Vec<(Vec<usize>, Vec<f32>)> = Vec::new();
    let mut seen_in = vec![0usize; cells_n];
    for (p, &c) in cell_of.iter().enumerate() {
        let pass = seen_in[c];
        seen_in[c] += 1;
        if passes.len() == pass {
            passes.push((Vec::new(), Vec::new()));
        }
        passes[pass].0.push(c);
        passes[pass].1.push(charge[p]);
    }
    let mut cells = vec![0.0f32; cells_n];
    for (owner, q) in &passes {
        try_offload! {
            kernel = deposit,
            args = (Region::indexed(&mut cells, owner), q, 2.0f32)
        }?;
    }
    let mut want = vec![0.0f32; cells_n];
    for (owner, q) in &passes {
        for (&c, &v) in owner.iter().zip(q) {
            want[c] += 2.0 * v;
        }
    }
    let wrong = cells.iter().zip(&want).filter(|(g, w)| g != w).count();
    if wrong == 0 {
        println!(
            "ok: {particles} particles scattered into {cells_n} cells in {} passes match the host",
            passes.len()
        );
        Ok(())
    } else {
        eprintln!("FAILED: {wrong} cells differ from the host's");
        std::process::exit(1);
    }
}
