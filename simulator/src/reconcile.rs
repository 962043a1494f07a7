//! Whether the daemon can move a node from one rendered config to another in place, as the MCO decides it
//! (openshift/machine-config-operator `pkg/controller/common/reconcile.go` `isConfigReconcilable`, called by
//! `pkg/daemon/update.go` `reconcilable`; the same from release-4.16 to release-4.23 for what is modelled here).
//!
//! Of what the simulator renders ([`crate::render`]), a change of the Ignition `storage.disks`,
//! `storage.filesystems` or `storage.raid` sections cannot be reconciled: the node would have to be reprovisioned.
//! The daemon then applies nothing (no cordon, drain or reboot) and marks the node `state: Unreconcilable` with the
//! reason `can't reconcile config <old> with <new>: configs <old>, <new> are not reconcilable: new machineconfig
//! "<old>" is not reconcilable against "<new>": ignition disks section contains changes` (the MCO's words, its
//! argument order included; `pkg/daemon/daemon.go` `updateErrorState` → `SetUnreconcilable`). Changes of
//! `storage.files`, `systemd.units` and `storage.luks` (which the MCO does not compare) are reconcilable. Not
//! modelled: kernel arguments, directories, links, passwd, appended files, FIPS, and 4.20's
//! `IrreconcilableValidationOverrides` of the `cluster` MachineConfiguration (none are set on a default cluster).

use numo::openshift::MachineConfig;
use serde_json::Value;

/// The storage sections a change of which cannot be reconciled, in the order the MCO checks them, with the word
/// its message uses.
pub const UNRECONCILABLE_STORAGE: [(&str, &str); 3] =
    [("/storage/disks", "disks"), ("/storage/filesystems", "filesystems"), ("/storage/raid", "raid")];

/// A section of an Ignition config, an absent one as empty (Ignition parses both to an empty list).
fn section<'a>(config: &'a MachineConfig, pointer: &str) -> &'a [Value] {
    let ignition = config.spec.config.as_ref();
    ignition.and_then(|c| c.pointer(pointer)).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Why `old` cannot be reconciled to `new` (`isConfigReconcilable`'s error, e.g. `ignition disks section contains
/// changes`), or Ok.
pub fn check(old: &MachineConfig, new: &MachineConfig) -> Result<(), String> {
    for (pointer, word) in UNRECONCILABLE_STORAGE {
        if section(old, pointer) != section(new, pointer) {
            return Err(format!("ignition {word} section contains changes"));
        }
    }
    Ok(())
}

/// The daemon's reason for a node it cannot move from `old` to `new`, or None when it can.
pub fn unreconcilable_reason(old: &MachineConfig, new: &MachineConfig) -> Option<String> {
    let problem = check(old, new).err()?;
    let (o, n) = (old.metadata.name.as_deref().unwrap_or_default(), new.metadata.name.as_deref().unwrap_or_default());
    Some(format!("can't reconcile config {o} with {n}: {}", reconcilable_error(o, n, &problem)))
}

/// `update.go` `reconcilable`'s error (what the MachineConfigNode's `UpdatePrepared` message ends with).
pub fn reconcilable_error(old: &str, new: &str, problem: &str) -> String {
    format!("configs {old}, {new} are not reconcilable: new machineconfig {old:?} is not reconcilable against {new:?}: {problem}")
}

/// The prefix of the reason of a node that could not be moved from `old` to `new`: the daemon does not try that
/// move again until its desired config changes (the real one retries with a back-off and fails alike).
pub fn reason_prefix(old: &str, new: &str) -> String {
    format!("can't reconcile config {old} with {new}:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use numo::openshift::MachineConfigSpec;
    use serde_json::json;

    fn config(name: &str, storage: Value) -> MachineConfig {
        let ignition = json!({"ignition": {"version": "3.4.0"}, "storage": storage});
        MachineConfig::new(name, MachineConfigSpec { config: Some(ignition), os_image_url: None })
    }

    #[test]
    fn disks_filesystems_and_raid_changes_are_unreconcilable_files_and_luks_are_not() {
        let base = config("rendered-worker-a", json!({"files": [{"path": "/etc/a"}]}));
        let files = config("rendered-worker-b", json!({"files": [{"path": "/etc/b"}]}));
        assert_eq!(check(&base, &files), Ok(()));
        let luks = config("rendered-worker-b", json!({"files": [{"path": "/etc/a"}], "luks": [{"name": "root"}]}));
        assert_eq!(check(&base, &luks), Ok(()), "the MCO does not compare luks");
        let empty = config("rendered-worker-b", json!({"files": [{"path": "/etc/a"}], "disks": []}));
        assert_eq!(check(&base, &empty), Ok(()), "an empty section is no section");
        for (section, word) in [("disks", "disks"), ("filesystems", "filesystems"), ("raid", "raid")] {
            let changed = config("rendered-worker-b", json!({section: [{"device": "/dev/sdb"}]}));
            assert_eq!(check(&base, &changed), Err(format!("ignition {word} section contains changes")));
        }
        let disks = config("rendered-worker-b", json!({"disks": [{"device": "/dev/sdb"}]}));
        assert_eq!(
            unreconcilable_reason(&base, &disks).as_deref(),
            Some(
                "can't reconcile config rendered-worker-a with rendered-worker-b: configs rendered-worker-a, \
                 rendered-worker-b are not reconcilable: new machineconfig \"rendered-worker-a\" is not reconcilable \
                 against \"rendered-worker-b\": ignition disks section contains changes"
            )
        );
        assert!(unreconcilable_reason(&base, &disks)
            .is_some_and(|r| r.starts_with(&reason_prefix("rendered-worker-a", "rendered-worker-b"))));
    }
}
