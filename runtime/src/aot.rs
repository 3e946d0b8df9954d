//! Code built ahead of time by `offload-build`: the PTX per NVIDIA chip, the code object
//! per AMD chip and the CPU entry point of each kernel, linked into the program as a
//! static library.
//!
//! The library registers its code before `main` runs: a constructor in it calls
//! [`offload_aot_register`] with a table of [`AotEntry`]s. Nothing is declared in the
//! user's crate, so a crate that forbids `unsafe` code can build its kernels ahead of
//! time. Entries are found by the [`code_key`](offload_mir::code_key) of the linked
//! kernel they were compiled from, so a launch runs code built ahead of time only for the
//! very kernel the runtime linked and verified from the embedded MIR.

use offload_mir::abi::CpuEntry;
use std::sync::Mutex;

/// One kernel's code for one target, as the library's table holds it (`offload-build`
/// writes the same layout): the linked kernel's code key, the target (`sm_90`, `gfx942`,
/// `cpu`), the device code (PTX or a code object, for a chip) and the entry point (for
/// the CPU), each string as bytes and a length.
#[doc(hidden)]
#[repr(C)]
pub struct AotEntry {
    key: *const u8,
    key_len: usize,
    target: *const u8,
    target_len: usize,
    code: *const u8,
    code_len: usize,
    cpu: Option<CpuEntry>,
}

/// An entry with its strings checked.
#[derive(Copy, Clone)]
struct Entry {
    key: &'static str,
    target: &'static str,
    code: Option<&'static [u8]>,
    cpu: Option<CpuEntry>,
}

/// Every entry registered, in order.
static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Registers a table of code built ahead of time. Called by the constructor of the
/// library `offload-build` writes, before `main`.
///
/// # Safety
///
/// `entries` points at `count` entries that live for the program, each string pointing at
/// its length in bytes, each PTX and entry point compiled from the linked kernel with
/// that key, for that target.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn offload_aot_register(entries: *const AotEntry, count: usize) {
    // SAFETY: the caller's contract: the table and its strings live for the program.
    let table = unsafe { std::slice::from_raw_parts(entries, count) };
    let bytes = |ptr: *const u8, len: usize| -> Option<&'static [u8]> {
        // SAFETY: a non-null string points at `len` bytes living for the program.
        (!ptr.is_null()).then(|| unsafe { std::slice::from_raw_parts(ptr, len) })
    };
    let text = |ptr, len| std::str::from_utf8(bytes(ptr, len)?).ok();
    let mut registry = REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for e in table {
        let (Some(key), Some(target)) = (text(e.key, e.key_len), text(e.target, e.target_len))
        else {
            continue;
        };
        registry.push(Entry {
            key,
            target,
            code: bytes(e.code, e.code_len),
            cpu: e.cpu,
        });
    }
}

/// The code built ahead of time for the linked kernel with code key `key`.
#[derive(Clone, Default)]
pub(crate) struct AotCode {
    entries: Vec<Entry>,
}

impl AotCode {
    pub(crate) fn find(key: &str) -> AotCode {
        let registry = REGISTRY
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        AotCode {
            entries: registry.iter().filter(|e| e.key == key).copied().collect(),
        }
    }

    /// The targets there is code for.
    #[cfg_attr(feature = "jit", allow(dead_code))]
    pub(crate) fn targets(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.target).collect()
    }

    /// The CPU entry point, if built.
    pub(crate) fn cpu(&self) -> Option<CpuEntry> {
        self.entries.iter().find_map(|e| e.cpu)
    }

    /// PTX that runs on `chip` (`sm_90`); see [`best_ptx`].
    pub(crate) fn ptx_for(&self, chip: &str) -> Option<&'static str> {
        let built: Vec<(&str, &'static str)> = self
            .entries
            .iter()
            .filter(|e| e.target.starts_with("sm_"))
            .filter_map(|e| Some((e.target, std::str::from_utf8(e.code?).ok()?)))
            .collect();
        best_ptx(&built, chip)
    }

    /// The code object built for the AMD chip `chip` (`gfx942`): a code object runs on
    /// the chip it was built for only.
    pub(crate) fn code_object_for(&self, chip: &str) -> Option<&'static [u8]> {
        self.entries
            .iter()
            .find(|e| e.target == chip && chip.starts_with("gfx"))
            .and_then(|e| e.code)
    }
}

/// Of PTX built per chip, what runs on `chip` (`sm_90`): the newest built for a chip no
/// newer than it, since the driver compiles PTX for any later chip. Architecture-specific
/// PTX (`sm_90a`) runs on its own chip only.
#[doc(hidden)]
pub fn best_ptx(built: &[(&str, &'static str)], chip: &str) -> Option<&'static str> {
    if let Some((_, ptx)) = built.iter().find(|(c, _)| *c == chip) {
        return Some(ptx);
    }
    let version = |c: &str| c.strip_prefix("sm_")?.parse::<u32>().ok();
    let device = version(chip)?;
    built
        .iter()
        .filter_map(|(c, ptx)| Some((version(c)?, *ptx)))
        .filter(|(v, _)| *v <= device)
        .max_by_key(|(v, _)| *v)
        .map(|(_, ptx)| ptx)
}
