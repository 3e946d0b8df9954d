//! The conformance suite: each case is a kernel and a host reference, written once and
//! run on every backend. `tests/integration/conformance.rs` runs it on the CPU backend
//! (in CI); `offload-bench conformance` runs it on a GPU.
//!
//! A case takes the launch options that pick its device and returns `Err` with what
//! differed.

use offload::LaunchOptions;
use offload::prelude::*;

type CaseResult = Result<(), String>;

/// Calls `$m!(name)` for every case, so each runner can make what it needs of the list.
#[macro_export]
macro_rules! for_each_case {
    ($m:ident) => {
        $m!(saxpy_f32);
        $m!(multiply_adds_fuse_on_gpus_unless_turned_off);
        $m!(loops_over_slices_test_their_reads_once);
        $m!(iterator_reductions_over_slices);
        $m!(slices_read_with_get);
        $m!(saturating_arithmetic_clamps_like_rust);
        $m!(zips_closures_and_small_conveniences);
        $m!(swaps_matches_and_repeated_arrays);
        $m!(arrays_of_the_thread_are_written);
        $m!(scans_blocks_with_barriers_in_a_loop);
        $m!(integer_arithmetic_wraps_and_divides_like_rust);
        $m!(unsigned_and_narrow_integers);
        $m!(casts_follow_rust_as);
        $m!(control_flow);
        $m!(for_loops_over_ranges);
        $m!(match_on_integers);
        $m!(float_math_f32);
        $m!(float_math_f64);
        $m!(integer_methods);
        $m!(constants);
        $m!(short_circuit_guards_a_bounds_check);
        $m!(explicit_panic_is_reported);
        $m!(assert_failure_is_reported);
        $m!(division_by_zero_is_reported);
        $m!(division_overflow_is_reported);
        $m!(region_elements_divide_in_place);
        $m!(bool_regions_and_lengths);
        $m!(linear_2d_rows_and_columns);
        $m!(chunked_regions_give_each_thread_a_chunk);
        $m!(stencil_reads_neighbours);
        $m!(chunk_index_past_its_end_is_reported);
        $m!(generic_kernels_instantiate_per_type);
        $m!(device_functions_are_called_and_inlined);
        $m!(panic_in_a_device_function_names_it);
        $m!(thread_position_queries);
        $m!(histogram_with_atomics);
        $m!(dot_product_with_float_atomics);
        $m!(every_atomic_operation);
        $m!(scalars_before_regions_keep_their_places);
        $m!(device_buffers_stay_on_the_device);
        $m!(stencil_over_device_buffers_100_steps);
        $m!(launches_split_across_all_devices);
        $m!(panic_on_device_buffers_surfaces_by_the_next_read);
        $m!(block_sum_with_shared_memory_and_barriers);
        $m!(tree_reductions_in_place);
        $m!(barriers_order_writes_before_reads_in_2d_workgroups);
        $m!(dynamic_shared_memory_sized_by_dyn_cache);
        $m!(shared_slots_no_thread_wrote_read_as_zero);
        $m!(square_roots_are_correctly_rounded);
        $m!(raw_shared_memory_access);
        $m!(subgroup_operations);
        $m!(warp_reduction_sum);
        $m!(tiled_matrix_product);
        $m!(out_of_memory_is_an_error);
        $m!(panic_before_a_barrier_and_subgroup_sum_is_reported);
        $m!(dynamic_shared_memory_beyond_48_kib);
        $m!(split_buffers_stay_on_every_device);
        $m!(workgroup_count_is_the_whole_launch);
        $m!(panics_reach_only_the_thread_that_launched_them);
        $m!(methods_called_by_their_type_path);
        $m!(strategies_take_const_items);
        $m!(atomics_on_device_buffers);
        $m!(workgroup_reductions_reach_every_thread);
        $m!(constant_arrays_in_kernels);
        $m!(unchecked_reads_where_the_author_vouches);
        $m!(two_dimensional_shared_tiles);
        $m!(linear_3d_regions);
        $m!(grids_past_the_y_limit_are_folded);
        $m!(interior_regions_map_threads_to_inner_points);
        $m!(indexed_regions_scatter_safely);
        $m!(loops_over_elements_and_loop_values);
        $m!(float_classes_signs_and_euclidean_remainders);
        $m!(floats_from_and_to_their_bits);
        $m!(more_float_and_integer_methods);
        $m!(inverse_hyperbolic_functions);
        $m!(half_precision_floats);
        $m!(generic_kernels_over_half_floats);
        $m!(integer_constants_from_outside_the_kernel);
        $m!(device_buffer_views_and_copies_on_the_device);
        $m!(split_views_of_one_device_buffer);
        $m!(copies_from_page_locked_memory_take_the_data_as_it_was);
        $m!(tuple_and_range_locals);
        $m!(sub_slices_of_read_only_slices);
        $m!(device_functions_returning_tuples);
        $m!(shared_sizes_from_const_items);
        $m!(let_else_and_while_let);
        $m!(tile_matrix_products);
        $m!(streams_pipeline_chunks_through_page_locked_memory);
        $m!(streams_order_work_that_shares_memory);
        $m!(stream_panics_are_reported_once);
        $m!(graphs_replay_recorded_work);
    };
}

fn compare<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> CaseResult {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} != {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i}: got {:?}, want {:?}",
            got[i], want[i]
        )),
    }
}

fn close_f32(what: &str, got: &[f32], want: &[f32], rel: f32) -> CaseResult {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= rel * w.abs().max(1.0);
        if !same {
            return Err(format!("{what}: element {i}: got {g:?}, want {w:?}"));
        }
    }
    Ok(())
}

fn close_f64(what: &str, got: &[f64], want: &[f64], rel: f64) -> CaseResult {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= rel * w.abs().max(1.0);
        if !same {
            return Err(format!("{what}: element {i}: got {g:?}, want {w:?}"));
        }
    }
    Ok(())
}

/// Whether the launch runs on a GPU, where a float multiply and an add that uses it may
/// fuse into one FMA (rounded once), as nvcc does by default.
fn on_gpu(o: LaunchOptions) -> bool {
    device_of(o) != offload::Device::Cpu
}

/// Results of a kernel that multiplies and adds floats: exactly Rust's on the CPU
/// backend, within a rounding or two on a GPU (a fused multiply-add skips one).
fn fused_f32(o: LaunchOptions, what: &str, got: &[f32], want: &[f32]) -> CaseResult {
    if on_gpu(o) {
        close_f32(what, got, want, 4.0 * f32::EPSILON)
    } else {
        compare(what, got, want)
    }
}

/// [`fused_f32`] for `f64`.
fn fused_f64(o: LaunchOptions, what: &str, got: &[f64], want: &[f64]) -> CaseResult {
    if on_gpu(o) {
        close_f64(what, got, want, 4.0 * f64::EPSILON)
    } else {
        compare(what, got, want)
    }
}

/// This file, to find the line a panic should be reported at.
const SOURCE: &str = include_str!("cases.rs");

/// A launch refused with exactly `message`.
fn expect_error(result: Result<(), Error>, message: &str) -> CaseResult {
    match result {
        Err(e) if e.to_string() == message => Ok(()),
        Err(e) => Err(format!("the error reads `{e}`, not `{message}`")),
        Ok(()) => Err(format!("the launch succeeded; want `{message}`")),
    }
}

fn expect_panic(result: Result<(), Error>, message: &str, line_of: &str) -> CaseResult {
    match result {
        Err(Error::KernelPanic {
            message: m,
            line,
            file,
            ..
        }) => {
            if m != message {
                return Err(format!("panic message {m:?}, want {message:?}"));
            }
            if !file.ends_with("cases.rs") {
                return Err(format!("panic reported in {file}, want cases.rs"));
            }
            let expected_line = SOURCE
                .lines()
                .position(|l| l.contains(line_of))
                .map(|i| i as u32 + 1);
            if expected_line != Some(line) {
                return Err(format!(
                    "panic reported at line {line}, want {expected_line:?} (`{line_of}`)"
                ));
            }
            Ok(())
        }
        other => Err(format!("expected a kernel panic, got {other:?}")),
    }
}

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

pub fn saxpy_f32(o: LaunchOptions) -> CaseResult {
    let n = 100_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 101) as f32 * 0.75 - 20.0).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let mut y = y0.clone();
    saxpy(o, &mut y, &x, -1.25).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n).map(|i| -1.25 * x[i] + y0[i]).collect();
    compare("saxpy", &y, &want)
}

/// A filter over a slice in a loop: `taps[k]` and `x[i + k]` are tested once before the
/// loop (`8 <= taps.len()`, `i <= x.len() - 8`), which then runs without their checks; a
/// thread the test fails for runs the loop as written, checks and all.
#[offload_kernel]
fn filter_from_slices(mut y: Region<f32, Linear1D>, x: &[f32], taps: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..8 {
            acc += taps[k] * x[i + k];
        }
        *v = acc;
    }
}

/// A row of `a` read at `row * n + k`: the offset is an expression of names the loop
/// does not change, tested once with the loop's end.
#[offload_kernel]
fn product_by_rows(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let row = c.row();
    let col = c.col();
    if let Some(v) = c.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..n {
            acc += a[row * n + k] * b[k * n + col];
        }
        *v = acc;
    }
}

/// The body binds `k` again: the second `x[k]` reads `x[0]`, and the loop is left as
/// written.
#[offload_kernel]
fn shadowed_counter(mut y: Region<f32, Linear1D>, x: &[f32]) {
    if let Some(v) = y.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..4 {
            acc += x[k];
            let k = 0;
            acc += x[k];
        }
        *v = acc;
    }
}

pub fn loops_over_slices_test_their_reads_once(o: LaunchOptions) -> CaseResult {
    let x = [1.0f32, 2.0, 4.0, 8.0];
    let mut y = vec![0.0f32; 3];
    shadowed_counter(o, &mut y, &x).map_err(|e| e.to_string())?;
    compare("shadowed counter", &y, &[19.0; 3])?;

    let m = 24;
    let a: Vec<f32> = (0..m * m).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..m * m).map(|i| ((i * 5) % 11) as f32 * 0.5).collect();
    let mut c = vec![0.0f32; m * m];
    product_by_rows(o, Region::new_2d(&mut c, m), &a, &b, m).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..m * m)
        .map(|i| (0..m).fold(0.0f32, |acc, k| acc + a[i / m * m + k] * b[k * m + i % m]))
        .collect();
    fused_f32(o, "product by rows", &c, &want)?;

    let n = 1000;
    let x: Vec<f32> = (0..n + 7)
        .map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0)
        .collect();
    let taps: Vec<f32> = (0..8).map(|k| (k % 3) as f32 * 0.5 - 0.25).collect();
    let mut y = vec![0.0f32; n];
    filter_from_slices(o, &mut y, &x, &taps).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n)
        .map(|i| (0..8).fold(0.0f32, |acc, k| acc + taps[k] * x[i + k]))
        .collect();
    fused_f32(o, "filter", &y, &want)?;
    // `x` four short: the last threads fail the test, take the checked loop, and panic
    // where Rust would, at the first index past the end.
    let line = "acc += taps[k] * x[i + k];";
    expect_panic(
        filter_from_slices(o, &mut y, &x[..n + 3], &taps),
        "index out of bounds: the len is 1003 but the index is 1003",
        line,
    )?;
    // Five taps: every thread fails the test, and panics at `taps[5]`.
    expect_panic(
        filter_from_slices(o, &mut y, &x, &taps[..5]),
        "index out of bounds: the len is 5 but the index is 5",
        line,
    )
}

/// Iterator reductions over slices: each becomes the loop Rust runs, in order, so even
/// float sums match the host's exactly (no product to fuse here but the `map` one,
/// whose GPU result may fuse).
#[offload_kernel]
fn reductions(mut out: Region<f32, Linear1D>, x: &[f32], w: &[i32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let total: f32 = x.iter().sum();
        let squares = x.iter().map(|v| v * v).sum::<f32>();
        let top = x.iter().fold(f32::MIN, |a, &b| a.max(b));
        let doubled = x.iter().fold(0.0, |acc, b| acc + *b * 2.0);
        let product: i32 = w.iter().product();
        let weighted = x
            .iter()
            .enumerate()
            .fold(0.0f32, |acc, (k, v)| acc + *v * k as f32);
        let above = x.iter().fold(0, |n, &v| n + (v > x[i]) as i32);
        *o = match i {
            0 => total,
            1 => squares,
            2 => top,
            3 => doubled,
            4 => product as f32,
            5 => weighted,
            _ => above as f32,
        };
    }
}

pub fn iterator_reductions_over_slices(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = vec![0.5, -1.25, 3.0, 2.75, -0.125, 1.5, 4.25, -2.0];
    let w: Vec<i32> = vec![2, -3, 1, 4];
    let mut out = vec![0.0f32; 8];
    reductions(o, &mut out, &x, &w).map_err(|e| e.to_string())?;
    let want = vec![
        x.iter().sum::<f32>(),
        x.iter().map(|v| v * v).sum::<f32>(),
        x.iter().fold(f32::MIN, |a, &b| a.max(b)),
        x.iter().fold(0.0, |acc, b| acc + *b * 2.0),
        w.iter().product::<i32>() as f32,
        x.iter()
            .enumerate()
            .fold(0.0f32, |acc, (k, v)| acc + *v * k as f32),
        x.iter().filter(|&&v| v > x[6]).count() as f32,
        x.iter().filter(|&&v| v > x[7]).count() as f32,
    ];
    fused_f32(o, "reductions", &out, &want)
}

/// `x.get(i)` of a slice: `if let Some(&v)`, `if let Some(v)` with `*v`, and
/// `.copied().unwrap_or(d)`, each `None` past the end.
#[offload_kernel]
fn neighbours(mut out: Region<f32, Linear1D>, x: &[f32], w: &[i32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let next = x.get(i + 1).copied().unwrap_or(0.0);
        let mut second = -1.0f32;
        if let Some(&a) = x.get(i + 2) {
            second = a;
        }
        let third = if let Some(a) = x.get(i + 3) {
            *a * 2.0
        } else {
            -2.0
        };
        let weight = w.get(i).cloned().unwrap_or(-7);
        *o = next + 10.0 * second + 100.0 * third + 1000.0 * weight as f32;
    }
}

pub fn slices_read_with_get(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let w: Vec<i32> = vec![1, 2, 3];
    let mut out = vec![0.0f32; 6];
    neighbours(o, &mut out, &x, &w).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..6)
        .map(|i| {
            let next = x.get(i + 1).copied().unwrap_or(0.0);
            let second = x.get(i + 2).copied().unwrap_or(-1.0);
            let third = x.get(i + 3).map_or(-2.0, |a| *a * 2.0);
            let weight = w.get(i).cloned().unwrap_or(-7);
            next + 10.0 * second + 100.0 * third + 1000.0 * weight as f32
        })
        .collect();
    compare("get", &out, &want)
}

/// `saturating_add`, `saturating_sub` and `saturating_mul` (chosen by `op`) of signed
/// and unsigned integers from 8 to 64 bits.
#[offload_kernel]
fn saturating(
    mut small: Region<i8, Linear1D>,
    mut wide: Region<i64, Linear1D>,
    mut bytes: Region<u8, Linear1D>,
    mut words: Region<u64, Linear1D>,
    mut ints: Region<i32, Linear1D>,
    a: &[i64],
    b: &[i64],
    op: u32,
) {
    let i = small.index();
    let (x, y) = (
        a.get(i).copied().unwrap_or(0),
        b.get(i).copied().unwrap_or(0),
    );
    if let Some(v) = small.get_mut() {
        let (x, y) = (x as i8, y as i8);
        *v = if op == 0 {
            x.saturating_add(y)
        } else if op == 1 {
            x.saturating_sub(y)
        } else {
            x.saturating_mul(y)
        };
    }
    if let Some(v) = wide.get_mut() {
        *v = if op == 0 {
            x.saturating_add(y)
        } else if op == 1 {
            x.saturating_sub(y)
        } else {
            x.saturating_mul(y)
        };
    }
    if let Some(v) = bytes.get_mut() {
        let (x, y) = (x as u8, y as u8);
        *v = if op == 0 {
            x.saturating_add(y)
        } else if op == 1 {
            x.saturating_sub(y)
        } else {
            x.saturating_mul(y)
        };
    }
    if let Some(v) = words.get_mut() {
        let (x, y) = (x as u64, y as u64);
        *v = if op == 0 {
            x.saturating_add(y)
        } else if op == 1 {
            x.saturating_sub(y)
        } else {
            x.saturating_mul(y)
        };
    }
    if let Some(v) = ints.get_mut() {
        let (x, y) = (x as i32, y as i32);
        *v = if op == 0 {
            x.saturating_add(y)
        } else if op == 1 {
            x.saturating_sub(y)
        } else {
            x.saturating_mul(y)
        };
    }
}

pub fn saturating_arithmetic_clamps_like_rust(o: LaunchOptions) -> CaseResult {
    // Every pair of edge values of every width, as i64 bit patterns.
    let edges: Vec<i64> = [
        0,
        1,
        -1,
        2,
        -2,
        3,
        100,
        -100,
        127,
        -128,
        128,
        255,
        256,
        40_000,
        -40_000,
        i32::MAX as i64,
        i32::MIN as i64,
        u32::MAX as i64,
        1 << 31,
        3_037_000_500,
        -3_037_000_500,
        i64::MAX,
        i64::MIN,
        i64::MAX / 3,
        i64::MIN / 2 + 7,
        -4_294_967_296,
    ]
    .to_vec();
    let (a, b): (Vec<i64>, Vec<i64>) = edges
        .iter()
        .flat_map(|&x| edges.iter().map(move |&y| (x, y)))
        .unzip();
    let n = a.len();
    for op in 0..3u32 {
        let (mut small, mut wide) = (vec![0i8; n], vec![0i64; n]);
        let (mut bytes, mut words, mut ints) = (vec![0u8; n], vec![0u64; n], vec![0i32; n]);
        saturating(
            o, &mut small, &mut wide, &mut bytes, &mut words, &mut ints, &a, &b, op,
        )
        .map_err(|e| e.to_string())?;
        macro_rules! want {
            ($t:ty) => {
                a.iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let (x, y) = (x as $t, y as $t);
                        match op {
                            0 => x.saturating_add(y),
                            1 => x.saturating_sub(y),
                            _ => x.saturating_mul(y),
                        }
                    })
                    .collect::<Vec<$t>>()
            };
        }
        let what = ["saturating_add", "saturating_sub", "saturating_mul"][op as usize];
        compare(&format!("{what} i8"), &small, &want!(i8))?;
        compare(&format!("{what} i64"), &wide, &want!(i64))?;
        compare(&format!("{what} u8"), &bytes, &want!(u8))?;
        compare(&format!("{what} u64"), &words, &want!(u64))?;
        compare(&format!("{what} i32"), &ints, &want!(i32))?;
    }
    Ok(())
}

/// `zip` in loops and reductions, `fold` with a function, `first`/`last`, `is_empty`,
/// `T::from`, and closures bound to names (capturing, mutating what they capture, calling
/// each other, and keeping the names of where they were written).
#[offload_kernel]
fn conveniences(mut out: Region<f32, Linear1D>, a: &[f32], b: &[f32], w: &[u8]) {
    let i = out.index();
    let dot: f32 = a.iter().zip(b.iter()).map(|(p, q)| p * q).sum();
    let mut weighted = 0.0f32;
    for (k, (&p, q)) in a.iter().zip(w).enumerate() {
        weighted += p * f32::from(*q) + k as f32;
    }
    let top = b.iter().copied().fold(f32::MIN, f32::max);
    let ends = a.first().copied().unwrap_or(-1.0) + b.last().copied().unwrap_or(-2.0);
    let mut last_w = 0u32;
    if let Some(&v) = w.last() {
        last_w = u32::from(v);
    }
    let none = if w.is_empty() { 1.0 } else { 0.0 };
    let scale = 0.5f32;
    let half = |v: f32| v * scale;
    let mut calls = 0u32;
    let mut count = |v: f32| -> f32 {
        calls += 1;
        half(v) + 1.0
    };
    // A later `scale` does not change what `half` captured.
    let scale = 100.0f32;
    let own = if i < a.len() {
        count(a[i]) + count(scale)
    } else {
        0.0
    };
    if let Some(o) = out.get_mut() {
        *o = dot
            + weighted
            + top
            + ends
            + last_w as f32
            + none
            + own
            + calls as f32
            + f64::from(scale) as f32;
    }
}

pub fn zips_closures_and_small_conveniences(o: LaunchOptions) -> CaseResult {
    let a: Vec<f32> = (0..37).map(|k| (k as f32 * 0.37).sin()).collect();
    let b: Vec<f32> = (0..29).map(|k| (k as f32 * 0.11).cos() * 3.0).collect();
    let w: Vec<u8> = (0..41).map(|k| (k * 7 % 251) as u8).collect();
    let mut out = vec![0.0f32; 50];
    conveniences(o, &mut out, &a, &b, &w).map_err(|e| e.to_string())?;
    let dot: f32 = a.iter().zip(b.iter()).map(|(p, q)| p * q).sum();
    let mut weighted = 0.0f32;
    for (k, (&p, q)) in a.iter().zip(&w).enumerate() {
        weighted += p * f32::from(*q) + k as f32;
    }
    let top = b.iter().copied().fold(f32::MIN, f32::max);
    let ends = a[0] + b[b.len() - 1];
    let last_w = *w.last().unwrap() as f32;
    let want: Vec<f32> = (0..50)
        .map(|i| {
            let (own, calls) = if i < a.len() {
                (a[i] * 0.5 + 1.0 + 100.0 * 0.5 + 1.0, 2.0)
            } else {
                (0.0, 0.0)
            };
            dot + weighted + top + ends + last_w + own + calls + 100.0
        })
        .collect();
    // Sums of tens of products: fused on a GPU, each rounding moves the total a little.
    if on_gpu(o) {
        close_f32("conveniences", &out, &want, 1e-5)
    } else {
        compare("conveniences", &out, &want)
    }
}

/// `mem::swap`, tuple assignment, `matches!` and `[v; N]` arrays.
#[offload_kernel]
fn shuffled(mut out: Region<i32, Linear1D>, x: &[i32]) {
    let i = out.index();
    let mut lo = x.get(i).copied().unwrap_or(0);
    let mut hi = x.get(i + 1).copied().unwrap_or(0);
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    let (mut p, mut q) = (lo * 3, hi - 1);
    (p, q) = (q, p);
    let small = matches!(lo, -3..=3 | 100) as i32;
    let even_big = matches!(hi, h if h % 2 == 0 && h > 10) as i32;
    let weights = [2i32; 3];
    if let Some(v) = out.get_mut() {
        *v = lo * 1000
            + hi * 10
            + (p - q) * weights[2]
            + small * 7
            + even_big * weights.len() as i32;
    }
}

pub fn swaps_matches_and_repeated_arrays(o: LaunchOptions) -> CaseResult {
    let x: Vec<i32> = (0..40)
        .map(|k| (k * 37 % 29) - 8)
        .chain([100, 12, 3])
        .collect();
    let mut out = vec![0i32; x.len()];
    shuffled(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..x.len())
        .map(|i| {
            let mut lo = x.get(i).copied().unwrap_or(0);
            let mut hi = x.get(i + 1).copied().unwrap_or(0);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            let (p, q) = (hi - 1, lo * 3);
            let small = matches!(lo, -3..=3 | 100) as i32;
            let even_big = matches!(hi, h if h % 2 == 0 && h > 10) as i32;
            lo * 1000 + hi * 10 + (p - q) * 2 + small * 7 + even_big * 3
        })
        .collect();
    compare("shuffled", &out, &want)?;
    let mut pairs: Vec<i32> = (0..41).collect();
    swapped_pairs(o, &mut pairs, 2).map_err(|e| e.to_string())?;
    let mut want: Vec<i32> = (0..41).collect();
    for c in want.chunks_mut(3) {
        if c.len() == 3 {
            c.swap(0, 2);
        }
        let mut a = [c[0], 7, 9];
        a.swap(1, 2);
        c[0] = a[0] * 100 + a[1];
    }
    compare("swapped pairs", &pairs, &want)
}

/// `swap` on a chunk (at run-time indices) and on a local array.
#[offload_kernel]
fn swapped_pairs(mut out: Region<i32, Chunked<3>>, last: usize) {
    if let Some(mut c) = out.get_mut() {
        if c.len() == 3 {
            c.swap(0, last);
        }
        let mut a = [c[0], 7, 9];
        a.swap(1, 2);
        c[0] = a[0] * 100 + a[1];
    }
}

/// `let mut` arrays: the thread's own, written at constant and run-time indices, by
/// plain and compound assignment, and read back by index, loop and reduction.
#[offload_kernel]
fn register_tiles(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    let mut acc = [0.0f32; 4];
    let mut hist = [0u32; 8];
    for k in 0..x.len() {
        acc[k % 4] += x[k] * (i + 1) as f32;
        let bin = (x[k] * 8.0) as usize;
        hist[bin.min(7)] += 1;
    }
    acc[0] = acc[0] * 0.5;
    let j = i % 4;
    acc[j] -= 1.0;
    let most = hist.iter().copied().fold(0u32, u32::max);
    let mut order = [3.0f32, 1.0, 2.0];
    if order[0] > order[1] {
        (order[0], order[1]) = (order[1], order[0]);
    }
    if let Some(v) = out.get_mut() {
        let mut total = 0.0;
        for (k, a) in acc.iter().enumerate() {
            total += a * (k + 1) as f32;
        }
        *v = total + most as f32 + order[0] * 100.0 + order[1] * 1000.0;
    }
}

