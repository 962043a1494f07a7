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
    // A plan compares every node's version with the target, and the nodes run a handful of versions: the last
    // few orders worked out are kept, per thread, instead of parsing both versions for each node again.
    LATEST.with_borrow_mut(|latest| {
        if let Some((_, _, order)) = latest.iter().find(|(x, y, _)| x == a && y == b) {
            return *order;
        }
        let order = parse(a).zip(parse(b)).map(|(a, b)| a.cmp(&b));
        if latest.len() == KEPT {
            latest.pop_front();
        }
        latest.push_back((a.to_string(), b.to_string(), order));
        order
    })
}

/// How many orders [`compare`] keeps.
const KEPT: usize = 8;

thread_local! {
    static LATEST: std::cell::RefCell<std::collections::VecDeque<(String, String, Option<Ordering>)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
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
    fn an_order_kept_is_the_order_worked_out() {
        // More pairs than are kept, twice over: each answer is the same as when it was first worked out.
        let pairs: Vec<(String, String)> = (0..20)
            .map(|i| (format!("4.{i}.1"), format!("4.{}.0", 20 - i)))
            .chain([("x".into(), "4.1.0".into())])
            .collect();
        let first: Vec<Option<Ordering>> = pairs.iter().map(|(a, b)| compare(a, b)).collect();
        let again: Vec<Option<Ordering>> = pairs.iter().map(|(a, b)| compare(a, b)).collect();
        assert_eq!(first, again);
        assert_eq!(first[0], Some(Ordering::Less));
        assert_eq!(first[15], Some(Ordering::Greater));
        assert_eq!(first[20], None, "not a semantic version");
        assert_eq!(compare("4.16.4", "4.16.5"), Some(Ordering::Less));
        assert_eq!(compare("4.16.5", "4.16.4"), Some(Ordering::Greater), "the order of the arguments counts");
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
