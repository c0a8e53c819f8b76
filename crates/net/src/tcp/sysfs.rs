//! A variant's module parameters (`/sys/module/...`), set for one run and restored after,
//! also when the run fails: a matrix must leave the kernel as it found it.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Module parameters set for a run; the old values are written back when dropped.
pub struct SysfsGuard {
    old: Vec<(PathBuf, String)>,
}

impl SysfsGuard {
    pub fn set(values: &BTreeMap<String, String>) -> Result<SysfsGuard, String> {
        let mut guard = SysfsGuard { old: Vec::new() };
        for (path, value) in values {
            let path = PathBuf::from(path);
            let old = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            std::fs::write(&path, value)
                .map_err(|e| format!("cannot write {} to {}: {e}", value, path.display()))?;
            guard.old.push((path, old.trim().to_string()));
        }
        Ok(guard)
    }
}

impl Drop for SysfsGuard {
    fn drop(&mut self) {
        for (path, old) in self.old.drain(..).rev() {
            let _ = std::fs::write(&path, &old);
        }
    }
}
