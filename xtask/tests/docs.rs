//! The documentation's parts that describe numo's checks are what `numo::api::check::ABOUT` and the health checks'
//! switches generate: a check added, changed or removed there fails here until `cargo xtask docs` writes them again.

#[test]
fn the_committed_descriptions_of_the_checks_are_what_the_code_generates() {
    let root = xtask::repo_root();
    let drift = xtask::docs::drift(&root).expect("the documented files and their markers");
    assert!(drift.is_empty(), "{drift:?}: run `cargo xtask docs` and commit the result");
}
