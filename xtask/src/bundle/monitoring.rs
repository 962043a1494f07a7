//! The monitoring objects of `config/prometheus` for `bundle/manifests`: the ServiceMonitor, the PrometheusRule with
//! numo's alerts, and the Role and RoleBinding that let OpenShift's platform Prometheus find numo's pods. OLM creates
//! them in the namespace numo is installed in (their namespace is dropped).

use anyhow::bail;
use serde_json::Value;

use crate::manifests::{self, Object};

/// The kinds `config/prometheus` may hold (OLM installs each from a bundle).
const KINDS: [&str; 4] = ["ServiceMonitor", "PrometheusRule", "Role", "RoleBinding"];

/// Each object as (file name in `bundle/manifests`, object without namespace).
pub fn manifests(objects: &[Object]) -> anyhow::Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for object in objects {
        if !KINDS.contains(&object.kind()) {
            bail!("{}: a {} cannot be shipped in the bundle", object.path.display(), object.kind());
        }
        // `<name>_<group>_<version>_<kind>.yaml`, as operator-sdk names bundle files.
        let group_version = object.api_version().replace('/', "_");
        let file = format!("{}_{group_version}_{}.yaml", object.name(), object.kind().to_lowercase());
        out.push((file, manifests::without_namespace(&object.value)));
    }
    Ok(out)
}
