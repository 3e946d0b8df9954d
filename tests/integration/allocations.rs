//! The launch path allocates nothing in a steady state: a counting allocator (this test
//! binary's global allocator) counts each thread's heap allocations, and launches on the
//! CPU backend after a first, compiling one must make none. (The CUDA path's host side is
//! pinned the same way by `offload-bench launch` on a GPU machine, which prints its count
//! and fails on any.)

use offload::prelude::*;
use offload::{Device, DeviceBuffer, LaunchOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the calling thread's allocations.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is the system allocator's; the count is a thread-local cell with a
// constant initialiser and no destructor, so counting allocates nothing itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The calling thread's allocations while `f` runs.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[offload_kernel]
fn axpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

#[test]
fn a_steady_launch_on_device_buffers_allocates_nothing() {
    let cpu = offload::devices()
        .iter()
        .position(|d| *d == Device::Cpu)
        .expect("the CPU is listed");
    let options = LaunchOptions {
        device: Some(cpu),
        ..LaunchOptions::DEFAULT
    };
    // One workgroup of 256: the launch runs on this thread, where the count is kept.
    let n = 256;
    let x = DeviceBuffer::from_slice(&Device::Cpu, &vec![1.0f32; n]).unwrap();
    let mut y = DeviceBuffer::from_slice(&Device::Cpu, &vec![0.0f32; n]).unwrap();
    axpy(options, &mut y, &x, 2.0).unwrap();
    let launches = 100;
    let counted = allocations(|| {
        for _ in 0..launches {
            axpy(options, &mut y, &x, 2.0).unwrap();
        }
    });
    assert_eq!(counted, 0, "allocations in {launches} launches");
    assert_eq!(y.to_vec().unwrap(), vec![2.0 * (launches + 1) as f32; n]);
}
