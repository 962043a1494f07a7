//! Cluster-scoped objects numo puts in place itself (its ValidatingAdmissionPolicy, its ConsolePlugin) are owned by
//! numo's run-config CRD, so that the garbage collector removes them when numo's CRDs are removed, on every install
//! path (kustomize and OLM alike).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::Api;
use kube::CustomResourceExt;

use crate::api::MutexRunConfig;

/// An owner reference to numo's `mutexrunconfigs` CRD, read from the API server.
pub async fn run_config_crd(client: &kube::Client) -> kube::Result<OwnerReference> {
    let crd = Api::<CustomResourceDefinition>::all(client.clone()).get(MutexRunConfig::crd_name()).await?;
    Ok(owner_reference(&crd))
}

/// An owner reference to `crd`: the garbage collector removes the owned object when the CRD goes.
pub fn owner_reference(crd: &CustomResourceDefinition) -> OwnerReference {
    OwnerReference {
        api_version: <CustomResourceDefinition as k8s_openapi::Resource>::API_VERSION.to_string(),
        kind: <CustomResourceDefinition as k8s_openapi::Resource>::KIND.to_string(),
        name: crd.metadata.name.clone().unwrap_or_default(),
        uid: crd.metadata.uid.clone().unwrap_or_default(),
        ..Default::default()
    }
}
