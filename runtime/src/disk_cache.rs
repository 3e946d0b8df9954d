//! The JIT's disk cache: compiled kernels kept across processes, so that a program's
//! second run compiles nothing it compiled before.
//!
//! An entry is named by a SHA-256 of everything the compiled code depends on (the linked
//! MIR, the target, the compiler build; see [`crate::compile`]) and holds a header with
//! the content's length and its own SHA-256, so a truncated or corrupt entry is detected
//! and compiled again. Entries are written to a temporary file and renamed into place, so
//! concurrent processes never see half an entry. The directory is `OFFLOAD_CACHE_DIR`,
//! else `$XDG_CACHE_HOME/offload`, else `~/.cache/offload`; `OFFLOAD_CACHE=off` turns the
//! cache off. A cache that cannot be written is only skipped.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The first line of every entry: the format, then the content's length and hash.
const MAGIC: &str = "offload-cache-v1";

/// A directory of cache entries.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// The cache the environment asks for, or `None` when it is off or has no home.
    pub fn from_env() -> Option<DiskCache> {
        if std::env::var("OFFLOAD_CACHE").is_ok_and(|v| v == "off" || v == "0") {
            return None;
        }
        let dir = std::env::var_os("OFFLOAD_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| Path::new(&d).join("offload")))
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/offload")))?;
        Some(DiskCache::at(dir))
    }

    /// A cache in `dir`, made when first written.
    pub fn at(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The directory entries live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{}.bin", hex(&Sha256::digest(key.as_bytes()))))
    }

    /// The entry for `key`, if there is one and it is whole.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let data = std::fs::read(self.path(key)).ok()?;
        let newline = data.iter().position(|b| *b == b'\n')?;
        let header = std::str::from_utf8(&data[..newline]).ok()?;
        let content = &data[newline + 1..];
        let mut fields = header.split(' ');
        let (Some(MAGIC), Some(len), Some(hash), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return None;
        };
        (len.parse::<usize>().ok()? == content.len() && hash == hex(&Sha256::digest(content)))
            .then(|| content.to_vec())
    }

    /// Stores `content` under `key`, replacing what was there; failures are skipped (a
    /// later run compiles again).
    pub fn put(&self, key: &str, content: &[u8]) {
        if let Err(e) = self.try_put(key, content) {
            tracing::debug!("not cached in {}: {e}", self.dir.display());
        }
    }

    fn try_put(&self, key: &str, content: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(key);
        // Unique per process and thread, so concurrent writers never share a file.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temporary = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
        let mut file = std::fs::File::create(&temporary)?;
        let header = format!(
            "{MAGIC} {} {}\n",
            content.len(),
            hex(&Sha256::digest(content))
        );
        let written = file
            .write_all(header.as_bytes())
            .and_then(|()| file.write_all(content))
            .and_then(|()| file.sync_all());
        match written.and_then(|()| std::fs::rename(&temporary, &path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&temporary);
                Err(e)
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
