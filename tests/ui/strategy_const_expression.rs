use offload::prelude::*;

const COLS: usize = 4;

#[offload_kernel]
fn doubled(mut rows: Region<f32, Chunked<{ COLS * 2 }>>) {
    if let Some(row) = rows.get_mut() {
        row[0] = 1.0;
    }
}

fn main() {}
