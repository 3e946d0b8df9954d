use offload::prelude::*;

// Each refusal names the kind of expression and, where one exists, what to write.

#[offload_kernel]
fn const_block(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = const { 2.0 };
    }
}

// `sum` over an iterator adaptor kernels lack: said as such, with the loop to write.
#[offload_kernel]
fn filtered_sum(mut y: Region<f32, Linear1D>, x: &[f32]) {
    if let Some(v) = y.get_mut() {
        *v = x.iter().filter(|t| **t > 0.0).sum::<f32>();
    }
}

// Swapping two elements of a read-only slice: it is not the kernel's to write.
#[offload_kernel]
fn swap_read_only(x: &[f32], mut y: Region<f32, Linear1D>) {
    x.swap(0, 1);
    if let Some(v) = y.get_mut() {
        *v = x[0];
    }
}

fn main() {}
