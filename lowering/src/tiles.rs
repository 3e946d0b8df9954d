//! The workgroup tile operations made into code the target runs.
//!
//! `offload.tile_fill` ([`fill_tiles`]), on every target: each thread copies the tile's
//! slots `rank`, `rank + threads`, ... from the slice, `UNROLL` at a time, all loads
//! before any store, so that a thread has that many reads in flight; on a GPU, 16 bytes
//! at a time where the block's rows allow.
//!
//! `offload.tile_mma`, `acc += a × b` over row-major shared tiles:
//!
//! - [`in_loops`]: each thread computes the accumulator's elements `rank`,
//!   `rank + threads`, ..., each a loop over `k` that adds the products to it in the
//!   accumulator's type (the CPU backend, AMD GPUs for now, and `f32`/`f64` tiles);
//! - [`on_tensor_cores`]: `f16`/`bf16` tiles on NVIDIA GPUs. Warp `w` of the workgroup
//!   takes runs `w`, `w + warps`, ... of neighbouring 16 × 16 blocks of the accumulator
//!   (runs of one block unless the workgroup size is known); it holds a block in
//!   registers as two `m16n8` accumulators and, for each 16 of `k`, loads the run's rows
//!   of `a` with `ldmatrix` and each block's columns of `b` with `ldmatrix.trans` (the
//!   layout `mma.sync` asks for, from row-major tiles) and issues two
//!   `mma.sync.m16n8k16` per block.
//!
//! Both run between the barriers `mir_to_offload` puts around the op, so no thread
//! touches the tiles meanwhile; warps take disjoint blocks and threads disjoint
//! elements, so the op itself writes no slot twice. The tiles are whole `Shared` arrays,
//! at 16-byte boundaries (`offload_mir::SHARED_ALIGN`), every extent is a multiple of 16
//! and the 16-bit tiles' rows are a multiple of 8 elements apart (validated in MIR, and
//! refused here too): each `ldmatrix` row address is 16-byte aligned.

use crate::rewrite::{self, Inserter, PassError, refuse};
use melior::Context;
use melior::dialect::arith;
use melior::ir::r#type::{MemRefType, ShapedTypeLike};
use melior::ir::{OperationRef, Type};
use mlir_sys::*;
use offload_dialect::{OffloadType, build, ops};
use offload_mir::Position;

/// The shape `[m, n, k]` of a tile multiplication.
///
/// # Safety
///
/// `op` is a live `offload.tile_mma`.
unsafe fn shape(op: MlirOperation) -> Result<[i64; 3], PassError> {
    let mut shape = [0; 3];
    for (extent, name) in shape.iter_mut().zip(["m", "n", "k"]) {
        // SAFETY: per the contract.
        *extent = match unsafe { rewrite::int_attribute(op, name) } {
            Some(e) if e > 0 && e % 16 == 0 => e,
            _ => {
                return Err(refuse(
                    op,
                    "`offload.tile_mma` needs `m`, `n` and `k`, each a positive multiple of 16",
                ));
            }
        };
    }
    Ok(shape)
}

/// The distances between the rows of a tile multiplication's tiles, `[ldc, lda, ldb]`:
/// at least the rows' widths (`[n, k, n]`).
///
/// # Safety
///
/// `op` is a live `offload.tile_mma`.
unsafe fn pitches(op: MlirOperation, [_, n, k]: [i64; 3]) -> Result<[i64; 3], PassError> {
    let mut pitches = [0; 3];
    for ((pitch, name), width) in pitches.iter_mut().zip(["ldc", "lda", "ldb"]).zip([n, k, n]) {
        // SAFETY: per the contract.
        *pitch = match unsafe { rewrite::int_attribute(op, name) } {
            Some(p) if p >= width => p,
            _ => {
                return Err(refuse(
                    op,
                    "`offload.tile_mma` needs `ldc`, `lda` and `ldb`, each at least its rows' width",
                ));
            }
        };
    }
    Ok(pitches)
}