pub fn arrays_of_the_thread_are_written(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..53).map(|k| ((k * 29 % 41) as f32) / 41.0).collect();
    let mut out = vec![0.0f32; 300];
    register_tiles(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..300)
        .map(|i| {
            let mut acc = [0.0f32; 4];
            let mut hist = [0u32; 8];
            for k in 0..x.len() {
                acc[k % 4] += x[k] * (i + 1) as f32;
                let bin = (x[k] * 8.0) as usize;
                hist[bin.min(7)] += 1;
            }
            acc[0] *= 0.5;
            acc[i % 4] -= 1.0;
            let most = *hist.iter().max().unwrap();
            let mut total = 0.0;
            for (k, a) in acc.iter().enumerate() {
                total += a * (k + 1) as f32;
            }
            total + most as f32 + 1.0 * 100.0 + 3.0 * 1000.0
        })
        .collect();
    // Sums of tens of products: fused on a GPU, each rounding moves the total a little.
    if on_gpu(o) {
        close_f32("register_tiles", &out, &want, 1e-5)
    } else {
        compare("register_tiles", &out, &want)
    }
}

/// An inclusive scan of each 64-element block in shared memory (Hillis and Steele: two
/// barriers per step inside a loop). Its counter `s` is typed only by its use with
/// `thread_rank()`, which inference once left to the literal's default.
#[offload_kernel]
fn block_scan64(mut y: Region<i32, Linear1D>, x: &[i32]) {
    let mut tile = Shared::<i32, 64>::new();
    let t = thread_rank();
    tile.write(x.get(y.index()).copied().unwrap_or(0));
    sync_threads();
    let mut s = 1;
    while s < 64 {
        let add = if t >= s { tile[t - s] } else { 0 };
        sync_threads();
        tile[t] += add;
        sync_threads();
        s *= 2;
    }
    if let Some(v) = y.get_mut() {
        *v = tile[t];
    }
}

pub fn scans_blocks_with_barriers_in_a_loop(o: LaunchOptions) -> CaseResult {
    let x: Vec<i32> = (0..1000).map(|k| (k * 37 % 23) - 11).collect();
    let mut y = vec![0i32; x.len()];
    let o = LaunchOptions {
        thread_dim: Some([64, 1, 1]),
        ..o
    };
    block_scan64(o, &mut y, &x).map_err(|e| e.to_string())?;
    let mut want = x.clone();
    for block in want.chunks_mut(64) {
        for k in 1..block.len() {
            block[k] += block[k - 1];
        }
    }
    compare("block_scan64", &y, &want)
}

#[offload_kernel]
fn multiply_add(mut out: Region<f32, Linear1D>, a: &[f32], b: &[f32], c: &[f32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = a[i] * b[i] + c[i];
    }
}

#[offload_kernel(fma = false)]
fn multiply_then_add(mut out: Region<f32, Linear1D>, a: &[f32], b: &[f32], c: &[f32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = a[i] * b[i] + c[i];
    }
}

/// A GPU fuses `a * b + c` into one FMA, as nvcc does (the product is not rounded);
/// `#[offload_kernel(fma = false)]` keeps Rust's two roundings, which the CPU backend
/// always does.
pub fn multiply_adds_fuse_on_gpus_unless_turned_off(o: LaunchOptions) -> CaseResult {
    let n = 4096;
    let f = |k: usize, m: usize| ((k * m) % 1000) as f32 / 7.0 - 70.0;
    let [a, b, c] = [13, 31, 57].map(|m| (0..n).map(|i| f(i, m)).collect::<Vec<f32>>());
    let rounded: Vec<f32> = (0..n).map(|i| a[i] * b[i] + c[i]).collect();
    let fused: Vec<f32> = (0..n).map(|i| a[i].mul_add(b[i], c[i])).collect();
    if rounded == fused {
        return Err("the inputs do not tell a fused multiply-add from two roundings".into());
    }
    let mut out = vec![0.0f32; n];
    multiply_add(o, &mut out, &a, &b, &c).map_err(|e| e.to_string())?;
    let want = if on_gpu(o) { &fused } else { &rounded };
    compare("a * b + c, by default", &out, want)?;
    multiply_then_add(o, &mut out, &a, &b, &c).map_err(|e| e.to_string())?;
    compare("a * b + c with fma = false", &out, &rounded)
}

#[offload_kernel]
fn int_ops(mut out: Region<i32, Linear1D>, a: &[i32], b: &[i32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let x = a[i];
        let y = b[i];
        let mut r = x.wrapping_mul(31) + y * 7 - (x ^ y);
        r += (x / y) * 3 + x % y;
        r ^= (x << (y & 15)) | (x >> 3);
        r -= !x & y;
        *v = -r;
    }
}

pub fn integer_arithmetic_wraps_and_divides_like_rust(o: LaunchOptions) -> CaseResult {
    let n = 5000usize;
    let a: Vec<i32> = (0..n)
        .map(|i| (i as i32 * 7919).wrapping_mul(65537) ^ 0x5a5a)
        .collect();
    let b: Vec<i32> = (0..n)
        .map(|i| {
            let v = (i as i32 % 97) - 48;
            if v == 0 { 5 } else { v }
        })
        .collect();
    let mut out = vec![0i32; n];
    int_ops(o, &mut out, &a, &b).map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let (x, y) = (a[i], b[i]);
            let mut r = x
                .wrapping_mul(31)
                .wrapping_add(y.wrapping_mul(7))
                .wrapping_sub(x ^ y);
            r = r.wrapping_add((x / y).wrapping_mul(3)).wrapping_add(x % y);
            r ^= x.wrapping_shl((y & 15) as u32) | (x >> 3);
            r = r.wrapping_sub(!x & y);
            r.wrapping_neg()
        })
        .collect();
    compare("int_ops", &out, &want)
}

#[offload_kernel]
fn narrow_ops(mut out: Region<u8, Linear1D>, mut wide: Region<u64, Linear1D>, a: &[u8], b: u64) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let x = a[i];
        *v = x.wrapping_add(200) / 3 + (x >> 1) * 2;
    }
    if let Some(w) = wide.get_mut() {
        let x = a[i] as u64;
        *w = (b - x) % 1000 + (b / (x + 1)) + (x << 60 >> 61);
    }
}

pub fn unsigned_and_narrow_integers(o: LaunchOptions) -> CaseResult {
    let n = 3000usize;
    let a: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
    let b = u64::MAX - 12345;
    let mut out = vec![0u8; n];
    let mut wide = vec![0u64; n];
    narrow_ops(o, &mut out, &mut wide, &a, b).map_err(|e| e.to_string())?;
    let want: Vec<u8> = a
        .iter()
        .map(|&x| (x.wrapping_add(200) / 3).wrapping_add((x >> 1).wrapping_mul(2)))
        .collect();
    compare("u8", &out, &want)?;
    let want: Vec<u64> = a
        .iter()
        .map(|&x| {
            let x = x as u64;
            (b - x) % 1000 + (b / (x + 1)) + (x << 60 >> 61)
        })
        .collect();
    compare("u64", &wide, &want)
}

#[offload_kernel]
fn casts(
    mut ints: Region<i32, Linear1D>,
    mut bytes: Region<u8, Linear1D>,
    mut floats: Region<f32, Linear1D>,
    f: &[f32],
    big: &[i64],
) {
    let i = ints.index();
    if let Some(v) = ints.get_mut() {
        *v = f[i] as i32 + (f[i] > 0.0) as i32;
    }
    if let Some(v) = bytes.get_mut() {
        *v = (f[i] as u8) ^ (big[i] as u8);
    }
    if let Some(v) = floats.get_mut() {
        *v = big[i] as f32 + (big[i] as u16) as f32 + (f[i] as f64 * 0.5) as f32;
    }
}

pub fn casts_follow_rust_as(o: LaunchOptions) -> CaseResult {
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e9,
        -3e9,
        255.9,
        256.0,
        -0.7,
        2147483520.0,
        1e-30,
    ];
    let n = 1000usize;
    let f: Vec<f32> = (0..n)
        .map(|i| {
            if i < special.len() {
                special[i]
            } else {
                (i as f32 - 500.0) * 1.37
            }
        })
        .collect();
    let big: Vec<i64> = (0..n)
        .map(|i| (i as i64 - 500) * 0x1234_5678_9abc)
        .collect();
    let (mut ints, mut bytes, mut floats) = (vec![0i32; n], vec![0u8; n], vec![0f32; n]);
    casts(o, &mut ints, &mut bytes, &mut floats, &f, &big).map_err(|e| e.to_string())?;
    let want: Vec<i32> = f
        .iter()
        .map(|&x| (x as i32).wrapping_add((x > 0.0) as i32))
        .collect();
    compare("float to int", &ints, &want)?;
    let want: Vec<u8> = (0..n).map(|i| (f[i] as u8) ^ (big[i] as u8)).collect();
    compare("to u8", &bytes, &want)?;
    let want: Vec<f32> = (0..n)
        .map(|i| big[i] as f32 + (big[i] as u16) as f32 + (f[i] as f64 * 0.5) as f32)
        .collect();
    close_f32("to f32", &floats, &want, 0.0)
}

#[offload_kernel]
fn control(mut out: Region<i64, Linear1D>, limit: i64) {
    let i = out.index() as i64;
    if let Some(v) = out.get_mut() {
        if i % 10 == 9 {
            *v = -1;
            return;
        }
        let mut acc: i64 = 0;
        let mut k = 0;
        while k < i % 50 {
            k += 1;
            if k % 3 == 0 {
                continue;
            }
            acc += k;
        }
        let mut steps = 0;
        'outer: loop {
            loop {
                steps += 1;
                if steps > limit {
                    break 'outer;
                }
                if steps % 4 == 0 {
                    break;
                }
            }
        }
        let parity = if acc % 2 == 0 { 1 } else { 2 };
        *v = acc * 10 + parity + steps * 1000;
    }
}

pub fn control_flow(o: LaunchOptions) -> CaseResult {
    let n = 777usize;
    let mut out = vec![0i64; n];
    control(o, &mut out, 13).map_err(|e| e.to_string())?;
    let want: Vec<i64> = (0..n as i64)
        .map(|i| {
            if i % 10 == 9 {
                return -1;
            }
            let acc: i64 = (1..=i % 50).filter(|k| k % 3 != 0).sum();
            let parity = if acc % 2 == 0 { 1 } else { 2 };
            acc * 10 + parity + 14 * 1000
        })
        .collect();
    compare("control", &out, &want)
}

#[offload_kernel]
fn loops(mut out: Region<u32, Linear1D>) {
    let i = out.index() as u32;
    if let Some(v) = out.get_mut() {
        let mut acc = 0u32;
        for k in 0..i % 20 {
            acc += k;
        }
        for k in (3..=i % 30).step_by(4) {
            acc += k * 100;
        }
        let mut count = 0u32;
        for _ in 0u8..=255 {
            count += 1;
        }
        for k in (250u8..=255).step_by(2) {
            count += k as u32;
        }
        *v = acc + count * 100_000;
    }
}

pub fn for_loops_over_ranges(o: LaunchOptions) -> CaseResult {
    let n = 300usize;
    let mut out = vec![0u32; n];
    loops(o, &mut out).map_err(|e| e.to_string())?;
    let want: Vec<u32> = (0..n as u32)
        .map(|i| {
            let acc: u32 =
                (0..i % 20).sum::<u32>() + (3..=i % 30).step_by(4).map(|k| k * 100).sum::<u32>();
            let count = 256 + (250u8..=255).step_by(2).map(|k| k as u32).sum::<u32>();
            acc + count * 100_000
        })
        .collect();
    compare("loops", &out, &want)
}

#[offload_kernel]
fn classify(mut out: Region<i32, Linear1D>, x: &[i32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = match x[i] {
            0 => 100,
            1 | 2 | 3 => 200,
            -10..=-1 => 300,
            4..10 => 400,
            n if n % 2 == 0 => n / 2,
            i32::MIN..=-11 => -1,
            _ => 7,
        };
    }
}

pub fn match_on_integers(o: LaunchOptions) -> CaseResult {
    let x: Vec<i32> = (-40..60).chain([i32::MIN, i32::MAX]).collect();
    let mut out = vec![0i32; x.len()];
    classify(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<i32> = x
        .iter()
        .map(|&v| match v {
            0 => 100,
            1..=3 => 200,
            -10..=-1 => 300,
            4..10 => 400,
            n if n % 2 == 0 => n / 2,
            i32::MIN..=-11 => -1,
            _ => 7,
        })
        .collect();
    compare("match", &out, &want)
}

#[offload_kernel]
fn math32(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let a = x[i];
        let p = a.abs() + 0.5;
        let r = p.sqrt()
            + p.ln()
            + p.log2()
            + a.sin() * a.cos()
            + (a * 0.1).tan()
            + a.tanh()
            + (a * 0.05).exp()
            + p.powi(3)
            + p.powf(0.7)
            + a.floor()
            - a.ceil()
            + a.round()
            + a.trunc()
            + a.min(0.25)
            + a.max(-0.25)
            + a.mul_add(2.0, 1.0)
            + a.clamp(-1.0, 1.0)
            + p.log10()
            + (a * 0.1).exp2();
        *v = r;
    }
}

pub fn float_math_f32(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..2000).map(|i| (i as f32 - 1000.0) * 0.013).collect();
    let mut out = vec![0f32; x.len()];
    math32(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = x
        .iter()
        .map(|&a| {
            let p = a.abs() + 0.5;
            p.sqrt()
                + p.ln()
                + p.log2()
                + a.sin() * a.cos()
                + (a * 0.1).tan()
                + a.tanh()
                + (a * 0.05).exp()
                + p.powi(3)
                + p.powf(0.7)
                + a.floor()
                - a.ceil()
                + a.round()
                + a.trunc()
                + a.min(0.25)
                + a.max(-0.25)
                + a.mul_add(2.0, 1.0)
                + a.clamp(-1.0, 1.0)
                + p.log10()
                + (a * 0.1).exp2()
        })
        .collect();
    close_f32("math f32", &out, &want, 1e-5)
}

#[offload_kernel]
fn math64(mut out: Region<f64, Linear1D>, x: &[f64]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let a = x[i];
        *v = a.sin()
            + a.cos() * (a * 0.01).exp()
            + a.abs().sqrt()
            + (a + 0.5).powi(-2)
            + std::f64::consts::PI * a.tanh()
            + (a.abs() + 1.0).ln()
            + a.mul_add(a, -1.0);
    }
}

pub fn float_math_f64(o: LaunchOptions) -> CaseResult {
    let x: Vec<f64> = (0..2000).map(|i| (i as f64 - 1000.0) * 0.0173).collect();
    let mut out = vec![0f64; x.len()];
    math64(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f64> = x
        .iter()
        .map(|&a| {
            a.sin()
                + a.cos() * (a * 0.01).exp()
                + a.abs().sqrt()
                + (a + 0.5).powi(-2)
                + std::f64::consts::PI * a.tanh()
                + (a.abs() + 1.0).ln()
                + a.mul_add(a, -1.0)
        })
        .collect();
    close_f64("math f64", &out, &want, 1e-12)
}

#[offload_kernel]
fn int_methods(mut out: Region<i64, Linear1D>, x: &[i64], y: &[u32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let a = x[i];
        let b = y[i];
        *v = a.min(17)
            + a.max(-17)
            + a.abs()
            + (a % 7).pow(b % 5)
            + b.leading_zeros() as i64
            + b.trailing_zeros() as i64 * 100
            + b.count_ones() as i64 * 10_000
            + a.wrapping_sub(3).wrapping_add(1);
    }
}

pub fn integer_methods(o: LaunchOptions) -> CaseResult {
    let n = 1000usize;
    let x: Vec<i64> = (0..n as i64).map(|i| (i - 500) * 3).collect();
    let y: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let mut out = vec![0i64; n];
    int_methods(o, &mut out, &x, &y).map_err(|e| e.to_string())?;
    let want: Vec<i64> = (0..n)
        .map(|i| {
            let (a, b) = (x[i], y[i]);
            a.min(17)
                + a.max(-17)
                + a.abs()
                + (a % 7).pow(b % 5)
                + b.leading_zeros() as i64
                + b.trailing_zeros() as i64 * 100
                + b.count_ones() as i64 * 10_000
                + a.wrapping_sub(3).wrapping_add(1)
        })
        .collect();
    compare("int methods", &out, &want)
}

#[offload_kernel]
fn consts(mut out: Region<f64, Linear1D>, mut ints: Region<i32, Linear1D>) {
    const SCALE: f64 = 2.5;
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = std::f64::consts::PI * SCALE + f64::EPSILON + (i as f64) * core::f64::consts::E;
    }
    if let Some(v) = ints.get_mut() {
        *v = i32::MAX - i as i32 + u8::MAX as i32;
    }
}

pub fn constants(o: LaunchOptions) -> CaseResult {
    let n = 64usize;
    let (mut out, mut ints) = (vec![0f64; n], vec![0i32; n]);
    consts(o, &mut out, &mut ints).map_err(|e| e.to_string())?;
    let want: Vec<f64> = (0..n)
        .map(|i| std::f64::consts::PI * 2.5 + f64::EPSILON + (i as f64) * std::f64::consts::E)
        .collect();
    fused_f64(o, "float consts", &out, &want)?;
    let want: Vec<i32> = (0..n)
        .map(|i| (i32::MAX - i as i32).wrapping_add(255))
        .collect();
    compare("int consts", &ints, &want)
}

#[offload_kernel]
fn guarded(mut out: Region<i32, Linear1D>, x: &[i32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let inside = i < x.len() && x[i] > 0;
        let edge = i >= x.len() || x[i] == 0;
        *v = inside as i32 + 2 * edge as i32;
    }
}

pub fn short_circuit_guards_a_bounds_check(o: LaunchOptions) -> CaseResult {
    let x: Vec<i32> = (0..100).map(|i| (i % 3) - 1).collect();
    let mut out = vec![-1i32; 150];
    guarded(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..150)
        .map(|i| {
            let inside = i < x.len() && x[i] > 0;
            let edge = i >= x.len() || x[i] == 0;
            inside as i32 + 2 * edge as i32
        })
        .collect();
    compare("short circuit", &out, &want)
}

#[offload_kernel]
fn panics_at(mut out: Region<i32, Linear1D>, at: usize) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        if i == at {
            panic!("thread hit the bad element");
        }
        *v = 1;
    }
}

pub fn explicit_panic_is_reported(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0i32; 1000];
    let result = panics_at(o, &mut out, 640);
    expect_panic(
        result,
        "thread hit the bad element",
        "panic!(\"thread hit the bad element\")",
    )?;
    compare("data after a panic", &out, &vec![0i32; 1000])
}

#[offload_kernel]
fn asserts(mut out: Region<u32, Linear1D>, x: &[u32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        assert!(x[i] < 500);
        *v = x[i];
    }
}

pub fn assert_failure_is_reported(o: LaunchOptions) -> CaseResult {
    let x: Vec<u32> = (0..600).collect();
    let mut out = vec![0u32; 600];
    expect_panic(
        asserts(o, &mut out, &x),
        "assertion failed: x[i] < 500",
        "assert!(x[i] < 500)",
    )?;
    let x: Vec<u32> = (0..400).collect();
    let mut out = vec![0u32; 400];
    asserts(o, &mut out, &x).map_err(|e| e.to_string())?;
    compare("passing asserts", &out, &x)
}

#[offload_kernel]
fn divide(mut out: Region<i32, Linear1D>, x: &[i32], y: &[i32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = x[i] / y[i];
    }
}

pub fn division_by_zero_is_reported(o: LaunchOptions) -> CaseResult {
    let x = vec![10i32; 300];
    let mut y = vec![3i32; 300];
    y[123] = 0;
    let mut out = vec![0i32; 300];
    expect_panic(
        divide(o, &mut out, &x, &y),
        "attempt to divide by zero",
        "*v = x[i] / y[i];",
    )
}

pub fn division_overflow_is_reported(o: LaunchOptions) -> CaseResult {
    let mut x = vec![10i32; 300];
    let mut y = vec![-1i32; 300];
    x[7] = i32::MIN;
    y[8] = 2;
    let mut out = vec![0i32; 300];
    expect_panic(
        divide(o, &mut out, &x, &y),
        "attempt to divide with overflow",
        "*v = x[i] / y[i];",
    )
}

// The dividend and divisor are the thread's own region elements: each is read once, so
// the checks before the division are about the values it divides.
#[offload_kernel]
fn divide_in_place(mut q: Region<i64, Linear1D>, mut r: Region<i64, Linear1D>, d: i64) {
    if let Some(v) = q.get_mut() {
        *v /= d;
    }
    if let Some(v) = r.get_mut() {
        *v = 1000 / *v + (*v).rem_euclid(d) + *v % d;
    }
}

pub fn region_elements_divide_in_place(o: LaunchOptions) -> CaseResult {
    let q0: Vec<i64> = (0..300).map(|i| i * 37 - 5000).collect();
    let r0: Vec<i64> = (0..300)
        .map(|i| if i % 2 == 0 { i + 1 } else { -3 * i })
        .collect();
    let (mut q, mut r) = (q0.clone(), r0.clone());
    divide_in_place(o, &mut q, &mut r, 7).map_err(|e| e.to_string())?;
    let want_q: Vec<i64> = q0.iter().map(|v| v / 7).collect();
    let want_r: Vec<i64> = r0
        .iter()
        .map(|v| 1000 / v + v.rem_euclid(7) + v % 7)
        .collect();
    compare("q /= d", &q, &want_q)?;
    compare("1000 / r + ...", &r, &want_r)?;
    let mut zero = r0.clone();
    zero[200] = 0;
    expect_panic(
        divide_in_place(o, &mut q0.clone(), &mut zero, 7),
        "attempt to divide by zero",
        "*v = 1000 / *v + (*v).rem_euclid(d) + *v % d;",
    )?;
    let mut min = q0.clone();
    min[3] = i64::MIN;
    expect_panic(
        divide_in_place(o, &mut min, &mut r0.clone(), -1),
        "attempt to divide with overflow",
        "*v /= d;",
    )
}

#[offload_kernel]
fn flags(mut out: Region<bool, Linear1D>, x: &[bool], mut lens: Region<usize, Linear1D>) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = !x[i] && i % 3 != 0;
    }
    let count = lens.len();
    if let Some(l) = lens.get_mut() {
        *l = x.len() * 1000 + count + i;
    }
}

pub fn bool_regions_and_lengths(o: LaunchOptions) -> CaseResult {
    let x: Vec<bool> = (0..500).map(|i| i % 5 == 0).collect();
    let mut out = vec![false; 500];
    let mut lens = vec![0usize; 40];
    flags(o, &mut out, &x, &mut lens).map_err(|e| e.to_string())?;
    let want: Vec<bool> = (0..500).map(|i| !x[i] && i % 3 != 0).collect();
    compare("bools", &out, &want)?;
    let want: Vec<usize> = (0..40).map(|i| 500 * 1000 + 40 + i).collect();
    compare("lengths", &lens, &want)
}

#[offload_kernel]
fn transpose_add(mut out: Region<f32, Linear2D>, a: &[f32], b: &[f32]) {
    let r = out.row();
    let c = out.col();
    let w = out.width();
    let h = out.height();
    if let Some(v) = out.get_mut() {
        *v = a[r * w + c] * 2.0 + b[c * h + r];
    }
}

pub fn linear_2d_rows_and_columns(o: LaunchOptions) -> CaseResult {
    let (w, h) = (37usize, 23usize);
    let a: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..w * h).map(|i| (i % 11) as f32).collect();
    let mut out = vec![-1f32; w * h];
    transpose_add(o, Region::new_2d(&mut out, w), &a, &b).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..w * h)
        .map(|i| {
            let (r, c) = (i / w, i % w);
            a[r * w + c] * 2.0 + b[c * h + r]
        })
        .collect();
    compare("linear 2d", &out, &want)
}

#[offload_kernel]
fn prefix_in_chunks(mut out: Region<u32, Chunked<8>>, x: &[u32]) {
    let start = out.index();
    if let Some(c) = out.get_mut() {
        let mut acc = 0u32;
        for k in 0..c.len() {
            acc += x[start + k];
            c[k] = acc;
        }
    }
}

pub fn chunked_regions_give_each_thread_a_chunk(o: LaunchOptions) -> CaseResult {
    let n = 1001usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i % 13 + 1).collect();
    let mut out = vec![0u32; n];
    prefix_in_chunks(o, &mut out, &x).map_err(|e| e.to_string())?;
    let mut want = vec![0u32; n];
    for chunk in (0..n).step_by(8) {
        let mut acc = 0;
        for k in chunk..(chunk + 8).min(n) {
            acc += x[k];
            want[k] = acc;
        }
    }
    compare("chunked", &out, &want)
}

#[offload_kernel]
fn blur(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let mut sum = 0.0f32;
    let mut count = 0.0f32;
    for dr in -1..=1 {
        for dc in -1..=1 {
            if let Some(p) = img.get(dr, dc) {
                sum += p;
                count += 1.0;
            }
        }
    }
    let corner = img.get_clamped(-1, 1);
    if let Some(v) = out.get_mut() {
        *v = sum / count + corner * 0.5;
    }
}

