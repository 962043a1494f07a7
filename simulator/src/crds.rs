//! Installs the OpenShift CRDs into a cluster: the real ones from a folder when it exists, else the ones numo derives
//! from its own Rust types.
