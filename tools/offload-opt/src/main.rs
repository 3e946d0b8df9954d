//! `offload-opt`: prints any stage of the offload lowering for the kernels in a `.rs` or
//! `.mir` file, or runs a pass pipeline (offload passes by name among upstream ones) on
//! a `.mlir` file, as `mlir-opt` does. A thin CLI over the same library functions the
//! runtime calls.

use anyhow::{Context as _, Result, bail};
use clap::{Parser, ValueEnum};
use offload_lowering::{AmdTarget, GpuTarget, Session, Stage};
use offload_mir::{Body, BodyKind, print_module, validate};
use offload_translate as translate;
use std::{path::PathBuf, process::ExitCode};

mod doctor;

#[derive(Parser)]
#[command(
    version,
    about = "Shows every stage of the offload lowering pipeline",
    after_help = "`offload-opt doctor` checks what this machine gives offload: the toolchain, the CPU backend, the CUDA driver, each GPU and libdevice."
)]
struct Cli {
    /// A Rust file with `#[offload_kernel]` functions, a `.mir` file, or a `.mlir` file.
    file: PathBuf,
    /// The stage to print, for `.rs` and `.mir` files [default: all]. A `.mlir` file is
    /// printed as it is or after `--pass-pipeline`.
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// Runs this pipeline (`builtin.module(offload-partition, canonicalize)`) and prints
    /// the result: on a `.mlir` file as it is, on kernels from their `offload` stage.
    /// Offload passes: offload-partition, convert-offload-to-gpu, convert-offload-to-cpu,
    /// offload-math-to-llvm-intrinsics; any upstream pass may be named too.
    #[arg(long)]
    pass_pipeline: Option<String>,
    /// Writes the output to this file instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// The chip: NVIDIA's (`sm_90`) for the `llvm` and `ptx` stages, AMD's (`gfx942`,
    /// `gfx1100`) for `rocdl`, `amdgcn` and `hsaco`; `gpu` is lowered for an AMD chip's
    /// wavefront when one is named.
    #[arg(long)]
    chip: Option<String>,
    /// CUDA's libdevice.10.bc, linked into the `ptx` stage for kernels that call math
    /// functions (default: `OFFLOAD_LIBDEVICE`, else the CUDA toolkit's).
    #[arg(long)]
    libdevice: Option<String>,
    /// Print only this kernel (with `--emit mir`, a device function may be named too).
    #[arg(long)]
    kernel: Option<String>,
    /// Compile the NVIDIA stages and the `cpu` stage for workgroups of this many threads
    /// (`256`, `16,16`, `8,8,4`), as a launch with that `thread_dim` does: the PTX
    /// declares it (`.maxntid`), and the CPU's thread loops count to it.
    #[arg(long, value_parser = parse_block_size)]
    block_size: Option<[u32; 3]>,
    /// Compile the NVIDIA stages for this many resident workgroups per multiprocessor,
    /// as a launch with `resident_workgroups = N` does (PTX `.minnctapersm`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
    resident_workgroups: Option<u32>,
    /// Compile the NVIDIA stages for a launch that runs its whole grid at once, as the
    /// runtime does for every launch that is neither a share of a split launch nor a grid
    /// folded past the device's limits: workgroup indices are the blocks' own.
    #[arg(long)]
    whole_grid: bool,
}

impl Cli {
    /// The stage asked for, `all` where none is.
    fn emit(&self) -> Emit {
        self.emit.unwrap_or(Emit::All)
    }
}

/// `X[,Y[,Z]]`, each at least 1.
fn parse_block_size(text: &str) -> Result<[u32; 3], String> {
    let mut size = [1u32; 3];
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 3 {
        return Err("at most three extents: X,Y,Z".into());
    }
    for (d, part) in parts.iter().enumerate() {
        size[d] = match part.trim().parse() {
            Ok(0) | Err(_) => return Err(format!("`{part}` is not a positive number")),
            Ok(n) => n,
        };
    }
    Ok(size)
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// Each function as translated (or as read from a `.mir` file).
    Mir,
    /// Each kernel linked: device functions inlined, simplified and verified safe.
    Linked,
    Offload,
    Gpu,
    Llvm,
    Ptx,
    Cpu,
    /// The LLVM and ROCDL dialects, for an AMD GPU (`--chip`, default `gfx942`).
    Rocdl,
    /// AMDGPU assembly of the code object.
    Amdgcn,
    /// One AMD code object (an ELF shared object) holding every kernel of the file;
    /// binary, so written with `-o`.
    Hsaco,
    /// Every GPU stage in order, each under a header.
    All,
}

