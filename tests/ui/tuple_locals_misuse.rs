// Tuple locals are used by their fields, assigned or taken apart, range locals iterated
// and asked their ends, length and members; other uses are refused at the use.
use offload::prelude::*;

#[offload_device]
fn twice(v: f32) -> f32 {
    v * 2.0
}

// Passed whole to a device function.
#[offload_kernel]
fn whole_tuple(mut y: Region<f32, Linear1D>) {
    let pair = (1.0f32, 2.0f32);
    if let Some(v) = y.get_mut() {
        *v = twice(pair.0) + twice(pair);
    }
}

// A tuple inside a tuple.
#[offload_kernel]
fn nested_tuple(mut y: Region<f32, Linear1D>) {
    let pair = ((1.0f32, 2.0f32), 3.0f32);
    if let Some(v) = y.get_mut() {
        *v = pair.1;
    }
}

// A field the tuple lacks.
#[offload_kernel]
fn missing_field(mut y: Region<f32, Linear1D>) {
    let pair = (1.0f32, 2.0f32);
    if let Some(v) = y.get_mut() {
        *v = pair.2;
    }
}

// A range passed whole to a device function.
#[offload_device]
fn first(r: usize) -> usize {
    r
}

#[offload_kernel]
fn whole_range(mut y: Region<usize, Linear1D>) {
    let r = 2..5;
    if let Some(v) = y.get_mut() {
        *v = r.len() + first(r);
    }
}

// A tuple-returning device function's results bound without their types, which no use
// gives (a use that does, `*v = a * b`, would be enough).
#[offload_device]
fn pair(x: f32) -> (f32, f32) {
    (x, -x)
}

#[offload_kernel]
fn untyped_pair(mut y: Region<f32, Linear1D>) {
    let (a, b) = pair(1.0);
    if let Some(v) = y.get_mut() {
        *v = (a < b) as u32 as f32;
    }
}

fn main() {}
