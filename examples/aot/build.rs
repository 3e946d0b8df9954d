//! Compiles the kernels in `src/` for the CPU and for NVIDIA chips from Ampere on.
fn main() {
    offload_build::Builder::new()
        .targets(["sm_80", "sm_90", "cpu"])
        .compile()
        .expect("offload kernels");
}