pub fn stencil_reads_neighbours(o: LaunchOptions) -> CaseResult {
    let (w, h) = (29usize, 19usize);
    let img: Vec<f32> = (0..w * h).map(|i| ((i * 7) % 23) as f32).collect();
    let mut out = vec![0f32; w * h];
    blur(o, Region::new_2d(&mut out, w), Region::stencil(&img, w)).map_err(|e| e.to_string())?;
    let at = |r: isize, c: isize| img[r as usize * w + c as usize];
    let want: Vec<f32> = (0..w * h)
        .map(|i| {
            let (r, c) = ((i / w) as isize, (i % w) as isize);
            let (mut sum, mut count) = (0f32, 0f32);
            for dr in -1..=1 {
                for dc in -1..=1 {
                    let (rr, cc) = (r + dr, c + dc);
                    if rr >= 0 && rr < h as isize && cc >= 0 && cc < w as isize {
                        sum += at(rr, cc);
                        count += 1.0;
                    }
                }
            }
            let corner = at(
                (r - 1).clamp(0, h as isize - 1),
                (c + 1).clamp(0, w as isize - 1),
            );
            sum / count + corner * 0.5
        })
        .collect();
    compare("stencil", &out, &want)
}

#[offload_kernel]
fn overrun_chunk(mut out: Region<u8, Chunked<4>>) {
    if let Some(c) = out.get_mut() {
        c[4] = 1;
    }
}

pub fn chunk_index_past_its_end_is_reported(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0u8; 16];
    expect_panic(
        overrun_chunk(o, &mut out),
        "index out of bounds: the len is 4 but the index is 4",
        "c[4] = 1;",
    )
}

#[offload_kernel]
fn axpy_generic<T: Num>(mut y: Region<T, Linear1D>, x: &[T], a: T) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

#[offload_kernel]
fn hypot_one<T: Float>(mut y: Region<T, Linear1D>, x: &[T]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = (x[i] * x[i] + T::ONE).sqrt();
    }
}

pub fn generic_kernels_instantiate_per_type(o: LaunchOptions) -> CaseResult {
    let x: Vec<f64> = (0..300).map(|i| i as f64 * 0.25).collect();
    let mut y = vec![1.0f64; 300];
    offload! { kernel = axpy_generic::<f64>, args = (&mut y, &x, 2.0), device = o.device.unwrap_or(0) };
    compare(
        "f64",
        &y,
        &x.iter().map(|x| 2.0 * x + 1.0).collect::<Vec<_>>(),
    )?;
    let xi: Vec<i32> = (0..300).map(|i| i - 150).collect();
    let mut yi = vec![7i32; 300];
    axpy_generic::<i32>(o, &mut yi, &xi, -3).map_err(|e| e.to_string())?;
    compare(
        "i32",
        &yi,
        &xi.iter().map(|x| -3 * x + 7).collect::<Vec<_>>(),
    )?;
    let xb: Vec<u8> = (0..300).map(|i| (i % 256) as u8).collect();
    let mut yb = vec![5u8; 300];
    axpy_generic(o, &mut yb, &xb, 3u8).map_err(|e| e.to_string())?;
    compare(
        "u8",
        &yb,
        &xb.iter()
            .map(|x| x.wrapping_mul(3).wrapping_add(5))
            .collect::<Vec<_>>(),
    )?;
    let xf: Vec<f32> = (0..300).map(|i| i as f32 * 0.1).collect();
    let mut yf = vec![0f32; 300];
    hypot_one(o, &mut yf, &xf).map_err(|e| e.to_string())?;
    close_f32(
        "f32",
        &yf,
        &xf.iter().map(|x| (x * x + 1.0).sqrt()).collect::<Vec<_>>(),
        1e-6,
    )
}

#[offload_device]
fn lerp<T: Float>(a: T, b: T, t: T) -> T {
    a + (b - a) * t
}

#[offload_device]
fn smooth(x: f32) -> f32 {
    let t = x.clamp(0.0, 1.0);
    let eased: f32 = lerp(0.0f32, 1.0, t * t * (3.0 - 2.0 * t));
    eased
}

#[offload_device]
fn checked_ratio(a: i32, b: i32) -> i32 {
    if b == 0 {
        return -1;
    }
    a / b
}

#[offload_kernel]
fn shade(mut out: Region<f32, Linear1D>, mut ratios: Region<i32, Linear1D>, x: &[f32], d: &[i32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let s: f32 = smooth(x[i]);
        let l: f32 = lerp(s, 10.0, 0.25);
        *v = l;
    }
    if let Some(r) = ratios.get_mut() {
        *r = checked_ratio(100, d[i]);
    }
}

pub fn device_functions_are_called_and_inlined(o: LaunchOptions) -> CaseResult {
    let n = 500usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / 400.0 - 0.1).collect();
    let d: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
    let (mut out, mut ratios) = (vec![0f32; n], vec![0i32; n]);
    shade(o, &mut out, &mut ratios, &x, &d).map_err(|e| e.to_string())?;
    let want: Vec<f32> = x.iter().map(|&x| lerp(smooth(x), 10.0, 0.25)).collect();
    close_f32("device functions", &out, &want, 1e-6)?;
    compare(
        "early return",
        &ratios,
        &d.iter().map(|&b| checked_ratio(100, b)).collect::<Vec<_>>(),
    )
}

#[offload_device]
fn must_be_small(v: u32) -> u32 {
    assert!(v < 100, "value too large");
    v * 2
}

#[offload_kernel]
fn double_small(mut out: Region<u32, Linear1D>) {
    let i = out.index() as u32;
    if let Some(v) = out.get_mut() {
        *v = must_be_small(i);
    }
}

pub fn panic_in_a_device_function_names_it(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0u32; 100];
    double_small(o, &mut out).map_err(|e| e.to_string())?;
    compare(
        "doubled",
        &out,
        &(0..100).map(|i| i * 2).collect::<Vec<u32>>(),
    )?;
    let mut out = vec![0u32; 101];
    let line = SOURCE
        .lines()
        .position(|l| l.contains("assert!(v < 100"))
        .map_or(0, |i| i + 1);
    match double_small(o, &mut out) {
        Err(Error::KernelPanic { message, .. })
            if message.starts_with("value too large (in `must_be_small` at ")
                && message.ends_with(&format!("cases.rs:{line}:5)")) =>
        {
            Ok(())
        }
        other => Err(format!(
            "expected a panic naming `must_be_small` at line {line}, got {other:?}"
        )),
    }
}

#[offload_kernel]
fn positions(mut out: Region<usize, Linear1D>) {
    let t = thread_idx(0);
    let g = workgroup_idx(0);
    let size = workgroup_dim(0);
    if let Some(v) = out.get_mut() {
        *v = t + g * 1000 + size * 1_000_000 + workgroup_idx(1) + thread_idx(1);
    }
}

pub fn thread_position_queries(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0usize; 128];
    let o = LaunchOptions {
        workgroup_dim: Some([4, 1, 1]),
        thread_dim: Some([32, 1, 1]),
        ..o
    };
    positions(o, &mut out).map_err(|e| e.to_string())?;
    compare(
        "positions",
        &out,
        &(0..128)
            .map(|i| i % 32 + (i / 32) * 1000 + 32_000_000)
            .collect::<Vec<_>>(),
    )
}

#[offload_kernel]
fn histogram(bins: Atomic<u32>, x: &[u32], mut seen: Region<u8, Linear1D>) {
    let i = seen.index();
    if let Some(s) = seen.get_mut() {
        bins.fetch_add((x[i] % 16) as usize, 1);
        *s = 1;
    }
}

pub fn histogram_with_atomics(o: LaunchOptions) -> CaseResult {
    let n = 100_000usize;
    let x: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    let mut bins = vec![0u32; 16];
    let mut seen = vec![0u8; n];
    histogram(o, &mut bins, &x, &mut seen).map_err(|e| e.to_string())?;
    let mut want = vec![0u32; 16];
    for v in &x {
        want[(v % 16) as usize] += 1;
    }
    compare("histogram", &bins, &want)
}

#[offload_kernel]
fn dot(sum: Atomic<f64>, x: &[f64], y: &[f64], mut done: Region<u8, Linear1D>) {
    let i = done.index();
    if let Some(d) = done.get_mut() {
        sum.fetch_add(0, x[i] * y[i]);
        *d = 1;
    }
}

pub fn dot_product_with_float_atomics(o: LaunchOptions) -> CaseResult {
    let n = 20_000usize;
    let x: Vec<f64> = (0..n).map(|i| (i % 97) as f64 * 0.5).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 13) as f64 - 6.0).collect();
    let mut sum = vec![0.0f64];
    let mut done = vec![0u8; n];
    dot(o, &mut sum, &x, &y, &mut done).map_err(|e| e.to_string())?;
    let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    close_f64("dot", &sum, &[want], 1e-12)
}

#[offload_kernel]
fn atomic_ops(acc: Atomic<i64>, x: &[i64], mut won: Region<u8, Linear1D>) {
    let i = won.index();
    if let Some(w) = won.get_mut() {
        let v = x[i];
        acc.fetch_min(0, v);
        acc.fetch_max(1, v);
        acc.fetch_or(2, v & 255);
        acc.fetch_and(3, v | 1);
        acc.fetch_xor(4, v);
        acc.fetch_sub(5, v);
        let previous = acc.compare_and_swap(6, 0, i as i64 + 1);
        acc.swap(7, 42);
        *w = (previous == 0) as u8;
    }
}

pub fn every_atomic_operation(o: LaunchOptions) -> CaseResult {
    let n = 5000usize;
    let x: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 10007 - 5000).collect();
    let mut acc = vec![i64::MAX, i64::MIN, 0, -1, 0, 1000, 0, 0];
    let mut won = vec![0u8; n];
    atomic_ops(o, &mut acc, &x, &mut won).map_err(|e| e.to_string())?;
    let want = [
        *x.iter().min().unwrap(),
        *x.iter().max().unwrap(),
        x.iter().fold(0, |a, v| a | (v & 255)),
        x.iter().fold(-1, |a, v| a & (v | 1)),
        x.iter().fold(0, |a, v| a ^ v),
        x.iter().fold(1000i64, |a, v| a.wrapping_sub(*v)),
    ];
    compare("min max or and xor sub", &acc[..6], &want)?;
    let winners = won.iter().filter(|&&w| w == 1).count();
    if winners != 1 || acc[6] < 1 || acc[6] > n as i64 {
        return Err(format!(
            "compare_and_swap: {winners} threads saw 0, slot holds {}",
            acc[6]
        ));
    }
    compare("swap", &acc[7..], &[42])
}

#[offload_kernel]
fn scaled_copy(
    a: f32,
    x: &[f32],
    n: u32,
    mut y: Region<f32, Linear1D>,
    img: Region<f32, Stencil2D<0>>,
) {
    let i = y.index();
    let centre = img.get_clamped(0, 0);
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + n as f32 + centre * 0.0;
    }
}

/// Scalars and read-only arguments before a region: the region still gets its own data
/// back, and the read-only ones are never written.
pub fn scalars_before_regions_keep_their_places(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let img = vec![5.0f32; 64];
    let mut y = vec![0f32; 64];
    scaled_copy(o, 2.0, &x, 7, &mut y, Region::stencil(&img, 8)).map_err(|e| e.to_string())?;
    compare(
        "y",
        &y,
        &x.iter().map(|x| 2.0 * x + 7.0).collect::<Vec<_>>(),
    )?;
    compare("stencil input", &img, &vec![5.0f32; 64])
}

/// The device a case's launches run on.
fn device_of(o: LaunchOptions) -> offload::Device {
    match o.device {
        Some(i) => offload::devices()[i].clone(),
        None => offload::default_device().expect("a default device"),
    }
}

/// One step of the Mandelbrot iteration, as a pair.
#[offload_device]
fn mandel_step(zr: f32, zi: f32, cr: f32, ci: f32) -> (f32, f32) {
    (zr * zr - zi * zi + cr, 2.0 * zr * zi + ci)
}

/// Two steps: a tuple function's value from another's call.
#[offload_device]
fn mandel_two_steps(zr: f32, zi: f32, cr: f32, ci: f32) -> (f32, f32) {
    let (ar, ai): (f32, f32) = mandel_step(zr, zi, cr, ci);
    mandel_step(ar, ai, cr, ci)
}

/// A pair by `return` and by branches: the quadrant's sign pair and a count.
#[offload_device]
fn signs(x: f32, y: f32) -> (i32, u32) {
    if x == 0.0 && y == 0.0 {
        return (0, 0);
    }
    let pair = (x.signum() as i32, 1u32);
    if y < 0.0 {
        (pair.0 * 2, pair.1 + 1)
    } else {
        pair
    }
}

/// Escape counts of the Mandelbrot set, with the iteration from device functions that
/// return pairs, taken apart by assignment and by `let`.
#[offload_kernel]
fn mandelbrot_tuples(mut out: Region<i32, Linear2D>, scale: f32) {
    let (cr, ci) = (
        out.col() as f32 * scale - 2.0,
        out.row() as f32 * scale - 1.0,
    );
    let (mut zr, mut zi) = (0.0f32, 0.0f32);
    let mut n = 0i32;
    while n < 50 && zr * zr + zi * zi <= 4.0 {
        (zr, zi) = mandel_step(zr, zi, cr, ci);
        n += 1;
    }
    let (tr, ti): (f32, f32) = mandel_two_steps(cr, ci, 0.25, -0.5);
    let (s, k): (i32, u32) = signs(tr, ti);
    if let Some(v) = out.get_mut() {
        *v = n * 100 + s * 10 + k as i32;
    }
}

pub fn device_functions_returning_tuples(o: LaunchOptions) -> CaseResult {
    let (w, h, scale) = (40usize, 24usize, 0.075f32);
    let mut out = vec![0i32; w * h];
    mandelbrot_tuples(o, Region::new_2d(&mut out, w), scale).map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..w * h)
        .map(|i| {
            let (cr, ci) = ((i % w) as f32 * scale - 2.0, (i / w) as f32 * scale - 1.0);
            let (mut zr, mut zi) = (0.0f32, 0.0f32);
            let mut n = 0;
            while n < 50 && zr * zr + zi * zi <= 4.0 {
                (zr, zi) = mandel_step(zr, zi, cr, ci);
                n += 1;
            }
            let (tr, ti) = mandel_two_steps(cr, ci, 0.25, -0.5);
            let (s, k) = signs(tr, ti);
            n * 100 + s * 10 + k as i32
        })
        .collect();
    // Near the set's edge one fused multiply-add can change an escape count on a GPU.
    let differ = out.iter().zip(&want).filter(|(a, b)| a != b).count();
    if on_gpu(o) && differ <= out.len() / 50 {
        return Ok(());
    }
    compare("escape counts", &out, &want)
}

/// Tuples and ranges held in locals: the running minimum and its index as one tuple,
/// assigned whole and by field, taken apart by `let`; a window held as a range, iterated
/// forwards, backwards and inclusively, its ends read and moved.
#[offload_kernel]
fn tuple_and_range_kernel(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    let mut window = i..(i + 4).min(x.len());
    if let Some(o) = out.get_mut() {
        let mut best = (usize::MAX, f32::INFINITY);
        for k in window.clone() {
            if x[k] < best.1 {
                best = (k, x[k]);
            }
        }
        best.1 += 0.5;
        let mut last: (usize, f32) = (0, 0.0);
        for k in window.clone().rev() {
            last.0 += k;
            last.1 = x[k];
        }
        let size = window.len() + window.contains(&(i + 2)) as usize * 10;
        window = 0..2;
        let mut ends = 0;
        for k in window.start..=window.end {
            ends += k;
        }
        // A loop variable hides the tuple of its name.
        for best in 0..2 {
            ends += best * 10;
        }
        let all = 3..=1;
        let (at, value) = best;
        *o = value
            + at as f32 * 10.0
            + last.0 as f32 * 100.0
            + last.1
            + ends as f32 * 1000.0
            + size as f32 * 10000.0
            + all.is_empty() as u32 as f32 * 100000.0;
    }
}

pub fn tuple_and_range_locals(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..50).map(|k| ((k * 37) % 23) as f32 - 5.0).collect();
    let mut out = vec![0.0f32; x.len()];
    tuple_and_range_kernel(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..x.len())
        .map(|i| {
            let window = i..(i + 4).min(x.len());
            let mut best = (usize::MAX, f32::INFINITY);
            for k in window.clone() {
                if x[k] < best.1 {
                    best = (k, x[k]);
                }
            }
            best.1 += 0.5;
            let mut last = (0usize, 0.0f32);
            for k in window.clone().rev() {
                last.0 += k;
                last.1 = x[k];
            }
            let size = window.len() + window.contains(&(i + 2)) as usize * 10;
            best.1
                + best.0 as f32 * 10.0
                + last.0 as f32 * 100.0
                + last.1
                + 13.0 * 1000.0
                + size as f32 * 10000.0
                + 100000.0
        })
        .collect();
    compare("tuple and range locals", &out, &want)
}

/// Sub-slices of read-only slices: bound, sub-sliced again, indexed, iterated (zipped,
/// reversed, enumerated, reduced after a `map`) and measured, each made once where it
/// is written.
#[offload_kernel]
fn sub_slice_kernel(mut out: Region<i64, Linear1D>, x: &[i32], w: &[i32], span: usize) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let end = (i + span).min(x.len());
        let part = &x[i..end];
        let mut acc = 0i64;
        for k in 0..part.len() {
            acc += part[k] as i64 * (k as i64 + 1);
        }
        let head: i32 = x[..=i.min(3)].iter().sum();
        let tail = x[i..].iter().map(|v| *v as i64).sum::<i64>();
        let mut dot = 0i64;
        for (a, b) in part.iter().zip(&w[1..]) {
            dot += *a as i64 * *b as i64;
        }
        let inner: &[i32] = &part[part.len().min(1)..];
        let mut back = 0i64;
        for v in inner.iter().rev() {
            back = back * 3 + *v as i64;
        }
        let mut firsts = 0i64;
        for (k, v) in x[i / 2..i].iter().enumerate() {
            firsts += k as i64 * *v as i64;
        }
        let ranged = (i..end).map(|k| x[k] as i64 * 2).sum::<i64>()
            + (i..end).step_by(2).fold(0i64, |a, k| a * 5 + x[k] as i64)
            + (i..=end - 1).rev().map(|k| x[k] as i64).product::<i64>();
        *o = acc
            + ranged * 13
            + head as i64 * 1000
            + tail * 7
            + dot * 3
            + back
            + firsts * 11
            + inner.len() as i64 * 100000
            + x[i..end].len() as i64;
    }
}

/// A sub-slice out of its slice, or out of order, and an index past a sub-slice (but
/// not past its slice): Rust's panics, at the line that makes or indexes it.
#[offload_kernel]
fn sub_slice_misuse(mut out: Region<i32, Linear1D>, x: &[i32], a: usize, b: usize, k: usize) {
    if let Some(o) = out.get_mut() {
        let from = &x[a..];
        let part = &x[a..=b];
        *o = part[k] + from.len() as i32;
    }
}

pub fn sub_slices_of_read_only_slices(o: LaunchOptions) -> CaseResult {
    let x: Vec<i32> = (0..40).map(|k| (k * 37) % 23 - 9).collect();
    let w: Vec<i32> = (0..45).map(|k| (k * 11) % 7 - 3).collect();
    let mut out = vec![0i64; x.len()];
    sub_slice_kernel(o, &mut out, &x, &w, 6).map_err(|e| e.to_string())?;
    let want: Vec<i64> = (0..x.len())
        .map(|i| {
            let end = (i + 6).min(x.len());
            let part = &x[i..end];
            let acc: i64 = (part.iter().enumerate())
                .map(|(k, v)| *v as i64 * (k as i64 + 1))
                .sum();
            let head: i32 = x[..=i.min(3)].iter().sum();
            let tail: i64 = x[i..].iter().map(|v| *v as i64).sum();
            let dot: i64 = (part.iter().zip(&w[1..]))
                .map(|(a, b)| *a as i64 * *b as i64)
                .sum();
            let inner = &part[part.len().min(1)..];
            let back = inner.iter().rev().fold(0i64, |b, v| b * 3 + *v as i64);
            let firsts: i64 = (x[i / 2..i].iter().enumerate())
                .map(|(k, v)| k as i64 * *v as i64)
                .sum();
            let ranged: i64 = (i..end).map(|k| x[k] as i64 * 2).sum::<i64>()
                + (i..end).step_by(2).fold(0i64, |a, k| a * 5 + x[k] as i64)
                + (i..=end - 1).rev().map(|k| x[k] as i64).product::<i64>();
            acc + ranged * 13
                + head as i64 * 1000
                + tail * 7
                + dot * 3
                + back
                + firsts * 11
                + inner.len() as i64 * 100000
                + (end - i) as i64
        })
        .collect();
    compare("sub-slices", &out, &want)?;
    let x: Vec<i32> = (0..8).collect();
    let mut out = vec![0i32; 4];
    let mut misuse = |a, b, k| sub_slice_misuse(o, &mut out, &x, a, b, k);
    expect_panic(
        misuse(9, 9, 0),
        "range start index 9 out of range for slice of length 8",
        "let from = &x[a..];",
    )?;
    expect_panic(
        misuse(2, 8, 0),
        "range end index 8 out of range for slice of length 8",
        "let part = &x[a..=b];",
    )?;
    expect_panic(
        misuse(5, 2, 0),
        "slice index starts at 5 but ends at 3",
        "let part = &x[a..=b];",
    )?;
    expect_panic(
        misuse(2, 3, 2),
        "index out of bounds: the len is 2 but the index is 2",
        "*o = part[k] + from.len() as i32;",
    )?;
    misuse(2, 3, 1).map_err(|e| e.to_string())?;
    compare("sub-slice reads", &out, &[9; 4])
}

#[offload_kernel]
fn view_axpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v += a * x[i] + x.len() as f32;
    }
}

/// Views of device buffers as a region and a slice, read back, written from the host,
/// and copied on the device; views outside their buffer and copies of another length
/// are errors.
pub fn device_buffer_views_and_copies_on_the_device(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let start: Vec<f32> = (0..100).map(|k| k as f32).collect();
    let other: Vec<f32> = (0..100).map(|k| 1000.0 + k as f32).collect();
    let mut buf = DeviceBuffer::from_slice(&device, &start).map_err(err)?;
    let src = DeviceBuffer::from_slice(&device, &other).map_err(err)?;
    view_axpy(
        o,
        &mut buf.slice_mut(10..30).map_err(err)?,
        src.slice(50..70).map_err(err)?,
        2.0,
    )
    .map_err(err)?;
    let mut want = start.clone();
    for k in 10..30 {
        want[k] += 2.0 * other[k + 40] + 20.0;
    }
    compare("region and slice views", &buf.to_vec().map_err(err)?, &want)?;
    let part = buf.slice(5..=12).map_err(err)?.to_vec().map_err(err)?;
    compare("a view read back", &part, &want[5..13])?;

    let mut copy = DeviceBuffer::<f32>::zeros(&device, 20).map_err(err)?;
    copy.copy_from_device(buf.slice(10..30).map_err(err)?)
        .map_err(err)?;
    copy.slice_mut(..5)
        .map_err(err)?
        .copy_from_slice(&[-1.0; 5])
        .map_err(err)?;
    copy.slice_mut(15..)
        .map_err(err)?
        .copy_from_device(src.slice(..5).map_err(err)?)
        .map_err(err)?;
    let mut want_copy = want[10..30].to_vec();
    want_copy[..5].fill(-1.0);
    want_copy[15..].copy_from_slice(&other[..5]);
    compare("copies", &copy.to_vec().map_err(err)?, &want_copy)?;
    // Launches on the copy are ordered after it.
    view_axpy(o, &mut copy, &src, 1.0).map_err(err)?;
    for (k, w) in want_copy.iter_mut().enumerate() {
        *w += other[k] + 100.0;
    }
    compare(
        "a launch after copies",
        &copy.to_vec().map_err(err)?,
        &want_copy,
    )?;

    let backwards = (7, 3);
    let refused = [
        buf.slice(90..101).map(|_| ()),
        // A start past the end, as a program would compute one.
        buf.slice(backwards.0..backwards.1).map(|_| ()),
        copy.copy_from_device(&buf),
        copy.slice_mut(0..2)
            .and_then(|mut v| v.copy_from_slice(&[1.0; 3])),
    ];
    let messages: Vec<String> = refused
        .into_iter()
        .map(|r| match r {
            Ok(()) => "accepted".to_string(),
            Err(e) => e.to_string(),
        })
        .collect();
    compare(
        "refusals",
        &messages,
        &[
            "invalid buffer operation: elements 90..101 are not a range within a buffer of 100"
                .to_string(),
            "invalid buffer operation: elements 7..3 are not a range within a buffer of 100"
                .to_string(),
            "invalid buffer operation: cannot copy 100 elements into a buffer of 20".to_string(),
            "invalid buffer operation: cannot copy 3 elements into a buffer of 2".to_string(),
        ],
    )?;
    // Nothing refused changed the data.
    compare("after refusals", &copy.to_vec().map_err(err)?, &want_copy)
}