/// The thread's linear index in its workgroup, and the workgroup's thread count.
fn rank_and_threads(b: &Inserter<'_>) -> (MlirValue, MlirValue) {
    let at = |p: Position, d: u8| b.place(build::position(b.context, p, d, b.location))[0];
    let [x, y, z] = [0, 1, 2].map(|d| at(Position::Thread, d));
    let [dx, dy, dz] = [0, 1, 2].map(|d| at(Position::WorkgroupSize, d));
    let plane = b.arith(arith::muli, dy, z);
    let row = b.arith(arith::addi, y, plane);
    let rows = b.arith(arith::muli, dx, row);
    let rank = b.arith(arith::addi, x, rows);
    let area = b.arith(arith::muli, dx, dy);
    (rank, b.arith(arith::muli, area, dz))
}

/// Expands each `offload.tile_mma` of `func` whose tiles' element type `on_tensor_cores`
/// does not take into per-thread loops of `offload.load`/`offload.store`, before the
/// conversion that lowers those.
///
/// # Safety
///
/// `func` is a live kernel whose tiles are still `!offload.shared` values.
pub unsafe fn in_loops(
    context: &Context,
    func: OperationRef<'_, '_>,
    tensor_cores: impl Fn(Type<'_>) -> bool,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::TILE_MMA) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let [acc, a, b] = [0, 1, 2].map(|i| rewrite::operand(op, i));
            let elem_of = |v: MlirValue| match OffloadType::of(context, rewrite::value_type(v)) {
                Ok(Some(OffloadType::Shared { elem })) => Ok(elem),
                _ => Err(refuse(
                    op,
                    "`offload.tile_mma` multiplies `!offload.shared` tiles",
                )),
            };
            let (elem, acc_elem) = (elem_of(a)?, elem_of(acc)?);
            if tensor_cores(elem) {
                continue;
            }
            let [m, n, k] = shape(op)?;
            let [ldc, lda, ldb] = pitches(op, [m, n, k])?;
            let ins = Inserter::before(context, op);
            let (rank, threads) = rank_and_threads(&ins);
            let [end, cols, depth, zero, one] = [m * n, n, k, 0, 1].map(|v| ins.index_constant(v));
            let [ldc, lda, ldb] = [ldc, lda, ldb].map(|v| ins.index_constant(v));
            let location = ins.location;
            ins.for_loop([rank, end, threads], &[], |ins, slot, _| {
                let load = |ins: &Inserter<'_>, tile: MlirValue, i: MlirValue, ty: Type<'_>| {
                    let op = build::load(context, ins.value(tile), ins.value(i), ty, location);
                    ins.place(op)[0]
                };
                let i = ins.arith(arith::divui, slot, cols);
                let j = ins.arith(arith::remui, slot, cols);
                let row = ins.arith(arith::muli, i, lda);
                let at_acc = ins.arith(arith::addi, ins.arith(arith::muli, i, ldc), j);
                let start = load(ins, acc, at_acc, acc_elem);
                let sum = ins.for_loop([zero, depth, one], &[start], |ins, kk, sum| {
                    let at_a = ins.arith(arith::addi, row, kk);
                    let down = ins.arith(arith::muli, kk, ldb);
                    let at_b = ins.arith(arith::addi, down, j);
                    let [x, y] = [(a, at_a), (b, at_b)].map(|(tile, at)| {
                        let v = load(ins, tile, at, elem);
                        if elem == acc_elem {
                            v
                        } else {
                            ins.convert(arith::extf, v, acc_elem)
                        }
                    });
                    let product = ins.arith(arith::mulf, x, y);
                    vec![ins.arith(arith::addf, sum[0], product)]
                });
                let op = build::store(
                    context,
                    ins.value(sum[0]),
                    ins.value(acc),
                    ins.value(at_acc),
                    location,
                );
                ins.place(op);
                Vec::new()
            });
            rewrite::replace(op, &[]);
        }
    }
    Ok(())
}

/// Slots (or vectors of slots) of a tile fill each thread has in flight: loads issued
/// before the stores.
const UNROLL: i64 = 8;

