//! Finding a crate's kernels in its sources and linking each instance, as the macros and
//! the runtime would.

use crate::Error;
use offload_mir::{Body, Linked};
use offload_translate::gather::{Source, gather};
use std::path::Path;

/// A source file of the crate, parsed.
pub(crate) struct SourceFile {
    /// The path relative to the crate's manifest, as messages name it.
    name: String,
    syntax: syn::File,
}

/// Every `.rs` file under `dir`, in path order. A file `syn` cannot parse is skipped with
/// a warning: rustc reports it if it is part of the crate.
pub(crate) fn read(dir: &Path, manifest: &Path) -> Result<Vec<SourceFile>, Error> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| Error::Io {
            path: e.path().unwrap_or(dir).to_path_buf(),
            source: e.into(),
        })?;
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .strip_prefix(manifest)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        match syn::parse_file(&text) {
            Ok(syntax) => files.push(SourceFile { name, syntax }),
            Err(e) => {
                let at = e.span().start();
                println!(
                    "cargo:warning={name}:{}:{}: not read for kernels: {e}",
                    at.line,
                    at.column + 1
                );
            }
        }
    }
    Ok(files)
}

/// A kernel instance linked with the device functions it calls, ready to compile.
pub(crate) struct Kernel {
    /// `saxpy`, or `scale::<f32>` for an instance of a generic kernel.
    pub display: String,
    pub linked: Linked,
    file: String,
    line: usize,
    column: usize,
}

impl Kernel {
    /// A build error at the kernel.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::Kernel {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            kernel: self.display.clone(),
            message: message.to_string(),
        }
    }
}

/// Every kernel instance of `files`, linked with the device functions it reaches
/// (`offload_translate::gather`). A kernel whose calls or constants the crate's sources do
/// not resolve is left to the JIT, with a warning.
pub(crate) fn link_kernels(files: &[SourceFile]) -> Result<Vec<Kernel>, Error> {
    let sources: Vec<Source<'_>> = files
        .iter()
        .map(|f| Source {
            name: &f.name,
            syntax: &f.syntax,
        })
        .collect();
    let gathered = gather(&sources).map_err(|e| Error::Kernel {
        file: e.file,
        line: e.line,
        column: e.column,
        kernel: e.function,
        message: e.message,
    })?;
    for skipped in &gathered.skipped {
        println!(
            "cargo:warning={}: kernel `{}` is not built ahead of time: {}",
            skipped.file, skipped.kernel, skipped.why
        );
    }
    let mut kernels = Vec::new();
    for k in gathered.kernels {
        let devices: Vec<&Body> = k.devices.iter().collect();
        let linked = offload_mir::link(&k.body, &devices).map_err(|e| Error::Kernel {
            file: k.file.clone(),
            line: k.line,
            column: k.column,
            kernel: k.display.clone(),
            message: e.to_string(),
        })?;
        kernels.push(Kernel {
            display: k.display,
            linked,
            file: k.file,
            line: k.line,
            column: k.column,
        });
    }
    Ok(kernels)
}
