use offload::prelude::*;

#[offload_kernel]
fn spin(mut out: Region<i32, Linear1D>, x: &[i32]) {
    let mut v = x[out.index()];
    while v > 0 {
        v = subgroup_sum(v) - 1;
    }
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

fn main() {}