/// Parsing and translating Rust recurse once per nesting level; the limits below keep
/// that within this stack, so deep input is an error rather than an overflow.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("doctor") {
        return doctor::run();
    }
    let cli = Cli::parse();
    let worker = std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(move || run(cli));
    let outcome = match worker.map(|w| w.join()) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Err(anyhow::anyhow!("internal error: offload-opt panicked")),
        Err(e) => Err(anyhow::anyhow!("cannot start the worker thread: {e}")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    if cli.emit.is_some() && is_mlir(&cli) {
        bail!(
            "`--emit` takes a `.rs` or `.mir` file; a `.mlir` file is printed as it is or \
             after a pipeline, such as `--pass-pipeline='builtin.module(offload-partition, \
             convert-offload-to-gpu)'`"
        );
    }
    let bytes = if cli.emit() == Emit::Hsaco {
        if cli.output.is_none() {
            bail!("`--emit hsaco` writes a binary code object: name its file with `-o`");
        }
        code_object(&cli)?
    } else {
        output(&cli)?.into_bytes()
    };
    match &cli.output {
        Some(path) => {
            std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
        }
        None => out(&bytes),
    }
}

/// The file's kernels in one AMD code object.
fn code_object(cli: &Cli) -> Result<Vec<u8>> {
    if cli.pass_pipeline.is_some() {
        bail!("`--emit hsaco` takes a `.rs` or `.mir` file, without `--pass-pipeline`");
    }
    let kernels = linked_kernels(cli)?;
    let target = AmdTarget::new(cli.chip.as_deref().unwrap_or("gfx942"))?;
    Ok(offload_lowering::compile_amd(&kernels, &target, false)?)
}

/// The bodies of the `.rs` or `.mir` file `cli` names, validated; `--kernel`'s must be
/// among them. All are kept: a kernel is linked with the file's device functions.
fn bodies(cli: &Cli) -> Result<Vec<Body>> {
    let display = cli.file.display().to_string();
    let source = std::fs::read_to_string(&cli.file)
        .with_context(|| format!("cannot read {}", cli.file.display()))?;
    let bodies = if cli.file.extension().is_some_and(|e| e == "mir") {
        offload_mir::parse_module(&source).map_err(|e| anyhow::anyhow!("{display}:{e}"))?
    } else {
        kernels_in_rust(&source, &display)?
    };
    if let Some(name) = &cli.kernel
        && !bodies.iter().any(|b| &b.name == name)
    {
        bail!("{display}: no kernel named `{name}`");
    }
    for body in &bodies {
        validate(body)?;
    }
    Ok(bodies)
}

/// Whether `body` is printed: every one, or only `--kernel`'s.
fn selected(cli: &Cli, body: &Body) -> bool {
    cli.kernel.as_ref().is_none_or(|name| *name == body.name)
}

/// The file's kernels (only `--kernel`'s, if given), linked with its device functions and
/// verified.
fn linked_kernels(cli: &Cli) -> Result<Vec<offload_mir::Linked>> {
    let bodies = bodies(cli)?;
    let device: Vec<&Body> = bodies
        .iter()
        .filter(|b| b.kind == BodyKind::Device)
        .collect();
    let kernels: Vec<&Body> = bodies
        .iter()
        .filter(|b| b.kind == BodyKind::Kernel && selected(cli, b))
        .collect();
    if let Some(name) = &cli.kernel
        && kernels.is_empty()
    {
        bail!(
            "`{name}` is a device function: its code is part of each kernel that calls it \
             (`--emit mir` prints it alone)"
        );
    }
    kernels
        .into_iter()
        .map(|k| offload_mir::link(k, &device).map_err(|e| anyhow::anyhow!("{e}")))
        .collect()
}

/// What `cli` asks to print.
fn output(cli: &Cli) -> Result<String> {
    let display = cli.file.display().to_string();
    if is_mlir(cli) {
        return mlir_file(&display, cli.pass_pipeline.as_deref());
    }
    if cli.emit() == Emit::Mir && cli.pass_pipeline.is_none() {
        let bodies: Vec<Body> = bodies(cli)?
            .into_iter()
            .filter(|b| selected(cli, b))
            .collect();
        return Ok(print_module(&bodies));
    }
    let kernels = linked_kernels(cli)?;
    if let Some(pipeline) = &cli.pass_pipeline {
        let session = Session::new()?;
        let mut text = String::new();
        for kernel in &kernels {
            let mut module = session.offload_module(kernel)?;
            session.run_pipeline(&mut module, pipeline)?;
            text.push_str(&format!("{}\n", module.as_operation()));
        }
        return Ok(text);
    }
    if cli.emit() == Emit::Linked {
        let linked: Vec<Body> = kernels.iter().map(|b| b.body().clone()).collect();
        return Ok(print_module(&linked));
    }
    let chip = cli.chip.as_deref();
    let amd = matches!(cli.emit(), Emit::Rocdl | Emit::Amdgcn)
        || chip.is_some_and(|c| c.starts_with("gfx"));
    let last = match cli.emit() {
        Emit::Offload => Stage::Offload,
        Emit::Gpu => Stage::Gpu,
        Emit::Llvm | Emit::Ptx if amd => bail!(
            "`--chip {}` is an AMD GPU: its stages are `gpu`, `rocdl`, `amdgcn` and `hsaco`",
            chip.unwrap_or_default()
        ),
        Emit::Llvm => Stage::Llvm,
        Emit::All if amd => Stage::Amdgcn,
        Emit::Ptx | Emit::All => Stage::Ptx,
        Emit::Cpu => Stage::Cpu,
        Emit::Rocdl => Stage::Rocdl,
        Emit::Amdgcn => Stage::Amdgcn,
        Emit::Mir | Emit::Linked | Emit::Hsaco => unreachable!("handled above"),
    };
    let amd_target = AmdTarget::new(chip.filter(|_| amd).unwrap_or("gfx942"))?;
    let target = GpuTarget {
        chip: chip.filter(|_| !amd).unwrap_or("sm_90").to_string(),
        libdevice: cli.libdevice.clone().or(GpuTarget::default().libdevice),
        block_size: cli.block_size,
        resident_workgroups: cli.resident_workgroups,
        whole_grid: cli.whole_grid,
        ..GpuTarget::default()
    };
    let mut text = String::new();
    for body in &kernels {
        let stages = if amd {
            offload_lowering::emit_amd(body, last, &amd_target)?
        } else {
            offload_lowering::emit(body, last, &target)?
        };
        if cli.emit() == Emit::All {
            text.push_str(&format!(
                "// ===== {} :: mir =====\n{}\n",
                body.name,
                body.body()
            ));
            for (stage, stage_text) in stages {
                text.push_str(&format!(
                    "// ===== {} :: {} =====\n{}\n",
                    body.name,
                    stage.name(),
                    stage_text.trim_end()
                ));
            }
        } else if let Some((_, stage_text)) = stages.last() {
            text.push_str(&format!("{}\n", stage_text.trim_end()));
        }
    }
    Ok(text)
}

