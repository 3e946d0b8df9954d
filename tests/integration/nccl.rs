//! NCCL collectives (`offload::nccl`) where there is no NVIDIA GPU: what a program is
//! told. The collectives themselves run on GPUs only (`offload-bench nccl`).

use offload::Device;
use offload::nccl::{Clique, Communicator, UniqueId};

#[test]
fn a_clique_of_the_cpu_is_refused() {
    let err = Clique::new(&[Device::Cpu])
        .err()
        .expect("the CPU is no NCCL device");
    assert_eq!(
        err.to_string(),
        format!(
            "NCCL: NCCL collectives run on NVIDIA GPUs; {} is not one",
            Device::Cpu
        )
    );
}

#[test]
fn a_missing_library_is_named() {
    // SAFETY: only opens the library, as offload would.
    let present = unsafe { libloading::Library::new("libnccl.so.2") }.is_ok();
    match UniqueId::new() {
        Ok(id) => {
            assert!(present, "a unique id without libnccl.so.2");
            assert_eq!(
                UniqueId::from_bytes(id.to_bytes()).to_bytes(),
                id.to_bytes()
            );
            let err = Communicator::new(&Device::Cpu, &id, 0, 1).expect_err("not a GPU");
            assert!(err.to_string().contains("is not one"), "{err}");
        }
        Err(e) => {
            assert!(!present, "NCCL is present but: {e}");
            assert_eq!(
                e.to_string(),
                "NCCL: the NCCL library (libnccl.so.2) was not found: install NCCL 2 or add its folder to LD_LIBRARY_PATH"
            );
        }
    }
}

#[test]
fn a_rank_outside_the_communicator_is_refused() {
    let id = UniqueId::from_bytes([0; 128]);
    let err = Communicator::new(&Device::Cpu, &id, 2, 2).expect_err("rank 2 of 2");
    assert_eq!(err.to_string(), "NCCL: rank 2 is not one of 2 ranks");
}
