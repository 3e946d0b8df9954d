use offload::prelude::*;

// Offsets written as `i32` where a stencil takes `isize`: an error at the call saying
// what does not fit and how to convert, beside rustc's own, never an internal error.
#[offload_kernel]
fn blur(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let mut acc = 0.0f32;
    for dr in -1i32..=1 {
        for dc in -1i32..=1 {
            acc += img.get_clamped(dr, dc);
        }
    }
    if let Some(v) = out.get_mut() {
        *v = acc / 9.0;
    }
}

// A `u32` index into a slice: the same.
#[offload_kernel]
fn gather(mut y: Region<f32, Linear1D>, x: &[f32], idx: &[u32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[idx[i]];
    }
}

// Operands of two integer types.
#[offload_kernel]
fn mixed(mut y: Region<f32, Linear1D>, n: u32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        if i < n {
            *v = 1.0;
        }
    }
}

// An index computed in `u32`.
#[offload_kernel]
fn shifted(mut y: Region<f32, Linear1D>, x: &[f32], by: u32) {
    let i = y.index() as u32;
    if let Some(v) = y.get_mut() {
        *v = x[i + by];
    }
}

// Converted, both compile.
#[offload_kernel]
fn gather_converted(mut y: Region<f32, Linear1D>, x: &[f32], idx: &[u32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[idx[i] as usize];
    }
}

fn main() {}
