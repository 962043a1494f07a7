//! The kube-apiserver operator refuses the next minor update while kubelets lag: numo says the update waits for its
//! rollout, with what is left and its estimate, once (an Event), and only while it holds nodes behind.

use super::*;

const SKEW: &str = "KubeletMinorVersion_KubeletMinorVersionUnsupportedNextUpgrade";

fn skewed(f: &mut Fixture) {
    f.s.kubelet_skew = Some(SKEW.into());
}

fn told(p: &Plan) -> usize {
    p.notices.iter().filter(|n| n.reason == "NextMinorUpdateHeld").count()
}

#[test]
fn while_numo_holds_workers_behind_it_says_the_next_minor_update_waits_for_it() {
    let mut f = Fixture::new(3);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(condition(&p, condition::NEXT_MINOR_UPDATE_HELD).status, "False", "the kubelets allow it");

    skewed(&mut f);
    let p = f.step();
    let held = condition(&p, condition::NEXT_MINOR_UPDATE_HELD);
    assert_eq!((held.status.as_str(), held.reason.as_str()), ("True", "KubeletSkew"));
    assert!(held.message.contains(SKEW) && held.message.contains("3 of the 3 node(s)"), "{}", held.message);
    assert!(held.message.contains(NEW), "{}", held.message);
    assert!(held.message.contains("numo expects to finish at"), "the estimate: {}", held.message);
    assert_eq!(told(&p), 1);
    assert_eq!(told(&f.step()), 0, "told once");

    // The rollout ends: the kubelets it held caught up, and numo no longer says so even if the operator lags.
    let end = run_to_end(&mut f);
    assert_eq!(end.status.phase, Some(RunPhase::Completed));
    assert_eq!(condition(&end, condition::NEXT_MINOR_UPDATE_HELD).status, "False");
}

#[test]
fn kubelet_skew_without_a_rollout_of_numo_is_not_numos() {
    let mut f = Fixture::new(2);
    for node in f.s.nodes_mut().values_mut().map(Arc::make_mut) {
        node.version = Some(NEW.into());
    }
    skewed(&mut f);
    let p = f.step();
    assert_eq!(condition(&p, condition::NEXT_MINOR_UPDATE_HELD).status, "False");
    assert_eq!(told(&p), 0);
}