/// Expands each `offload.tile_fill` of `func`, once its tile is a view of workgroup
/// memory and its slice a memref, into per-thread loops: thread `rank` copies groups
/// `rank`, `rank + threads`, ... of `lanes` consecutive slots, `UNROLL` groups at a time
/// (fewer when the code is for `threads` per workgroup and each has fewer), loads
/// before stores. With `vectors` and rows that split into 16-byte groups, a group
/// inside its row and the slice, at a 16-byte aligned address, is one vector load and
/// store; any other group is read a slot at a time, with zeros past a row's end or the
/// slice's.
///
/// # Safety
///
/// `func` is a live kernel whose tiles are views of static workgroup arrays and whose
/// slices are memrefs; its thread positions are still `offload` ops.
pub unsafe fn fill_tiles(
    context: &Context,
    func: OperationRef<'_, '_>,
    vectors: bool,
    threads: Option<i64>,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::TILE_FILL) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let [tile, src, row_len, row, col] = [0, 1, 2, 3, 4].map(|i| rewrite::operand(op, i));
            let elem = MemRefType::try_from(rewrite::value_type(tile))
                .map_err(|_| refuse(op, "`offload.tile_fill` fills a memref here"))?
                .element();
            let extent = |name| match rewrite::int_attribute(op, name) {
                Some(e) if e > 0 => Ok(e),
                _ => Err(refuse(
                    op,
                    "`offload.tile_fill` needs positive `rows`, `cols` and `pitch`",
                )),
            };
            let (rows, cols, pitch) = (extent("rows")?, extent("cols")?, extent("pitch")?);
            let bytes = (elem
                .to_string()
                .trim_start_matches(|c: char| c.is_alphabetic()))
            .parse::<i64>()
            .map(|bits| bits / 8)
            .unwrap_or(16);
            let lanes =
                if vectors && bytes < 16 && cols % (16 / bytes) == 0 && pitch % (16 / bytes) == 0 {
                    16 / bytes
                } else {
                    1
                };
            let ins = Inserter::before(context, op);
            let c = |v: i64| ins.index_constant(v);
            let (rank, count) = rank_and_threads(&ins);
            let len = ins.dim(src, c(0));
            // The slice's first element's address, for the alignment of a vector's.
            let parts = ins.op(
                "memref.extract_strided_metadata",
                &[src],
                &[
                    MemRefType::new(elem, &[], None, None).into(),
                    ins.index(),
                    ins.index(),
                    ins.index(),
                ],
                &[],
            )?;
            let pointer = one(
                &ins,
                "memref.extract_aligned_pointer_as_index",
                &[src],
                ins.index(),
                &[],
            );
            let first = ins.arith(
                arith::addi,
                pointer,
                ins.arith(arith::muli, parts[1], c(bytes)),
            );
            let groups = rows * cols / lanes;
            // Known thread counts take no more groups a round than each thread has.
            let unroll = threads.map_or(UNROLL, |t| UNROLL.min((groups + t - 1) / t).max(1));
            let groups = c(groups);
            let threads = count;
            let stride = ins.arith(arith::muli, threads, c(unroll));
            let (width, pitch) = (c(cols), c(pitch));
            let vector =
                Type::parse(context, &format!("vector<{lanes}x{elem}>")).expect("a vector type");
            ins.for_loop([rank, groups, stride], &[], |ins, base, _| {
                let c = |v: i64| ins.index_constant(v);
                let (add, mul) = (
                    |x, y| ins.arith(arith::addi, x, y),
                    |x, y| ins.arith(arith::muli, x, y),
                );
                let below = |x, y| ins.cmpi(arith::CmpiPredicate::Ult, x, y);
                let and = |x, y| ins.arith(arith::andi, x, y);
                // Each group: its first slot's row and column in the block, whether it is
                // one of the tile's, and where in the tile it goes.
                let plan: Vec<(MlirValue, MlirValue, MlirValue, MlirValue)> = (0..unroll)
                    .map(|u| {
                        let group = add(base, mul(threads, c(u)));
                        let slot = mul(group, c(lanes));
                        let (r, k) = (
                            ins.arith(arith::divui, slot, width),
                            ins.arith(arith::remui, slot, width),
                        );
                        (r, k, below(group, groups), add(mul(r, pitch), k))
                    })
                    .collect();
                let values: Vec<MlirValue> = (plan.iter())
                    .map(|&(r, k, inside, _)| {
                        let column = add(col, k);
                        let line = mul(add(row, r), row_len);
                        let at = add(line, column);
                        // One slot: read where it is inside the row and the slice.
                        let scalar = |b: &Inserter<'_>, j: i64| {
                            let (column, at) = (
                                b.arith(arith::addi, column, b.index_constant(j)),
                                b.arith(arith::addi, at, b.index_constant(j)),
                            );
                            let ok = b.arith(
                                arith::andi,
                                inside,
                                b.arith(
                                    arith::andi,
                                    b.cmpi(arith::CmpiPredicate::Ult, column, row_len),
                                    b.cmpi(arith::CmpiPredicate::Ult, at, len),
                                ),
                            );
                            b.if_else(
                                ok,
                                &[elem],
                                |b| vec![b.load(src, &[at], elem)],
                                |b| vec![b.zero(elem)],
                            )[0]
                        };
                        if lanes == 1 {
                            return scalar(ins, 0);
                        }
                        let end = add(at, c(lanes - 1));
                        let address = add(first, mul(at, c(bytes)));
                        let aligned = ins.cmpi(
                            arith::CmpiPredicate::Eq,
                            ins.arith(arith::remui, address, c(16)),
                            c(0),
                        );
                        // The first and the last slot both inside the row and the slice:
                        // checking the first too keeps an index near 2^64, whose last
                        // slot wraps to a small one, from passing.
                        let first_inside = and(below(column, row_len), below(at, len));
                        let last_inside =
                            and(below(add(column, c(lanes - 1)), row_len), below(end, len));
                        let whole = and(and(inside, aligned), and(first_inside, last_inside));
                        ins.if_else(
                            whole,
                            &[vector],
                            |b| {
                                vec![one(
                                    b,
                                    "vector.load",
                                    &[src, at],
                                    vector,
                                    &[("alignment", "16 : i64")],
                                )]
                            },
                            |b| {
                                let parts: Vec<MlirValue> =
                                    (0..lanes).map(|j| scalar(b, j)).collect();
                                vec![
                                    b.op("vector.from_elements", &parts, &[vector], &[])
                                        .expect("a vector of its elements")[0],
                                ]
                            },
                        )[0]
                    })
                    .collect();
                for (&(_, _, inside, slot), value) in plan.iter().zip(values) {
                    ins.if_else(
                        inside,
                        &[],
                        |b| {
                            if lanes == 1 {
                                b.store(value, tile, &[slot]);
                            } else {
                                b.op(
                                    "vector.store",
                                    &[value, tile, slot],
                                    &[],
                                    &[("alignment", b.attr("16 : i64"))],
                                )
                                .expect("a vector store into a memref of its elements");
                            }
                            Vec::new()
                        },
                        |_| Vec::new(),
                    );
                }
                Vec::new()
            });
            rewrite::replace(op, &[]);
        }
    }
    Ok(())
}