/// One buffer split into writable views: a launch writes one while it reads the other,
/// a copy on the device goes from one part to another, and a part split again is
/// written from the host; splits and views past the end are errors that change nothing.
pub fn split_views_of_one_device_buffer(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let start: Vec<f32> = (0..100).map(|k| k as f32).collect();
    let mut buf = DeviceBuffer::from_slice(&device, &start).map_err(err)?;
    let mut want = start.clone();
    {
        let (mut left, mut right) = buf.split_at_mut(40).map_err(err)?;
        view_axpy(o, &mut left, right.slice(20..60).map_err(err)?, 3.0).map_err(err)?;
        for k in 0..40 {
            want[k] += 3.0 * start[k + 60] + 40.0;
        }
        right
            .slice_mut(..10)
            .map_err(err)?
            .copy_from_device(left.slice(5..15).map_err(err)?)
            .map_err(err)?;
        let moved = want[5..15].to_vec();
        want[40..50].copy_from_slice(&moved);
        let (_, mut tail) = right.split_at_mut(55).map_err(err)?;
        tail.copy_from_slice(&[-7.0; 5]).map_err(err)?;
        want[95..].fill(-7.0);
        let refused = [
            left.split_at_mut(41).map(|_| ()),
            left.slice_mut(30..41).map(|_| ()),
            right.slice(..61).map(|_| ()),
        ];
        let messages: Vec<String> = refused
            .into_iter()
            .map(|r| r.map_or_else(|e| e.to_string(), |()| "accepted".into()))
            .collect();
        compare(
            "refusals",
            &messages,
            &[
                "invalid buffer operation: cannot split a view of 40 elements at 41".to_string(),
                "invalid buffer operation: elements 30..41 are not a range within a buffer of 40"
                    .to_string(),
                "invalid buffer operation: elements 0..61 are not a range within a buffer of 60"
                    .to_string(),
            ],
        )?;
    }
    compare("split views", &buf.to_vec().map_err(err)?, &want)?;
    let mut out = offload::PinnedVec::<f32>::zeros(&device, 30).map_err(err)?;
    buf.slice(60..90)
        .map_err(err)?
        .copy_to_slice(out.as_mut_slice().map_err(err)?)
        .map_err(err)?;
    compare(
        "read into page-locked memory",
        out.as_slice().map_err(err)?,
        &want[60..90],
    )?;
    expect_error(
        buf.split_at_mut(101).map(|_| ()),
        "invalid buffer operation: cannot split a view of 100 elements at 101",
    )?;
    compare("after refusals", &buf.to_vec().map_err(err)?, &want)
}

/// `copy_from_slice` from page-locked memory (which the GPU reads by itself, after an
/// asynchronous copy has returned) copies what the memory held at the call: changing the
/// memory right after changes nothing on the device.
pub fn copies_from_page_locked_memory_take_the_data_as_it_was(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let n = 1 << 23;
    let data: Vec<f32> = (0..n).map(|k| (k % 1000) as f32).collect();
    let mut pinned = offload::PinnedVec::from_slice(&device, &data).map_err(err)?;
    let mut buf = DeviceBuffer::<f32>::zeros(&device, n).map_err(err)?;
    buf.copy_from_slice(pinned.as_slice().map_err(err)?)
        .map_err(err)?;
    pinned.as_mut_slice().map_err(err)?.fill(-1.0);
    buf.slice_mut(..n / 2)
        .map_err(err)?
        .copy_from_slice(&pinned.as_slice().map_err(err)?[..n / 2])
        .map_err(err)?;
    pinned.as_mut_slice().map_err(err)?.fill(-2.0);
    let mut want = data;
    want[..n / 2].fill(-1.0);
    compare("copied", &buf.to_vec().map_err(err)?, &want)
}

pub fn device_buffers_stay_on_the_device(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let n = 10_000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let dx = offload::DeviceBuffer::from_slice(&device, &x).map_err(|e| e.to_string())?;
    let mut dy =
        offload::DeviceBuffer::from_slice(&device, &vec![1.0f32; n]).map_err(|e| e.to_string())?;
    // Ten launches on device data, one of them with a host slice for x.
    for step in 0..10 {
        if step == 5 {
            saxpy(o, &mut dy, &x, 0.5).map_err(|e| e.to_string())?;
        } else {
            saxpy(o, &mut dy, &dx, 0.5).map_err(|e| e.to_string())?;
        }
    }
    let mut want = vec![1.0f32; n];
    for _ in 0..10 {
        for i in 0..n {
            want[i] += 0.5 * x[i];
        }
    }
    compare(
        "saxpy on device buffers",
        &dy.to_vec().map_err(|e| e.to_string())?,
        &want,
    )?;
    if let offload::Device::Cuda { ordinal, .. } = device {
        // A launch on the GPU refuses a buffer that lives on the CPU, rather than use it.
        let mut on_cpu = offload::DeviceBuffer::from_slice(&offload::Device::Cpu, &vec![0.0f32; n])
            .map_err(|e| e.to_string())?;
        let on_gpu = LaunchOptions {
            device: Some(ordinal),
            ..o
        };
        match saxpy(on_gpu, &mut on_cpu, &x, 1.0) {
            Err(Error::InvalidLaunch(m)) if m.starts_with("argument 1 is a buffer on cpu") => {}
            other => return Err(format!("a CPU buffer in a GPU launch: {other:?}")),
        }
    }
    Ok(())
}

pub fn stencil_over_device_buffers_100_steps(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let (w, h) = (40usize, 30usize);
    let start: Vec<f32> = (0..w * h).map(|i| ((i * 31) % 7) as f32).collect();
    let mut a = offload::DeviceBuffer::from_slice(&device, &start).map_err(|e| e.to_string())?;
    let mut b = offload::DeviceBuffer::from_slice(&device, &vec![0f32; w * h])
        .map_err(|e| e.to_string())?;
    for _ in 0..50 {
        blur(
            o,
            Region::on_device_2d(&mut b, w),
            Region::stencil_on_device(&a, w),
        )
        .map_err(|e| e.to_string())?;
        blur(
            o,
            Region::on_device_2d(&mut a, w),
            Region::stencil_on_device(&b, w),
        )
        .map_err(|e| e.to_string())?;
    }
    // The same 100 steps on the host.
    let mut host = start;
    for _ in 0..100 {
        let at = |g: &[f32], r: isize, c: isize| g[r as usize * w + c as usize];
        let next: Vec<f32> = (0..w * h)
            .map(|i| {
                let (r, c) = ((i / w) as isize, (i % w) as isize);
                let (mut sum, mut count) = (0f32, 0f32);
                for dr in -1..=1 {
                    for dc in -1..=1 {
                        let (rr, cc) = (r + dr, c + dc);
                        if rr >= 0 && rr < h as isize && cc >= 0 && cc < w as isize {
                            sum += at(&host, rr, cc);
                            count += 1.0;
                        }
                    }
                }
                let corner = at(
                    &host,
                    (r - 1).clamp(0, h as isize - 1),
                    (c + 1).clamp(0, w as isize - 1),
                );
                sum / count + corner * 0.5
            })
            .collect();
        host = next;
    }
    close_f32(
        "100 stencil steps",
        &a.to_vec().map_err(|e| e.to_string())?,
        &host,
        1e-4,
    )
}

/// `device = all`: one share of the workgroups per GPU (two CPU shares without one).
pub fn launches_split_across_all_devices(o: LaunchOptions) -> CaseResult {
    let all = LaunchOptions {
        all_devices: true,
        ..o
    };
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 101) as f32).collect();
    let mut y = vec![2.0f32; n];
    offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32), device = all };
    compare(
        "split saxpy",
        &y,
        &x.iter().map(|x| 3.0 * x + 2.0).collect::<Vec<_>>(),
    )?;

    let xs: Vec<u32> = (0..n as u32).map(|i| i % 13 + 1).collect();
    let mut out = vec![0u32; n];
    prefix_in_chunks(all, &mut out, &xs).map_err(|e| e.to_string())?;
    let mut want = vec![0u32; n];
    for chunk in (0..n).step_by(8) {
        let mut acc = 0;
        for k in chunk..(chunk + 8).min(n) {
            acc += xs[k];
            want[k] = acc;
        }
    }
    compare("split chunks", &out, &want)?;

    // A panic in any share fails the launch and leaves the data as it was.
    let mut data = vec![0i32; 1000];
    expect_panic(
        panics_at(all, &mut data, 999),
        "thread hit the bad element",
        "panic!(\"thread hit the bad element\")",
    )?;
    compare("data after a failed split launch", &data, &vec![0i32; 1000])?;

    let mut bins = vec![0u32; 16];
    let mut seen = vec![0u8; 100];
    match histogram(all, &mut bins, &xs[..100], &mut seen) {
        Err(Error::InvalidLaunch(m))
            if m.contains("`device = all` splits launches whose regions are") =>
        {
            Ok(())
        }
        other => Err(format!("a split launch with atomics: {other:?}")),
    }
}

/// On a GPU, a launch that writes only device buffers does not wait for the device, so its
/// panic is reported by the next synchronisation (here, reading the buffer back); on the
/// CPU, by the launch itself. Either way it is reported, once.
pub fn panic_on_device_buffers_surfaces_by_the_next_read(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let mut out =
        offload::DeviceBuffer::from_slice(&device, &vec![0i32; 1000]).map_err(|e| e.to_string())?;
    let launched = panics_at(o, &mut out, 321);
    let reported = launched.and_then(|()| out.to_vec().map(|_| ()));
    expect_panic(
        reported,
        "thread hit the bad element",
        "panic!(\"thread hit the bad element\")",
    )?;
    // Reported once: the device is usable again.
    offload::synchronize().map_err(|e| e.to_string())?;
    panics_at(o, &mut out, 5000).map_err(|e| e.to_string())?;
    compare(
        "after a reported panic",
        &out.to_vec().map_err(|e| e.to_string())?,
        &vec![1i32; 1000],
    )
}

/// Tree reduction per workgroup: every step reads other threads' slots, then (after a
/// barrier) writes its own. Without real barriers thread 0 would read slots no thread
/// had written yet.
#[offload_kernel]
fn block_sums(sums: Atomic<u64>, x: &[u64]) {
    let mut tile = Shared::<u64, 256>::new();
    let t = thread_idx(0);
    let i = workgroup_idx(0) * workgroup_dim(0) + t;
    let mut acc = if i < x.len() { x[i] } else { 0 };
    tile.write(acc);
    sync_threads();
    let mut stride = workgroup_dim(0) / 2;
    while stride > 0 {
        if t < stride {
            acc += tile[t + stride];
        }
        sync_threads();
        tile.write(acc);
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        sums.swap(workgroup_idx(0), acc);
    }
}

pub fn block_sum_with_shared_memory_and_barriers(o: LaunchOptions) -> CaseResult {
    let n = 10_000usize;
    let x: Vec<u64> = (0..n as u64).map(|i| i * i % 1009).collect();
    let groups = n.div_ceil(256);
    let mut sums = vec![0u64; groups];
    let o = LaunchOptions {
        workgroup_dim: Some([groups as u32, 1, 1]),
        thread_dim: Some([256, 1, 1]),
        ..o
    };
    block_sums(o, &mut sums, &x).map_err(|e| e.to_string())?;
    let want: Vec<u64> = x.chunks(256).map(|c| c.iter().sum()).collect();
    compare("block sums", &sums, &want)
}

/// The classic tree reduction, in place: under `t < s` a thread adds the slot `s` above
/// its own into its own. The race check proves the halves apart (`t < s` against
/// `t + s >= s`, with `s` shared by every thread and halved after each barrier).
#[offload_kernel]
fn tree_sums(sums: Atomic<u64>, x: &[u64]) {
    let mut tile = Shared::<u64, 256>::new();
    let t = thread_rank();
    let i = workgroup_idx(0) * workgroup_dim(0) * workgroup_dim(1) + t;
    tile[t] = if i < x.len() { x[i] } else { 0 };
    sync_threads();
    let mut s = workgroup_dim(0) * workgroup_dim(1) / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        sums.swap(workgroup_idx(0), tile[0]);
    }
}

/// The same with `thread_idx(0)` as the slot, which is a thread's own only in a
/// one-dimensional workgroup: the kernel checks that first.
#[offload_kernel]
fn tree_maxima(maxima: Atomic<i32>, x: &[i32]) {
    assert!(workgroup_dim(1) * workgroup_dim(2) == 1);
    let mut tile = Shared::<i32, 128>::new();
    let t = thread_idx(0);
    let i = workgroup_idx(0) * workgroup_dim(0) + t;
    tile[t] = if i < x.len() { x[i] } else { i32::MIN };
    sync_threads();
    let mut s = 64;
    while s > 0 {
        if t < s {
            tile[t] = tile[t].max(tile[t + s]);
        }
        sync_threads();
        s >>= 1;
    }
    if t == 0 {
        maxima.swap(workgroup_idx(0), tile[0]);
    }
}

pub fn tree_reductions_in_place(o: LaunchOptions) -> CaseResult {
    let n = 5_000usize;
    let x: Vec<u64> = (0..n as u64).map(|i| i * 7919 % 1013).collect();
    // 256 threads as 16 x 16: `thread_rank()` is unique to a thread in 2-D too.
    let groups = n.div_ceil(256);
    let mut sums = vec![0u64; groups];
    let square = LaunchOptions {
        workgroup_dim: Some([groups as u32, 1, 1]),
        thread_dim: Some([16, 16, 1]),
        ..o
    };
    tree_sums(square, &mut sums, &x).map_err(|e| e.to_string())?;
    let want: Vec<u64> = x.chunks(256).map(|c| c.iter().sum()).collect();
    compare("tree sums", &sums, &want)?;

    let y: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 2003 - 1000).collect();
    let groups = n.div_ceil(128);
    let mut maxima = vec![0i32; groups];
    let flat = LaunchOptions {
        workgroup_dim: Some([groups as u32, 1, 1]),
        thread_dim: Some([128, 1, 1]),
        ..o
    };
    tree_maxima(flat, &mut maxima, &y).map_err(|e| e.to_string())?;
    let want: Vec<i32> = y.chunks(128).map(|c| *c.iter().max().unwrap()).collect();
    compare("tree maxima", &maxima, &want)?;
    // In a 2-D workgroup `thread_idx(0)` is shared: the kernel's check stops it.
    let columns = LaunchOptions {
        workgroup_dim: Some([groups as u32, 1, 1]),
        thread_dim: Some([64, 2, 1]),
        ..o
    };
    expect_panic(
        tree_maxima(columns, &mut maxima, &y),
        "assertion failed: workgroup_dim(1) * workgroup_dim(2) == 1",
        "assert!(workgroup_dim(1) * workgroup_dim(2) == 1)",
    )
}

/// Each thread of an 8×8 workgroup writes its two own slots, then reads another
/// thread's: `rank` is `x + 8 y`.
#[offload_kernel]
fn rotate_slots(mut out: Region<u32, Linear2D>) {
    let mut tile = Shared::<u32, 128>::new();
    let rank = thread_idx(1) * workgroup_dim(0) + thread_idx(0);
    let base = (workgroup_idx(1) * 1000) as u32;
    tile.write_nth(0, base + rank as u32 * 2);
    tile.write_nth(1, base + rank as u32 * 2 + 1);
    sync_threads();
    let got = tile[(rank * 2 + 5) % tile.len()];
    if let Some(v) = out.get_mut() {
        *v = got;
    }
}

pub fn barriers_order_writes_before_reads_in_2d_workgroups(o: LaunchOptions) -> CaseResult {
    let (width, height) = (8usize, 24usize);
    let mut out = vec![0u32; width * height];
    let o = LaunchOptions {
        workgroup_dim: Some([1, 3, 1]),
        thread_dim: Some([8, 8, 1]),
        ..o
    };
    rotate_slots(o, Region::new_2d(&mut out, width)).map_err(|e| e.to_string())?;
    // Slot s holds (own slot k of rank r) = k * 64 + r = s, written as 2r + k: slot s
    // belongs to rank s % 64 with k = s / 64.
    let want: Vec<u32> = (0..width * height)
        .map(|i| {
            let (group, rank) = (i / 64, i % 64);
            let slot = (rank * 2 + 5) % 128;
            (group * 1000 + (slot % 64) * 2 + slot / 64) as u32
        })
        .collect();
    compare("rotated slots", &out, &want)
}

/// Reverses each workgroup's elements through dynamic shared memory.
#[offload_kernel]
fn reverse_groups(mut out: Region<f32, Linear1D>, x: &[f32], mut lens: Region<usize, Linear1D>) {
    let mut cache = DynShared::<f32>::new();
    let t = thread_idx(0);
    let i = out.index();
    cache.write(if i < x.len() { x[i] } else { -1.0 });
    sync_threads();
    let mirrored = cache[workgroup_dim(0) - 1 - t];
    if let Some(l) = lens.get_mut() {
        *l = cache.len();
    }
    if let Some(v) = out.get_mut() {
        *v = mirrored;
    }
}

pub fn dynamic_shared_memory_sized_by_dyn_cache(o: LaunchOptions) -> CaseResult {
    let n = 64 * 5;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut out = vec![0.0f32; n];
    let mut lens = vec![0usize; n];
    let o = LaunchOptions {
        thread_dim: Some([64, 1, 1]),
        // Room for 80 floats; the kernel uses the first 64.
        dyn_cache: 80 * 4,
        ..o
    };
    reverse_groups(o, &mut out, &x, &mut lens).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n).map(|i| x[(i / 64) * 64 + 63 - i % 64]).collect();
    compare("reversed", &out, &want)?;
    compare("dynamic length", &lens, &vec![80; n])
}

/// Reads shared slots that no thread of the workgroup wrote, and branches on them: the
/// static array's slots past the workgroup's 32 threads, every slot in the odd
/// workgroups (which skip their writes, while a CPU thread runs several workgroups in
/// one block of memory), and dynamic shared memory past the 32 slots written.
#[offload_kernel]
fn read_unwritten_shared(mut out: Region<u32, Linear1D>, mut dynamic: Region<u32, Linear1D>) {
    let mut tile = Shared::<u32, 64>::new();
    let mut cache = DynShared::<u32>::new();
    let g = workgroup_idx(0) as u32;
    if g % 2 == 0 {
        tile.write(g + 1);
        cache.write(g + 100);
    }
    sync_threads();
    let t = thread_idx(0);
    let own = tile[t];
    let past = tile[32 + t];
    let mirrored = cache[cache.len() - 1 - t];
    if let Some(v) = out.get_mut() {
        *v = if own == 0 { 10 } else { own } + if past == 0 { 0 } else { 1000 };
    }
    if let Some(v) = dynamic.get_mut() {
        *v = if mirrored == 0 { 7 } else { mirrored };
    }
}

pub fn shared_slots_no_thread_wrote_read_as_zero(o: LaunchOptions) -> CaseResult {
    let n = 32 * 6;
    let (mut out, mut dynamic) = (vec![0u32; n], vec![0u32; n]);
    let o = LaunchOptions {
        thread_dim: Some([32, 1, 1]),
        // 48 slots; the kernel writes the first 32.
        dyn_cache: 48 * 4,
        ..o
    };
    read_unwritten_shared(o, &mut out, &mut dynamic).map_err(|e| e.to_string())?;
    let written = |g: usize| g.is_multiple_of(2);
    let want: Vec<u32> = (0..n)
        .map(|i| {
            if written(i / 32) {
                i as u32 / 32 + 1
            } else {
                10
            }
        })
        .collect();
    compare("static slots", &out, &want)?;
    let want: Vec<u32> = (0..n)
        .map(|i| match 47 - i % 32 {
            slot if slot < 32 && written(i / 32) => i as u32 / 32 + 100,
            _ => 7,
        })
        .collect();
    compare("dynamic slots", &dynamic, &want)
}

#[offload_kernel]
fn square_roots(mut y: Region<f32, Linear1D>, x: &[f32], mut w: Region<f64, Linear1D>, z: &[f64]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[i].sqrt();
    }
    if let Some(v) = w.get_mut() {
        *v = z[i].sqrt();
    }
}

/// `sqrt` is correctly rounded, bit for bit as Rust's, on every backend (on NVIDIA GPUs
/// libdevice's default is an approximation one bit off: found by the fuzzer).
pub fn square_roots_are_correctly_rounded(o: LaunchOptions) -> CaseResult {
    let n = 1 << 14;
    // Positive values across the exponent range, subnormals included.
    let x: Vec<f32> = (0..n)
        .map(|i| f32::from_bits(0x0000_1000 + i as u32 * 0x0001_fdf1))
        .collect();
    let z: Vec<f64> = (0..n)
        .map(|i| f64::from_bits(0x0001_0000_0000_0000 + i as u64 * 0x0001_ff00_0000_1234))
        .collect();
    let (mut y, mut w) = (vec![0.0f32; n], vec![0.0f64; n]);
    square_roots(o, &mut y, &x, &mut w, &z).map_err(|e| e.to_string())?;
    let bits32 = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let bits64 = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let want32: Vec<f32> = x.iter().map(|v| v.sqrt()).collect();
    let want64: Vec<f64> = z.iter().map(|v| v.sqrt()).collect();
    compare("f32 sqrt bits", &bits32(&y), &bits32(&want32))?;
    compare("f64 sqrt bits", &bits64(&w), &bits64(&want64))
}

/// The raw API: every thread writes a slot that is not its own (with `unsafe`), and
/// reads one back after a barrier.
#[offload_kernel]
fn raw_shift(mut out: Region<i32, Linear1D>) {
    let mut tile = Shared::<i32, 32>::new();
    let t = thread_idx(0);
    // SAFETY: slot (t + 1) % 32 is written by thread t alone before the barrier.
    unsafe { tile.store((t + 1) % 32, t as i32 * 10) };
    sync_threads();
    // SAFETY: nobody writes after the barrier.
    let v = unsafe { tile.load(t) };
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

pub fn raw_shared_memory_access(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0i32; 64];
    let o = LaunchOptions {
        thread_dim: Some([32, 1, 1]),
        ..o
    };
    raw_shift(o, &mut out).map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..64).map(|i| ((i % 32 + 31) % 32) * 10).collect();
    compare("shifted", &out, &want)
}

#[offload_kernel]
fn lanes(
    x: &[i32],
    mut sums: Region<i32, Linear1D>,
    mut mins: Region<i32, Linear1D>,
    mut maxs: Region<f64, Linear1D>,
    mut from3: Region<i32, Linear1D>,
    mut xor1: Region<u64, Linear1D>,
    mut ballots: Region<u64, Linear1D>,
    mut votes: Region<u8, Linear1D>,
    mut size: Region<usize, Linear1D>,
) {
    let i = sums.index();
    let v = if i < x.len() { x[i] } else { 0 };
    let sum = subgroup_sum(v);
    let min = subgroup_min(v);
    let max = subgroup_max(v as f64 * 0.5);
    let third = subgroup_broadcast(v, 3);
    let flipped = subgroup_shuffle_xor(v as u64 * 7, 1);
    let ballot = subgroup_ballot(v % 3 == 0);
    let any = subgroup_any(v == 5);
    let all = subgroup_all(v >= 0);
    let width = subgroup_size();
    let lane = subgroup_lane();
    if let Some(s) = sums.get_mut() {
        *s = sum;
    }
    if let Some(m) = mins.get_mut() {
        *m = min;
    }
    if let Some(m) = maxs.get_mut() {
        *m = max;
    }
    if let Some(f) = from3.get_mut() {
        *f = third;
    }
    if let Some(f) = xor1.get_mut() {
        *f = flipped;
    }
    if let Some(b) = ballots.get_mut() {
        *b = ballot;
    }
    if let Some(b) = votes.get_mut() {
        *b = any as u8 + 2 * all as u8 + 4 * (lane == i % width) as u8;
    }
    if let Some(s) = size.get_mut() {
        *s = width;
    }
}

pub fn subgroup_operations(o: LaunchOptions) -> CaseResult {
    let n = 256usize;
    let x: Vec<i32> = (0..n as i32).map(|i| (i * 37 + 11) % 101 - 20).collect();
    let mut out = (
        vec![0i32; n],
        vec![0i32; n],
        vec![0f64; n],
        vec![0i32; n],
        vec![0u64; n],
        vec![0u64; n],
        vec![0u8; n],
        vec![0usize; n],
    );
    let o = LaunchOptions {
        thread_dim: Some([64, 1, 1]),
        ..o
    };
    lanes(
        o, &x, &mut out.0, &mut out.1, &mut out.2, &mut out.3, &mut out.4, &mut out.5, &mut out.6,
        &mut out.7,
    )
    .map_err(|e| e.to_string())?;
    let width = out.7[0];
    if !(width == 1 || width == 32 || width == 64) || out.7.iter().any(|w| *w != width) {
        return Err(format!("subgroup size {width}"));
    }
    let group = |i: usize| (i - i % width)..(i - i % width + width);
    let lane_value = |i: usize, lane: usize| {
        if lane < width {
            x[i - i % width + lane]
        } else {
            x[i]
        }
    };
    let want_sums: Vec<i32> = (0..n).map(|i| x[group(i)].iter().sum()).collect();
    let want_mins: Vec<i32> = (0..n).map(|i| *x[group(i)].iter().min().unwrap()).collect();
    let want_maxs: Vec<f64> = (0..n)
        .map(|i| {
            x[group(i)]
                .iter()
                .map(|v| *v as f64 * 0.5)
                .fold(f64::MIN, f64::max)
        })
        .collect();
    let want_from3: Vec<i32> = (0..n).map(|i| lane_value(i, 3)).collect();
    let want_xor1: Vec<u64> = (0..n)
        .map(|i| (lane_value(i, (i % width) ^ 1) as u64).wrapping_mul(7))
        .collect();
    let want_ballots: Vec<u64> = (0..n)
        .map(|i| {
            x[group(i)]
                .iter()
                .enumerate()
                .filter(|(_, v)| *v % 3 == 0)
                .map(|(l, _)| 1u64 << l)
                .sum()
        })
        .collect();
    let want_votes: Vec<u8> = (0..n)
        .map(|i| {
            let any = x[group(i)].contains(&5) as u8;
            let all = x[group(i)].iter().all(|v| *v >= 0) as u8;
            any + 2 * all + 4
        })
        .collect();
    compare("subgroup_sum", &out.0, &want_sums)?;
    compare("subgroup_min", &out.1, &want_mins)?;
    compare("subgroup_max", &out.2, &want_maxs)?;
    compare("subgroup_broadcast", &out.3, &want_from3)?;
    compare("subgroup_shuffle_xor", &out.4, &want_xor1)?;
    compare("subgroup_ballot", &out.5, &want_ballots)?;
    compare("subgroup_any/all/lane", &out.6, &want_votes)
}

