use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let b = match a {
        _ => 1,
    };
}

fn main() {}
