//! Launch arguments: what a launch is given (regions, slices, atomics, scalars, and
//! device-resident data), as the kernel ABI will pass them.

use crate::{
    Error,
    memory::BufferLocation,
    region::{
        AtomicData, IntoAtomic, IntoRegion, IntoSlice, PartitioningStrategy, Shape, SliceData,
    },
    scalar::Scalar,
};
use offload_mir::{ScalarTy, Strategy};
use std::marker::PhantomData;

/// A launch's argument words in the kernel ABI: on the stack for up to six 3-D regions
/// with the hidden words, so that a launch allocates nothing.
pub(crate) type Words = smallvec::SmallVec<[u64; 80]>;

/// A launch argument described at run time; see [`KernelArg::dynamic`].
#[doc(hidden)]
pub enum DynamicArg<'a> {
    Region {
        elem: ScalarTy,
        strategy: Strategy,
        data: &'a mut [u8],
        layout: &'a offload_mir::interp::Layout,
    },
    Slice {
        elem: ScalarTy,
        data: &'a [u8],
    },
    Atomic {
        elem: ScalarTy,
        data: &'a mut [u8],
    },
    Scalar {
        ty: ScalarTy,
        bits: u64,
    },
}

/// One argument of a launch, borrowed for the launch's duration.
#[doc(hidden)]
pub struct KernelArg<'a> {
    pub(crate) kind: ArgKind,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl KernelArg<'_> {
    /// An argument with the same meaning over other data (a split launch's scratch).
    pub(crate) fn with_kind<'b>(kind: ArgKind) -> KernelArg<'b> {
        KernelArg {
            kind,
            _borrow: PhantomData,
        }
    }
}

#[derive(Clone)]
pub(crate) enum ArgKind {
    Region {
        data: *mut u8,
        shape: Shape,
        elem: ScalarTy,
        strategy: Strategy,
        resident: Option<BufferLocation>,
        /// Elements `first..last` of the region, when `data` holds only those (a share of
        /// a split launch, whose threads touch no others); `None`: `data` holds them all.
        window: Option<(usize, usize)>,
        /// An `Indexed` region's indices, on the host.
        indices: Option<(*const usize, usize)>,
    },
    Slice {
        data: *const u8,
        len: usize,
        elem: ScalarTy,
        resident: Option<BufferLocation>,
    },
    Atomic {
        data: *mut u8,
        len: usize,
        elem: ScalarTy,
        resident: Option<BufferLocation>,
    },
    Scalar {
        bits: u64,
        ty: ScalarTy,
    },
}

impl<'a> KernelArg<'a> {
    /// The argument of a `Region` parameter.
    pub fn region<T: Scalar, S: PartitioningStrategy>(region: impl IntoRegion<'a, T, S>) -> Self {
        let region = region.into_region();
        KernelArg {
            kind: ArgKind::Region {
                data: region.data.as_ptr().cast(),
                shape: region.shape,
                elem: T::TY,
                strategy: S::KIND,
                resident: region.resident,
                window: None,
                indices: region.indices.map(|i| (i.as_ptr(), i.len())),
            },
            _borrow: PhantomData,
        }
    }

    /// The argument of a slice (`&[T]`) parameter.
    pub fn slice<T: Scalar>(slice: impl IntoSlice<'a, T>) -> Self {
        let SliceData { host, resident } = slice.into_slice();
        KernelArg {
            kind: ArgKind::Slice {
                data: host.as_ptr().cast(),
                len: resident.as_ref().map_or(host.len(), |r| r.len),
                elem: T::TY,
                resident,
            },
            _borrow: PhantomData,
        }
    }

    /// The argument of an `Atomic<T>` parameter.
    pub fn atomic<T: Scalar>(data: impl IntoAtomic<'a, T>) -> Self {
        let AtomicData { host, resident } = data.into_atomic();
        KernelArg {
            kind: ArgKind::Atomic {
                data: host.as_mut_ptr().cast(),
                len: resident.as_ref().map_or(host.len(), |r| r.len),
                elem: T::TY,
                resident,
            },
            _borrow: PhantomData,
        }
    }

    /// An argument whose types are known only at run time (tools that launch MIR they
    /// made, such as the differential fuzzer). `data` holds the elements' bytes in the
    /// host's order; its length must be a whole number of elements.
    #[doc(hidden)]
    pub fn dynamic(arg: DynamicArg<'a>) -> Result<Self, Error> {
        let elements = |data: &[u8], elem: ScalarTy| {
            let size = elem.size_bytes();
            if !data.len().is_multiple_of(size) {
                return Err(Error::InvalidLaunch(format!(
                    "{} bytes are not a whole number of `{elem}` elements",
                    data.len()
                )));
            }
            Ok(data.len() / size)
        };
        let kind = match arg {
            DynamicArg::Region {
                elem,
                strategy,
                data,
                layout,
            } => ArgKind::Region {
                shape: Shape {
                    len: elements(data, elem)?,
                    row_len: layout.row_len,
                    plane_rows: layout.plane_rows,
                    margin: layout.margin,
                    indices: layout.indices.as_ref().map(Vec::len),
                },
                data: data.as_mut_ptr(),
                elem,
                strategy,
                resident: None,
                window: None,
                // Only an `Indexed` region passes indices: another's words have none.
                indices: (strategy == Strategy::Indexed)
                    .then_some(layout.indices.as_ref())
                    .flatten()
                    .map(|i| (i.as_ptr(), i.len())),
            },
            DynamicArg::Slice { elem, data } => ArgKind::Slice {
                len: elements(data, elem)?,
                data: data.as_ptr(),
                elem,
                resident: None,
            },
            DynamicArg::Atomic { elem, data } => ArgKind::Atomic {
                len: elements(data, elem)?,
                data: data.as_mut_ptr(),
                elem,
                resident: None,
            },
            DynamicArg::Scalar { ty, bits } => ArgKind::Scalar { bits, ty },
        };
        Ok(KernelArg {
            kind,
            _borrow: PhantomData,
        })
    }

