//! `offload-build`: compiles a crate's kernels ahead of time, from its build script, so
//! the program launches them with no compiler at run time.
//!
//! In the crate's `build.rs`:
//!
//! ```no_run
//! offload_build::Builder::new()
//!     .targets(["sm_80", "sm_90", "cpu"]) // the default
//!     .compile()
//!     .expect("offload kernels");
//! ```
//!
//! The builder reads every `.rs` file under the crate's `src/`, finds the
//! `#[offload_kernel]` and `#[offload_device]` functions with the translator the macros
//! use, links each kernel instance with the device functions it calls, and compiles it
//! for every target: PTX per chip (linked with libdevice here, so the machine that runs
//! the program needs only the driver), and an object file for the CPU backend. It writes
//! them into a static library in `OUT_DIR/offload` that Cargo links into the program,
//! whole, and tells Cargo to rerun it when the sources change. A constructor in the
//! library registers the code with the runtime before `main`; the crate itself declares
//! nothing (it may forbid `unsafe` code), and a launch finds the code by the hash of the
//! kernel it linked and verified.
//!
//! A kernel that does not compile fails the build with its file and line.

mod output;
mod sources;

use offload_lowering::{AmdTarget, CpuTarget, GpuTarget};
use std::path::PathBuf;

/// Targets built when none are given: PTX for Ampere and Hopper (newer NVIDIA chips run
/// the newest of these), and the CPU backend.
pub const DEFAULT_TARGETS: [&str; 3] = ["sm_80", "sm_90", "cpu"];

