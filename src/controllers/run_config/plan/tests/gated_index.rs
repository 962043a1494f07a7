//! The index a run config's plans keep between them (`gated_index`): brought up to date from the nodes that changed,
//! it says what one worked out from every node says, through every kind of change a node goes through.

use super::*;
use crate::controllers::run_config::plan::gated_index::{GatedIndex, Reading};
use crate::controllers::run_config::plan::Kept;

/// Where the index of `f` stands: brought up to date by `kept`, and worked out from every node.
fn both(f: &Fixture, kept: &Kept) -> (Arc<GatedIndex>, GatedIndex) {
    let targets = [&f.s.pools["worker"]];
    let labels = f.s.rules.iter().map(|r| r.label()).collect();
    let reading = Reading::new(&f.s, &targets, &f.s.pools["canary"], labels);
    (kept.updated(&f.s, &reading), GatedIndex::of(&f.s, &reading))
}

/// A node changed one way or another, as `pick` picks: its version, a rule label (one of no rule among them), the
/// release mark, a custom pool's or the canary's label, the MCO setting out to move it, or gone, or added.
fn change(f: &mut Fixture, mut pick: impl FnMut(u64) -> u64) {
    let name = format!("worker-{}", pick(14));
    let kind = pick(9);
    let nodes = f.s.nodes_mut();
    if kind == 7 {
        nodes.remove(&name);
        return;
    }
    if kind == 8 || !nodes.contains_key(&name) {
        nodes.insert(name.clone(), ready_node(&name, &["worker"], OLD));
        return;
    }
    let view = nodes.get_mut(&name).map(Arc::make_mut).expect("a node of the fixture");
    let toggle = |view: &mut NodeView, key: String, value: &str| {
        if view.labels.remove(&key).is_none() {
            view.labels.insert(key, value.to_string());
        }
        view.membership = None;
    };
    match kind {
        0 => view.version = [Some(OLD.to_string()), Some(NEW.to_string()), None][pick(3) as usize].clone(),
        1 => toggle(view, crate::labels::rule_label(["first", "second", "gone"][pick(3) as usize], "ops"), ""),
        2 => toggle(view, crate::labels::RELEASED.to_string(), "canary"),
        3 => toggle(view, "node-role.kubernetes.io/infra".to_string(), ""),
        4 => toggle(view, "isCanary".to_string(), ""),
        5 => {
            view.current_config = Some("rendered-worker-old".into());
            view.desired_config = Some("rendered-worker-new".into());
            view.desired_version = Some(NEW.into());
        }
        _ => view.desired_config = view.current_config.clone(),
    }
}

#[test]
fn the_kept_index_says_what_one_worked_out_from_every_node_says_through_every_kind_of_change() {
    let mut f = Fixture::new(12).rules(vec![rule("first", true), rule("second", false)]);
    f.s.pools.insert("infra".into(), pool("infra", selector("node-role.kubernetes.io/infra")));
    let kept = Kept::default();
    let mut seed = 7_u64;
    let mut pick = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let (first, _) = both(&f, &kept);
    let mut at = Arc::as_ptr(&first);
    drop(first);
    let (mut in_canary, mut elsewhere, mut stale) = (0, 0, 0);
    for _ in 0..400 {
        change(&mut f, &mut pick);
        let (index, whole) = both(&f, &kept);
        assert_eq!(index.told(), whole.told());
        // Brought up to date where it was, not worked out again.
        assert_eq!(Arc::as_ptr(&index), at, "worked out again");
        at = Arc::as_ptr(&index);
        let workers = f.s.nodes.values().filter(|n| n.labels.contains_key("node-role.kubernetes.io/worker"));
        let gated = workers.filter(|n| !n.labels.contains_key("node-role.kubernetes.io/infra"));
        let gated: Vec<&str> = gated.filter(|n| !n.labels.contains_key("isCanary")).map(|n| &*n.name).collect();
        assert_eq!(index.gated().map(|(_, n)| &*n.name).collect::<Vec<_>>(), gated);
        in_canary += usize::from(!index.in_canary().is_empty());
        elsewhere += usize::from(index.elsewhere().next().is_some());
        stale += usize::from(index.stale_labels().next().is_some());
    }
    // Every standing was taken on the way.
    assert!(in_canary > 0 && elsewhere > 0 && stale > 0, "{in_canary} {elsewhere} {stale}");
    // Another map of the same nodes cannot say what changed since: worked out again.
    f.s.nodes = Arc::new(f.s.nodes.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect());
    let (index, whole) = both(&f, &kept);
    assert_ne!(Arc::as_ptr(&index), at);
    assert_eq!(index.told(), whole.told());
}
