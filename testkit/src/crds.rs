//! CRDs of openshift/api that some tests install beside the ones every world has (numo's, and the OpenShift CRDs the
//! test kit installs once per cluster): the folder `hack/build-tools.sh openshift-api` takes them into from the
//! openshift/api module, named by `$NUMO_OPENSHIFT_API_CRDS`.

use std::path::PathBuf;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Environment variable naming the folder of openshift/api's CRDs (`hack/test.sh` sets it).
pub const OPENSHIFT_API_ENV: &str = "NUMO_OPENSHIFT_API_CRDS";

/// The CRD of the file `file` (e.g. `consoleplugins.crd.yaml`) in `$NUMO_OPENSHIFT_API_CRDS`, without its
/// annotations.
pub fn openshift_api(file: &str) -> anyhow::Result<CustomResourceDefinition> {
    let dir = std::env::var_os(OPENSHIFT_API_ENV).with_context(|| {
        format!(
            "{OPENSHIFT_API_ENV} is not set: it names the folder of OpenShift CRDs that hack/build-tools.sh \
             openshift-api takes from the openshift/api module (make test sets it)"
        )
    })?;
    let path = PathBuf::from(dir).join(file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut crd: CustomResourceDefinition =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    crd.metadata.annotations = None;
    Ok(crd)
}