/// A sum in two levels: subgroup sums, then one subgroup sums the subgroup totals that
/// the first lanes left in shared memory. One atomic per workgroup.
#[offload_kernel]
fn warp_sum(total: Atomic<i64>, x: &[i64]) {
    let mut partial = Shared::<i64, 256>::new();
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    let v = if i < x.len() { x[i] } else { 0 };
    partial.write(subgroup_sum(v));
    sync_threads();
    let width = subgroup_size();
    let lane = subgroup_lane();
    let mine = if lane * width < workgroup_dim(0) {
        partial[lane * width]
    } else {
        0
    };
    let mut block = subgroup_sum(mine);
    // With subgroups narrower than the workgroup's count of them, sum the rest here.
    let mut k = width * width;
    while k < workgroup_dim(0) {
        block += partial[k];
        k += width;
    }
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

pub fn warp_reduction_sum(o: LaunchOptions) -> CaseResult {
    let n = 100_000usize;
    let x: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 10007 - 5000).collect();
    let mut total = vec![0i64];
    let o = LaunchOptions {
        thread_dim: Some([256, 1, 1]),
        workgroup_dim: Some([n.div_ceil(256) as u32, 1, 1]),
        ..o
    };
    warp_sum(o, &mut total, &x).map_err(|e| e.to_string())?;
    compare("warp reduction", &total, &[x.iter().sum()])
}

/// C = A·B with 16×16 tiles of A and B staged in shared memory.
#[offload_kernel]
fn matmul_tiled(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let mut ta = Shared::<f32, 256>::new();
    let mut tb = Shared::<f32, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f32;
    let mut t = 0;
    while t < n {
        ta.write(if row < n && t + tx < n {
            a[row * n + t + tx]
        } else {
            0.0
        });
        tb.write(if col < n && t + ty < n {
            b[(t + ty) * n + col]
        } else {
            0.0
        });
        sync_threads();
        for k in 0..16 {
            acc += ta[ty * 16 + k] * tb[k * 16 + tx];
        }
        sync_threads();
        t += 16;
    }
    if let Some(v) = c.get_mut() {
        *v = acc;
    }
}

pub fn tiled_matrix_product(o: LaunchOptions) -> CaseResult {
    let n = 50usize;
    // Small integers: every product and sum is exact in f32.
    let a: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    let mut c = vec![0.0f32; n * n];
    let o = LaunchOptions {
        thread_dim: Some([16, 16, 1]),
        ..o
    };
    matmul_tiled(o, Region::new_2d(&mut c, n), &a, &b, n).map_err(|e| e.to_string())?;
    let mut want = vec![0.0f32; n * n];
    for i in 0..n {
        for j in 0..n {
            want[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        }
    }
    compare("matmul", &c, &want)?;
    // Compiled to leave room for eight resident workgroups: the same product.
    let mut c = vec![0.0f32; n * n];
    let resident = LaunchOptions {
        resident_workgroups: Some(8),
        ..o
    };
    matmul_tiled(resident, Region::new_2d(&mut c, n), &a, &b, n).map_err(|e| e.to_string())?;
    compare("matmul with resident_workgroups = 8", &c, &want)?;
    let none = LaunchOptions {
        resident_workgroups: Some(0),
        ..o
    };
    expect_error(
        matmul_tiled(none, Region::new_2d(&mut c, n), &a, &b, n),
        "invalid launch: resident_workgroups = 0: a multiprocessor holds at least one workgroup",
    )?;
    let too_many = LaunchOptions {
        resident_workgroups: Some(9),
        ..o
    };
    expect_error(
        matmul_tiled(too_many, Region::new_2d(&mut c, n), &a, &b, n),
        "invalid launch: resident_workgroups = 9 of [16, 16, 1] threads is more than a multiprocessor holds (32 workgroups, 2048 threads)",
    )
}

pub fn out_of_memory_is_an_error(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    // 16 TiB of `f32`: more than any device or host here holds.
    match offload::DeviceBuffer::<f32>::zeros(&device, 1 << 42) {
        Err(e @ Error::OutOfMemory { .. }) => {
            let want =
                format!("out of memory on {device}: 17592186044416 bytes could not be allocated");
            if e.to_string() != want {
                return Err(format!("the error reads `{e}`, not `{want}`"));
            }
        }
        Err(e) => return Err(format!("allocating 16 TiB: {e}")),
        Ok(_) => return Err("allocating 16 TiB succeeded".into()),
    }
    // The device still works afterwards.
    let mut y = offload::DeviceBuffer::<f32>::zeros(&device, 1000).map_err(|e| e.to_string())?;
    let x = vec![2.0f32; 1000];
    saxpy(o, &mut y, &x, 1.5).map_err(|e| e.to_string())?;
    compare(
        "saxpy after a failed allocation",
        &y.to_vec().map_err(|e| e.to_string())?,
        &[3.0; 1000],
    )
}

/// Some threads panic (a failed bounds check) before a barrier and a subgroup sum that the
/// others still reach: the launch must end with the panic, not wait for them.
#[offload_kernel]
fn partial_panic(mut out: Region<i32, Linear1D>, x: &[i32], picks: &[usize]) {
    let mut tile = Shared::<i32, 64>::new();
    let i = out.index();
    let v = x[picks[i]];
    tile.write(v);
    sync_threads();
    let s = subgroup_sum(tile[(thread_idx(0) + 1) % 64]);
    if let Some(o) = out.get_mut() {
        *o = s;
    }
}

pub fn panic_before_a_barrier_and_subgroup_sum_is_reported(o: LaunchOptions) -> CaseResult {
    let n = 256;
    let x = vec![1i32; n];
    // Every 37th thread picks an index past the end of `x`.
    let picks: Vec<usize> = (0..n)
        .map(|i| if i % 37 == 5 { n + i } else { i })
        .collect();
    let mut out = vec![-1i32; n];
    let o = LaunchOptions {
        thread_dim: Some([64, 1, 1]),
        ..o
    };
    match partial_panic(o, &mut out, &x, &picks) {
        Err(Error::KernelPanic { message, .. })
            if message.starts_with("index out of bounds: the len is 256 but the index is ") => {}
        other => return Err(format!("expected the bounds-check panic, got {other:?}")),
    }
    compare("untouched output", &out, &vec![-1; n])
}

/// 96 KiB of dynamic shared memory, past the 48 KiB a CUDA kernel gets without opting in:
/// each of 256 threads fills its 96 own slots, then reads 96 of other threads'.
#[offload_kernel]
fn spread(mut out: Region<u32, Linear1D>) {
    let mut cache = DynShared::<u32>::new();
    let rank = thread_idx(0);
    for k in 0..96 {
        cache.write_nth(k, (k * 1000 + rank) as u32);
    }
    sync_threads();
    let mut acc = 0u32;
    for k in 0..96 {
        acc = acc.wrapping_add(cache[cache.len() - 1 - (k * 256 + rank)]);
    }
    if let Some(o) = out.get_mut() {
        *o = acc;
    }
}

pub fn dynamic_shared_memory_beyond_48_kib(o: LaunchOptions) -> CaseResult {
    let mut out = vec![0u32; 512];
    let o = LaunchOptions {
        thread_dim: Some([256, 1, 1]),
        dyn_cache: 96 * 1024,
        ..o
    };
    spread(o, &mut out).map_err(|e| e.to_string())?;
    // Slot s holds (s / 256) * 1000 + s % 256; thread r reads slot 24575 - (256k + r).
    let want: Vec<u32> = (0..512)
        .map(|i| {
            let r = i % 256;
            (0..96)
                .map(|k| {
                    let s = 24575 - (256 * k + r);
                    ((s / 256) * 1000 + s % 256) as u32
                })
                .fold(0u32, u32::wrapping_add)
        })
        .collect();
    compare("sums over 96 KiB of shared memory", &out, &want)
}

/// Device-resident data split over every device of a `device = all` launch: `y`
/// scattered (each device works on its window in place), `x` replicated.
pub fn split_buffers_stay_on_every_device(o: LaunchOptions) -> CaseResult {
    let n = 100_000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 23) as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let dx = SplitBuffer::replicate(&x).map_err(|e| e.to_string())?;
    let mut dy = SplitBuffer::scatter(&y, 256).map_err(|e| e.to_string())?;
    let all = LaunchOptions {
        all_devices: true,
        ..o
    };
    for _ in 0..3 {
        saxpy(all, &mut dy, &dx, 0.5).map_err(|e| e.to_string())?;
    }
    let want: Vec<f32> = (0..n).map(|i| y[i] + 1.5 * x[i]).collect();
    compare(
        "split saxpy",
        &dy.to_vec().map_err(|e| e.to_string())?,
        &want,
    )?;
    match saxpy(o, &mut dy, &dx, 0.5) {
        Err(Error::InvalidLaunch(m))
            if m == "a `SplitBuffer` is spread over several devices: launch with `device = all`" => {
        }
        other => return Err(format!("a split buffer without `device = all`: {other:?}")),
    }
    // Parts cut every 100 elements do not fit workgroups of 256 threads.
    let mut odd = SplitBuffer::scatter(&y, 100).map_err(|e| e.to_string())?;
    if odd.devices().len() > 1 {
        match saxpy(all, &mut odd, &dx, 0.5) {
            Err(Error::InvalidLaunch(m))
                if m.contains("not where a workgroup of this launch starts") => {}
            other => return Err(format!("parts that do not fit the workgroups: {other:?}")),
        }
    }
    Ok(())
}

#[offload_kernel]
fn counts(mut out: Region<usize, Linear1D>) {
    let c = workgroup_count(0) * 100 + workgroup_count(1) * 10 + workgroup_count(2);
    if let Some(v) = out.get_mut() {
        *v = c;
    }
}

pub fn workgroup_count_is_the_whole_launch(o: LaunchOptions) -> CaseResult {
    // 1000 elements in workgroups of 256: four workgroups, also when split.
    for all_devices in [false, true] {
        let mut out = vec![0usize; 1000];
        counts(LaunchOptions { all_devices, ..o }, &mut out).map_err(|e| e.to_string())?;
        compare(
            &format!("counts (device = all: {all_devices})"),
            &out,
            &[411; 1000],
        )?;
    }
    Ok(())
}

/// Writes `stamp` everywhere; with `plant` non-zero, thread 0 instead reads `probe[plant]`,
/// past the end of the one-element `probe`: a bounds-check panic that names `plant`.
#[offload_kernel]
fn stamp_or_plant(mut out: Region<u32, Linear1D>, probe: &[u32], stamp: u32, plant: usize) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        if plant != 0 && i == 0 {
            *v = probe[plant]; // the planted panic
        } else {
            *v = stamp;
        }
    }
}

/// Eight host threads launch on their own device buffers at once, 20 launches a round for
/// five rounds, and the even threads plant one panic in some rounds. Each thread must get
/// exactly the panics it planted, once each: from the launch itself where it waits (the
/// CPU), else from its own next synchronisation (`to_vec`), never another thread's.
pub fn panics_reach_only_the_thread_that_launched_them(o: LaunchOptions) -> CaseResult {
    const THREADS: usize = 8;
    const ROUNDS: usize = 5;
    const LAUNCHES: usize = 20;
    let device = device_of(o);
    let n = 1000usize;
    // The launch of a round that plants a panic, and the index it reads (unique per thread
    // and round); never the last launch, whose stamp the round's result must show.
    let plant_of = |t: usize, round: usize| {
        (t.is_multiple_of(2) && !(round + t / 2).is_multiple_of(3))
            .then(|| ((t * 7 + round * 3) % (LAUNCHES - 1), 1000 * (t + 1) + round))
    };
    let one_round = |t: usize,
                     round: usize,
                     out: &mut offload::DeviceBuffer<u32>,
                     probe: &offload::DeviceBuffer<u32>|
     -> CaseResult {
        let plant = plant_of(t, round);
        let mut reports = Vec::new();
        for k in 0..LAUNCHES {
            let planted = match plant {
                Some((at, index)) if at == k => index,
                _ => 0,
            };
            let stamp = (round * LAUNCHES + k + 1) as u32;
            if let Err(e) = stamp_or_plant(o, &mut *out, probe, stamp, planted) {
                reports.push(e);
            }
        }
        if let Err(e) = out.to_vec() {
            reports.push(e);
        }
        // Whatever was reported was reported once: reading again succeeds.
        let data = out
            .to_vec()
            .map_err(|e| format!("round {round}: reading the buffer a second time: {e}"))?;
        match (plant, reports.as_slice()) {
            (None, []) => {}
            (Some((at, index)), [only]) => expect_panic(
                Err(only.clone()),
                &format!("index out of bounds: the len is 1 but the index is {index}"),
                "*v = probe[plant]; // the planted panic",
            )
            .map_err(|e| format!("round {round}, panic planted in launch {at}: {e}"))?,
            (plant, got) => {
                return Err(format!(
                    "round {round}: planted {:?}, but got {} report(s): {got:?}",
                    plant.map(|(at, index)| format!("index {index} in launch {at}")),
                    got.len()
                ));
            }
        }
        let last = (round * LAUNCHES + LAUNCHES) as u32;
        compare(&format!("round {round}"), &data, &vec![last; n])
    };
    let barrier = std::sync::Barrier::new(THREADS);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (device, barrier, one_round) = (&device, &barrier, &one_round);
                scope.spawn(move || {
                    let buffers = offload::DeviceBuffer::from_slice(device, &vec![0u32; n])
                        .and_then(|out| {
                            Ok((out, offload::DeviceBuffer::from_slice(device, &[7u32])?))
                        });
                    let (mut failure, mut buffers) = match buffers {
                        Ok(b) => (None, Some(b)),
                        Err(e) => (Some(format!("making its buffers: {e}")), None),
                    };
                    // Every thread meets every round's barrier, even after a failure.
                    for round in 0..ROUNDS {
                        barrier.wait();
                        if let (None, Some((out, probe))) = (&failure, &mut buffers) {
                            let result =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    one_round(t, round, out, probe)
                                }))
                                .unwrap_or_else(|_| Err(format!("round {round}: panicked")));
                            failure = result.err();
                        }
                    }
                    if failure.is_none()
                        && let Err(e) = offload::synchronize()
                    {
                        failure = Some(format!("a final synchronize: {e}"));
                    }
                    failure.map(|f| format!("thread {t}: {f}"))
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| {
                h.join()
                    .unwrap_or_else(|_| Some("a thread panicked".into()))
            })
            .collect()
    });
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

#[offload_kernel]
fn path_methods(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let a = x[i];
        *v = f32::max(a, 0.5)
            + f32::min(1.0, a)
            + f32::sqrt(f32::abs(a))
            + f32::mul_add(a, 2.0, 1.0)
            + i32::max(i as i32 - 3, 0) as f32;
    }
}

#[offload_kernel]
fn generic_path_methods<T: Float>(mut out: Region<T, Linear1D>, x: &[T]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = T::max(x[i], T::from_f64(0.0)) + T::sqrt(T::abs(x[i]));
    }
}

pub fn methods_called_by_their_type_path(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.01).collect();
    let mut out = vec![0f32; x.len()];
    path_methods(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            a.max(0.5)
                + 1.0f32.min(a)
                + a.abs().sqrt()
                + a.mul_add(2.0, 1.0)
                + (i as i32 - 3).max(0) as f32
        })
        .collect();
    close_f32("f32::max and friends", &out, &want, 1e-6)?;
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut out64 = vec![0f64; x64.len()];
    generic_path_methods(o, &mut out64, &x64).map_err(|e| e.to_string())?;
    let want64: Vec<f64> = x64.iter().map(|&a| a.max(0.0) + a.abs().sqrt()).collect();
    close_f64("T::max and friends (f64)", &out64, &want64, 1e-12)
}

const COLS: usize = 37;
const RADIUS: usize = 2;

/// A row softmax: one thread per row of `COLS` values.
#[offload_kernel]
fn row_softmax(mut rows: Region<f32, Chunked<COLS>>) {
    if let Some(row) = rows.get_mut() {
        let mut top = row[0];
        for k in 1..row.len() {
            top = top.max(row[k]);
        }
        let mut sum = 0.0f32;
        for k in 0..row.len() {
            row[k] = (row[k] - top).exp();
            sum += row[k];
        }
        for k in 0..row.len() {
            row[k] /= sum;
        }
    }
}

/// A box filter of radius `RADIUS`, with an offset outside the radius on request.
#[offload_kernel]
fn box_filter(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<RADIUS>>, reach: isize) {
    let mut sum = 0.0f32;
    for dr in -2..=2 {
        for dc in -2..=2 {
            sum += img.get_clamped(dr, dc);
        }
    }
    let far = if reach > 2 {
        img.get_clamped(3, 0)
    } else {
        0.0
    };
    if let Some(v) = out.get_mut() {
        *v = sum + far;
    }
}

pub fn strategies_take_const_items(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..COLS * 20)
        .map(|i| ((i * 13) % 17) as f32 * 0.25)
        .collect();
    let mut rows = x.clone();
    row_softmax(o, &mut rows).map_err(|e| e.to_string())?;
    let mut want = x.clone();
    for row in want.chunks_mut(COLS) {
        let top = row.iter().cloned().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|v| (v - top).exp()).sum();
        for v in row.iter_mut() {
            *v = (*v - top).exp() / sum;
        }
    }
    close_f32("softmax over Chunked<COLS>", &rows, &want, 1e-5)?;

    let (w, h) = (23usize, 17usize);
    let img: Vec<f32> = (0..w * h).map(|i| ((i * 7) % 19) as f32).collect();
    let mut out = vec![0f32; w * h];
    box_filter(o, Region::new_2d(&mut out, w), Region::stencil(&img, w), 2)
        .map_err(|e| e.to_string())?;
    let at = |r: isize, c: isize| {
        img[r.clamp(0, h as isize - 1) as usize * w + c.clamp(0, w as isize - 1) as usize]
    };
    let want: Vec<f32> = (0..w * h)
        .map(|i| {
            let (r, c) = ((i / w) as isize, (i % w) as isize);
            let mut sum = 0.0;
            for dr in -2..=2 {
                for dc in -2..=2 {
                    sum += at(r + dr, c + dc);
                }
            }
            sum
        })
        .collect();
    compare("box filter over Stencil2D<RADIUS>", &out, &want)?;
    // An offset past a `const` radius is caught at run time.
    let result = box_filter(o, Region::new_2d(&mut out, w), Region::stencil(&img, w), 3);
    expect_panic(
        result,
        "stencil offset outside the region's radius",
        "img.get_clamped(3, 0)",
    )
}

#[offload_kernel]
fn count_and_sum(counts: Atomic<u32>, total: Atomic<f64>, x: &[f64]) {
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    if i < x.len() {
        counts.fetch_add(i % 8, 1);
        total.fetch_add(0, x[i]);
    }
}

pub fn atomics_on_device_buffers(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let n = 50_000usize;
    let x: Vec<f64> = (0..n).map(|i| (i % 29) as f64 * 0.5).collect();
    let dx = offload::DeviceBuffer::from_slice(&device, &x).map_err(|e| e.to_string())?;
    let mut counts =
        offload::DeviceBuffer::from_slice(&device, &[0u32; 8]).map_err(|e| e.to_string())?;
    let mut total =
        offload::DeviceBuffer::from_slice(&device, &[0f64]).map_err(|e| e.to_string())?;
    let o = LaunchOptions {
        workgroup_dim: Some([n.div_ceil(256) as u32, 1, 1]),
        thread_dim: Some([256, 1, 1]),
        ..o
    };
    // Three launches accumulate on the device; nothing is copied until `to_vec`.
    for _ in 0..3 {
        count_and_sum(o, &mut counts, &mut total, &dx).map_err(|e| e.to_string())?;
    }
    let want_counts: Vec<u32> = (0..8)
        .map(|b| 3 * (0..n).filter(|i| i % 8 == b).count() as u32)
        .collect();
    compare(
        "counts",
        &counts.to_vec().map_err(|e| e.to_string())?,
        &want_counts,
    )?;
    let want_total = 3.0 * x.iter().sum::<f64>();
    close_f64(
        "total",
        &total.to_vec().map_err(|e| e.to_string())?,
        &[want_total],
        1e-12,
    )
}

/// Every thread writes its workgroup's sum, least and greatest value.
#[offload_kernel]
fn workgroup_stats(
    mut sums: Region<f64, Linear1D>,
    mut lows: Region<i32, Linear1D>,
    mut highs: Region<u32, Linear1D>,
    x: &[i32],
) {
    let i = sums.index();
    let v = if i < x.len() { x[i] } else { 0 };
    let sum = workgroup_sum(v as f64);
    let low = workgroup_min(v);
    let high = workgroup_max(v as u32);
    if let Some(s) = sums.get_mut() {
        *s = sum;
    }
    if let Some(l) = lows.get_mut() {
        *l = low;
    }
    if let Some(h) = highs.get_mut() {
        *h = high;
    }
}

pub fn workgroup_reductions_reach_every_thread(o: LaunchOptions) -> CaseResult {
    let group = 128usize;
    let n = group * 37;
    let x: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 1000 - 500).collect();
    let (mut sums, mut lows, mut highs) = (vec![0f64; n], vec![0i32; n], vec![0u32; n]);
    let o = LaunchOptions {
        workgroup_dim: Some([(n / group) as u32, 1, 1]),
        thread_dim: Some([group as u32, 1, 1]),
        ..o
    };
    workgroup_stats(o, &mut sums, &mut lows, &mut highs, &x).map_err(|e| e.to_string())?;
    let mut want = (Vec::new(), Vec::new(), Vec::new());
    for chunk in x.chunks(group) {
        let sum: f64 = chunk.iter().map(|&v| v as f64).sum();
        let low = *chunk.iter().min().expect("chunks are not empty");
        let high = chunk
            .iter()
            .map(|&v| v as u32)
            .max()
            .expect("chunks are not empty");
        want.0.extend(std::iter::repeat_n(sum, group));
        want.1.extend(std::iter::repeat_n(low, group));
        want.2.extend(std::iter::repeat_n(high, group));
    }
    compare("workgroup_sum", &sums, &want.0)?;
    compare("workgroup_min", &lows, &want.1)?;
    compare("workgroup_max", &highs, &want.2)
}

/// A 16-tap FIR filter with constant taps, and a 3-point smoother from a `let` array.
#[offload_kernel]
fn fir(mut out: Region<f32, Linear1D>, x: &[f32], shift: usize) {
    const TAPS: [f32; 16] = [
        0.01, -0.02, 0.03, 0.05, -0.08, 0.13, 0.21, 0.34, 0.34, 0.21, 0.13, -0.08, 0.05, 0.03,
        -0.02, 0.01,
    ];
    let smooth = [0.25f32, 0.5, 0.25];
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..TAPS.len() {
            if i + k < x.len() {
                acc += TAPS[k] * x[i + k];
            }
        }
        let mut s = smooth[1] * x[i];
        if i > 0 && i + 1 < x.len() {
            s = smooth[0] * x[i - 1] + smooth[1] * x[i] + smooth[2] * x[i + 1];
        }
        // An index past the end panics on the device, like a slice's.
        *v = acc + s + smooth[shift];
    }
}

pub fn constant_arrays_in_kernels(o: LaunchOptions) -> CaseResult {
    const TAPS: [f32; 16] = [
        0.01, -0.02, 0.03, 0.05, -0.08, 0.13, 0.21, 0.34, 0.34, 0.21, 0.13, -0.08, 0.05, 0.03,
        -0.02, 0.01,
    ];
    let smooth = [0.25f32, 0.5, 0.25];
    let n = 3000usize;
    let x: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.1).collect();
    let mut out = vec![0f32; n];
    fir(o, &mut out, &x, 2).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let mut acc = 0.0f32;
            for k in 0..16 {
                if i + k < n {
                    acc += TAPS[k] * x[i + k];
                }
            }
            let mut s = smooth[1] * x[i];
            if i > 0 && i + 1 < n {
                s = smooth[0] * x[i - 1] + smooth[1] * x[i] + smooth[2] * x[i + 1];
            }
            acc + s + smooth[2]
        })
        .collect();
    close_f32("constant arrays", &out, &want, 1e-5)?;
    let result = fir(o, &mut out, &x, 3);
    expect_panic(
        result,
        "index out of bounds: the len is 3 but the index is 3",
        "*v = acc + s + smooth[shift];",
    )
}

