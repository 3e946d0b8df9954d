//! The suite's GPU harness: both sides of each benchmark in one process, on one stream,
//! over the same device buffers, timed by the same function.
//!
//! Our side is the PTX our compiler generates for the kernel, loaded and launched as
//! `RawKernel` does for the older subcommands (the kernel ABI's words, the panic buffer,
//! the hidden GPU words). The CUDA C++ side is the kernel of the same name in
//! `cuda/suite.cu`, compiled to PTX by nvcc on the GPU machine and loaded here with
//! cudarc. Each benchmark:
//!
//! 1. fills its inputs from [`reference`] and uploads them once;
//! 2. runs our kernel once on cleared outputs and compares them with the host
//!    reference, then clears the outputs, runs the CUDA twin and compares again (so a
//!    twin that wrote nothing cannot pass on our results), failing on any mismatch;
//! 3. times each side with [`RawKernel::time_events`]: CUDA events around every launch,
//!    median and minimum of REPS launches after 3 warm-ups. Outputs that accumulate
//!    (the reductions' totals, the histogram's bins) are zeroed inside the timed region,
//!    on both sides alike.

use super::{Timing, kernels, reference};
use crate::{BLOCK, RawKernel, Word, linear};
use anyhow::{Context, Result, bail};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use offload::KernelDescriptor;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// A parameter of a CUDA C++ twin, as the C type it has there.
#[derive(Clone, Copy, Debug)]
pub(super) enum Arg {
    /// A pointer (`float *`, `const unsigned int *`, ...): a device address.
    Ptr(u64),
    /// `unsigned long long`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `__half` or `__nv_bfloat16`, by its bits.
    Half(u16),
}

/// Both sides' launches of one benchmark at one size.
struct Sides {
    words: Vec<u64>,
    ours: LaunchConfig,
    twin: CudaFunction,
    args: Vec<Arg>,
    cuda: LaunchConfig,
}

/// Which side a check or timing is of, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Offload,
    Cuda,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Offload => "offload",
            Side::Cuda => "CUDA C++",
        })
    }
}

