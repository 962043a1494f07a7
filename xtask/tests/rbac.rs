//! numo's ClusterRole is what `numo::access::GRANTS` says numo does: a grant added, changed or removed there fails
//! here until `cargo xtask rbac` writes config/rbac/role.yaml again (and `cargo xtask bundle` the bundle from it).

#[test]
fn the_committed_cluster_role_is_what_numo_s_grants_generate() {
    let root = xtask::repo_root();
    assert_eq!(xtask::rbac::drift(&root), None, "run `cargo xtask rbac` and commit the result");
}

#[test]
fn the_generated_role_reads_as_yaml_with_every_grant() {
    let role: serde_json::Value = serde_yaml::from_str(&numo::access::role_yaml()).expect("YAML");
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    assert_eq!(rules.len(), numo::access::GRANTS.len());
    assert_eq!(role["metadata"]["name"], "numo-operator");
    assert_eq!(rules[0]["apiGroups"][0], "", "the core group is written as \"\"");
}