/// A gather through an index list whose entries the caller knows are in bounds.
#[offload_kernel]
fn gather_unchecked(mut out: Region<f32, Linear1D>, x: &[f32], idx: &[u32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        let j = idx[i] as usize;
        // SAFETY: the caller fills `idx` with indices of `x`.
        *v = unsafe { *x.get_unchecked(j) } * 2.0 + unsafe { x.get_unchecked(0) };
    }
}

pub fn unchecked_reads_where_the_author_vouches(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = (0..500).map(|i| i as f32 * 0.5).collect();
    let idx: Vec<u32> = (0..2000u32).map(|i| (i * 7) % 500).collect();
    let mut out = vec![0f32; idx.len()];
    gather_unchecked(o, &mut out, &x, &idx).map_err(|e| e.to_string())?;
    let want: Vec<f32> = idx.iter().map(|&j| x[j as usize] * 2.0 + x[0]).collect();
    compare("get_unchecked", &out, &want)
}

/// A transpose through a 16×16 tile: thread (x, y) writes `tile[(y, x)]`, then reads the
/// element across the diagonal.
#[offload_kernel]
fn transpose_tiles(mut out: Region<f32, Linear2D>, a: &[f32], n: usize) {
    let mut tile = Shared2D::<f32, 16, 16>::new();
    let x = thread_idx(0);
    let y = thread_idx(1);
    let bx = workgroup_idx(0) * 16;
    let by = workgroup_idx(1) * 16;
    // Thread (x, y) loads a[by + y][bx + x].
    let r = by + y;
    let c = bx + x;
    tile.write(if r < n && c < n { a[r * n + c] } else { 0.0 });
    sync_threads();
    // out[bx + y][by + x] = a[by + x][bx + y], which thread (y, x) loaded.
    let v = tile[(x, y)] + tile.cols() as f32 * 0.0;
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

/// The same transpose through a tile padded to 17 columns (the usual cure for bank
/// conflicts): the 16-wide workgroups leave the last column unwritten.
#[offload_kernel]
fn transpose_padded(mut out: Region<f32, Linear2D>, a: &[f32], n: usize) {
    let mut tile = Shared2D::<f32, 16, 17>::new();
    let (x, y) = (thread_idx(0), thread_idx(1));
    let (r, c) = (workgroup_idx(1) * 16 + y, workgroup_idx(0) * 16 + x);
    tile.write(if r < n && c < n { a[r * n + c] } else { 0.0 });
    sync_threads();
    let v = tile[(x, y)];
    if let Some(o) = out.get_mut() {
        *o = v + tile[(y, 16)];
    }
}

pub fn two_dimensional_shared_tiles(o: LaunchOptions) -> CaseResult {
    let n = 48usize;
    let a: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let mut out = vec![0f32; n * n];
    let groups = (n / 16) as u32;
    let o = LaunchOptions {
        workgroup_dim: Some([groups, groups, 1]),
        thread_dim: Some([16, 16, 1]),
        ..o
    };
    transpose_tiles(o, Region::new_2d(&mut out, n), &a, n).map_err(|e| e.to_string())?;
    // `out` is indexed (row, col) = (by + y, bx + x) for thread (x, y) of group (bx, by).
    let want: Vec<f32> = (0..n * n)
        .map(|i| {
            let (row, col) = (i / n, i % n);
            let (bx, x) = (col / 16 * 16, col % 16);
            let (by, y) = (row / 16 * 16, row % 16);
            a[(by + x) * n + (bx + y)]
        })
        .collect();
    compare("Shared2D transpose", &out, &want)?;
    let mut padded = vec![1f32; n * n];
    transpose_padded(o, Region::new_2d(&mut padded, n), &a, n).map_err(|e| e.to_string())?;
    compare("padded Shared2D transpose", &padded, &want)?;
    // Workgroups wider than the tile's columns cannot write it.
    let wide = LaunchOptions {
        workgroup_dim: Some([groups / 2 + 1, groups, 1]),
        thread_dim: Some([32, 16, 1]),
        ..o
    };
    let result = transpose_tiles(wide, Region::new_2d(&mut out, n), &a, n);
    expect_panic(
        result,
        "a `Shared2D` tile is written by workgroups at most as wide as its columns",
        "tile.write(if r < n && c < n { a[r * n + c] } else { 0.0 });",
    )
}

#[offload_kernel]
fn label_3d(mut out: Region<u32, Linear3D>, base: &[u32]) {
    let (x, y, z) = (out.x(), out.y(), out.z());
    let (w, h, d) = (out.width(), out.height(), out.depth());
    if let Some(v) = out.get_mut() {
        *v = base[(z * h + y) * w + x] + (x + 10 * y + 100 * z) as u32 + (w * h * d) as u32 * 1000;
    }
}

#[offload_kernel]
fn positions_z(mut out: Region<u32, Linear3D>) {
    let p =
        thread_idx(2) + 10 * workgroup_idx(2) + 100 * workgroup_dim(2) + 1000 * workgroup_count(2);
    if let Some(v) = out.get_mut() {
        *v = p as u32;
    }
}

pub fn linear_3d_regions(o: LaunchOptions) -> CaseResult {
    let (w, h, d) = (13usize, 7usize, 5usize);
    let base: Vec<u32> = (0..w * h * d).map(|i| (i % 3) as u32).collect();
    let want: Vec<u32> = (0..w * h * d)
        .map(|i| {
            let (x, y, z) = (i % w, i / w % h, i / (w * h));
            base[i] + (x + 10 * y + 100 * z) as u32 + (w * h * d) as u32 * 1000
        })
        .collect();
    let mut out = vec![0u32; w * h * d];
    label_3d(o, Region::new_3d(&mut out, w, h), &base).map_err(|e| e.to_string())?;
    compare("linear 3d (default geometry)", &out, &want)?;
    // Workgroups of 4×4×4 threads, some past every edge.
    let cube = LaunchOptions {
        workgroup_dim: Some([4, 2, 2]),
        thread_dim: Some([4, 4, 4]),
        ..o
    };
    let mut out = vec![0u32; w * h * d];
    label_3d(cube, Region::new_3d(&mut out, w, h), &base).map_err(|e| e.to_string())?;
    compare("linear 3d (4x4x4 workgroups)", &out, &want)?;
    // Positions along z, in the same launch.
    let mut out = vec![0u32; w * h * d];
    positions_z(cube, Region::new_3d(&mut out, w, h)).map_err(|e| e.to_string())?;
    let want_z: Vec<u32> = (0..w * h * d)
        .map(|i| {
            let z = i / (w * h);
            (z % 4 + 10 * (z / 4) + 100 * 4 + 1000 * 2) as u32
        })
        .collect();
    compare("positions along z", &out, &want_z)?;
    // Extents whose product does not fit in a `usize` are refused, not an overflow.
    let result = label_3d(o, Region::new_3d(&mut out, usize::MAX / 2, 4), &base);
    expect_error(
        result,
        &format!(
            "invalid launch: a `Linear3D` region of 455 elements cannot be laid out in planes of 4 rows of {}",
            usize::MAX / 2
        ),
    )?;
    let mut ragged = vec![0u32; w * h * d - 1];
    let result = label_3d(o, Region::new_3d(&mut ragged, w, h), &base);
    expect_error(
        result,
        "invalid launch: a `Linear3D` region of 454 elements cannot be laid out in planes of 7 rows of 13",
    )
}

#[offload_kernel]
fn label_rows(mut out: Region<u32, Linear2D>) {
    let (r, c) = (out.row(), out.col());
    if let Some(v) = out.get_mut() {
        *v = (r * 4 + c) as u32;
    }
}

pub fn grids_past_the_y_limit_are_folded(o: LaunchOptions) -> CaseResult {
    // One thread per workgroup row: 70,000 workgroups along y, past a CUDA grid's 65,535.
    let (w, h) = (4usize, 70_000usize);
    let mut out = vec![0u32; w * h];
    let o = LaunchOptions {
        thread_dim: Some([4, 1, 1]),
        ..o
    };
    label_rows(o, Region::new_2d(&mut out, w)).map_err(|e| e.to_string())?;
    let want: Vec<u32> = (0..(w * h) as u32).collect();
    compare("folded grid", &out, &want)?;
    // More workgroups than any launch may have is refused before anything runs.
    let huge = LaunchOptions {
        workgroup_dim: Some([u32::MAX, u32::MAX, 2]),
        thread_dim: Some([1, 1, 1]),
        ..o
    };
    expect_error(
        label_rows(huge, Region::new_2d(&mut out, w)),
        "invalid launch: workgroup_dim [4294967295, 4294967295, 2] is 36893488130239234050 workgroups; a launch has at most 2^48",
    )
}

/// A Jacobi sweep over the interior: every thread has all four neighbours.
#[offload_kernel]
fn jacobi_interior(mut next: Region<f64, Linear2D>, grid: Region<f64, Stencil2D<1>>) {
    let sum = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    if let Some(v) = next.get_mut() {
        *v = 0.25 * sum;
    }
}

#[offload_kernel]
fn mark_interior(mut out: Region<u32, Linear2D>) {
    let (r, c, w) = (out.row(), out.col(), out.width());
    if let Some(v) = out.get_mut() {
        *v = (r * w + c) as u32;
    }
}

pub fn interior_regions_map_threads_to_inner_points(o: LaunchOptions) -> CaseResult {
    let (w, h) = (19usize, 11usize);
    let grid: Vec<f64> = (0..w * h).map(|i| ((i * 37) % 17) as f64).collect();
    let mut next = vec![-1f64; w * h];
    jacobi_interior(
        o,
        Region::new_2d(&mut next, w).interior(1),
        Region::stencil(&grid, w).interior(1),
    )
    .map_err(|e| e.to_string())?;
    let want: Vec<f64> = (0..w * h)
        .map(|i| {
            let (r, c) = (i / w, i % w);
            if r == 0 || c == 0 || r == h - 1 || c == w - 1 {
                -1.0
            } else {
                0.25 * (grid[i - w] + grid[i + w] + grid[i - 1] + grid[i + 1])
            }
        })
        .collect();
    compare("jacobi interior", &next, &want)?;
    // A margin of 2, with workgroups that overshoot the interior on every side.
    let mut out = vec![u32::MAX; w * h];
    let wide = LaunchOptions {
        thread_dim: Some([8, 8, 1]),
        ..o
    };
    mark_interior(wide, Region::new_2d(&mut out, w).interior(2)).map_err(|e| e.to_string())?;
    let want: Vec<u32> = (0..w * h)
        .map(|i| {
            let (r, c) = (i / w, i % w);
            if (2..h - 2).contains(&r) && (2..w - 2).contains(&c) {
                i as u32
            } else {
                u32::MAX
            }
        })
        .collect();
    compare("interior(2)", &out, &want)?;
    let result = mark_interior(o, Region::new_2d(&mut out, w).interior(6));
    expect_error(
        result,
        "invalid launch: `interior(6)` of a `Linear2D` region with an extent of 11 leaves no interior",
    )?;
    // A margin whose double does not fit in a `usize` is refused the same way.
    let huge = usize::MAX / 2 + 1;
    let result = mark_interior(o, Region::new_2d(&mut out, w).interior(huge));
    expect_error(
        result,
        &format!(
            "invalid launch: `interior({huge})` of a `Linear2D` region with an extent of 19 leaves no interior"
        ),
    )?;
    let result = jacobi_interior(
        o,
        Region::new_2d(&mut next, w).interior(1),
        Region::stencil(&grid, w),
    );
    expect_error(
        result,
        "invalid launch: the 2-D and 3-D regions of one launch must have one shape: argument 1 is 11 rows of 19 with interior(1), argument 2 is 11 rows of 19",
    )
}

#[offload_kernel]
fn scatter_add(mut data: Region<f32, Indexed>, values: &[f32]) {
    let t = data.index();
    if let Some(v) = data.get_mut() {
        *v += values[t];
    }
}

pub fn indexed_regions_scatter_safely(o: LaunchOptions) -> CaseResult {
    let n = 1000usize;
    let mut data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    // Every seventh element, in a scrambled order.
    let indices: Vec<usize> = (0..n / 7).map(|k| (k * 61 % (n / 7)) * 7).collect();
    let values: Vec<f32> = (0..indices.len()).map(|k| 0.5 + k as f32).collect();
    let mut want = data.clone();
    for (k, &i) in indices.iter().enumerate() {
        want[i] += values[k];
    }
    scatter_add(o, Region::indexed(&mut data, &indices), &values).map_err(|e| e.to_string())?;
    compare("indexed scatter", &data, &want)?;
    let repeated = [3usize, 9, 3];
    let result = scatter_add(o, Region::indexed(&mut data, &repeated), &values);
    expect_error(
        result,
        "invalid launch: indices 0 and 2 of an `Indexed` region are both 3: two threads would own one element",
    )?;
    compare("data after a refused launch", &data, &want)?;
    let outside = [3usize, 1000];
    let result = scatter_add(o, Region::indexed(&mut data, &outside), &values);
    expect_error(
        result,
        "invalid launch: index 1 of an `Indexed` region is 1000, out of bounds for its 1000 elements",
    )
}

#[offload_kernel]
fn element_loops(mut out: Region<f32, Linear1D>, x: &[f32]) {
    const W: [f32; 3] = [0.5, 0.25, 0.125];
    let i = out.index();
    let mut sum = 0.0f32;
    for v in x.iter() {
        sum += *v;
    }
    let mut weighted = 0.0f32;
    for (k, &w) in W.iter().enumerate() {
        weighted += w * (k + i) as f32;
    }
    let mut last = 0.0f32;
    for v in x {
        last = *v;
    }
    // The first element above `i`, or -1.
    let mut k = 0;
    let above = loop {
        if k >= x.len() {
            break -1.0;
        }
        if x[k] > i as f32 {
            break x[k];
        }
        k += 1;
    };
    // Counting down: 3210, then 321 from an inclusive range, nothing from an empty one.
    let mut down = 0u32;
    for k in (0..4u32).rev() {
        down = down * 10 + k;
    }
    for k in (1..=3u32).rev() {
        down = down * 10 + k;
    }
    for _ in (5..2u32).rev() {
        down += 1;
    }
    // The elements from the last back: a Horner sum.
    let mut horner = 0.0f32;
    for &v in x.iter().rev() {
        horner = horner * 0.5 + v;
    }
    if let Some(o) = out.get_mut() {
        *o = sum + weighted * 100.0 + last * 1000.0 + above * 10000.0 + down as f32 + horner;
    }
}

pub fn loops_over_elements_and_loop_values(o: LaunchOptions) -> CaseResult {
    let x: Vec<f32> = vec![3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
    let mut out = vec![0.0f32; 12];
    element_loops(o, &mut out, &x).map_err(|e| e.to_string())?;
    let w = [0.5f32, 0.25, 0.125];
    let want: Vec<f32> = (0..12)
        .map(|i| {
            let sum: f32 = x.iter().fold(0.0, |a, v| a + v);
            let weighted = w
                .iter()
                .enumerate()
                .fold(0.0f32, |a, (k, w)| a + w * (k + i) as f32);
            let above = x.iter().copied().find(|&v| v > i as f32).unwrap_or(-1.0);
            let horner = x.iter().rev().fold(0.0f32, |h, v| h * 0.5 + v);
            sum + weighted * 100.0 + x[x.len() - 1] * 1000.0 + above * 10000.0 + 3210321.0 + horner
        })
        .collect();
    compare("element loops", &out, &want)
}

#[offload_kernel]
fn classes(mut out: Region<f32, Linear1D>, f: &[f32], n: &[i32], u: &[u32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = f[i];
        let class = v.is_nan() as u32 + 2 * v.is_infinite() as u32 + 4 * v.is_finite() as u32;
        let a = n[i];
        let b = n[(i + 3) % n.len()];
        let e = a.rem_euclid(7) as f32 + 100.0 * a.abs_diff(b) as f32 + 1000.0 * a.signum() as f32;
        let p = u[i].abs_diff(u[(i + 1) % u.len()]) as f32 + u[i].rem_euclid(5) as f32 * 0.5;
        *o = v.signum() + class as f32 * 10.0 + e * 0.001 + p;
    }
}

pub fn float_classes_signs_and_euclidean_remainders(o: LaunchOptions) -> CaseResult {
    let f: Vec<f32> = vec![
        1.5,
        -2.0,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3.0,
    ];
    let n: Vec<i32> = vec![-9, 14, 0, -1, i32::MIN + 5, 7, -7, i32::MAX];
    let u: Vec<u32> = vec![0, 9, u32::MAX, 3, 5, 12, 1, 100];
    let mut out = vec![0.0f32; 8];
    classes(o, &mut out, &f, &n, &u).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..8)
        .map(|i| {
            let v = f[i];
            let class = v.is_nan() as u32 + 2 * v.is_infinite() as u32 + 4 * v.is_finite() as u32;
            let (a, b) = (n[i], n[(i + 3) % 8]);
            let e =
                a.rem_euclid(7) as f32 + 100.0 * a.abs_diff(b) as f32 + 1000.0 * a.signum() as f32;
            let p = u[i].abs_diff(u[(i + 1) % 8]) as f32 + u[i].rem_euclid(5) as f32 * 0.5;
            v.signum() + class as f32 * 10.0 + e * 0.001 + p
        })
        .collect();
    // NaN compares unequal to itself, and arithmetic on it may give another NaN's bits
    // (a GPU's canonical NaN): compare bits, every NaN as one.
    let bits = |x: &[f32]| {
        x.iter()
            .map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() })
            .collect::<Vec<u32>>()
    };
    compare("classes", &bits(&out), &bits(&want))
}

/// A xorshift generator's uniform floats in [0, 1) from the bits of the mantissa, as
/// random-number kernels make them, and the bits of an `f64`.
#[offload_kernel]
fn uniform(mut out: Region<f32, Linear1D>, mut bits: Region<u64, Linear1D>) {
    let i = out.index();
    let mut x = (i as u32).wrapping_mul(2654435761) | 1;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    let u = f32::from_bits(0x3f80_0000 | (x >> 9)) - 1.0;
    let b = (u as f64 * 3.0).to_bits() ^ u.to_bits() as u64;
    if let Some(o) = out.get_mut() {
        *o = u;
    }
    if let Some(v) = bits.get_mut() {
        *v = b;
    }
}

pub fn floats_from_and_to_their_bits(o: LaunchOptions) -> CaseResult {
    let n = 300;
    let mut out = vec![0.0f32; n];
    let mut bits = vec![0u64; n];
    uniform(o, &mut out, &mut bits).map_err(|e| e.to_string())?;
    let (mut want, mut want_bits) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut x = (i as u32).wrapping_mul(2654435761) | 1;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let u = f32::from_bits(0x3f80_0000 | (x >> 9)) - 1.0;
        want.push(u);
        want_bits.push((u as f64 * 3.0).to_bits() ^ u.to_bits() as u64);
    }
    compare("uniform floats", &out, &want)?;
    compare("bits", &bits, &want_bits)
}

#[offload_kernel]
fn more_methods(mut out: Region<f64, Linear1D>, x: &[f64], n: &[i32], u: &[u32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = x[i];
        // Exact: arithmetic only.
        let exact = v.recip()
            + v.fract() * 10.0
            + v.to_radians()
            + v.to_degrees() * 0.001
            + v.is_sign_negative() as u32 as f64 * 1e6
            + v.is_sign_positive() as u32 as f64 * 2e6
            + n[i].div_euclid(3) as f64 * 1e-3
            + n[i].is_negative() as u32 as f64 * 3e6
            + n[i].rotate_left(7) as f64
            + u[i].rotate_right(3) as f64 * 1e-9
            + u[i].saturating_add(4_000_000_000) as f64
            + u[i].saturating_sub(7) as f64 * 1e-2
            + u[i].div_ceil(u[i] % 5 + 3) as f64 * 1e-5;
        *o = exact;
    }
}

#[offload_kernel]
fn transcendentals(mut out: Region<f64, Linear1D>, x: &[f64]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = x[i] * 0.1;
        *o = v.asin()
            + v.acos()
            + v.atan()
            + v.atan2(0.5)
            + v.sinh()
            + v.cosh()
            + v.cbrt()
            + v.exp_m1()
            + v.ln_1p();
    }
}

#[offload_kernel]
fn angles(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        *o = x[i].to_radians() + x[i].to_degrees() * 1e-3;
    }
}

pub fn more_float_and_integer_methods(o: LaunchOptions) -> CaseResult {
    let degrees: Vec<f32> = vec![0.0, 1.0, 45.0, 90.0, 180.0, -270.5, 1e6, 0.1];
    let mut out = vec![0.0f32; 8];
    angles(o, &mut out, &degrees).map_err(|e| e.to_string())?;
    let want: Vec<f32> = degrees
        .iter()
        .map(|d| d.to_radians() + d.to_degrees() * 1e-3)
        .collect();
    fused_f32(o, "f32 angles", &out, &want)?;
    let x: Vec<f64> = vec![2.5, -3.75, 0.0, -0.0, 7.125, -1.0, 0.5, 9.875];
    let n: Vec<i32> = vec![-7, 7, 0, -1, i32::MIN, i32::MAX, 10, -10];
    let u: Vec<u32> = vec![0, 5, u32::MAX, 300_000_000, 6, 7, 8, 1 << 31];
    let mut out = vec![0.0f64; 8];
    more_methods(o, &mut out, &x, &n, &u).map_err(|e| e.to_string())?;
    let want: Vec<f64> = (0..8)
        .map(|i| {
            let v = x[i];
            v.recip()
                + v.fract() * 10.0
                + v.to_radians()
                + v.to_degrees() * 0.001
                + v.is_sign_negative() as u32 as f64 * 1e6
                + v.is_sign_positive() as u32 as f64 * 2e6
                + n[i].div_euclid(3) as f64 * 1e-3
                + n[i].is_negative() as u32 as f64 * 3e6
                + n[i].rotate_left(7) as f64
                + u[i].rotate_right(3) as f64 * 1e-9
                + u[i].saturating_add(4_000_000_000) as f64
                + u[i].saturating_sub(7) as f64 * 1e-2
                + u[i].div_ceil(u[i] % 5 + 3) as f64 * 1e-5
        })
        .collect();
    let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<u64>>();
    compare("exact methods", &bits(&out), &bits(&want))?;
    // The transcendental functions come from each target's math library: within a few
    // units in the last place of the host's.
    let mut out = vec![0.0f64; 8];
    transcendentals(o, &mut out, &x).map_err(|e| e.to_string())?;
    for (i, got) in out.iter().enumerate() {
        let v = x[i] * 0.1;
        let want = v.asin()
            + v.acos()
            + v.atan()
            + v.atan2(0.5)
            + v.sinh()
            + v.cosh()
            + v.cbrt()
            + v.exp_m1()
            + v.ln_1p();
        let close =
            (got - want).abs() <= 1e-13 * want.abs().max(1.0) || (got.is_nan() && want.is_nan());
        if !close {
            return Err(format!(
                "transcendentals: element {i}: got {got}, want {want}"
            ));
        }
    }
    Ok(())
}

#[offload_kernel]
fn inverse_hyperbolic_f64(mut out: Region<f64, Linear1D>, x: &[f64]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = x[i];
        *o = v.asinh() + (v.abs() + 1.0).acosh() + (v * 0.1).atanh();
    }
}

#[offload_kernel]
fn inverse_hyperbolic_f32(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = x[i];
        *o = v.asinh() + (v.abs() + 1.0).acosh() + (v * 0.1).atanh();
    }
}

/// `asinh`, `acosh` and `atanh` in `f32` and `f64`, within a few units in the last place
/// of the host's (each target has its own math library), NaN where the host's is.
pub fn inverse_hyperbolic_functions(o: LaunchOptions) -> CaseResult {
    let x: Vec<f64> = vec![0.0, -0.0, 0.5, -0.75, 3.0, -8.5, 9.99, 1e-7, 11.0, -20.0];
    let want = |v: f64| v.asinh() + (v.abs() + 1.0).acosh() + (v * 0.1).atanh();
    let mut out = vec![0.0f64; x.len()];
    inverse_hyperbolic_f64(o, &mut out, &x).map_err(|e| e.to_string())?;
    for (i, (got, v)) in out.iter().zip(&x).enumerate() {
        let want = want(*v);
        let close =
            (got - want).abs() <= 1e-13 * want.abs().max(1.0) || (got.is_nan() && want.is_nan());
        if !close {
            return Err(format!("f64: element {i}: got {got}, want {want}"));
        }
    }
    let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let mut out = vec![0.0f32; x.len()];
    inverse_hyperbolic_f32(o, &mut out, &x32).map_err(|e| e.to_string())?;
    for (i, (got, v)) in out.iter().zip(&x32).enumerate() {
        let want = v.asinh() + (v.abs() + 1.0).acosh() + (v * 0.1).atanh();
        let close =
            (got - want).abs() <= 1e-5 * want.abs().max(1.0) || (got.is_nan() && want.is_nan());
        if !close {
            return Err(format!("f32: element {i}: got {got}, want {want}"));
        }
    }
    Ok(())
}

#[offload_kernel]
fn half_axpy(mut y: Region<f16, Linear1D>, x: &[f16], a: f16) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

