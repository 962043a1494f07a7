//! Comparing OpenShift release versions (`4.16.4`, `4.17.0-rc.1`) as semantic versions.

use std::cmp::Ordering;

/// Whether a node at `node` still has to be upgraded to `target`. A node whose version is unknown is behind (it is
/// gated rather than assumed upgraded); versions that are not semantic versions compare as unequal strings.
pub fn is_behind(node: Option<&str>, target: &str) -> bool {
    match node {
        None => true,
        Some(node) if node == target => false,
        Some(node) => compare(node, target).is_none_or(|order| order == Ordering::Less),
    }
}

/// Orders two versions; None when either is not a semantic version.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(parse(a)?.cmp(&parse(b)?))
}

fn parse(version: &str) -> Option<semver::Version> {
    let version = version.trim().trim_start_matches('v');
    semver::Version::parse(version).ok().or_else(|| {
        // "4.16" → "4.16.0"
        let dots = version.split('-').next()?.matches('.').count();
        (dots == 1).then(|| semver::Version::parse(&version.replacen('-', ".0-", 1)).ok()).flatten().or_else(|| {
            (dots == 1 && !version.contains('-'))
                .then(|| semver::Version::parse(&format!("{version}.0")).ok())
                .flatten()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_versions_are_behind_equal_and_higher_are_not() {
        assert!(is_behind(Some("4.16.4"), "4.16.5"));
        assert!(is_behind(Some("4.9.0"), "4.16.0"));
        assert!(!is_behind(Some("4.16.5"), "4.16.5"));
        assert!(!is_behind(Some("4.17.0"), "4.16.5"));
        assert!(is_behind(Some("4.17.0-rc.1"), "4.17.0"));
    }

    #[test]
    fn unknown_versions_are_behind() {
        assert!(is_behind(None, "4.16.5"));
        assert!(is_behind(Some("weird"), "4.16.5"));
        assert!(!is_behind(Some("weird"), "weird"));
        assert!(is_behind(Some("4.16"), "4.16.1"));
        assert!(!is_behind(Some("v4.16.1"), "4.16.1"));
    }
}
