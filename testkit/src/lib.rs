//! Test support: one local cluster per test run, exclusive use of it per test, a namespace per test, a seeded
//! simulated OpenShift.

pub mod rbac;