/// Whether NVIDIA's tensor cores take tiles of `elem` (`f16`, `bf16`) in
/// [`on_tensor_cores`].
pub fn nvidia_tensor_cores(elem: Type<'_>) -> bool {
    let text = elem.to_string();
    text == "f16" || text == "bf16"
}

/// Builds `name`, which takes the operands and attributes given, and gives its one result.
fn one<'c>(
    b: &Inserter<'c>,
    name: &str,
    operands: &[MlirValue],
    result: Type<'c>,
    attributes: &[(&str, &str)],
) -> MlirValue {
    let attributes: Vec<_> = attributes
        .iter()
        .map(|(n, text)| (*n, b.attr(text)))
        .collect();
    b.op(name, operands, &[result], &attributes)
        .unwrap_or_else(|e| {
            panic!(
                "`{name}` is built as the NVVM dialect defines it: {}",
                e.message
            )
        })[0]
}

/// Expands each `offload.tile_mma` of `func` left by [`in_loops`] into `ldmatrix` and
/// `mma.sync` (see the module docs), once its tiles are workgroup-memory memrefs and
/// before the thread positions are lowered. Compiled for `threads` per workgroup, a warp
/// takes a run of neighbouring blocks of one block row (as many as there are blocks per
/// warp, up to 8, where they divide evenly), so that it loads each 16 × 16 piece of `a`
/// once for the run.
///
/// # Safety
///
/// `func` is a live kernel whose tiles are views of static workgroup arrays.
pub unsafe fn on_tensor_cores(
    context: &Context,
    func: OperationRef<'_, '_>,
    threads: Option<i64>,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::TILE_MMA) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let [acc, a, b] = [0, 1, 2].map(|i| rewrite::operand(op, i));
            let elem = MemRefType::try_from(rewrite::value_type(a))
                .map_err(|_| refuse(op, "`offload.tile_mma` multiplies memrefs here"))?
                .element()
                .to_string();
            let [m, n, k] = shape(op)?;
            let [ldc, lda, ldb] = pitches(op, [m, n, k])?;
            if lda % 8 != 0 || ldb % 8 != 0 {
                return Err(refuse(
                    op,
                    "`offload.tile_mma` of 16-bit tiles needs `lda` and `ldb` multiples of 8, for `ldmatrix`",
                ));
            }
            let (rows_of_blocks, blocks_per_row) = (m / 16, n / 16);
            let all_blocks = rows_of_blocks * blocks_per_row;
            // Blocks a warp takes side by side in one block row.
            let run = match threads {
                Some(t) if t >= 32 => {
                    let per_warp = all_blocks / (t / 32);
                    let even = per_warp >= 1 && all_blocks % (t / 32) == 0;
                    (1..=per_warp.min(8))
                        .rev()
                        .find(|r| even && per_warp % r == 0 && blocks_per_row % r == 0)
                        .unwrap_or(1)
                }
                _ => 1,
            };
            let ins = Inserter::before(context, op);
            let ty = |text: &str| Type::parse(context, text).expect("a type the dialects spell");
            let c = |v: i64| ins.index_constant(v);
            let (rank, count) = rank_and_threads(&ins);
            let warp = ins.arith(arith::divui, rank, c(32));
            let warps = ins.arith(arith::divui, count, c(32));
            let lane = ins.arith(arith::remui, rank, c(32));
            // `mma.sync`'s fragments: lane `4g + t` holds rows `g` and `g + 8`, columns
            // `2t` and `2t + 1` of each 8 columns of the accumulator.
            let group = ins.arith(arith::divui, lane, c(4));
            let pair = ins.arith(arith::muli, ins.arith(arith::remui, lane, c(4)), c(2));
            // `ldmatrix` of a 16 × 16 block: lanes 8j..8j+7 give the row addresses of
            // 8 × 8 matrix j, the top-left, bottom-left, top-right, bottom-right quarter.
            let load_row = ins.arith(arith::remui, lane, c(16));
            let load_col = ins.arith(arith::muli, ins.arith(arith::divui, lane, c(16)), c(8));
            let base = |tile| {
                one(
                    &ins,
                    "memref.extract_aligned_pointer_as_index",
                    &[tile],
                    ins.index(),
                    &[],
                )
            };
            let (base_a, base_b) = (base(a), base(b));
            let (depth, column_blocks) = (c(k), c(blocks_per_row));
            let [ldc, lda, ldb] = [ldc, lda, ldb].map(c);
            // Runs: warp `w` takes runs `w`, `w + warps`, ...; run `r` is blocks
            // `r * run .. r * run + run`.
            let runs = c(all_blocks / run);
            ins.for_loop([warp, runs, warps], &[], |ins, first, _| {
                let c = |v: i64| ins.index_constant(v);
                let add = |x, y| ins.arith(arith::addi, x, y);
                let mul = |x, y| ins.arith(arith::muli, x, y);
                let block = mul(first, c(run));
                let top = mul(ins.arith(arith::divui, block, column_blocks), c(16));
                let left = mul(ins.arith(arith::remui, block, column_blocks), c(16));
                // Accumulator element e of half h of block j: row `group` (+8 for e >= 2),
                // column `pair` (+1 for odd e) of its h-th 8 columns.
                let slots: Vec<MlirValue> = (0..8 * run)
                    .map(|x| {
                        let (j, h, e) = (x / 8, x % 8 / 4, x % 4);
                        let row = add(top, add(group, c(8 * (e / 2))));
                        let col = add(left, add(pair, c(16 * j + 8 * h + e % 2)));
                        add(mul(row, ldc), col)
                    })
                    .collect();
                let start: Vec<MlirValue> = slots
                    .iter()
                    .map(|&s| ins.load(acc, &[s], ty("f32")))
                    .collect();
                let sums = ins.for_loop([c(0), depth, c(16)], &start, |ins, kk, sums| {
                    let add = |x, y| ins.arith(arith::addi, x, y);
                    let mul = |x, y| ins.arith(arith::muli, x, y);
                    // The four 8 × 8 quarters of the 16 × 16 block from (row, col) of a
                    // tile `stride` wide, as `mma.sync` operands.
                    let quarters = |base, row, col, stride, layout: &str| -> Vec<MlirValue> {
                        let slot = add(mul(row, stride), col);
                        let byte = add(base, mul(slot, ins.index_constant(2)));
                        let word = ins.convert(arith::index_cast, byte, ins.int(64));
                        let at = one(ins, "llvm.inttoptr", &[word], ty("!llvm.ptr<3>"), &[]);
                        let layout = format!("#nvvm.mma_layout<{layout}>");
                        let quad = one(
                            ins,
                            "nvvm.ldmatrix",
                            &[at],
                            ty("!llvm.struct<(i32, i32, i32, i32)>"),
                            &[
                                ("eltType", "#nvvm.ld_st_matrix_elt_type<b16>"),
                                ("layout", &layout),
                                ("num", "4 : i32"),
                                ("shape", "#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                            ],
                        );
                        (0..4)
                            .map(|i| {
                                let position = format!("array<i64: {i}>");
                                let word = one(
                                    ins,
                                    "llvm.extractvalue",
                                    &[quad],
                                    ins.int(32),
                                    &[("position", &position)],
                                );
                                // `f16` operands are pairs; `bf16` ones 32-bit words.
                                if elem == "f16" {
                                    one(ins, "llvm.bitcast", &[word], ty("vector<2xf16>"), &[])
                                } else {
                                    word
                                }
                            })
                            .collect()
                    };
                    let a_regs =
                        quarters(base_a, add(top, load_row), add(kk, load_col), lda, "row");
                    let ptx = format!("#nvvm.mma_type<{elem}>");
                    let mut next = Vec::new();
                    for j in 0..run {
                        // Transposed: each lane gets two rows' elements of one column.
                        let col = add(add(left, c(16 * j)), load_col);
                        let b_regs = quarters(base_b, add(kk, load_row), col, ldb, "col");
                        for h in 0..2 {
                            let mut operands = a_regs.clone();
                            operands.extend_from_slice(&b_regs[2 * h..2 * h + 2]);
                            let at = 8 * j as usize + 4 * h;
                            operands.extend_from_slice(&sums[at..at + 4]);
                            let d = one(
                                ins,
                                "nvvm.mma.sync",
                                &operands,
                                ty("!llvm.struct<(f32, f32, f32, f32)>"),
                                &[
                                    ("layoutA", "#nvvm.mma_layout<row>"),
                                    ("layoutB", "#nvvm.mma_layout<col>"),
                                    ("multiplicandAPtxType", &ptx),
                                    ("multiplicandBPtxType", &ptx),
                                    ("operandSegmentSizes", "array<i32: 4, 2, 4>"),
                                    ("shape", "#nvvm.shape<m = 16, n = 8, k = 16>"),
                                ],
                            );
                            for i in 0..4 {
                                let position = format!("array<i64: {i}>");
                                next.push(one(
                                    ins,
                                    "llvm.extractvalue",
                                    &[d],
                                    ty("f32"),
                                    &[("position", &position)],
                                ));
                            }
                        }
                    }
                    next
                });
                for (value, slot) in sums.into_iter().zip(slots) {
                    ins.store(value, acc, &[slot]);
                }
                Vec::new()
            });
            rewrite::replace(op, &[]);
        }
    }
    Ok(())
}