/// Why building kernels ahead of time failed. Its `Debug` is its message, so that a
/// build script's `.expect(..)` prints the file and line plainly.
#[derive(thiserror::Error)]
pub enum Error {
    /// Not run by Cargo as a build script (`OUT_DIR` or `CARGO_MANIFEST_DIR` unset).
    #[error("`{0}` is not set: offload-build runs from a build script")]
    NotInBuildScript(&'static str),
    /// A target that is neither `cpu` nor an NVIDIA chip `sm_XY` nor an AMD one `gfxN`.
    #[error(
        "unknown target `{0}`: expected `cpu`, an NVIDIA chip such as `sm_90` or an AMD one such as `gfx942`"
    )]
    UnknownTarget(String),
    /// Building for another machine than this one.
    #[error(
        "kernels are built ahead of time for this machine ({host}), but the crate is built for {target}"
    )]
    CrossCompiling { host: String, target: String },
    /// Reading sources or writing results.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A kernel or device function that does not translate, link or compile.
    #[error("{file}:{line}:{column}: kernel `{kernel}`: {message}")]
    Kernel {
        file: String,
        line: usize,
        column: usize,
        kernel: String,
        message: String,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// What a build compiled.
#[derive(Debug)]
pub struct Report {
    /// Kernel instances compiled (`saxpy`, `scale::<f32>`).
    pub kernels: Vec<String>,
    /// The static library with the code, in `OUT_DIR/offload`.
    pub library: PathBuf,
}

/// Compiles a crate's kernels ahead of time; see the crate docs.
#[derive(Clone, Debug)]
pub struct Builder {
    targets: Vec<String>,
    sources: Option<PathBuf>,
    out_dir: Option<PathBuf>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// A builder for [`DEFAULT_TARGETS`] and the crate's `src/`.
    pub fn new() -> Builder {
        Builder {
            targets: DEFAULT_TARGETS.map(String::from).to_vec(),
            sources: None,
            out_dir: None,
        }
    }

    /// The targets to build: `cpu`, NVIDIA chips (`sm_80`, `sm_90`, `sm_90a`, ...) and AMD
    /// ones (`gfx90a`, `gfx942`, `gfx1100`, ...: a code object each).
    /// `OFFLOAD_TARGETS=sm_90,cpu` in the build's environment overrides them.
    pub fn targets<I, S>(mut self, targets: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.targets = targets.into_iter().map(Into::into).collect();
        self
    }

    /// Where the kernels' sources are, instead of the crate's `src/`.
    pub fn sources(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.sources = Some(dir.into());
        self
    }

    /// Where to write the code, instead of `OUT_DIR/offload` (where `#[offload_kernel]`
    /// looks for it).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.out_dir = Some(dir.into());
        self
    }

    /// Finds and compiles every kernel; see the crate docs.
    pub fn compile(mut self) -> Result<Report, Error> {
        let env = |name: &'static str| std::env::var_os(name).ok_or(Error::NotInBuildScript(name));
        let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let out_dir = match self.out_dir {
            Some(dir) => dir,
            None => PathBuf::from(env("OUT_DIR")?).join("offload"),
        };
        let sources = self.sources.unwrap_or_else(|| manifest.join("src"));
        if let Ok(list) = std::env::var("OFFLOAD_TARGETS") {
            self.targets = list.split(',').map(|t| t.trim().to_string()).collect();
        }
        let targets = self
            .targets
            .iter()
            .map(|t| Target::parse(t))
            .collect::<Result<Vec<_>, _>>()?;

        println!("cargo:rerun-if-changed={}", sources.display());
        for var in [
            "OFFLOAD_TARGETS",
            "OFFLOAD_LIBDEVICE",
            "CUDA_HOME",
            "CUDA_PATH",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let host = host_target()?;
        let crate_sources = sources::read(&sources, &manifest)?;
        let kernels = sources::link_kernels(&crate_sources)?;
        let mut out = output::Output::new(out_dir.clone())?;
        for kernel in &kernels {
            for target in &targets {
                target.compile(kernel, &host, &mut out)?;
            }
        }
        let name = format!(
            "offload_kernels_{}",
            std::env::var("CARGO_PKG_NAME")
                .unwrap_or_default()
                .replace('-', "_")
        );
        let library = out.write_library(&name, &host)?;
        // Whole: nothing in the program refers to the registry, whose constructor must run.
        println!("cargo:rustc-link-search=native={}", out_dir.display());
        println!("cargo:rustc-link-lib=static:-bundle,+whole-archive={name}");
        Ok(Report {
            kernels: kernels.iter().map(|k| k.display.clone()).collect(),
            library,
        })
    }
}

/// The machine code is built for: this one, at its architecture's baseline CPU. Refused
/// when Cargo builds for another (cross-compiling).
fn host_target() -> Result<CpuTarget, Error> {
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host {
        return Err(Error::CrossCompiling { host, target });
    }
    Ok(CpuTarget::baseline())
}

/// One target of a build.
enum Target {
    Cpu,
    Gpu(GpuTarget),
    Amd(AmdTarget),
}

impl Target {
    fn parse(name: &str) -> Result<Target, Error> {
        if name == "cpu" {
            return Ok(Target::Cpu);
        }
        if name.starts_with("gfx") {
            return AmdTarget::new(name)
                .map(Target::Amd)
                .map_err(|_| Error::UnknownTarget(name.to_string()));
        }
        let digits = name
            .strip_prefix("sm_")
            .map(|v| v.strip_suffix('a').unwrap_or(v));
        match digits {
            Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
                Ok(Target::Gpu(GpuTarget {
                    chip: name.to_string(),
                    ..Default::default()
                }))
            }
            _ => Err(Error::UnknownTarget(name.to_string())),
        }
    }

    fn compile(
        &self,
        kernel: &sources::Kernel,
        host: &CpuTarget,
        out: &mut output::Output,
    ) -> Result<(), Error> {
        match self {
            Target::Cpu => {
                let object = offload_lowering::compile_cpu_object(&kernel.linked, host)
                    .map_err(|e| kernel.error(e))?;
                out.add_object(kernel, object);
            }
            Target::Gpu(gpu) => {
                let ptx = offload_lowering::compile_ptx(&kernel.linked, gpu)
                    .map_err(|e| kernel.error(e))?;
                out.add_code(kernel, &gpu.chip, ptx.ptx.into_bytes());
            }
            Target::Amd(amd) => {
                let code =
                    offload_lowering::compile_amd(std::slice::from_ref(&kernel.linked), amd, false)
                        .map_err(|e| kernel.error(e))?;
                out.add_code(kernel, &amd.chip, code);
            }
        }
        Ok(())
    }
}
