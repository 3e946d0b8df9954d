// The `offload` dialect, defined in IRDL and loaded into every context that lowers
// kernels. Types carry what the MIR types carry; ops are the few things kernels do that
// no upstream dialect expresses directly. All ops use MLIR's generic syntax.
irdl.dialect @offload {
  // A mutable region of elements shared out among threads by a partitioning strategy,
  // e.g. `!offload.region<f32, "Linear1D">`.
  irdl.type @region {
    %elem = irdl.any
    %strategy = irdl.base "#builtin.string"
    irdl.parameters(elem: %elem, strategy: %strategy)
  }

  // A read-only slice, e.g. `!offload.slice<f32>`.
  irdl.type @slice {
    %elem = irdl.any
    irdl.parameters(elem: %elem)
  }

  // Workgroup (shared) memory of elements, e.g. `!offload.shared<f32>`.
  irdl.type @shared {
    %elem = irdl.any
    irdl.parameters(elem: %elem)
  }

  // Declares a kernel's shared array of `len` elements (-1: the launch's dynamic shared
  // memory) at byte `offset` of the workgroup's static shared memory (for targets that
  // lay it out themselves).
  irdl.operation @alloc_shared {
    %elem = irdl.any
    %shared = irdl.parametric @offload::@shared<%elem>
    %len = irdl.base "#builtin.integer"
    %offset = irdl.base "#builtin.integer"
    irdl.attributes { "len" = %len, "offset" = %offset }
    irdl.results(memory: %shared)
  }

  // Waits for every thread of the workgroup that has not returned.
  irdl.operation @barrier {
  }

  // `acc += a × b` by the whole workgroup over row-major shared tiles: `a` of m × k
  // elements, `b` of k × n, `acc` of m × n, their rows `lda`, `ldb` and `ldc` elements
  // apart. Between two barriers: no thread touches the tiles meanwhile.
  // Fills the shared tile of rows × cols elements (rows `pitch` apart) by the whole
  // workgroup with the block of the slice (rows of `row_len` elements) from (`row`,
  // `col`); zeros past a row's end or the slice's. Between two barriers.
  irdl.operation @tile_fill {
    %elem = irdl.any
    %tile = irdl.parametric @offload::@shared<%elem>
    %src = irdl.parametric @offload::@slice<%elem>
    %index = irdl.is index
    %rows = irdl.base "#builtin.integer"
    %cols = irdl.base "#builtin.integer"
    %pitch = irdl.base "#builtin.integer"
    irdl.attributes { "rows" = %rows, "cols" = %cols, "pitch" = %pitch }
    irdl.operands(tile: %tile, src: %src, row_len: %index, row: %index, col: %index)
  }

  irdl.operation @tile_mma {
    %elem = irdl.any
    %acc_elem = irdl.any
    %tile = irdl.parametric @offload::@shared<%elem>
    %acc = irdl.parametric @offload::@shared<%acc_elem>
    // One variable per extent: IRDL makes the uses of one variable equal.
    %m = irdl.base "#builtin.integer"
    %n = irdl.base "#builtin.integer"
    %k = irdl.base "#builtin.integer"
    %ldc = irdl.base "#builtin.integer"
    %lda = irdl.base "#builtin.integer"
    %ldb = irdl.base "#builtin.integer"
    irdl.attributes { "m" = %m, "n" = %n, "k" = %k, "ldc" = %ldc, "lda" = %lda, "ldb" = %ldb }
    irdl.operands(acc: %acc, a: %tile, b: %tile)
  }

  // Threads per subgroup, and this thread's index in its subgroup.
  irdl.operation @subgroup_size {
    %index = irdl.is index
    irdl.results(size: %index)
  }
  irdl.operation @subgroup_lane {
    %index = irdl.is index
    irdl.results(lane: %index)
  }

  // `value` from another lane of the subgroup: lane `lane` (`mode` 0) or `own ^ lane`
  // (`mode` 1); a lane outside the subgroup gives the caller's own value.
  irdl.operation @shuffle {
    %value = irdl.any
    %lane = irdl.is i32
    %mode = irdl.base "#builtin.integer"
    irdl.attributes { "mode" = %mode }
    irdl.operands(value: %value, lane: %lane)
    irdl.results(result: %value)
  }

  // Combines `value` over the subgroup with the arith op named by `combine` (e.g.
  // "arith.addf"); every lane gets the result.
  irdl.operation @subgroup_reduce {
    %value = irdl.any
    %combine = irdl.base "#builtin.string"
    irdl.attributes { "combine" = %combine }
    irdl.operands(value: %value)
    irdl.results(result: %value)
  }

  // A mask with bit `l` set where lane `l`'s predicate is true.
  irdl.operation @ballot {
    %pred = irdl.is i1
    %mask = irdl.is i64
    irdl.operands(predicate: %pred)
    irdl.results(mask: %mask)
  }

  // The element index this thread owns in a region under its strategy.
  irdl.operation @region_index {
    %region = irdl.base @offload::@region
    %index = irdl.is index
    irdl.operands(region: %region)
    irdl.results(index: %index)
  }

  // Data every thread may update atomically, e.g. `!offload.atomic<u32>`.
  irdl.type @atomic {
    %elem = irdl.any
    irdl.parameters(elem: %elem)
  }

  // Atomically combines one element with a value (`kind` as in `memref.atomic_rmw`:
  // 0 addf, 1 addi, 2 andi, 3 assign, 5 maxnumf, 6 maxs, 7 maxu, 9 minnumf, 10 mins,
  // 11 minu, 14 ori, 15 xori); the result is the previous value.
  irdl.operation @atomic_rmw {
    %elem = irdl.any
    %atomic = irdl.parametric @offload::@atomic<%elem>
    %index = irdl.is index
    %kind = irdl.base "#builtin.integer"
    irdl.attributes { "kind" = %kind }
    irdl.operands(atomic: %atomic, index: %index, value: %elem)
    irdl.results(previous: %elem)
  }

  // Atomically replaces one element with `new` if it equals `current`; the result is
  // the previous value.
  irdl.operation @atomic_cas {
    %elem = irdl.any
    %atomic = irdl.parametric @offload::@atomic<%elem>
    %index = irdl.is index
    irdl.operands(atomic: %atomic, index: %index, current: %elem, new: %elem)
    irdl.results(previous: %elem)
  }

  // The thread's coordinate in a region along `dim` (0: column, 1: row).
  irdl.operation @region_coord {
    %region = irdl.base @offload::@region
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.operands(region: %region)
    irdl.results(coord: %index)
  }

  // A region's extent along `dim` (0: row length, 1: rows per plane, 2: planes).
  irdl.operation @extent {
    %region = irdl.base @offload::@region
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.operands(region: %region)
    irdl.results(extent: %index)
  }

  // How far an interior region's threads start from its edges (0 for a whole region).
  irdl.operation @margin {
    %region = irdl.base @offload::@region
    %index = irdl.is index
    irdl.operands(region: %region)
    irdl.results(margin: %index)
  }

  // The element count of a region or slice.
  irdl.operation @len {
    %region = irdl.base @offload::@region
    %slice = irdl.base @offload::@slice
    %atomic = irdl.base @offload::@atomic
    %shared = irdl.base @offload::@shared
    %container = irdl.any_of(%region, %slice, %atomic, %shared)
    %index = irdl.is index
    irdl.operands(container: %container)
    irdl.results(len: %index)
  }

  // Reads one element. The index is not checked here: MIR checks it before.
  irdl.operation @load {
    %elem = irdl.any
    %strategy = irdl.base "#builtin.string"
    %region = irdl.parametric @offload::@region<%elem, %strategy>
    %slice = irdl.parametric @offload::@slice<%elem>
    %shared = irdl.parametric @offload::@shared<%elem>
    %container = irdl.any_of(%region, %slice, %shared)
    %index = irdl.is index
    irdl.operands(container: %container, index: %index)
    irdl.results(value: %elem)
  }

  // Writes one element of a region or of shared memory.
  irdl.operation @store {
    %elem = irdl.any
    %strategy = irdl.base "#builtin.string"
    %region = irdl.parametric @offload::@region<%elem, %strategy>
    %shared = irdl.parametric @offload::@shared<%elem>
    %container = irdl.any_of(%region, %shared)
    %index = irdl.is index
    irdl.operands(value: %elem, region: %container, index: %index)
  }

  // Stops this thread with the panic site `site` (its number among the kernel's
  // panic sites) and up to two 64-bit values for the message.
  irdl.operation @panic {
    %site = irdl.base "#builtin.integer"
    %value = irdl.is i64
    irdl.attributes { "site" = %site }
    irdl.operands(values: variadic %value)
  }

  // Thread position along dimension `dim` (0 = x): the thread's index in its workgroup,
  // the workgroup's index in the launch, and the workgroup size.
  irdl.operation @thread_id {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.results(id: %index)
  }
  irdl.operation @workgroup_id {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.results(id: %index)
  }
  irdl.operation @workgroup_dim {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.results(size: %index)
  }
  // Workgroups in the whole launch along `dim`.
  irdl.operation @workgroup_count {
    %dim = irdl.base "#builtin.integer"
    %index = irdl.is index
    irdl.attributes { "dim" = %dim }
    irdl.results(count: %index)
  }
}
