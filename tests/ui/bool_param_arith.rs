use offload::prelude::*;

#[offload_kernel]
fn k(a: bool) {
    let b = -a;
}

fn main() {}
