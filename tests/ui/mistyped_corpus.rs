use offload::prelude::*;

// Type mistakes of every kind a new user makes: each is an error that says what does
// not fit (rustc's, or the translator's at the expression), never an internal error.

#[offload_device]
fn helper(a: f64) -> f64 {
    a * 2.0
}

#[offload_kernel]
fn mixed_integer_operands(mut y: Region<u64, Linear1D>, n: u32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = i as u64 + n;
    }
}

#[offload_kernel]
fn signed_index(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let k: i32 = 3;
    if let Some(v) = y.get_mut() {
        *v = x[k];
    }
}

#[offload_kernel]
fn float_literal_for_an_integer(mut y: Region<u32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        let a: u32 = 1.5;
        *v = a;
    }
}

#[offload_kernel]
fn device_argument_of_another_type(mut y: Region<f64, Linear1D>, x: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = helper(x[i]);
    }
}

#[offload_kernel]
fn half_and_single_mixed(mut y: Region<f16, Linear1D>, x: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = *v + x[i];
    }
}

fn main() {}