    /// The argument of a scalar parameter, passed by value.
    pub fn scalar<T: Scalar>(value: T) -> Self {
        KernelArg {
            kind: ArgKind::Scalar {
                bits: value.to_bits(),
                ty: T::TY,
            },
            _borrow: PhantomData,
        }
    }
}

impl ArgKind {
    /// Where a device-resident argument lives.
    pub(crate) fn resident(&self) -> Option<&BufferLocation> {
        match self {
            ArgKind::Region { resident, .. }
            | ArgKind::Slice { resident, .. }
            | ArgKind::Atomic { resident, .. } => resident.as_ref(),
            ArgKind::Scalar { .. } => None,
        }
    }

    /// The bytes of a host region's, slice's or atomic's data; `None` for scalars and
    /// device-resident data.
    /// The bytes of one element (of a scalar: its own).
    pub(crate) fn elem_size(&self) -> usize {
        match *self {
            ArgKind::Region { elem, .. }
            | ArgKind::Slice { elem, .. }
            | ArgKind::Atomic { elem, .. } => elem.size_bytes(),
            ArgKind::Scalar { ty, .. } => ty.size_bytes(),
        }
    }

    pub(crate) fn bytes(&self) -> Option<(*mut u8, usize)> {
        if self.resident().is_some() {
            return None;
        }
        match *self {
            ArgKind::Region {
                data,
                shape,
                elem,
                window,
                ..
            } => {
                let (first, last) = window.unwrap_or((0, shape.len));
                Some((data, (last - first) * elem.size_bytes()))
            }
            ArgKind::Slice {
                data, len, elem, ..
            } => Some((data as *mut u8, len * elem.size_bytes())),
            ArgKind::Atomic {
                data, len, elem, ..
            } => Some((data, len * elem.size_bytes())),
            ArgKind::Scalar { .. } => None,
        }
    }

    /// Where the host data of [`bytes`](Self::bytes) goes in the argument's memory on
    /// the device: its byte offset there and the memory's full size. A window of a region
    /// sits at its first element's place in memory the size of the whole region.
    pub(crate) fn placement(&self) -> Option<(usize, usize)> {
        match *self {
            ArgKind::Region {
                shape,
                elem,
                window: Some((first, _)),
                ..
            } => Some((first * elem.size_bytes(), shape.len * elem.size_bytes())),
            _ => self.bytes().map(|(_, bytes)| (0, bytes)),
        }
    }

    /// Whether the kernel may write this argument, so that it is copied back.
    pub(crate) fn copied_back(&self) -> bool {
        match self {
            ArgKind::Region { strategy, .. } => strategy.is_writable(),
            ArgKind::Atomic { .. } => true,
            ArgKind::Slice { .. } | ArgKind::Scalar { .. } => false,
        }
    }

    /// Appends the argument's words in the kernel ABI to `words`, given where its data
    /// lives and, for an `Indexed` region, where its indices do; `None` for scalars,
    /// which append nothing here. Returns how many words it appended.
    pub(crate) fn abi_words(
        &self,
        ptr: u64,
        indices: Option<u64>,
        words: &mut Words,
    ) -> Option<usize> {
        use offload_mir::abi::{self, Param};
        let (params, len, shape) = match *self {
            ArgKind::Region {
                shape, strategy, ..
            } => (abi::region_params(strategy), shape.len, Some(shape)),
            ArgKind::Slice { len, .. } | ArgKind::Atomic { len, .. } => (
                abi::params_of(&offload_mir::Ty::Slice(ScalarTy::U8)),
                len,
                None,
            ),
            ArgKind::Scalar { .. } => return None,
        };
        // Each parameter as `offload_mir::abi` describes it, which the lowering's
        // signatures follow too.
        let [w, h, d] = shape.map_or([len, 1, 1], |s| s.extents()).map(|e| e as u64);
        let before = words.len();
        for param in params {
            match param {
                Param::Data { rank: 1 } => words.extend(abi::memref_1d(ptr, len as u64)),
                Param::Data { rank: 2 } => words.extend(abi::memref_2d(ptr, h, w)),
                Param::Data { .. } => words.extend(abi::memref_3d(ptr, d, h, w)),
                Param::Margin => words.push(shape.map_or(0, |s| s.margin as u64)),
                Param::Indices => {
                    let at = indices.expect("an `Indexed` region's indices are placed");
                    let count = shape.and_then(|s| s.indices).unwrap_or(0);
                    words.extend(abi::memref_1d(at, count as u64));
                }
                Param::Scalar => unreachable!("containers' parameters are memrefs and margins"),
            }
        }
        Some(words.len() - before)
    }

    /// An `Indexed` region's indices as a read-only argument of their own, placed on the
    /// device like a slice.
    pub(crate) fn indices(&self) -> Option<ArgKind> {
        match *self {
            ArgKind::Region {
                strategy: Strategy::Indexed,
                indices: Some((data, len)),
                ..
            } => Some(ArgKind::Slice {
                data: data.cast(),
                len,
                elem: ScalarTy::U64,
                resident: None,
            }),
            _ => None,
        }
    }
}
