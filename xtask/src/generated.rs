//! Files xtask writes into the repository from numo's sources, committed there: whether the committed copy is
//! what the sources generate, and writing it again.

use std::path::Path;

use anyhow::Context;

/// Whether the file at `rel` (relative to `root`) is `generated`: `None` when it is, else what differs.
pub fn drift(root: &Path, rel: &str, generated: &str) -> Option<String> {
    match std::fs::read_to_string(root.join(rel)) {
        Ok(committed) if committed == generated => None,
        Ok(_) => Some(format!("{rel} differs from what numo's sources generate")),
        Err(e) => Some(format!("{rel}: {e}")),
    }
}

/// Writes `generated` to `rel` (relative to `root`) unless it is there already; returns whether it changed.
pub fn write(root: &Path, rel: &str, generated: &str) -> anyhow::Result<bool> {
    let path = root.join(rel);
    if std::fs::read_to_string(&path).ok().as_deref() == Some(generated) {
        return Ok(false);
    }
    std::fs::write(&path, generated).with_context(|| format!("write {}", path.display()))?;
    Ok(true)
}
