use offload::prelude::*;

// An `f32` view and an `f64` view of dynamic shared memory overlap slot by slot.
#[offload_kernel]
fn mixed(mut out: Region<f32, Linear1D>) {
    let mut narrow = DynShared::<f32>::new();
    let mut wide = DynShared::<f64>::new();
    narrow.write(1.0);
    wide.write(2.0);
    if let Some(v) = out.get_mut() {
        *v = 0.0;
    }
}

fn main() {}
