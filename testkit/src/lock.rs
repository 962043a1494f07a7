//! The exclusive lock on a test cluster: an advisory `flock` on a file in the cache directory, so tests take turns
//! across threads and runtimes of one process (every holder opens the file itself) and across test binaries running
//! at the same time. The kernel releases it when the holder's file closes, even when the process is killed.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Held exclusive use of one cluster; released when dropped.
#[derive(Debug)]
pub struct ClusterLock {
    _file: File,
}

/// The lock file of the cluster whose API server is `server`, under the numo cache directory.
pub fn lock_path(server: &str) -> PathBuf {
    cache_dir().join("locks").join(format!("test-cluster-{}.lock", numo::labels::hash_hex(server, 16)))
}

/// numo's cache directory, as `hack/versions.sh` computes it: `$NUMO_CACHE`, else `$XDG_CACHE_HOME/numo`, else
/// `~/.cache/numo`.
pub fn cache_dir() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("NUMO_CACHE")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|dir| dir.join("numo")))
        .or_else(|| non_empty("HOME").map(|home| home.join(".cache/numo")))
        .unwrap_or_else(|| std::env::temp_dir().join("numo-cache"))
}

/// A test-world tool: the path `$env` names, else the newest build in numo's cache, the first of `candidates` (paths
/// inside a `<prefix>*` folder) that exists; None when neither is there.
pub fn tool(env: &str, prefix: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let mut found: Vec<PathBuf> =
        std::fs::read_dir(cache_dir()).map(|dir| dir.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    found.retain(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)));
    found.sort();
    found.iter().rev().flat_map(|dir| candidates.iter().map(move |c| dir.join(c))).find(|p| p.is_file())
}

/// Waits until the lock at `path` is free and takes it. Blocks the calling thread; call from `spawn_blocking`.
pub fn acquire_blocking(path: &Path) -> anyhow::Result<ClusterLock> {
    if let Some(lock) = try_acquire(path)? {
        return Ok(lock);
    }
    tracing::info!(lock = %path.display(), "waiting for other tests to release the test cluster");
    let file = open(path)?;
    file.lock().with_context(|| format!("locking {}", path.display()))?;
    Ok(ClusterLock { _file: file })
}

/// Takes the lock at `path` if it is free now.
pub fn try_acquire(path: &Path) -> anyhow::Result<Option<ClusterLock>> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(ClusterLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(err)) => Err(err).with_context(|| format!("locking {}", path.display())),
    }
}

/// Waits (on a blocking thread) until the lock at `path` is free and takes it.
pub async fn acquire(path: PathBuf) -> anyhow::Result<ClusterLock> {
    tokio::task::spawn_blocking(move || acquire_blocking(&path)).await.context("the lock task panicked")?
}

fn open(path: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_lock(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("numo-testkit-{name}-{}.lock", std::process::id()))
    }

    #[test]
    fn a_held_lock_excludes_other_holders_in_the_same_process_until_dropped() {
        let path = scratch_lock("exclusive");
        let held = acquire_blocking(&path).unwrap();
        assert!(try_acquire(&path).unwrap().is_none(), "a second holder got the lock");
        let from_other_thread = std::thread::spawn({
            let path = path.clone();
            move || try_acquire(&path).unwrap().is_some()
        });
        assert!(!from_other_thread.join().unwrap(), "another thread got the lock");
        drop(held);
        assert!(try_acquire(&path).unwrap().is_some(), "the lock was not released on drop");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_waiting_holder_gets_the_lock_once_it_is_released() {
        let path = scratch_lock("waiting");
        let held = acquire_blocking(&path).unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                let lock = acquire_blocking(&path).unwrap();
                sender.send(()).unwrap();
                lock
            }
        });
        assert!(receiver.try_recv().is_err(), "the waiter got the lock while it was held");
        drop(held);
        receiver.recv().unwrap();
        drop(waiter.join().unwrap());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn lock_files_are_per_cluster() {
        assert_ne!(lock_path("https://127.0.0.1:32764"), lock_path("https://127.0.0.1:32765"));
        assert_eq!(lock_path("https://127.0.0.1:32764"), lock_path("https://127.0.0.1:32764"));
    }
}
