//! What a build writes to `OUT_DIR/offload`: for each kernel instance, its PTX per chip
//! and `KEY.rs`, the expression `#[offload_kernel]` includes to attach the code to the
//! kernel (KEY being the code key of the instance's MIR); and one static library with
//! every kernel's CPU object, which Cargo links into the program.

use crate::{Error, sources::Kernel};
use ar_archive_writer::{ArchiveKind, DEFAULT_OBJECT_READER, NewArchiveMember};
use offload_lowering::CpuObject;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub(crate) struct Output {
    dir: PathBuf,
    targets: Vec<String>,
    /// The current kernel's PTX files, by chip.
    ptx: Vec<(String, PathBuf)>,
    /// The current kernel's CPU entry point.
    cpu: Option<String>,
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
    /// Output to `dir`, emptied first: code from an earlier build with other targets
    /// must not be found.
    pub(crate) fn new(dir: PathBuf, targets: &[String]) -> Result<Output, Error> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(Output {
            dir,
            targets: targets.to_vec(),
            ptx: Vec::new(),
            cpu: None,
            objects: Vec::new(),
        })
    }

    pub(crate) fn add_ptx(&mut self, kernel: &Kernel, chip: &str, ptx: &str) -> Result<(), Error> {
        let path = self.dir.join(format!("{}.{chip}.ptx", kernel.key));
        std::fs::write(&path, ptx).map_err(io(&path))?;
        self.ptx.push((chip.to_string(), path));
        Ok(())
    }

    pub(crate) fn add_object(&mut self, object: CpuObject) {
        self.cpu = Some(object.symbol.clone());
        if !self.objects.iter().any(|o| o.symbol == object.symbol) {
            self.objects.push(object);
        }
    }

    /// Writes the kernel's `KEY.rs`.
    pub(crate) fn finish_kernel(&mut self, kernel: &Kernel) -> Result<(), Error> {
        let linked = offload_mir::code_key(kernel.linked.body());
        let mut text = format!(
            "// Written by offload-build: the code of kernel `{}` built ahead of time.\n{{\n",
            kernel.display
        );
        if let Some(symbol) = &self.cpu {
            let _ = write!(
                text,
                "    unsafe extern \"C\" {{\n        #[link_name = \"{symbol}\"]\n        \
                 fn cpu_entry(words: *mut *mut ::core::ffi::c_void);\n    }}\n"
            );
        }
        let ptx: Vec<String> = self
            .ptx
            .iter()
            .map(|(chip, path)| format!("({chip:?}, include_str!({:?}))", path.to_string_lossy()))
            .collect();
        let cpu = match &self.cpu {
            Some(_) => "::core::option::Option::Some(cpu_entry)",
            None => "::core::option::Option::None",
        };
        let _ = write!(
            text,
            "    // SAFETY: offload-build compiled this code from the linked kernel of this key.\n    \
             unsafe {{\n        ::offload::AotKernel::new(\n            {linked:?},\n            \
             &[{}],\n            {cpu},\n            &{:?},\n        )\n    }}\n}}\n",
            ptx.join(", "),
            self.targets
        );
        let path = self.dir.join(format!("{}.rs", kernel.key));
        std::fs::write(&path, text).map_err(io(&path))?;
        self.ptx.clear();
        self.cpu = None;
        Ok(())
    }

    /// Writes `lib{name}.a` with every CPU object; `false` if there are none.
    pub(crate) fn write_library(&self, name: &str) -> Result<bool, Error> {
        if self.objects.is_empty() {
            return Ok(false);
        }
        let members: Vec<NewArchiveMember<'_>> = self
            .objects
            .iter()
            .map(|o| {
                NewArchiveMember::new(&o.bytes, &DEFAULT_OBJECT_READER, format!("{}.o", o.symbol))
            })
            .collect();
        let path = self.dir.join(format!("lib{name}.a"));
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
        Ok(true)
    }
}
