//! The conformance suite (`tests/conformance/cases.rs`) on the CPU backend, one test per
//! case.

#[path = "../conformance/cases.rs"]
mod cases;

use offload::{Device, LaunchOptions};

fn cpu() -> LaunchOptions {
    let index = offload::devices()
        .iter()
        .position(|d| *d == Device::Cpu)
        .expect("the CPU is listed");
    LaunchOptions {
        device: Some(index),
        ..LaunchOptions::DEFAULT
    }
}

macro_rules! cpu_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            if let Err(e) = cases::$name(cpu()) {
                panic!("{}: {e}", stringify!($name));
            }
        }
    };
}

crate::for_each_case!(cpu_test);
