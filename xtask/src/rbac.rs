//! numo's ClusterRole (`config/rbac/role.yaml`), written from the one table of what numo does in the API
//! (`numo::access::GRANTS`); the bundle's cluster permissions are then generated from it (`cargo xtask bundle`).

use std::path::Path;

/// Where the ClusterRole is, relative to the repository root.
pub const PATH: &str = "config/rbac/role.yaml";

/// Whether the committed file is what numo's table generates: `None` when it is, else what differs.
pub fn drift(root: &Path) -> Option<String> {
    crate::generated::drift(root, PATH, &numo::access::role_yaml())
}

/// Writes the file; returns whether it changed.
pub fn write(root: &Path) -> anyhow::Result<bool> {
    crate::generated::write(root, PATH, &numo::access::role_yaml())
}