/// Every operation of `f16` a kernel takes, each result as the `half` crate rounds it.
#[offload_kernel]
fn half_operations(
    mut out: Region<f16, Linear1D>,
    mut wide: Region<f32, Linear1D>,
    x: &[f16],
    y: &[f16],
) {
    let i = out.index();
    if i >= x.len() {
        return;
    }
    let (a, b) = (x[i], y[i]);
    let mut acc = a - b;
    acc += a / b;
    acc = acc * f16::from_f32(0.3) + f16::from_f64(-1.7);
    if a < b || a.to_f32() > 1000.0 {
        acc = -acc;
    }
    let mut limited = acc.max(f16::NEG_ONE).min(f16::PI).clamp(f16::MIN, f16::MAX);
    if a == b {
        limited = f16::EPSILON + f16::ZERO;
    }
    if let Some(o) = out.get_mut() {
        *o = limited % f16::ONE + acc + f16::from_f64(b.to_f64() * 1.1 + 1e-5);
    }
    if let Some(w) = wide.get_mut() {
        *w = f32::from(acc) + b.to_f64() as f32 * 0.5;
    }
}

/// The same in `bf16`.
#[offload_kernel]
fn bfloat_operations(mut out: Region<bf16, Linear1D>, x: &[bf16], y: &[bf16]) {
    let i = out.index();
    if i >= x.len() {
        return;
    }
    let (a, b) = (x[i], y[i]);
    let mut acc = a * b - a / b;
    acc -= bf16::from_f32(a.to_f32() * 3.0);
    if acc >= bf16::ZERO {
        acc = acc.min(bf16::from_f64(1.0e30));
    }
    if let Some(o) = out.get_mut() {
        *o = acc + bf16::MIN_POSITIVE + bf16::from_f64(a.to_f64() * 0.7 - 1e-3);
    }
}

/// The bits of the 16-bit float nearest `x` (`value` reads bits), ties to even, found
/// by trying every one: the reference for a conversion that rounds once. Beyond `max` by
/// half a step or more, infinity (`inf`'s bits, with `x`'s sign).
fn nearest_bits(x: f64, value: fn(u16) -> f64, max: f64, half_step: f64, inf: u16) -> u16 {
    if x.is_nan() {
        return inf | 1;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.abs() >= max + half_step {
        return inf | sign;
    }
    let mut best: Option<(f64, u16)> = None;
    for bits in 0..=u16::MAX {
        let v = value(bits);
        if !v.is_finite() || (v == 0.0 && (bits & 0x8000) != sign) {
            continue;
        }
        // Exact: the candidates that can win are within a factor of two of `x`.
        let d = (x - v).abs();
        let better = match best {
            None => true,
            Some((bd, bb)) => d < bd || (d == bd && bits & 1 == 0 && bb & 1 == 1),
        };
        if better {
            best = Some((d, bits));
        }
    }
    best.expect("a finite value").1
}

/// `f64` to `f16` and `bf16`: rounded once.
#[offload_kernel]
fn narrow_from_f64(mut h: Region<f16, Linear1D>, mut b: Region<bf16, Linear1D>, v: &[f64]) {
    let i = h.index();
    if let Some(o) = h.get_mut() {
        *o = f16::from_f64(v[i]);
    }
    if let Some(o) = b.get_mut() {
        *o = bf16::from_f64(v[i]);
    }
}

/// The classes and signs of `f16` values, and `signum`.
#[offload_kernel]
fn half_classes(mut out: Region<u32, Linear1D>, mut sign: Region<f16, Linear1D>, x: &[f16]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let v = x[i];
        *o = v.is_nan() as u32
            | (v.is_infinite() as u32) << 1
            | (v.is_finite() as u32) << 2
            | (v.is_sign_negative() as u32) << 3
            | (v.is_sign_positive() as u32) << 4;
    }
    if let Some(s) = sign.get_mut() {
        *s = x[i].signum();
    }
}

/// Atomic adds in `f16` and `bf16` whose sums are whole numbers the types hold exactly,
/// so the result does not depend on the order the threads add in.
#[offload_kernel]
fn half_atomic_counts(
    halves: Atomic<f16>,
    bfloats: Atomic<bf16>,
    x: &[u32],
    mut done: Region<u8, Linear1D>,
) {
    let i = done.index();
    if let Some(d) = done.get_mut() {
        halves.fetch_add((x[i] % 4) as usize, f16::ONE);
        bfloats.fetch_sub((x[i] % 8) as usize, bf16::NEG_ONE);
        *d = 1;
    }
}

/// A `bf16` scalar argument written out as it came (a subnormal one must not be flushed
/// on its way through the CPU's calling convention).
#[offload_kernel]
fn bfloat_passed_through(mut out: Region<bf16, Linear1D>, b: bf16) {
    if let Some(v) = out.get_mut() {
        *v = b;
    }
}

/// A second kernel with half-precision atomics, so that two are loaded side by side:
/// every thread adds `h` and `b` to the first element.
#[offload_kernel]
fn half_atomic_totals(
    halves: Atomic<f16>,
    bfloats: Atomic<bf16>,
    h: f16,
    b: bf16,
    mut done: Region<u8, Linear1D>,
) {
    if let Some(d) = done.get_mut() {
        halves.fetch_add(0, h);
        bfloats.fetch_add(0, b);
        *d = 1;
    }
}

/// `f16` and `bf16` in regions, slices, scalars and device buffers, bit for bit against
/// the `half` crate on the host (NaNs compared as NaNs).
pub fn half_precision_floats(o: LaunchOptions) -> CaseResult {
    let n = 1000;
    let x: Vec<f16> = (0..n)
        .map(|i| f16::from_f32((i as f32 - 400.0) * 0.37))
        .collect();
    let y: Vec<f16> = (0..n)
        .map(|i| f16::from_f32(((i * 7) % 113) as f32 * 0.11 - 2.0))
        .collect();
    let bits = |v: &[f16]| {
        v.iter()
            .map(|h| if h.is_nan() { 0x7e00 } else { h.to_bits() })
            .collect::<Vec<u16>>()
    };
    let a = f16::from_f32(1.25);
    let mut acc = y.clone();
    half_axpy(o, &mut acc, &x, a).map_err(|e| e.to_string())?;
    let want: Vec<f16> = (0..n).map(|i| a * x[i] + y[i]).collect();
    compare("f16 axpy", &bits(&acc), &bits(&want))?;
    // On a device buffer, twice.
    let device = device_of(o);
    let mut dy = offload::DeviceBuffer::from_slice(&device, &y).map_err(|e| e.to_string())?;
    let dx = offload::DeviceBuffer::from_slice(&device, &x).map_err(|e| e.to_string())?;
    half_axpy(o, &mut dy, &dx, a).map_err(|e| e.to_string())?;
    half_axpy(o, &mut dy, &dx, a).map_err(|e| e.to_string())?;
    let want2: Vec<f16> = (0..n).map(|i| a * x[i] + want[i]).collect();
    compare(
        "f16 axpy on device buffers",
        &bits(&dy.to_vec().map_err(|e| e.to_string())?),
        &bits(&want2),
    )?;

    let mut out = vec![f16::ZERO; n];
    let mut wide = vec![0.0f32; n];
    half_operations(o, &mut out, &mut wide, &x, &y).map_err(|e| e.to_string())?;
    let (mut want, mut want_wide) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (a, b) = (x[i], y[i]);
        let mut acc = a - b;
        acc += a / b;
        acc = acc * f16::from_f32(0.3) + f16::from_f64(-1.7);
        if a < b || a.to_f32() > 1000.0 {
            acc = -acc;
        }
        let mut limited = acc.max(f16::NEG_ONE).min(f16::PI).clamp(f16::MIN, f16::MAX);
        if a == b {
            limited = f16::EPSILON + f16::ZERO;
        }
        want.push(limited % f16::ONE + acc + f16::from_f64(b.to_f64() * 1.1 + 1e-5));
        want_wide.push(f32::from(acc) + b.to_f64() as f32 * 0.5);
    }
    compare("f16 operations", &bits(&out), &bits(&want))?;
    let wide_bits = |v: &[f32]| {
        v.iter()
            .map(|x| if x.is_nan() { 0 } else { x.to_bits() })
            .collect::<Vec<u32>>()
    };
    compare("f16 widened", &wide_bits(&wide), &wide_bits(&want_wide))?;

    let xb: Vec<bf16> = x
        .iter()
        .map(|h| bf16::from_f32(h.to_f32() * 1.0e20))
        .collect();
    let yb: Vec<bf16> = y.iter().map(|h| bf16::from_f32(h.to_f32() - 0.5)).collect();
    let mut out = vec![bf16::ZERO; n];
    bfloat_operations(o, &mut out, &xb, &yb).map_err(|e| e.to_string())?;
    let want: Vec<bf16> = (0..n)
        .map(|i| {
            let (a, b) = (xb[i], yb[i]);
            let mut acc = a * b - a / b;
            acc -= bf16::from_f32(a.to_f32() * 3.0);
            if acc >= bf16::ZERO {
                acc = acc.min(bf16::from_f64(1.0e30));
            }
            acc + bf16::MIN_POSITIVE + bf16::from_f64(a.to_f64() * 0.7 - 1e-3)
        })
        .collect();
    let bf_bits = |v: &[bf16]| {
        v.iter()
            .map(|h| if h.is_nan() { 0x7fc0 } else { h.to_bits() })
            .collect::<Vec<u16>>()
    };
    compare("bf16 operations", &bf_bits(&out), &bf_bits(&want))?;

    // Just above a tie of the half type, by less than `f32` resolves: rounding to `f32`
    // first would land on the tie and round it to even, the wrong way.
    let tiny = 2f64.powi(-40);
    let v: Vec<f64> = vec![
        1.0 + 2f64.powi(-11) + tiny,
        -(1.0 + 2f64.powi(-11) + tiny),
        1.0 + 2f64.powi(-11),
        1.0 + 2f64.powi(-8) + tiny,
        3.0 + 3.0 * 2f64.powi(-9) - tiny,
        65519.99,
        65520.0,
        1e-8,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        3.4e38 * 1.5,
    ];
    let (mut h, mut b) = (vec![f16::ZERO; v.len()], vec![bf16::ZERO; v.len()]);
    narrow_from_f64(o, &mut h, &mut b, &v).map_err(|e| e.to_string())?;
    let want_h: Vec<f16> = v
        .iter()
        .map(|x| {
            f16::from_bits(nearest_bits(
                *x,
                |b| f16::from_bits(b).to_f64(),
                65504.0,
                16.0,
                0x7c00,
            ))
        })
        .collect();
    let bf16_max = bf16::MAX.to_f64();
    let want_b: Vec<bf16> = v
        .iter()
        .map(|x| {
            bf16::from_bits(nearest_bits(
                *x,
                |b| bf16::from_bits(b).to_f64(),
                bf16_max,
                2f64.powi(119),
                0x7f80,
            ))
        })
        .collect();
    compare("f64 to f16", &bits(&h), &bits(&want_h))?;
    let x: Vec<u32> = (0..800).collect();
    let (mut halves, mut bfloats, mut done) = (
        vec![f16::ZERO; 4],
        vec![bf16::from_f32(-3.0); 8],
        vec![0u8; 800],
    );
    half_atomic_counts(o, &mut halves, &mut bfloats, &x, &mut done).map_err(|e| e.to_string())?;
    compare(
        "f16 atomic counts",
        &bits(&halves),
        &bits(&[f16::from_f32(200.0); 4]),
    )?;
    compare(
        "bf16 atomic counts",
        &bf_bits(&bfloats),
        &bf_bits(&[bf16::from_f32(97.0); 8]),
    )?;
    // Halves of one, then the smallest subnormals: the sums are exact in any order,
    // and a subnormal sum must not be flushed to zero.
    let totals = [
        (
            256,
            f16::from_f32(0.5),
            bf16::from_f32(0.5),
            f16::from_f32(128.0),
            bf16::from_f32(128.0),
        ),
        // 100 of the smallest subnormal: the subnormal with significand 100.
        (
            100,
            f16::from_bits(1),
            bf16::from_bits(1),
            f16::from_bits(100),
            bf16::from_bits(100),
        ),
    ];
    for b in [
        bf16::from_bits(1),
        bf16::from_bits(0x807f),
        bf16::from_f32(-2.5),
    ] {
        let mut out = vec![bf16::ZERO; 3];
        bfloat_passed_through(o, &mut out, b).map_err(|e| e.to_string())?;
        compare("a bf16 argument", &bf_bits(&out), &bf_bits(&[b; 3]))?;
    }
    for (threads, h, b, want_h, want_b) in totals {
        let (mut halves, mut bfloats) = (vec![f16::ZERO], vec![bf16::ZERO]);
        let mut done = vec![0u8; threads];
        half_atomic_totals(o, &mut halves, &mut bfloats, h, b, &mut done)
            .map_err(|e| e.to_string())?;
        compare("f16 atomic total", &bits(&halves), &bits(&[want_h]))?;
        compare("bf16 atomic total", &bf_bits(&bfloats), &bf_bits(&[want_b]))?;
    }
    let specials = vec![
        f16::ZERO,
        f16::NEG_ZERO,
        f16::INFINITY,
        f16::NEG_INFINITY,
        f16::NAN,
        f16::MAX,
        -f16::MIN_POSITIVE_SUBNORMAL,
        f16::ONE,
    ];
    let (mut classes, mut signs) = (vec![0u32; specials.len()], vec![f16::ZERO; specials.len()]);
    half_classes(o, &mut classes, &mut signs, &specials).map_err(|e| e.to_string())?;
    let want: Vec<u32> = specials
        .iter()
        .map(|v| {
            v.is_nan() as u32
                | (v.is_infinite() as u32) << 1
                | (v.is_finite() as u32) << 2
                | (v.is_sign_negative() as u32) << 3
                | (v.is_sign_positive() as u32) << 4
        })
        .collect();
    compare("f16 classes", &classes, &want)?;
    let want: Vec<f16> = specials.iter().map(|v| v.signum()).collect();
    compare("f16 signum", &bits(&signs), &bits(&want))?;
    compare("f64 to bf16", &bf_bits(&b), &bf_bits(&want_b))
}

/// A generic kernel whose body 16-bit floats cannot run (a subgroup sum): its `f16` and
/// `bf16` instances are left out (rustc keeps them from being launched: `LaneValue`),
/// and the kernel compiles and runs for the others.
#[offload_kernel]
fn subgroup_total<T: Float + offload::kernel_view::LaneValue>(mut y: Region<T, Linear1D>, x: &[T]) {
    let t = subgroup_sum(x[0]);
    if let Some(v) = y.get_mut() {
        *v = t;
    }
}

/// A generic `Float` kernel with a device function, `from_f64`/`from_i64` and the trait's
/// math, for 16-bit floats.
#[offload_kernel]
fn generic_math<T: Float>(mut y: Region<T, Linear1D>, x: &[T]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let a = x[i];
        let l: T = lerp(a, T::from_f64(0.25), T::from_i64(3) / T::from_f64(8.0));
        *v = l + (a * a + T::ONE).sqrt() + a.floor().max(T::ZERO).powi(2) + a.mul_add(a, T::ONE);
    }
}

/// What `generic_math` computes, by the host's `Float` impls.
fn generic_math_on_host<T: Float>(a: T) -> T {
    let l = a + (T::from_f64(0.25) - a) * (T::from_i64(3) / T::from_f64(8.0));
    l + (a * a + T::ONE).sqrt() + a.floor().max(T::ZERO).powi(2) + a.mul_add(a, T::ONE)
}

/// Generic kernels over `Num` and `Float` for `f16` and `bf16`: each result as the `Float`
/// and `Num` impls compute it on the host (the `f32` function rounded to the type).
pub fn generic_kernels_over_half_floats(o: LaunchOptions) -> CaseResult {
    let x: Vec<f16> = (0..300)
        .map(|i| f16::from_f32(i as f32 * 0.25 - 30.0))
        .collect();
    let mut y = vec![f16::ONE; 300];
    axpy_generic::<f16>(o, &mut y, &x, f16::from_f32(2.0)).map_err(|e| e.to_string())?;
    let bits = |v: &[f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<u16>>();
    let want: Vec<f16> = x
        .iter()
        .map(|x| f16::from_f32(2.0) * *x + f16::ONE)
        .collect();
    compare("axpy f16", &bits(&y), &bits(&want))?;
    let mut out = vec![f16::ZERO; 300];
    generic_math::<f16>(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<f16> = x.iter().map(|a| generic_math_on_host(*a)).collect();
    compare("generic math f16", &bits(&out), &bits(&want))?;
    let xb: Vec<bf16> = x.iter().map(|h| bf16::from_f32(h.to_f32())).collect();
    let mut outb = vec![bf16::ZERO; 300];
    generic_math::<bf16>(o, &mut outb, &xb).map_err(|e| e.to_string())?;
    let want: Vec<u16> = xb
        .iter()
        .map(|a| generic_math_on_host(*a).to_bits())
        .collect();
    compare(
        "generic math bf16",
        &outb.iter().map(|h| h.to_bits()).collect::<Vec<_>>(),
        &want,
    )?;
    let mut t32 = vec![0.0f32; 4];
    let x32: Vec<f32> = vec![1.5; 4];
    subgroup_total::<f32>(o, &mut t32, &x32).map_err(|e| e.to_string())?;
    let lanes = t32[0] / 1.5;
    if t32.iter().all(|v| *v == t32[0]) && lanes >= 1.0 && lanes.fract() == 0.0 {
        Ok(())
    } else {
        Err(format!("subgroup total: {t32:?}"))
    }
}

/// Integer constants of the module, used in a kernel's body: rustc gives their values.
const TILE: usize = 4;
const SCALE_SHIFT: u32 = 3;
const OFFSET: i64 = -7;
const DT: f32 = 0.01;
const GRAVITY: f64 = -9.81;

#[offload_kernel]
fn outer_consts(mut out: Region<i64, Linear1D>, x: &[i64]) {
    let i = out.index();
    if let Some(o) = out.get_mut() {
        let mut acc = 0i64;
        for k in 0..TILE {
            acc += x[(i * TILE + k) % x.len()];
        }
        *o = (acc << SCALE_SHIFT) + OFFSET;
    }
}

#[offload_kernel]
fn outer_float_consts(mut v: Region<f32, Linear1D>, h: &[f64]) {
    let i = v.index();
    if let Some(o) = v.get_mut() {
        let fall = (GRAVITY * h[i]) as f32;
        *o += DT * fall;
    }
}

pub fn integer_constants_from_outside_the_kernel(o: LaunchOptions) -> CaseResult {
    let x: Vec<i64> = (0..37).map(|v| v * 3 - 50).collect();
    let mut out = vec![0i64; 20];
    outer_consts(o, &mut out, &x).map_err(|e| e.to_string())?;
    let want: Vec<i64> = (0..20)
        .map(|i| {
            let acc: i64 = (0..TILE).map(|k| x[(i * TILE + k) % x.len()]).sum();
            (acc << SCALE_SHIFT) + OFFSET
        })
        .collect();
    compare("outer constants", &out, &want)?;
    let h: Vec<f64> = (0..20).map(|i| i as f64 * 0.75).collect();
    let mut v: Vec<f32> = (0..20).map(|i| i as f32).collect();
    let want: Vec<f32> = v
        .iter()
        .zip(&h)
        .map(|(v, h)| v + DT * (GRAVITY * h) as f32)
        .collect();
    outer_float_consts(o, &mut v, &h).map_err(|e| e.to_string())?;
    compare("outer float constants", &v, &want)
}

/// Shared arrays sized by `const` items of the module: rustc gives their values.
const BLOCK: usize = 64;
const SIDE: usize = 8;

/// Reverses each workgroup's `BLOCK` elements through a `Shared::<f32, BLOCK>` array.
#[offload_kernel]
fn reverse_blocks(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let mut block = Shared::<f32, BLOCK>::new();
    let t = thread_idx(0);
    let i = y.index();
    block.write(if i < x.len() { x[i] } else { 0.0 });
    sync_threads();
    let v = block[BLOCK - 1 - t];
    if let Some(o) = y.get_mut() {
        *o = v + block.len() as f32;
    }
}

/// A `const` declared in the kernel hides the module's of that name, as a shared size too:
/// each workgroup of 32 threads sums its block of 32 through `Shared::<f32, BLOCK>`, and
/// adds the array's length, 32, times 1000.
#[offload_kernel]
fn sum_inner_blocks(mut y: Region<f32, Linear1D>, x: &[f32]) {
    const BLOCK: usize = 32;
    let mut block = Shared::<f32, BLOCK>::new();
    let i = y.index();
    block.write(if i < x.len() { x[i] } else { 0.0 });
    sync_threads();
    let mut total = 0.0f32;
    for k in 0..block.len() {
        total += block[k];
    }
    if let Some(o) = y.get_mut() {
        *o = total + block.len() as f32 * 1000.0;
    }
}

/// A tile of `{ 2 * 2 }` rows and `SIDE` columns, written by 8×4 workgroups: each thread
/// reads back the slot of the thread mirrored across the row, plus the tile's length.
#[offload_kernel]
fn mirror_rows(mut out: Region<f32, Linear2D>, a: &[f32]) {
    let mut tile = Shared2D::<f32, { 2 * 2 }, SIDE>::new();
    let (x, y) = (thread_idx(0), thread_idx(1));
    let i = (workgroup_idx(1) * 4 + y) * out.width() + workgroup_idx(0) * SIDE + x;
    tile.write(if i < a.len() { a[i] } else { 0.0 });
    sync_threads();
    let v = tile[(y, SIDE - 1 - x)] + tile.len() as f32;
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

/// Transposes `SIDE`×`SIDE` blocks through a `Shared2D::<f32, SIDE, SIDE>` tile, and
/// reads its rows, columns and length.
#[offload_kernel]
fn transpose_side(mut out: Region<f32, Linear2D>, a: &[f32], n: usize) {
    let mut tile = Shared2D::<f32, SIDE, SIDE>::new();
    let (x, y) = (thread_idx(0), thread_idx(1));
    let (r, c) = (workgroup_idx(1) * SIDE + y, workgroup_idx(0) * SIDE + x);
    tile.write(if r < n && c < n { a[r * n + c] } else { 0.0 });
    sync_threads();
    let v = tile[(x, y)];
    let shape = (tile.rows() * 10000 + tile.cols() * 100 + tile.len()) as f32;
    if let Some(o) = out.get_mut() {
        *o = v + shape;
    }
}

pub fn shared_sizes_from_const_items(o: LaunchOptions) -> CaseResult {
    let n = 4 * BLOCK;
    let x: Vec<f32> = (0..n).map(|i| (i * 7 % 23) as f32).collect();
    let mut y = vec![0f32; n];
    let blocks = LaunchOptions {
        workgroup_dim: Some([(n / BLOCK) as u32, 1, 1]),
        thread_dim: Some([BLOCK as u32, 1, 1]),
        ..o
    };
    reverse_blocks(blocks, &mut y, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n)
        .map(|i| x[i / BLOCK * BLOCK + BLOCK - 1 - i % BLOCK] + BLOCK as f32)
        .collect();
    compare("Shared::<f32, BLOCK> reversal", &y, &want)?;
    let mut sums = vec![0f32; n];
    let inner = LaunchOptions {
        workgroup_dim: Some([(n / 32) as u32, 1, 1]),
        thread_dim: Some([32, 1, 1]),
        ..o
    };
    sum_inner_blocks(inner, &mut sums, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n)
        .map(|i| x[i / 32 * 32..i / 32 * 32 + 32].iter().sum::<f32>() + 32000.0)
        .collect();
    compare(
        "a Shared size from a const declared in the kernel",
        &sums,
        &want,
    )?;

    let n = 3 * SIDE;
    let a: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let mut out = vec![0f32; n * n];
    let tiles = LaunchOptions {
        workgroup_dim: Some([(n / SIDE) as u32, (n / SIDE) as u32, 1]),
        thread_dim: Some([SIDE as u32, SIDE as u32, 1]),
        ..o
    };
    transpose_side(tiles, Region::new_2d(&mut out, n), &a, n).map_err(|e| e.to_string())?;
    let shape = (SIDE * 10000 + SIDE * 100 + SIDE * SIDE) as f32;
    let want: Vec<f32> = (0..n * n)
        .map(|i| {
            let (row, col) = (i / n, i % n);
            let (bx, x) = (col / SIDE * SIDE, col % SIDE);
            let (by, y) = (row / SIDE * SIDE, row % SIDE);
            a[(by + x) * n + (bx + y)] + shape
        })
        .collect();
    compare("Shared2D::<f32, SIDE, SIDE> transpose", &out, &want)?;
    let (w, h) = (2 * SIDE, 8);
    let a: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
    let mut out = vec![0f32; w * h];
    let rows = LaunchOptions {
        workgroup_dim: Some([2, 2, 1]),
        thread_dim: Some([SIDE as u32, 4, 1]),
        ..o
    };
    mirror_rows(rows, Region::new_2d(&mut out, w), &a).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..w * h)
        .map(|i| {
            let (row, col) = (i / w, i % w);
            let mirrored = col / SIDE * SIDE + SIDE - 1 - col % SIDE;
            a[row * w + mirrored] + (4 * SIDE) as f32
        })
        .collect();
    compare("Shared2D::<f32, { 2 * 2 }, SIDE> rows", &out, &want)
}

/// `let ... else` over a region's element and a slice's: the last element has no
/// successor and is set to -1; each element also sums up to four successors, stopping at
/// the end.
#[offload_kernel]
fn let_else_forms(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let i = y.index();
    let mut ahead = 0.0f32;
    for k in 1..5 {
        let Some(&w) = x.get(i + k) else {
            break;
        };
        ahead += w;
    }
    let Some(&next) = x.get(i + 1) else {
        if let Some(v) = y.get_mut() {
            *v = -1.0;
        }
        return;
    };
    let Some(v) = y.get_mut() else {
        return;
    };
    *v = x[i] + next + ahead * 0.5;
}

pub fn let_else_and_while_let(o: LaunchOptions) -> CaseResult {
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let mut y = vec![0f32; n];
    let_else_forms(o, &mut y, &x).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if i + 1 >= n {
                return -1.0;
            }
            let ahead: f32 = (1..5).filter(|k| i + k < n).map(|k| x[i + k]).sum();
            x[i] + x[i + 1] + ahead * 0.5
        })
        .collect();
    compare("let ... else", &y, &want)
}

