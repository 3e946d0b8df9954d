//! Snapshots of every lowering stage. PTX keeps only what matters: the version banner
//! and the PTX ISA/target lines are redacted so an LLVM upgrade does not re-bless them
//! all.

use offload_lowering::{GpuTarget, Stage, emit};

fn stages(file: &str, last: Stage) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for body in crate::kernels(file) {
        out.push((format!("{}.mir", body.name), body.body().to_string()));
        for (stage, text) in
            emit(&body, last, &GpuTarget::default()).unwrap_or_else(|e| panic!("{e}"))
        {
            out.push((format!("{}.{}", body.name, stage.name()), text));
        }
    }
    out
}

fn redact_ptx(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| !l.starts_with("//"))
        .map(|l| {
            if l.starts_with(".version") {
                ".version [redacted]"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn saxpy_gpu_stages() {
    for (name, text) in stages("saxpy.rs", Stage::Ptx) {
        let text = if name.ends_with(".ptx") {
            redact_ptx(&text)
        } else {
            text
        };
        insta::assert_snapshot!(name, text);
    }
}

#[test]
fn saxpy_cpu_stage() {
    let all = stages("saxpy.rs", Stage::Cpu);
    let (name, text) = all.last().expect("the cpu stage");
    insta::assert_snapshot!(name.clone(), text);
}

/// MIR and the offload dialect for one kernel per language feature and strategy.
#[test]
fn feature_kernels_mir_and_offload() {
    for (name, text) in stages("features.rs", Stage::Offload) {
        insta::assert_snapshot!(format!("features.{name}"), text);
    }
}

/// The feature kernels also go all the way to PTX and to the CPU backend's code. Without
/// libdevice, the kernel that calls transcendental math stops at PTX with an error that
/// names the functions it needs (unless MLIR finds a CUDA toolkit of its own).
#[test]
fn feature_kernels_reach_ptx_and_cpu() {
    let no_libdevice = GpuTarget {
        libdevice: None,
        ..GpuTarget::default()
    };
    for body in crate::kernels("features.rs") {
        match emit(&body, Stage::Ptx, &no_libdevice) {
            Ok(ptx) => assert!(
                ptx.last()
                    .unwrap()
                    .1
                    .contains(&format!(".entry {}(", body.name)),
                "{}",
                body.name
            ),
            Err(offload_lowering::LowerError::Libdevice(missing))
                if body.name == "math_and_casts" =>
            {
                // The functions, and the message built from them.
                assert!(
                    missing.functions.iter().all(|f| f.starts_with("__nv_")),
                    "{missing:?}"
                );
                assert!(!missing.looked.is_empty(), "{missing:?}");
                let message = missing.to_string();
                assert!(message.starts_with("the kernel calls `__nv_"), "{message}");
            }
            Err(e) => panic!("{}: {e}", body.name),
        }
        emit(&body, Stage::Cpu, &GpuTarget::default())
            .unwrap_or_else(|e| panic!("{}: {e}", body.name));
    }
}

/// Shared memory, a barrier and subgroup operations through both targets' conversions:
/// workgroup globals, `gpu.barrier` and warp shuffles on the GPU; views into the
/// workgroup's block, the barrier call and one-lane subgroups on the CPU.
#[test]
fn workgroup_kernel_gpu_and_cpu_stages() {
    for last in [Stage::Gpu, Stage::Cpu] {
        let all = stages("features.rs", last);
        let (name, text) = all
            .iter()
            .rfind(|(n, _)| n.starts_with("workgroup_sum."))
            .expect("the workgroup kernel");
        insta::assert_snapshot!(format!("features.{name}"), text);
    }
}

/// `f16` and `bf16`: in PTX each operation is its own `.rn` instruction (never two fused
/// into one FMA), `bf16` division and conversions go through `f32`; on the CPU `bf16`
/// conversions are integer arithmetic and no library call is left.
#[test]
fn half_precision_kernel_ptx_and_cpu() {
    let body = crate::kernels("features.rs")
        .into_iter()
        .find(|b| b.name == "half_precision")
        .expect("the half-precision kernel");
    for last in [Stage::Ptx, Stage::Cpu] {
        let all = emit(&body, last, &GpuTarget::default()).unwrap_or_else(|e| panic!("{e}"));
        let (stage, text) = all.last().expect("the last stage");
        let text = if last == Stage::Ptx {
            assert!(!text.contains("fma"), "{text}");
            redact_ptx(text)
        } else {
            assert!(!text.contains("llvm.call"), "{text}");
            text.clone()
        };
        insta::assert_snapshot!(format!("features.half_precision.{}", stage.name()), text);
    }
}

/// A workgroup's product of `bf16` tiles: on NVIDIA GPUs each warp loads its blocks
/// with `ldmatrix` (`.trans` for the second tile) and multiplies on the tensor cores
/// with `mma.sync.m16n8k16`; on the CPU, loops of loads and stores.
#[test]
fn tile_product_kernel_ptx_and_cpu() {
    let body = crate::kernels("features.rs")
        .into_iter()
        .find(|b| b.name == "tile_product")
        .expect("the tile product kernel");
    for last in [Stage::Ptx, Stage::Cpu] {
        let all = emit(&body, last, &GpuTarget::default()).unwrap_or_else(|e| panic!("{e}"));
        let (stage, text) = all.last().expect("the last stage");
        let text = if last == Stage::Ptx {
            for op in [
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            ] {
                assert!(text.contains(op), "{op} in {text}");
            }
            redact_ptx(text)
        } else {
            text.clone()
        };
        insta::assert_snapshot!(format!("features.tile_product.{}", stage.name()), text);
    }
}

/// The AMD path: saxpy's ROCDL stage for CDNA 3 (`gfx942`), and the workgroup kernel's
/// `gpu` stage there, whose subgroup reductions take six butterfly steps over 64 lanes.
#[test]
fn amd_rocdl_and_wave64_stages() {
    use offload_lowering::{AmdTarget, emit_amd};
    let gfx942 = AmdTarget::new("gfx942").unwrap();
    for body in crate::kernels("saxpy.rs") {
        let all = emit_amd(&body, Stage::Rocdl, &gfx942).unwrap_or_else(|e| panic!("{e}"));
        let (stage, text) = all.last().unwrap();
        insta::assert_snapshot!(format!("{}.{}", body.name, stage.name()), text);
    }
    let body = crate::kernels("features.rs")
        .into_iter()
        .find(|b| b.name == "workgroup_sum")
        .expect("the workgroup kernel");
    let all = emit_amd(&body, Stage::Gpu, &gfx942).unwrap_or_else(|e| panic!("{e}"));
    let (_, text) = all.last().unwrap();
    insta::assert_snapshot!("features.workgroup_sum.gpu_gfx942", text);
}

/// The lowered kernel takes exactly the words the runtime packs: for each argument the
/// words `offload_mir::abi::words_of` gives (the runtime's packing is held to the same
/// description by its own test), then the panic buffer's memref, then on a GPU the hidden
/// parameters, and on the CPU backend the leading parameters first.
#[test]
fn lowered_signatures_take_the_words_the_runtime_packs() {
    use offload_mir::abi;
    let mir = "// offload-mir v1
kernel every_kind(mut _1: Region<f32, Linear1D>, mut _2: Region<f32, Linear2D>, mut _3: Region<f32, Linear3D>, mut _4: Region<f32, Chunked<4>>, mut _5: Region<f32, Stencil2D<1>>, mut _6: Region<f32, Indexed>, _7: &[f64], mut _8: Atomic<u32>, _9: f32, _10: bool) {
    file \"every_kind.rs\";
    let mut _0: ();

    bb0: {
        return; // 1:1
    }
}
";
    let body = offload_mir::parse(mir).expect("parses");
    let linked = offload_mir::link(&body, &[]).expect("links");
    let own: usize = body.args().map(|(_, d)| abi::words_of(&d.ty)).sum();
    let panic_buffer = abi::params_of(&offload_mir::Ty::Atomic(offload_mir::ScalarTy::I64))
        .iter()
        .map(|p| p.words())
        .sum::<usize>();
    // The parameters of the kernel's `llvm.func` in a stage's text.
    let parameters = |text: &str, name: &str| {
        let line = (text.lines())
            .find(|l| l.contains(&format!("llvm.func @{name}(")))
            .unwrap_or_else(|| panic!("no `llvm.func @{name}` in:\n{text}"));
        line[..line.find(") ").unwrap_or(line.len())]
            .matches("%arg")
            .count()
    };
    let text = |last: Stage| {
        let stages = emit(&linked, last, &GpuTarget::default()).unwrap_or_else(|e| panic!("{e}"));
        stages.last().expect("the last stage").1.clone()
    };
    let gpu = own + panic_buffer + abi::GPU_HIDDEN.len();
    assert_eq!(parameters(&text(Stage::Llvm), "every_kind"), gpu, "NVIDIA");
    assert_eq!(parameters(&text(Stage::Rocdl), "every_kind"), gpu, "AMD");
    let cpu = abi::CPU_LEADING_WORDS + own + panic_buffer;
    let host = text(Stage::Cpu);
    let name = (host.lines())
        .filter_map(|l| l.split("llvm.func @").nth(1))
        .filter_map(|rest| rest.split('(').next())
        .find(|name| name.contains("every_kind"))
        .expect("the kernel's host function");
    assert_eq!(parameters(&host, name), cpu, "CPU");
}
