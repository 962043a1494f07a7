#![forbid(unsafe_code)]
//! numo, the Node Upgrade Mutex Operator: gates OpenShift worker-node upgrades behind admin-defined Jobs.

pub mod access;
pub mod admission_policy;
pub mod alerts;
pub mod api;
pub mod api_client;
pub mod cached_job;
pub mod cel_check;
pub mod conditions;
pub mod error;
pub mod estimate;
pub mod jobs;
pub mod labels;
pub mod openshift;
pub mod selector;

pub use error::{Error, Result};
pub mod console_plugin;
pub mod context;
pub mod controllers;
pub mod crd_owner;
pub mod crdgen;
pub mod events;
pub mod field_managers;
pub mod guard;
pub mod leader;
pub mod membership;
pub mod metrics;
pub mod pool_claim;
pub mod projections;
pub mod rollout_record;
pub mod server;
pub mod taking_turns;
pub mod telemetry;
pub mod timeline;
pub mod trim;
pub mod watches;
pub mod windows;

pub use context::{Context, OperatorConfig};
