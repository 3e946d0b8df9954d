use offload::prelude::*;

#[offload_kernel]
fn const_offset(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    const UP: isize = 2;
    let v = img.get_clamped(UP, 0);
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

#[offload_kernel]
fn loop_offset(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let mut sum = 0.0f32;
    for d in -2..=2 {
        sum += img.get_clamped(d, 0);
    }
    if let Some(o) = out.get_mut() {
        *o = sum;
    }
}

#[offload_kernel]
fn within(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<2>>) {
    let mut sum = 0.0f32;
    for d in -2..3 {
        sum += img.get_clamped(d, 0);
    }
    if let Some(o) = out.get_mut() {
        *o = sum;
    }
}

fn main() {}
