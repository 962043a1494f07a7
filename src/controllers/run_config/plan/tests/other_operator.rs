//! SR-IOV waiting for numo to let go of a target pool it paused for a drain is said, never silent.

use super::*;

#[test]
fn sriov_waiting_to_unpause_a_held_target_pool_is_said_once_with_what_it_costs() {
    let mut f = Fixture::new(2);
    f.s.policy = Some(Ok(()));
    f.advance_to_gating();
    let waits = |p: &Plan| condition(p, condition::OTHER_OPERATOR_WAITS).clone();
    assert_eq!(waits(&f.plan()).status, "False");

    // SR-IOV pauses `worker` (held by numo, the new release pending) for its drain of a node.
    let worker = f.s.pools.get_mut("worker").unwrap();
    (worker.sriov_holds, worker.updated) = (true, false);
    let p = f.step();
    let said = waits(&p);
    assert_eq!((said.status.as_str(), said.reason.as_str()), ("True", "SriovUnpauseRefused"));
    assert!(
        said.message.contains("MachineConfigPool worker") && said.message.contains("drain slot"),
        "{}",
        said.message
    );
    assert_eq!(p.notices.iter().filter(|n| n.reason == "OtherOperatorWaits").count(), 1);
    assert_eq!(f.step().notices.iter().filter(|n| n.reason == "OtherOperatorWaits").count(), 0, "told once");

    // Without numo's policy in force SR-IOV's unpause goes through: nobody waits.
    f.s.policy = Some(Err("not served".into()));
    assert_eq!(waits(&f.plan()).status, "False");
    // SR-IOV done (its annotation Idle): nobody waits.
    f.s.policy = Some(Ok(()));
    f.s.pools.get_mut("worker").unwrap().sriov_holds = false;
    assert_eq!(waits(&f.step()).status, "False");
}
