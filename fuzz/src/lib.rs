//! Helpers shared by rea's fuzz targets: a per-process scratch directory (on tmpfs when the
//! machine has one, so the SQLite stores and input files cost no disk writes), input files written
//! into it, and one current-thread tokio runtime per process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where scratch directories go: `/dev/shm` when present (tmpfs), else the system temp dir.
fn scratch_parent() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// This process's scratch directory, `rea-fuzz-<pid>`. libFuzzer ends the process with `exit`,
/// which runs no destructors, so the first call also removes directories left by processes that
/// are gone.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let parent = scratch_parent();
        if let Ok(entries) = std::fs::read_dir(&parent) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("rea-fuzz-") else {
                    continue;
                };
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = parent.join(format!("rea-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        dir
    })
}

/// Writes `data` to `path`, creating its parent directories.
pub fn write_file(path: &Path, data: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create a scratch directory");
    }
    std::fs::write(path, data).expect("write a scratch file");
}

/// Writes the fuzz input to `name` inside the scratch directory and returns its path.
pub fn input_file(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    write_file(&path, data);
    path
}

/// A fresh, empty directory `name` inside the scratch directory.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = scratch().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// The process's tokio runtime: current-thread, built once, so an iteration costs no thread
/// start-up.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build the tokio runtime")
    })
}

/// A short, printable excerpt of fuzz bytes for assertion messages.
pub fn excerpt(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(600)]).into_owned();
    if data.len() > 600 {
        format!("{text:?}… ({} bytes)", data.len())
    } else {
        format!("{text:?}")
    }
}
