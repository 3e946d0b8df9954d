use offload::prelude::*;

#[offload_kernel]
fn fill(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = 1.0;
    }
}

fn main() -> Result<(), Error> {
    let mut buffer = DeviceBuffer::<f32>::zeros(&offload::Device::Cpu, 16)?;
    drop(buffer);
    try_offload! { kernel = fill, args = (&mut buffer) }?;
    Ok(())
}
