//! What a build writes to `OUT_DIR/offload`: one static library holding every kernel's
//! CPU object and the registry object, whose constructor hands the runtime the table of
//! every kernel's code (PTX per chip, CPU entry points) before `main`.

use crate::{Error, sources::Kernel};
use ar_archive_writer::{ArchiveKind, DEFAULT_OBJECT_READER, NewArchiveMember};
use offload_lowering::{CpuObject, CpuTarget, RegistryEntry};
use std::path::{Path, PathBuf};

pub(crate) struct Output {
    dir: PathBuf,
    /// The registry's rows: every kernel's code for every target.
    entries: Vec<RegistryEntry>,
    /// Every kernel's CPU object, each symbol once.
    objects: Vec<CpuObject>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Output {
    /// Output to `dir`, emptied first.
    pub(crate) fn new(dir: PathBuf) -> Result<Output, Error> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(Output {
            dir,
            entries: Vec::new(),
            objects: Vec::new(),
        })
    }

    fn entry(kernel: &Kernel, target: &str) -> RegistryEntry {
        RegistryEntry {
            key: offload_mir::code_key(kernel.linked.body()),
            target: target.to_string(),
            code: None,
            cpu_symbol: None,
        }
    }

    /// The kernel's device code for `chip`: PTX, or an AMD code object.
    pub(crate) fn add_code(&mut self, kernel: &Kernel, chip: &str, code: Vec<u8>) {
        self.entries.push(RegistryEntry {
            code: Some(code),
            ..Output::entry(kernel, chip)
        });
    }

    pub(crate) fn add_object(&mut self, kernel: &Kernel, object: CpuObject) {
        self.entries.push(RegistryEntry {
            cpu_symbol: Some(object.symbol.clone()),
            ..Output::entry(kernel, "cpu")
        });
        if !self.objects.iter().any(|o| o.symbol == object.symbol) {
            self.objects.push(object);
        }
    }

    /// Writes `lib{name}.a`: the CPU objects and the registry, built for `host`.
    pub(crate) fn write_library(&self, name: &str, host: &CpuTarget) -> Result<PathBuf, Error> {
        let path = self.dir.join(format!("lib{name}.a"));
        let registry =
            offload_lowering::registry_object(&self.entries, host).map_err(|e| Error::Io {
                path: path.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
        let mut members: Vec<NewArchiveMember<'_>> = self
            .objects
            .iter()
            .map(|o| {
                NewArchiveMember::new(&o.bytes, &DEFAULT_OBJECT_READER, format!("{}.o", o.symbol))
            })
            .collect();
        members.push(NewArchiveMember::new(
            registry,
            &DEFAULT_OBJECT_READER,
            "offload_registry.o".to_string(),
        ));
        let mut file = std::io::Cursor::new(Vec::new());
        ar_archive_writer::write_archive_to_stream(
            &mut file,
            &members,
            ArchiveKind::Gnu,
            false,
            None,
        )
        .map_err(io(&path))?;
        std::fs::write(&path, file.into_inner()).map_err(io(&path))?;
        Ok(path)
    }
}