/// What a one-dimensional benchmark's output is checked against.
pub(super) enum Want<'a, T = f32> {
    /// Floats, compared with [`reference::close`].
    Close(&'a [f32]),
    /// A softmax, compared with [`reference::softmax_close`].
    Softmax(&'a [f64]),
    /// Exactly these elements (16-bit floats by their bits: each operation rounded as
    /// the `half` crate rounds it, on both sides).
    Exact(&'a [T]),
}

/// A one-dimensional benchmark with one float output per thread in workgroups of
/// [`BLOCK`]: our kernel takes (output, input slices.., scalars..), its twin (output,
/// inputs.., scalars.., n).
pub(super) struct Elementwise<'a, T = f32> {
    pub kernel: &'static KernelDescriptor,
    pub twin: &'static str,
    pub inputs: Vec<&'a [T]>,
    /// Scalar arguments, by their bits (and the C type the twin takes).
    pub scalars: Vec<(u64, Arg)>,
    pub want: Want<'a, T>,
}

/// An element type of an elementwise benchmark: `f32`, or a 16-bit float held as its
/// bits (`u16`).
pub(super) trait Element:
    DeviceRepr + ValidAsZeroBits + Copy + Unpin + PartialEq + std::fmt::Debug
{
    fn check(label: &str, got: &[Self], want: &Want<Self>) -> Result<()>;
}

impl Element for f32 {
    fn check(label: &str, got: &[f32], want: &Want<f32>) -> Result<()> {
        match want {
            Want::Close(want) | Want::Exact(want) => reference::close(label, got, want),
            Want::Softmax(want) => reference::softmax_close(label, got, want),
        }
    }
}

impl Element for u16 {
    fn check(label: &str, got: &[u16], want: &Want<u16>) -> Result<()> {
        if let Want::Softmax(want) = want {
            // `bf16` results, each rounded once from an `f32` near the host's value.
            let got: Vec<f32> = got
                .iter()
                .map(|b| half::bf16::from_bits(*b).to_f32())
                .collect();
            return reference::softmax_close_bf16(label, &got, want);
        }
        let Want::Exact(want) = want else {
            bail!("{label}: 16-bit results are compared exactly, or as a softmax");
        };
        match got.iter().zip(*want).position(|(g, w)| g != w) {
            Some(i) => bail!(
                "{label}: element {i}: {:#06x}, want {:#06x}",
                got[i],
                want[i]
            ),
            None => Ok(()),
        }
    }
}

/// A compiled kernel's key: its descriptor's address and its workgroup shape.
type KernelKey = (usize, [u32; 3]);

/// The first GPU, the CUDA C++ twins, and what the benchmarks share.
pub(super) struct Harness {
    ctx: Arc<CudaContext>,
    twins: Arc<CudaModule>,
    /// cuBLAS, if it loaded (`new` says why not).
    blas: Option<CudaBlas>,
    /// The GPU's name, as the driver gives it.
    pub device: String,
    /// Multiprocessors, for the reductions' grids (16 workgroups each).
    multiprocessors: u32,
    /// Our kernels, compiled once per workgroup shape and reused at every size.
    kernels: RefCell<HashMap<KernelKey, Rc<RawKernel>>>,
    /// Device-to-device copies timed so far, by bytes moved.
    copies: RefCell<HashMap<u64, Timing>>,
}

impl Harness {
    /// Opens the first GPU and loads the twins from `ptx` (nvcc's output for
    /// `cuda/suite.cu`).
    pub(super) fn new(ptx: &Path) -> Result<Harness> {
        if crate::first_gpu_chip().is_none() {
            bail!("no CUDA device: the suite times kernels on a GPU (`suite-check` needs none)");
        }
        let ctx = CudaContext::new(0)?;
        let twins = ctx
            .load_module(cudarc::nvrtc::Ptx::from_file(ptx))
            .with_context(|| format!("loading the CUDA C++ twins from {}", ptx.display()))?;
        let device = ctx.name()?;
        let multiprocessors = ctx.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )? as u32;
        // SAFETY: only asks the loader whether one of cuBLAS's file names opens.
        let blas = if unsafe { cudarc::cublas::sys::is_culib_present() } {
            CudaBlas::new(ctx.default_stream())
                .map_err(|e| println!("cuBLAS did not start ({e}): no GEMM roof"))
                .ok()
        } else {
            println!("cuBLAS (libcublas.so) could not be loaded: no GEMM roof");
            None
        };
        Ok(Harness {
            ctx,
            twins,
            blas,
            device,
            multiprocessors,
            kernels: RefCell::default(),
            copies: RefCell::default(),
        })
    }

    /// Our kernel compiled for workgroups of `block` threads, loaded into the harness's
    /// context.
    fn kernel(
        &self,
        name: &str,
        descriptor: &'static KernelDescriptor,
        block: [u32; 3],
    ) -> Result<Rc<RawKernel>> {
        let key = (descriptor as *const KernelDescriptor as usize, block);
        if let Some(k) = self.kernels.borrow().get(&key) {
            return Ok(k.clone());
        }
        let k = Rc::new(
            RawKernel::load_in(self.ctx.clone(), descriptor, block, None, false)
                .with_context(|| format!("compiling our {name} kernel"))?,
        );
        self.kernels.borrow_mut().insert(key, k.clone());
        Ok(k)
    }

    /// The CUDA C++ twin called `name`.
    fn twin(&self, name: &str) -> Result<CudaFunction> {
        self.twins
            .load_function(name)
            .with_context(|| format!("no kernel `{name}` in the CUDA C++ twins' PTX"))
    }

    /// Launches one side once.
    fn launch(&self, k: &RawKernel, sides: &Sides, side: Side) -> Result<()> {
        match side {
            Side::Offload => k.launch(&sides.words, sides.ours),
            Side::Cuda => {
                let mut b = k.stream.launch_builder(&sides.twin);
                for a in &sides.args {
                    match a {
                        Arg::Ptr(p) | Arg::U64(p) => b.arg(p),
                        Arg::F32(v) => b.arg(v),
                        Arg::Half(v) => b.arg(v),
                    };
                }
                // SAFETY: the arguments are the twin's parameters in `cuda/suite.cu`, in
                // order and of their C types, over buffers that outlive the launch.
                unsafe { b.launch(sides.cuda) }?;
                Ok(())
            }
        }
    }

    /// Checks, then times, both sides (steps 2 and 3 of the module docs). `clear` puts
    /// the outputs back to their initial state; with `clear_each`, it runs before every
    /// timed launch too. `verify` reads the outputs back and compares them.
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &self,
        name: &str,
        k: &RawKernel,
        sides: &Sides,
        reps: usize,
        clear: &dyn Fn() -> Result<()>,
        clear_each: bool,
        verify: &dyn Fn(&str) -> Result<()>,
    ) -> Result<(Timing, Timing)> {
        for side in [Side::Offload, Side::Cuda] {
            clear()?;
            self.launch(k, sides, side)?;
            k.stream.synchronize()?;
            if side == Side::Offload {
                k.check_no_panic()?;
            }
            verify(&format!("{side} {name}"))?;
        }
        let mut timings = [Timing::default(); 2];
        for (t, side) in timings.iter_mut().zip([Side::Offload, Side::Cuda]) {
            let (median_ms, min_ms) = k.time_events(reps, &|| {
                if clear_each {
                    clear()?;
                }
                self.launch(k, sides, side)
            })?;
            *t = Timing { median_ms, min_ms };
        }
        k.check_no_panic()?;
        Ok((timings[0], timings[1]))
    }

    /// A device-to-device copy of `bytes / 2` bytes, which reads and writes `bytes` in
    /// all: the bandwidth a kernel moving `bytes` could reach.
    pub(super) fn copy(&self, bytes: f64, reps: usize) -> Result<Timing> {
        let key = bytes as u64;
        if let Some(t) = self.copies.borrow().get(&key) {
            return Ok(*t);
        }
        // Timed as the kernels are, on their stream: any of the suite's kernels gives it.
        let k = self.kernel("copy", kernels::STREAM_COPY, [BLOCK, 1, 1])?;
        let half = (key / 2) as usize;
        let src: CudaSlice<u8> = k.stream.alloc_zeros(half)?;
        let dst = RefCell::new(k.stream.alloc_zeros::<u8>(half)?);
        let (median_ms, min_ms) = k.time_events(reps, &|| {
            k.stream.memcpy_dtod(&src, &mut *dst.borrow_mut())?;
            Ok(())
        })?;
        let t = Timing { median_ms, min_ms };
        self.copies.borrow_mut().insert(key, t);
        Ok(t)
    }

    /// An [`Elementwise`] benchmark over `n` outputs.
    pub(super) fn elementwise<T: Element>(
        &self,
        name: &str,
        e: &Elementwise<T>,
        n: usize,
        reps: usize,
    ) -> Result<(Timing, Timing)> {
        let k = self.kernel(name, e.kernel, [BLOCK, 1, 1])?;
        let s = &k.stream;
        let inputs = e
            .inputs
            .iter()
            .map(|x| s.clone_htod(*x))
            .collect::<Result<Vec<_>, _>>()?;
        let out = RefCell::new(s.alloc_zeros::<T>(n)?);
        let at = k.addr(&*out.borrow());
        let workgroups = (n as u32).div_ceil(BLOCK);
        let mut params = vec![Word::Memref(at, n)];
        let mut args = vec![Arg::Ptr(at)];
        for x in &inputs {
            params.push(Word::Memref(k.addr(x), x.len()));
            args.push(Arg::Ptr(k.addr(x)));
        }
        for (bits, arg) in &e.scalars {
            params.push(Word::Scalar(*bits));
            args.push(*arg);
        }
        args.push(Arg::U64(n as u64));
        let sides = Sides {
            words: k.words(&params, [workgroups, 1, 1]),
            ours: linear(workgroups),
            twin: self.twin(e.twin)?,
            args,
            cuda: linear(workgroups),
        };
        let clear = || Ok(s.memset_zeros(&mut *out.borrow_mut())?);
        let verify = |label: &str| {
            let got = s.clone_dtoh(&*out.borrow())?;
            T::check(label, &got, &e.want)
        };
        self.compare(name, &k, &sides, reps, &clear, false, &verify)
    }

    /// A float reduction (`dot` or `sum`) of `inputs` into one total: a grid of 16
    /// workgroups per multiprocessor (fewer for small inputs), each thread a
    /// grid-stride slice; the twin takes (total, inputs.., n, stride).
    pub(super) fn reduction(
        &self,
        name: &str,
        kernel: &'static KernelDescriptor,
        twin: &str,
        inputs: &[&[f32]],
        want: (f64, f64),
        reps: usize,
    ) -> Result<(Timing, Timing)> {
        let k = self.kernel(name, kernel, [BLOCK, 1, 1])?;
        let s = &k.stream;
        let n = inputs[0].len();
        let grid = (n as u32).div_ceil(BLOCK).min(self.multiprocessors * 16);
        let stride = grid as u64 * BLOCK as u64;
        let inputs = inputs
            .iter()
            .map(|x| s.clone_htod(*x))
            .collect::<Result<Vec<_>, _>>()?;
        let total = RefCell::new(s.alloc_zeros::<f32>(1)?);
        let at = k.addr(&*total.borrow());
        let mut params = vec![Word::Memref(at, 1)];
        let mut args = vec![Arg::Ptr(at)];
        for x in &inputs {
            params.push(Word::Memref(k.addr(x), n));
            args.push(Arg::Ptr(k.addr(x)));
        }
        params.push(Word::Scalar(stride));
        args.extend([Arg::U64(n as u64), Arg::U64(stride)]);
        let sides = Sides {
            words: k.words(&params, [grid, 1, 1]),
            ours: linear(grid),
            twin: self.twin(twin)?,
            args,
            cuda: linear(grid),
        };
        let clear = || Ok(s.memset_zeros(&mut *total.borrow_mut())?);
        let verify = |label: &str| {
            let got = s.clone_dtoh(&*total.borrow())?;
            reference::reduction(label, got[0], want)
        };
        self.compare(name, &k, &sides, reps, &clear, true, &verify)
    }

    /// The 256-bin histogram of `x`, one thread per word.
    pub(super) fn histogram(
        &self,
        name: &str,
        x: &[u32],
        want: &[u32],
        reps: usize,
    ) -> Result<(Timing, Timing)> {
        let k = self.kernel(name, kernels::HISTOGRAM256, [BLOCK, 1, 1])?;
        let s = &k.stream;
        let n = x.len();
        let dx = s.clone_htod(x)?;
        let bins = RefCell::new(s.alloc_zeros::<u32>(256)?);
        let at = k.addr(&*bins.borrow());
        let workgroups = (n as u32).div_ceil(BLOCK);
        let sides = Sides {
            words: k.words(
                &[Word::Memref(at, 256), Word::Memref(k.addr(&dx), n)],
                [workgroups, 1, 1],
            ),
            ours: linear(workgroups),
            twin: self.twin("histogram256")?,
            args: vec![Arg::Ptr(at), Arg::Ptr(k.addr(&dx)), Arg::U64(n as u64)],
            cuda: linear(workgroups),
        };
        let clear = || Ok(s.memset_zeros(&mut *bins.borrow_mut())?);
        let verify = |label: &str| reference::equal(label, &s.clone_dtoh(&*bins.borrow())?, want);
        self.compare(name, &k, &sides, reps, &clear, true, &verify)
    }

    /// A 2-D stencil (`jacobi` or `stencil5`) over a `w`-wide grid: our kernel takes the
    /// output region and the grid as a stencil, both with interior `margin`; the twin
    /// (next, grid, w, h). One thread per element of the interior, in 16×16 workgroups.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn grid2d(
        &self,
        name: &str,
        kernel: &'static KernelDescriptor,
        twin: &str,
        grid: &[f32],
        w: usize,
        margin: usize,
        want: &[f32],
        reps: usize,
    ) -> Result<(Timing, Timing)> {
        let k = self.kernel(name, kernel, [16, 16, 1])?;
        let s = &k.stream;
        let h = grid.len() / w;
        let dg = s.clone_htod(grid)?;
        let next = RefCell::new(s.alloc_zeros::<f32>(grid.len())?);
        let at = k.addr(&*next.borrow());
        let groups = |e: usize| ((e - 2 * margin) as u32).div_ceil(16);
        let workgroups = [groups(w), groups(h), 1];
        let cfg = LaunchConfig {
            grid_dim: (workgroups[0], workgroups[1], 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let sides = Sides {
            words: k.words(
                &[
                    Word::Region2d(at, h, w, margin),
                    Word::Region2d(k.addr(&dg), h, w, margin),
                ],
                workgroups,
            ),
            ours: cfg,
            twin: self.twin(twin)?,
            args: vec![
                Arg::Ptr(at),
                Arg::Ptr(k.addr(&dg)),
                Arg::U64(w as u64),
                Arg::U64(h as u64),
            ],
            cuda: cfg,
        };
        let clear = || Ok(s.memset_zeros(&mut *next.borrow_mut())?);
        let verify = |label: &str| reference::close(label, &s.clone_dtoh(&*next.borrow())?, want);
        self.compare(name, &k, &sides, reps, &clear, false, &verify)
    }

    /// The 7-point stencil over the interior of an `nx` × `ny` × `nz` grid, in 32×4×2
    /// workgroups (`Linear3D`'s default); the twin takes (y, x, nx, ny, nz).
    pub(super) fn stencil7(
        &self,
        name: &str,
        x: &[f32],
        [nx, ny, nz]: [usize; 3],
        want: &[f32],
        reps: usize,
    ) -> Result<(Timing, Timing)> {
        let block = [32, 4, 2];
        let k = self.kernel(name, kernels::STENCIL7, block)?;
        let s = &k.stream;
        let dx = s.clone_htod(x)?;
        let y = RefCell::new(s.alloc_zeros::<f32>(x.len())?);
        let at = k.addr(&*y.borrow());
        let workgroups = [
            ((nx - 2) as u32).div_ceil(block[0]),
            ((ny - 2) as u32).div_ceil(block[1]),
            ((nz - 2) as u32).div_ceil(block[2]),
        ];
        let cfg = LaunchConfig {
            grid_dim: (workgroups[0], workgroups[1], workgroups[2]),
            block_dim: (block[0], block[1], block[2]),
            shared_mem_bytes: 0,
        };
        let sides = Sides {
            words: k.words(
                &[
                    Word::Region3d(at, nz, ny, nx, 1),
                    Word::Memref(k.addr(&dx), x.len()),
                ],
                workgroups,
            ),
            ours: cfg,
            twin: self.twin("stencil7")?,
            args: vec![
                Arg::Ptr(at),
                Arg::Ptr(k.addr(&dx)),
                Arg::U64(nx as u64),
                Arg::U64(ny as u64),
                Arg::U64(nz as u64),
            ],
            cuda: cfg,
        };
        let clear = || Ok(s.memset_zeros(&mut *y.borrow_mut())?);
        let verify = |label: &str| reference::close(label, &s.clone_dtoh(&*y.borrow())?, want);
        self.compare(name, &k, &sides, reps, &clear, false, &verify)
    }

    /// `n` × `n` matrix products: our tiled kernel against its twin (A, B, C, n), in
    /// 16×16 workgroups, then cuBLAS as the roof (`None` without it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm<T>(
        &self,
        name: &str,
        kernel: &'static KernelDescriptor,
        twin: &str,
        a: &[T],
        b: &[T],
        n: usize,
        reps: usize,
    ) -> Result<(Timing, Timing, Option<Timing>)>
    where
        T: reference::GemmFloat + DeviceRepr + ValidAsZeroBits,
        CudaBlas: Gemm<T>,
    {
        let k = self.kernel(name, kernel, [16, 16, 1])?;
        let s = &k.stream;
        let (da, db) = (s.clone_htod(a)?, s.clone_htod(b)?);
        let c = RefCell::new(s.alloc_zeros::<T>(n * n)?);
        let at = k.addr(&*c.borrow());
        let tiles = (n as u32).div_ceil(16);
        let cfg = LaunchConfig {
            grid_dim: (tiles, tiles, 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let sides = Sides {
            words: k.words(
                &[
                    Word::Memref2d(at, n, n),
                    Word::Memref(k.addr(&da), n * n),
                    Word::Memref(k.addr(&db), n * n),
                    Word::Scalar(n as u64),
                ],
                [tiles, tiles, 1],
            ),
            ours: cfg,
            twin: self.twin(twin)?,
            args: vec![
                Arg::Ptr(k.addr(&da)),
                Arg::Ptr(k.addr(&db)),
                Arg::Ptr(at),
                Arg::U64(n as u64),
            ],
            cuda: cfg,
        };
        let clear = || Ok(s.memset_zeros(&mut *c.borrow_mut())?);
        let verify = |label: &str| reference::gemm(label, a, b, &s.clone_dtoh(&*c.borrow())?, n);
        let (ours, cuda) = self.compare(name, &k, &sides, reps, &clear, false, &verify)?;

        let Some(blas) = &self.blas else {
            return Ok((ours, cuda, None));
        };
        // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T, so
        // it multiplies B by A, each as stored.
        let dim = i32::try_from(n)?;
        let config = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: dim,
            n: dim,
            k: dim,
            alpha: T::from_f32(1.0),
            lda: dim,
            ldb: dim,
            beta: T::from_f32(0.0),
            ldc: dim,
        };
        let product = || -> Result<()> {
            // SAFETY: the three buffers hold n * n elements each, as the sizes say.
            unsafe { blas.gemm(config, &db, &da, &mut *c.borrow_mut()) }?;
            Ok(())
        };
        clear()?;
        product()?;
        s.synchronize()?;
        verify(&format!("cuBLAS {name}"))?;
        let (median_ms, min_ms) = k.time_events(reps, &product)?;
        Ok((ours, cuda, Some(Timing { median_ms, min_ms })))
    }
}