/// Whether `cli` names a `.mlir` file.
fn is_mlir(cli: &Cli) -> bool {
    cli.file.extension().is_some_and(|e| e == "mlir")
}

/// A `.mlir` file, parsed and verified, after `pipeline` if one is given.
fn mlir_file(path: &str, pipeline: Option<&str>) -> Result<String> {
    let session = Session::new()?;
    let mut module = session.parse_file(path)?;
    if let Some(pipeline) = pipeline {
        session.run_pipeline(&mut module, pipeline)?;
    }
    Ok(format!("{}\n", module.as_operation()))
}

/// Writes to stdout; a closed pipe (`offload-opt ... | head`) ends the output quietly.
fn out(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => Ok(other?),
    }
}

/// Translates every `#[offload_kernel]` and `#[offload_device]` function of a Rust source
/// file, every instance of generic ones (`offload_translate::gather`): the kernels, then
/// the device functions.
fn kernels_in_rust(source: &str, display: &str) -> Result<Vec<Body>> {
    check_nesting(source, display)?;
    let file = syn::parse_file(source).map_err(|e| {
        let at = e.span().start();
        anyhow::anyhow!("{display}:{}:{}: {e}", at.line, at.column + 1)
    })?;
    let sources = [translate::gather::Source {
        name: display,
        syntax: &file,
    }];
    let gathered = translate::gather::gather(&sources)
        .map_err(|e| anyhow::anyhow!("{}:{}:{}: {}", e.file, e.line, e.column, e.message))?;
    if let Some(s) = gathered.skipped.first() {
        bail!("{}: kernel `{}`: {}", s.file, s.kernel, s.why);
    }
    if gathered.kernels.is_empty() {
        bail!("{display}: no `#[offload_kernel]` functions found");
    }
    let kernels = gathered.kernels.into_iter().map(|k| k.body);
    Ok(kernels.chain(gathered.devices).collect())
}

/// The deepest nesting of brackets, and the most `else` branches in one block, that a
/// Rust file may have here: far beyond real kernels, well within [`STACK_BYTES`].
const MAX_NESTING: usize = 256;
const MAX_ELSE_CHAIN: usize = 1024;

/// Refuses input nested deeper than the parser and translator can recurse, found with
/// the lexer (which keeps its own stack) before any recursive parsing.
fn check_nesting(source: &str, display: &str) -> Result<()> {
    use proc_macro2::{TokenStream, TokenTree};
    let tokens: TokenStream = source.parse().map_err(|e: proc_macro2::LexError| {
        let at = e.span().start();
        anyhow::anyhow!("{display}:{}:{}: {e}", at.line, at.column + 1)
    })?;
    let mut stack = vec![(tokens, 0usize)];
    while let Some((stream, depth)) = stack.pop() {
        let mut elses = 0;
        for tree in stream {
            match tree {
                TokenTree::Group(g) => {
                    if depth + 1 > MAX_NESTING {
                        let at = g.span().start();
                        bail!(
                            "{display}:{}:{}: brackets nested more than {MAX_NESTING} deep are not supported",
                            at.line,
                            at.column + 1
                        );
                    }
                    stack.push((g.stream(), depth + 1));
                }
                TokenTree::Ident(i) if i == "else" => {
                    elses += 1;
                    if elses > MAX_ELSE_CHAIN {
                        let at = i.span().start();
                        bail!(
                            "{display}:{}:{}: more than {MAX_ELSE_CHAIN} `else` branches in one block are not supported",
                            at.line,
                            at.column + 1
                        );
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
