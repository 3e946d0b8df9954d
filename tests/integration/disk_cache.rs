//! The JIT's disk cache: whole entries come back, damaged ones do not, and concurrent
//! writers leave one whole entry and no temporary files.

use offload::DiskCache;

/// A cache in a folder of its own, removed when the first value is dropped.
fn fresh() -> (tempfile::TempDir, DiskCache) {
    let dir = tempfile::Builder::new()
        .prefix("offload-cache-test-")
        .tempdir()
        .unwrap();
    let cache = DiskCache::at(dir.path());
    (dir, cache)
}

fn only_entry(cache: &DiskCache) -> std::path::PathBuf {
    let entries: Vec<_> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[test]
fn entries_come_back_whole_or_not_at_all() {
    let (_dir, cache) = fresh();
    assert_eq!(cache.get("kernel a"), None);
    cache.put("kernel a", b".version 8.0\n.target sm_90\n");
    assert_eq!(
        cache.get("kernel a").as_deref(),
        Some(&b".version 8.0\n.target sm_90\n"[..])
    );
    assert_eq!(cache.get("kernel b"), None);

    // A truncated entry, and one with a changed byte, are misses.
    let path = only_entry(&cache);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    assert_eq!(cache.get("kernel a"), None);
    let mut changed = whole.clone();
    *changed.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &changed).unwrap();
    assert_eq!(cache.get("kernel a"), None);
    // Writing it again repairs it.
    cache.put("kernel a", b".version 8.0\n.target sm_90\n");
    assert!(cache.get("kernel a").is_some());
}

#[test]
fn concurrent_writers_leave_one_whole_entry() {
    let (_dir, cache) = fresh();
    let contents: Vec<Vec<u8>> = (0..8u8).map(|t| vec![t; 100_000]).collect();
    std::thread::scope(|s| {
        for content in &contents {
            let cache = cache.clone();
            s.spawn(move || {
                for _ in 0..5 {
                    cache.put("shared", content);
                }
            });
        }
    });
    let got = cache.get("shared").expect("a whole entry");
    assert!(contents.contains(&got));
    only_entry(&cache);
}

mod second_run {
    use offload::prelude::*;

    #[offload_kernel]
    fn cached_square_plus_one(mut y: Region<f32, Linear1D>) {
        if let Some(v) = y.get_mut() {
            *v = *v * *v + 1.0;
        }
    }

    /// The program `a_second_run_compiles_nothing` runs twice: one launch on the CPU
    /// backend, then how many kernels this process compiled.
    #[test]
    #[ignore = "a child process of `a_second_run_compiles_nothing`"]
    fn one_launch_then_count_compiles() {
        let mut y: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let want: Vec<f32> = y.iter().map(|v| v * v + 1.0).collect();
        offload! { kernel = cached_square_plus_one, args = (&mut y,) };
        assert_eq!(y, want);
        println!("compiles={}", offload::jit_compiles());
    }

    #[test]
    fn a_second_run_compiles_nothing() {
        let dir = tempfile::Builder::new()
            .prefix("offload-cache-test-")
            .tempdir()
            .unwrap();
        let run = || {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "disk_cache::second_run::one_launch_then_count_compiles",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("OFFLOAD_CACHE_DIR", dir.path())
                .env("OFFLOAD_DEVICE", "cpu")
                .env_remove("OFFLOAD_CACHE")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout
        };
        assert!(
            run().contains("compiles=1\n"),
            "the first run compiles the kernel"
        );
        assert!(
            run().contains("compiles=0\n"),
            "the second run finds it in the cache"
        );
    }
}
