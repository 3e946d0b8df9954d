use offload::prelude::*;

// A workgroup matrix product that only some threads reach.
#[offload_kernel]
fn divergent(mut out: Region<f32, Linear1D>, x: &[bf16]) {
    let mut acc = Shared2D::<f32, 16, 16>::new();
    let mut a = Shared2D::<bf16, 16, 16>::new();
    let mut b = Shared2D::<bf16, 16, 16>::new();
    a.write_nth(0, x[0]);
    b.write_nth(0, x[1]);
    if thread_rank() < 32 {
        tile_mma(&mut acc, &a, &b);
    }
    if let Some(o) = out.get_mut() {
        *o = acc[(0, 0)];
    }
}

// Tensor cores take 16 × 16 × 16 steps: an 8-row tile has no such shape.
#[offload_kernel]
fn eight_rows(mut out: Region<f32, Linear1D>) {
    let mut acc = Shared2D::<f32, 8, 16>::new();
    let a = Shared2D::<f16, 8, 16>::new();
    let b = Shared2D::<f16, 16, 16>::new();
    tile_mma(&mut acc, &a, &b);
    if let Some(o) = out.get_mut() {
        *o = acc[(0, 0)];
    }
}

// After the product, thread 0 writes slot (0, 0) of the accumulator while the others
// read it, with no barrier between: a race.
#[offload_kernel]
fn read_while_written(mut out: Region<f32, Linear1D>) {
    let mut acc = Shared2D::<f32, 16, 16>::new();
    let a = Shared2D::<f16, 16, 16>::new();
    let b = Shared2D::<f16, 16, 16>::new();
    tile_mma(&mut acc, &a, &b);
    acc.write_nth(0, 1.0);
    if let Some(o) = out.get_mut() {
        *o = acc[(0, 0)];
    }
}

// The accumulator of `f16` tiles is `f32`.
#[offload_kernel]
fn half_accumulator(mut out: Region<f16, Linear1D>) {
    let mut acc = Shared2D::<f16, 16, 16>::new();
    let a = Shared2D::<f16, 16, 16>::new();
    let b = Shared2D::<f16, 16, 16>::new();
    tile_mma(&mut acc, &a, &b);
    if let Some(o) = out.get_mut() {
        *o = acc[(0, 0)];
    }
}

// Each thread names its own block: the fill is one block for the whole workgroup.
#[offload_kernel]
fn own_rows(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let mut tile = Shared2D::<f32, 16, 16>::new();
    tile.fill_from(&x, 16, thread_rank(), 0);
    if let Some(o) = out.get_mut() {
        *o = tile[(0, 0)];
    }
}

// A fill from a region, which threads may be writing.
#[offload_kernel]
fn from_a_region(mut out: Region<f32, Linear1D>) {
    let mut tile = Shared2D::<f32, 16, 16>::new();
    tile.fill_from(&out, 16, 0, 0);
    if let Some(o) = out.get_mut() {
        *o = tile[(0, 0)];
    }
}

// `ldmatrix` reads 16-byte pieces of rows: a row padded by 3 `f16` slots breaks that.
#[offload_kernel]
fn odd_padding(mut out: Region<f32, Linear1D>) {
    let mut acc = Shared2D::<f32, 16, 16>::new();
    let a = Shared2D::<f16, 16, 16, 3>::new();
    let b = Shared2D::<f16, 16, 16>::new();
    tile_mma(&mut acc, &a, &b);
    if let Some(o) = out.get_mut() {
        *o = acc[(0, 0)];
    }
}

fn main() {}
