//! A stand-in for Ceph's placement groups, as far as Rook asks (`cephclient.IsClusterClean`): PGs are not clean while
//! an OSD is down, nor for [`super::StorageConfig::pgs_clean`] after the last OSD came back (recovery and peering);
//! clean otherwise.

use std::time::Duration;

use tokio::time::Instant;

/// When an OSD was last seen down.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlacementGroups {
    last_down: Option<Instant>,
}

impl PlacementGroups {
    /// Notes what the OSDs look like `now`.
    pub fn observe(&mut self, now: Instant, any_osd_down: bool) {
        if any_osd_down {
            self.last_down = Some(now);
        }
    }

    /// Whether the PGs are clean `now`, `recovery` after the last OSD came back (the last observation decides
    /// whether one is still down).
    pub fn clean(&self, now: Instant, any_osd_down: bool, recovery: Duration) -> bool {
        !any_osd_down && self.last_down.is_none_or(|at| now.saturating_duration_since(at) >= recovery)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgs_are_clean_only_after_recovery() {
        let start = Instant::now();
        let recovery = Duration::from_secs(30);
        let mut pgs = PlacementGroups::default();
        assert!(pgs.clean(start, false, recovery), "never down: clean");
        pgs.observe(start, true);
        assert!(!pgs.clean(start, true, recovery));
        let back = start + Duration::from_secs(10);
        pgs.observe(back, true);
        pgs.observe(back + Duration::from_secs(1), false);
        assert!(!pgs.clean(back + Duration::from_secs(29), false, recovery), "still recovering");
        assert!(pgs.clean(back + recovery, false, recovery));
    }
}
