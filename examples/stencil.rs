//! A 2-D 5-point stencil (Jacobi relaxation) iterated 100 times on two device-resident
//! buffers, with no host copies between steps, checked against the same iteration on the
//! host. `cargo run --release --example stencil`.

use offload::prelude::*;

#[offload_kernel]
fn relax(mut next: Region<f32, Linear2D>, grid: Region<f32, Stencil2D<1>>) {
    let centre = grid.get_clamped(0, 0);
    let around = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    if let Some(v) = next.get_mut() {
        *v = 0.5 * centre + 0.125 * around;
    }
}

fn host_relax(next: &mut [f32], grid: &[f32], w: usize, h: usize) {
    let at = |r: isize, c: isize| {
        grid[r.clamp(0, h as isize - 1) as usize * w + c.clamp(0, w as isize - 1) as usize]
    };
    for r in 0..h as isize {
        for c in 0..w as isize {
            let around = at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1);
            next[r as usize * w + c as usize] = 0.5 * at(r, c) + 0.125 * around;
        }
    }
}

pub fn main() -> Result<(), Error> {
    let (w, h, steps) = (256usize, 192usize, 100);
    println!("device: {}", offload::devices()[0]);
    let device = offload::devices()[0].clone();
    let start: Vec<f32> = (0..w * h)
        .map(|i| {
            if (i / w) % 32 < 4 && (i % w) % 32 < 4 {
                100.0
            } else {
                0.0
            }
        })
        .collect();
    let mut grid = DeviceBuffer::from_slice(&device, &start)?;
    let mut next = DeviceBuffer::from_slice(&device, &vec![0f32; w * h])?;
    for _ in 0..steps {
        try_offload! { kernel = relax, args = (Region::on_device_2d(&mut next, w), Region::stencil_on_device(&grid, w)) }?;
        std::mem::swap(&mut grid, &mut next);
    }
    let grid = grid.to_vec()?;

    let (mut host, mut host_next) = (start, vec![0f32; w * h]);
    for _ in 0..steps {
        host_relax(&mut host_next, &host, w, h);
        std::mem::swap(&mut host, &mut host_next);
    }
    let worst = grid
        .iter()
        .zip(&host)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    if worst <= 1e-4 {
        println!("ok: {steps} steps on a {w}x{h} grid, largest difference from the host {worst:e}");
        Ok(())
    } else {
        eprintln!("FAILED: the grid differs from the host iteration by up to {worst}");
        std::process::exit(1);
    }
}
