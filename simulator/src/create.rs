//! Creating what is missing: seeding's writes, which create an object unless one of its name exists and never
//! change what is there.

use anyhow::Context as _;
use kube::api::{Api, PostParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::platform::FIELD_MANAGER;

/// Creates a cluster-scoped object unless one of its name exists; returns the stored object.
pub(crate) async fn create_if_missing<K>(client: &kube::Client, object: K) -> anyhow::Result<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + DeserializeOwned,
{
    create_or_read(Api::all(client.clone()), object).await
}

/// Creates `object` through `api` unless one of its name exists there; returns the stored object.
pub(crate) async fn create_or_read<K>(api: Api<K>, object: K) -> anyhow::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + DeserializeOwned,
{
    let name = object.name_any();
    let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
    match api.create(&post, &object).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            api.get(&name).await.with_context(|| format!("reading {} {name}", K::kind(&())))
        }
        Err(err) => Err(err).with_context(|| format!("creating {} {name}", K::kind(&()))),
    }
}
