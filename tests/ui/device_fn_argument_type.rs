use offload::prelude::*;

#[offload_device]
fn shifted(offset: u32) -> usize {
    thread_idx(0) + offset as usize
}

#[offload_device]
fn lerp<T: Float>(a: T, b: T, t: T) -> T {
    a + (b - a) * t
}

// The call's literal takes the type the result is given (`usize`), which is not the
// parameter's (`u32`): a compile error at the call, not a failure at launch.
#[offload_kernel]
fn uses_shifted(mut out: Region<f32, Linear1D>) {
    let t: usize = shifted(0);
    if let Some(v) = out.get_mut() {
        *v = t as f32;
    }
}

// A generic device function called with the types it is generic over compiles.
#[offload_kernel]
fn uses_lerp(mut out: Region<f32, Linear1D>) {
    let x: f32 = lerp(0.0, 1.0, 0.5);
    if let Some(v) = out.get_mut() {
        *v = x;
    }
}

// With the argument's type written, the call matches the signature and compiles.
#[offload_kernel]
fn uses_shifted_typed(mut out: Region<f32, Linear1D>) {
    let t: usize = shifted(0u32);
    if let Some(v) = out.get_mut() {
        *v = t as f32;
    }
}

fn main() {}
