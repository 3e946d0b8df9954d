//! Code built ahead of time by `offload-build`: a kernel's PTX for each chip it was built
//! for and its CPU entry point, linked into the program. `#[offload_kernel]` attaches it
//! to the kernel's descriptor when the crate's build script made it.
//!
//! The code is used only for the kernel it was compiled from: it records the
//! [`code_key`](offload_mir::code_key) of the linked kernel, and a launch compares that
//! with the key of the kernel the runtime linked and verified from the embedded MIR.

use offload_mir::abi::CpuEntry;

/// A kernel's code built ahead of time. Made only by the code `offload-build` generates.
#[doc(hidden)]
pub struct AotKernel {
    linked: &'static str,
    ptx: &'static [(&'static str, &'static str)],
    cpu: Option<CpuEntry>,
    /// Read only to explain a launch that finds no code, which a JIT never does.
    #[cfg_attr(feature = "jit", allow(dead_code))]
    targets: &'static [&'static str],
}

impl AotKernel {
    /// Code for the kernel whose linked body has code key `linked`: PTX by chip, the CPU
    /// entry point, and the targets the build asked for.
    ///
    /// # Safety
    ///
    /// The PTX and the entry point must be what `offload-build` compiled from the linked
    /// kernel with code key `linked`: launches run them trusting that they are.
    pub const unsafe fn new(
        linked: &'static str,
        ptx: &'static [(&'static str, &'static str)],
        cpu: Option<CpuEntry>,
        targets: &'static [&'static str],
    ) -> AotKernel {
        AotKernel {
            linked,
            ptx,
            cpu,
            targets,
        }
    }

    /// The code key of the linked kernel this code was compiled from.
    pub(crate) fn linked(&self) -> &'static str {
        self.linked
    }

    /// The targets the build compiled for, as given to `offload-build`.
    #[cfg(not(feature = "jit"))]
    pub(crate) fn targets(&self) -> &'static [&'static str] {
        self.targets
    }

    /// The CPU entry point, if the build compiled for the CPU.
    pub(crate) fn cpu(&self) -> Option<CpuEntry> {
        self.cpu
    }

    /// PTX that runs on `chip` (`sm_90`): the newest built for a chip no newer than it,
    /// since the driver compiles PTX for any later chip. Architecture-specific PTX
    /// (`sm_90a`) runs on its own chip only.
    pub(crate) fn ptx_for(&self, chip: &str) -> Option<&'static str> {
        best_ptx(self.ptx, chip)
    }
}

/// The entry of `built` (chip, PTX) for `chip`; see [`AotKernel::ptx_for`].
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
