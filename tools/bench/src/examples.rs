//! `offload-bench examples`: every example of `examples/` at its default size, in this
//! process, on the default device: what `tools/bench/sanitize.sh` runs under NVIDIA's
//! compute-sanitizer without carrying one JIT binary per example to the GPU machine.
//! An example whose results differ from its host reference ends the process with exit
//! code 1, as it does on its own.

macro_rules! examples {
    ($($name:ident = $path:literal),* $(,)?) => {
        $(
            #[path = $path]
            pub(crate) mod $name;
        )*

        /// Runs each example in turn.
        pub fn run() -> anyhow::Result<()> {
            $(
                println!("example {}:", stringify!($name));
                $name::main()?;
            )*
            println!("launches: {}", offload::__private::launches());
            Ok(())
        }
    };
}

examples!(
    fir = "../../../examples/fir.rs",
    gemm_bf16 = "../../../examples/gemm_bf16.rs",
    histogram = "../../../examples/histogram.rs",
    jacobi = "../../../examples/jacobi.rs",
    matmul = "../../../examples/matmul.rs",
    pipeline = "../../../examples/pipeline.rs",
    reduction = "../../../examples/reduction.rs",
    saxpy = "../../../examples/saxpy.rs",
    scatter = "../../../examples/scatter.rs",
    softmax = "../../../examples/softmax.rs",
    stencil = "../../../examples/stencil.rs",
);