/// Stamps out a kernel that multiplies a `TILE_ROWS × 64` block of rows of `a` (one per
/// workgroup of 64 threads) by the `64 × 32` matrix `b` with `tile_mma` on `$t` tiles into
/// an `$acc` accumulator, 32 of the inner dimension at a time (`a`'s block staged by
/// `fill_from`, `b`'s by each thread's `write_nth`); each thread then writes 24 elements
/// of the `TILE_ROWS × 32` result. The accumulator has 6 blocks of 16 × 16, so
/// each of the two warps of a GPU takes three.
macro_rules! tile_product {
    ($name:ident, $t:ty, $acc:ty) => {
        #[offload_kernel]
        fn $name(mut c: Region<$acc, Chunked<24>>, a: &[$t], b: &[$t]) {
            // Rows of `acc` and `at` padded (by 4 and 8 slots), `bt`'s not.
            let mut acc = Shared2D::<$acc, TILE_ROWS, 32, 4>::new();
            let mut at = Shared2D::<$t, TILE_ROWS, 32, 8>::new();
            let mut bt = Shared2D::<$t, 32, 32>::new();
            let (threads, rank) = (workgroup_dim(0), thread_rank());
            let top = workgroup_idx(0) * TILE_ROWS;
            for step in 0..2 {
                at.fill_from(&a, 64, top, step * 32);
                for k in 0..16 {
                    let s = k * threads + rank;
                    bt.write_nth(k, b[(step * 32 + s / 32) * 32 + s % 32]);
                }
                tile_mma(&mut acc, &at, &bt);
            }
            if let Some(out) = c.get_mut() {
                for j in 0..out.len() {
                    let e = rank * 24 + j;
                    out[j] = acc[(e / 32, e % 32)];
                }
            }
        }
    };
}

/// Rows of the result each workgroup of `tile_product_*` computes.
const TILE_ROWS: usize = 48;

tile_product!(tile_product_bf16, bf16, f32);
tile_product!(tile_product_f16, f16, f32);
tile_product!(tile_product_f64, f64, f64);

/// `tile_mma` over `bf16`, `f16` and `f64` tiles: `c = a × b` for a 144 × 64 `a` and a
/// 64 × 32 `b`, three workgroups of 64 threads, each adding two 32-deep products into its
/// 48 × 32 accumulator. The inputs are quarters from -2 to 2, so every partial sum is
/// exact in `f32` and the result is the host's whatever order a target adds in.
pub fn tile_matrix_products(o: LaunchOptions) -> CaseResult {
    let (m, n, k) = (3 * TILE_ROWS, 32, 64);
    let quarter = |i: usize| ((i * 37 + 11) % 17) as f64 / 4.0 - 2.0;
    let a: Vec<f64> = (0..m * k).map(quarter).collect();
    let b: Vec<f64> = (0..k * n).map(|i| quarter(i + 5)).collect();
    let want: Vec<f64> = (0..m * n)
        .map(|e| (0..k).map(|j| a[e / n * k + j] * b[j * n + e % n]).sum())
        .collect();
    let launch = LaunchOptions {
        workgroup_dim: Some([3, 1, 1]),
        thread_dim: Some([64, 1, 1]),
        ..o
    };
    let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    let (ab, bb): (Vec<bf16>, Vec<bf16>) = (
        a.iter().map(|&v| bf16::from_f64(v)).collect(),
        b.iter().map(|&v| bf16::from_f64(v)).collect(),
    );
    let mut c = vec![0f32; m * n];
    tile_product_bf16(launch, &mut c, &ab, &bb).map_err(|e| e.to_string())?;
    compare("bf16 tiles", &c, &want32)?;
    let (ah, bh): (Vec<f16>, Vec<f16>) = (
        a.iter().map(|&v| f16::from_f64(v)).collect(),
        b.iter().map(|&v| f16::from_f64(v)).collect(),
    );
    let mut c = vec![0f32; m * n];
    tile_product_f16(launch, &mut c, &ah, &bh).map_err(|e| e.to_string())?;
    compare("f16 tiles", &c, &want32)?;
    let mut c = vec![0f64; m * n];
    tile_product_f64(launch, &mut c, &a, &b).map_err(|e| e.to_string())?;
    compare("f64 tiles", &c, &want)?;

    // One 32 × 64 product of bf16 tiles by two warps: on a GPU each warp takes a run of
    // four blocks of one block row.
    let (ab, bb): (Vec<bf16>, Vec<bf16>) = (
        (0..32 * 32)
            .map(|i| bf16::from_f32(quarter(i) as f32))
            .collect(),
        (0..32 * 64)
            .map(|i| bf16::from_f32(quarter(i + 3) as f32))
            .collect(),
    );
    let mut c = vec![0f32; 32 * 64];
    let pair = LaunchOptions {
        workgroup_dim: Some([1, 1, 1]),
        thread_dim: Some([64, 1, 1]),
        ..o
    };
    wide_tile_product(pair, &mut c, &ab, &bb).map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..32 * 64)
        .map(|e| {
            (0..32)
                .map(|j| ab[e / 64 * 32 + j].to_f32() * bb[j * 64 + e % 64].to_f32())
                .sum()
        })
        .collect();
    compare("a warp's run of blocks", &c, &want)?;

    // A 16 × 16 block from (row, col) of a matrix of rows of 20 elements held by a
    // slice of 430 (21.5 rows): the columns past 20 and the slots past 430 are zeros.
    let x: Vec<f32> = (0..430).map(|i| i as f32 + 1.0).collect();
    for (row, col) in [(0, 0), (8, 10), (14, 3), (100, 0)] {
        let mut out = vec![0f32; 256];
        let fill = LaunchOptions {
            workgroup_dim: Some([1, 1, 1]),
            thread_dim: Some([256, 1, 1]),
            ..o
        };
        fill_block(fill, &mut out, &x, 20, row, col).map_err(|e| e.to_string())?;
        let want: Vec<f32> = (0..256)
            .map(|e| {
                let (r, c) = (e / 16, e % 16);
                let at = (row + r) * 20 + col + c;
                if col + c < 20 && at < x.len() {
                    x[at]
                } else {
                    0.0
                }
            })
            .collect();
        compare(&format!("fill_from at ({row}, {col})"), &out, &want)?;
    }

    // A block whose index arithmetic wraps: rows of 2^63 + 1 elements from row
    // usize::MAX - 3, so slot (r, c) is element (r - 4 + c) mod 2^64 of a view 8 bytes
    // past a 16-byte boundary for even r (2^63 more for odd r). Slots whose index is near
    // 2^64 are past the slice, however close to it a group's last slot wraps.
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let x: Vec<bf16> = (0..80).map(|i| bf16::from_f32(i as f32 + 1.0)).collect();
    let buf = DeviceBuffer::from_slice(&device, &x).map_err(err)?;
    let mut out = vec![bf16::ZERO; 256];
    let (row_len, row) = ((1usize << 63) + 1, usize::MAX - 3);
    fill_wrapping(
        fill_one(o),
        &mut out,
        buf.slice(4..68).map_err(err)?,
        row_len,
        row,
    )
    .map_err(err)?;
    let want: Vec<bf16> = (0..256)
        .map(|e| {
            let at = row
                .wrapping_add(e / 16)
                .wrapping_mul(row_len)
                .wrapping_add(e % 16);
            if at < 64 { x[4 + at] } else { bf16::ZERO }
        })
        .collect();
    compare("fill_from with wrapping indices", &out, &want)
}

/// One workgroup of 256 threads.
fn fill_one(o: LaunchOptions) -> LaunchOptions {
    LaunchOptions {
        workgroup_dim: Some([1, 1, 1]),
        thread_dim: Some([256, 1, 1]),
        ..o
    }
}

/// A 16 × 16 `bf16` tile (16-byte groups on a GPU) filled from `x` at (`row`, 0) and
/// written out, a slot per thread.
#[offload_kernel]
fn fill_wrapping(mut out: Region<bf16, Linear1D>, x: &[bf16], row_len: usize, row: usize) {
    let mut tile = Shared2D::<bf16, 16, 16>::new();
    tile.fill_from(&x, row_len, row, 0);
    let e = thread_rank() % 256;
    let v = tile[(e / 16, e % 16)];
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

/// `c = a × b` for a 32 × 32 `a` and a 32 × 64 `b` of `bf16`, by one workgroup; each of
/// its 64 threads writes 32 elements of the result.
#[offload_kernel]
fn wide_tile_product(mut c: Region<f32, Chunked<32>>, a: &[bf16], b: &[bf16]) {
    let mut acc = Shared2D::<f32, 32, 64, 8>::new();
    let mut at = Shared2D::<bf16, 32, 32, 8>::new();
    let mut bt = Shared2D::<bf16, 32, 64, 8>::new();
    at.fill_from(&a, 32, 0, 0);
    bt.fill_from(&b, 64, 0, 0);
    tile_mma(&mut acc, &at, &bt);
    let rank = thread_rank();
    if let Some(out) = c.get_mut() {
        for j in 0..out.len() {
            let e = rank * 32 + j;
            out[j] = acc[(e / 64, e % 64)];
        }
    }
}

/// A workgroup of 256 threads fills a 16 × 16 tile (rows padded by 3 slots, so a GPU
/// copies a slot at a time) from `x` at (`row`, `col`) and writes it out, a slot per
/// thread.
#[offload_kernel]
fn fill_block(mut out: Region<f32, Linear1D>, x: &[f32], row_len: usize, row: usize, col: usize) {
    let mut tile = Shared2D::<f32, 16, 16, 3>::new();
    tile.fill_from(&x, row_len, row, col);
    let e = thread_rank() % 256;
    let v = tile[(e / 16, e % 16)];
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

/// Runs a linear congruential generator `iters` times from `seed + i`: slow on purpose
/// (work that another stream could overtake), and exact on every backend.
#[offload_kernel]
fn churn(mut y: Region<u32, Linear1D>, seed: u32, iters: u32) {
    let i = y.index();
    let mut v = seed.wrapping_add(i as u32);
    let mut k = 0;
    while k < iters {
        v = v.wrapping_mul(1664525).wrapping_add(1013904223);
        k += 1;
    }
    if let Some(out) = y.get_mut() {
        *out = v;
    }
}

/// What `churn` leaves in element `i`.
fn churned(seed: u32, iters: u32, i: usize) -> u32 {
    let mut v = seed.wrapping_add(i as u32);
    for _ in 0..iters {
        v = v.wrapping_mul(1664525).wrapping_add(1013904223);
    }
    v
}

/// `y = (y ^ x) * 3`: reads both, so its result shows whether it ran before or after
/// what wrote them.
#[offload_kernel]
fn mix(mut y: Region<u32, Linear1D>, x: &[u32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = (*v ^ x[i]).wrapping_mul(3);
    }
}

/// Iterations of `churn` that take a GPU long enough for other work to overtake it.
fn slow(o: LaunchOptions) -> u32 {
    if on_gpu(o) { 20_000 } else { 3 }
}

/// Eight chunks of page-locked host data through two streams: each chunk copied in,
/// mixed on the device and copied out on its own stream, one device buffer and one
/// output vector shared by all (different windows of them).
pub fn streams_pipeline_chunks_through_page_locked_memory(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let (n, chunks) = (1usize << 18, 8usize);
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let host = offload::PinnedVec::from_slice(&device, &data).map_err(err)?;
    let mut out = offload::PinnedVec::<u32>::zeros(&device, n).map_err(err)?;
    let key = DeviceBuffer::from_slice(&device, &vec![0x5a5a_5a5au32; n]).map_err(err)?;
    let mut work = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    let streams = [device.stream().map_err(err)?, device.stream().map_err(err)?];
    let per = n / chunks;
    for c in 0..chunks {
        let (s, range) = (&streams[c % 2], c * per..(c + 1) * per);
        let mut window = work.slice_mut(range.clone()).map_err(err)?;
        window
            .copy_from_slice_async(s, host.slice(range.clone()).map_err(err)?)
            .map_err(err)?;
        let key = key.slice(range.clone()).map_err(err)?;
        try_offload! { kernel = mix, args = (&mut window, key), stream = s }.map_err(err)?;
        window
            .copy_to_async(s, &mut out.slice_mut(range).map_err(err)?)
            .map_err(err)?;
    }
    // `as_slice` waits for the copies into `out`, without a synchronisation.
    let want: Vec<u32> = data
        .iter()
        .map(|v| (v ^ 0x5a5a_5a5a).wrapping_mul(3))
        .collect();
    compare("the pipeline's output", out.as_slice().map_err(err)?, &want)?;
    for s in &streams {
        s.synchronize().map_err(err)?;
    }
    compare("the device buffer", &work.to_vec().map_err(err)?, &want)
}

/// The races a program could try between streams, each of which the runtime orders.
pub fn streams_order_work_that_shares_memory(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let n = 1usize << 16;
    let iters = slow(o);
    let (a, b) = (device.stream().map_err(err)?, device.stream().map_err(err)?);
    let ones = DeviceBuffer::from_slice(&device, &vec![1u32; n]).map_err(err)?;
    let churn_then_mix: Vec<u32> = (0..n)
        .map(|i| (churned(7, iters, i) ^ 1).wrapping_mul(3))
        .collect();

    // Two streams writing one buffer: the second launch waits for the first.
    let mut buf = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    try_offload! { kernel = churn, args = (&mut buf, 7u32, iters), stream = &a }.map_err(err)?;
    try_offload! { kernel = mix, args = (&mut buf, &ones), stream = &b }.map_err(err)?;
    compare(
        "two streams writing one buffer",
        &buf.to_vec().map_err(err)?,
        &churn_then_mix,
    )?;

    // A read on another stream waits for the write; the host's read waits for both.
    let mut src = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    let mut dst = DeviceBuffer::from_slice(&device, &vec![1u32; n]).map_err(err)?;
    try_offload! { kernel = churn, args = (&mut src, 7u32, iters), stream = &a }.map_err(err)?;
    try_offload! { kernel = mix, args = (&mut dst, &src), stream = &b }.map_err(err)?;
    compare(
        "a read on another stream",
        &dst.to_vec().map_err(err)?,
        &churn_then_mix,
    )?;

    // A buffer dropped while a kernel still reads it is freed after the kernel; memory
    // allocated and written next does not change what the kernel read.
    let mut temp = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    let mut kept = DeviceBuffer::from_slice(&device, &vec![1u32; n]).map_err(err)?;
    try_offload! { kernel = churn, args = (&mut temp, 7u32, iters), stream = &a }.map_err(err)?;
    try_offload! { kernel = mix, args = (&mut kept, &temp), stream = &a }.map_err(err)?;
    drop(temp);
    let mut reused: Vec<DeviceBuffer<u32>> = Vec::new();
    for _ in 0..4 {
        let mut junk = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
        try_offload! { kernel = churn, args = (&mut junk, 99u32, 1u32), stream = &b }
            .map_err(err)?;
        reused.push(junk);
    }
    compare(
        "after a drop during a kernel",
        &kept.to_vec().map_err(err)?,
        &churn_then_mix,
    )?;

    // The host's view of page-locked memory waits for the copies using it: a copy out
    // of a buffer a kernel is still writing, and a copy in of data the host changes
    // right after.
    let mut pinned = offload::PinnedVec::<u32>::zeros(&device, n).map_err(err)?;
    let mut late = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    try_offload! { kernel = churn, args = (&mut late, 7u32, iters), stream = &a }.map_err(err)?;
    late.copy_to_async(&b, &mut pinned).map_err(err)?;
    let want: Vec<u32> = (0..n).map(|i| churned(7, iters, i)).collect();
    compare(
        "a copy out, read on the host",
        pinned.as_slice().map_err(err)?,
        &want,
    )?;
    let mut back = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    back.copy_from_slice_async(&a, &pinned).map_err(err)?;
    pinned.as_mut_slice().map_err(err)?.fill(0);
    compare(
        "a copy in, then changed on the host",
        &back.to_vec().map_err(err)?,
        &want,
    )?;

    // Events: one stream waits for another's; timing between two.
    let mut gate = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    let start = a.record().map_err(err)?;
    try_offload! { kernel = churn, args = (&mut gate, 7u32, iters), stream = &a }.map_err(err)?;
    let end = a.record().map_err(err)?;
    b.wait(&end).map_err(err)?;
    b.synchronize().map_err(err)?;
    if !end.is_complete().map_err(err)? {
        return Err("a stream that waited for an event finished before it".into());
    }
    let took = end.duration_since(&start).map_err(err)?;
    if on_gpu(o) && took.is_zero() {
        return Err("a kernel between two events took no time".into());
    }

    // What a stream refuses, by its exact message.
    let host = vec![0u32; n];
    let mut on_host = host.clone();
    expect_error(
        try_offload! { kernel = mix, args = (&mut on_host, &host), stream = &a },
        "invalid launch: argument 1 of kernel `mix` is host data: a launch on a stream takes device buffers and scalars (copy host data in with `copy_from_slice_async`)",
    )?;
    let short = offload::PinnedVec::<u32>::zeros(&device, 3).map_err(err)?;
    expect_error(
        buf.copy_from_slice_async(&a, &short),
        &format!("invalid buffer operation: cannot copy 3 elements into a buffer of {n}"),
    )?;
    for s in [&a, &b] {
        s.synchronize().map_err(err)?;
    }
    drop(reused);
    Ok(())
}

/// A kernel that panics at element `bad`.
#[offload_kernel]
fn fails_at(mut y: Region<u32, Linear1D>, bad: usize) {
    let i = y.index();
    if i == bad {
        panic!("stream kernel hit its bad element");
    }
    if let Some(v) = y.get_mut() {
        *v += 1;
    }
}

/// A panic on a stream reaches its owner once: from the launch where the backend runs
/// it at once (the CPU), else from the stream's synchronisation; the other stream and
/// the device's one queue do not report it.
pub fn stream_panics_are_reported_once(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let (a, b) = (device.stream().map_err(err)?, device.stream().map_err(err)?);
    let mut buf = DeviceBuffer::<u32>::zeros(&device, 4096).map_err(err)?;
    let mut reports = Vec::new();
    let launched = try_offload! { kernel = fails_at, args = (&mut buf, 1000usize), stream = &a };
    reports.extend(launched.err());
    reports.extend(b.synchronize().err());
    reports.extend(offload::synchronize().err());
    reports.extend(a.synchronize().err());
    reports.extend(a.synchronize().err());
    let [report] = &reports[..] else {
        return Err(format!(
            "{} reports of one panic: {reports:?}",
            reports.len()
        ));
    };
    if !report
        .to_string()
        .contains("stream kernel hit its bad element")
    {
        return Err(format!("unexpected report: {report}"));
    }
    // A stream dropped without synchronising hands its panic to the thread's next
    // synchronisation.
    let c = device.stream().map_err(err)?;
    let mut reports = Vec::new();
    let launched = try_offload! { kernel = fails_at, args = (&mut buf, 3000usize), stream = &c };
    reports.extend(launched.err());
    drop(c);
    reports.extend(offload::synchronize().err());
    reports.extend(offload::synchronize().err());
    let [report] = &reports[..] else {
        return Err(format!(
            "{} reports of a dropped stream's panic: {reports:?}",
            reports.len()
        ));
    };
    if !report
        .to_string()
        .contains("stream kernel hit its bad element")
    {
        return Err(format!("unexpected report: {report}"));
    }
    try_offload! { kernel = fails_at, args = (&mut buf, usize::MAX), stream = &a }.map_err(err)?;
    a.synchronize().map_err(err)
}

/// A time step recorded once and replayed: a copy in, three launches and a copy out per
/// replay; the graph keeps what it uses alive after the program drops it, and a replay
/// orders against another stream's work on the same buffer.
pub fn graphs_replay_recorded_work(o: LaunchOptions) -> CaseResult {
    let device = device_of(o);
    let err = |e: offload::Error| e.to_string();
    let n = 1usize << 14;
    let (s, other) = (device.stream().map_err(err)?, device.stream().map_err(err)?);
    let input = offload::PinnedVec::from_slice(&device, &vec![5u32; n]).map_err(err)?;
    let mut output = offload::PinnedVec::<u32>::zeros(&device, n).map_err(err)?;
    let mut state = DeviceBuffer::from_slice(&device, &vec![1u32; n]).map_err(err)?;
    let mut scratch = DeviceBuffer::<u32>::zeros(&device, n).map_err(err)?;
    let graph = offload::Graph::record(&s, |s| {
        scratch.copy_from_slice_async(s, &input)?;
        try_offload! { kernel = mix, args = (&mut state, &scratch), stream = s }?;
        try_offload! { kernel = mix, args = (&mut scratch, &state), stream = s }?;
        try_offload! { kernel = mix, args = (&mut state, &scratch), stream = s }?;
        state.copy_to_async(s, &mut output)
    })
    .map_err(err)?;
    // Recording ran nothing.
    compare(
        "state after recording",
        &state.to_vec().map_err(err)?,
        &vec![1u32; n],
    )?;
    let step = |v: u32| {
        let mixed = (v ^ 5).wrapping_mul(3);
        let scratch = (5 ^ mixed).wrapping_mul(3);
        (mixed ^ scratch).wrapping_mul(3)
    };
    let mut want = 1u32;
    for _ in 0..3 {
        graph.launch(&s).map_err(err)?;
        want = step(want);
    }
    compare(
        "after three replays",
        output.as_slice().map_err(err)?,
        &vec![want; n],
    )?;
    // Another stream's write to the graph's state waits for the replays, and the next
    // replay waits for it.
    try_offload! { kernel = churn, args = (&mut state, 7u32, slow(o)), stream = &other }
        .map_err(err)?;
    graph.launch(&s).map_err(err)?;
    let after: Vec<u32> = (0..n).map(|i| step(churned(7, slow(o), i))).collect();
    compare(
        "a replay after another stream's write",
        output.as_slice().map_err(err)?,
        &after,
    )?;
    // The graph keeps its memory: dropped here, replayed after.
    drop((state, scratch, input));
    graph.launch(&s).map_err(err)?;
    s.synchronize().map_err(err)?;
    let again: Vec<u32> = after.iter().map(|&v| step(v)).collect();
    compare(
        "a replay after the buffers were dropped",
        output.as_slice().map_err(err)?,
        &again,
    )?;

    // A panic in a replay is its stream's, reported once.
    let mut buf = DeviceBuffer::<u32>::zeros(&device, 4096).map_err(err)?;
    let failing = offload::Graph::record(&s, |s| {
        try_offload! { kernel = fails_at, args = (&mut buf, 77usize), stream = s }
    })
    .map_err(err)?;
    let mut reports = Vec::new();
    reports.extend(failing.launch(&s).err());
    reports.extend(s.synchronize().err());
    reports.extend(s.synchronize().err());
    let [report] = &reports[..] else {
        return Err(format!(
            "{} reports of a replay's panic: {reports:?}",
            reports.len()
        ));
    };
    if !report
        .to_string()
        .contains("stream kernel hit its bad element")
    {
        return Err(format!("unexpected report: {report}"));
    }
    // A replay on another stream follows the last one on `s`.
    graph.launch(&s).map_err(err)?;
    graph.launch(&other).map_err(err)?;
    let twice: Vec<u32> = again.iter().map(|&v| step(step(v))).collect();
    compare(
        "replays on two streams",
        output.as_slice().map_err(err)?,
        &twice,
    )?;
    // What a recording refuses comes back from `record`.
    let event = s.record().map_err(err)?;
    let refused = |what: &str| {
        format!(
            "invalid launch: a stream that records a graph cannot {what}; do it on the stream a replay runs on"
        )
    };
    expect_error(
        offload::Graph::record(&s, |r| r.record().map(drop)).map(drop),
        &refused("record an event"),
    )?;
    expect_error(
        offload::Graph::record(&s, |r| r.wait(&event)).map(drop),
        &refused("wait for an event"),
    )?;
    expect_error(
        offload::Graph::record(&s, |r| r.synchronize()).map(drop),
        &refused("synchronize"),
    )?;
    let host = vec![0u32; 8];
    let mut on_host = host.clone();
    expect_error(
        offload::Graph::record(&s, |s| {
            try_offload! { kernel = mix, args = (&mut on_host, &host), stream = s }
        })
        .map(drop),
        "invalid launch: argument 1 of kernel `mix` is host data: a launch on a stream takes device buffers and scalars (copy host data in with `copy_from_slice_async`)",
    )
}
