//! The OpenShift releases the simulator plays, and what each does differently: every component asks its release
//! here rather than comparing minors of its own.

/// An OpenShift release the simulator plays, `4.<minor>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpenShiftRelease {
    /// The minor version.
    pub minor: u32,
}

impl OpenShiftRelease {
    /// The oldest release numo supports.
    pub const OLDEST: Self = Self { minor: 16 };
    /// The newest release numo supports, the simulator's default.
    pub const NEWEST: Self = Self { minor: 23 };

    /// Parses `4.<minor>` (a patch version, `4.21.3`, is accepted and ignored); only supported releases.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.trim().split('.');
        let (major, minor) = (parts.next(), parts.next().and_then(|m| m.parse::<u32>().ok()));
        match (major, minor) {
            (Some("4"), Some(minor)) if (Self::OLDEST.minor..=Self::NEWEST.minor).contains(&minor) => {
                Ok(Self { minor })
            }
            _ => Err(format!(
                "{text:?} is not an OpenShift release the simulator plays (4.{} to 4.{})",
                Self::OLDEST.minor,
                Self::NEWEST.minor
            )),
        }
    }

    /// Whether the machine-config operator puts the built-in pools' selectors back on every sync (4.16–4.21).
    pub fn enforces_pool_selectors(self) -> bool {
        self.minor <= 21
    }

    /// Whether the operator, controller and daemon write MachineConfigNodes ([`crate::machine_config_nodes`]): from
    /// 4.20, where the `MachineConfigNodes` feature gate is in the Default set.
    pub fn writes_machine_config_nodes(self) -> bool {
        self.minor >= 20
    }

    /// Whether pools boot OS image streams (`spec.osImageStream`, a custom pool inheriting `worker`'s): from 4.23,
    /// where the `OSStreams` feature gate is in the Default set (openshift/api release-4.23
    /// `features/features.go`; TechPreview before).
    pub fn plays_os_image_streams(self) -> bool {
        self.minor >= 23
    }

    /// Whether the `arbiter` pool exists for the HighlyAvailableArbiter topology, so that the MCO's custom-pool
    /// selector policy accepts its role (release-4.19).
    pub fn has_arbiter_pool(self) -> bool {
        self.minor >= 19
    }

    /// Whether the first MachineConfigNode write lists `ImagePulledFromRegistry` among its conditions: release-4.21
    /// only (4.22 behind the TechPreview `ImageModeStatusReporting` gate, 4.20 never).
    pub fn lists_image_pulled_condition(self) -> bool {
        self.minor == 21
    }

    /// Whether the kube-apiserver operator's kubelet skew messages say "Kubelet version" rather than "kubelet
    /// minor version" (release-4.22 on).
    pub fn says_kubelet_version_without_minor(self) -> bool {
        self.minor >= 22
    }

    /// Whether the operator installs its `custom-machine-config-pool-selector` admission policy
    /// ([`crate::admission_policies`]): from 4.18 (release-4.18 `pkg/operator/sync.go`
    /// `syncMachineConfigController`).
    pub fn has_custom_pool_selector_policy(self) -> bool {
        self.minor >= 18
    }
}

impl Default for OpenShiftRelease {
    fn default() -> Self {
        Self::NEWEST
    }
}

impl std::fmt::Display for OpenShiftRelease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "4.{}", self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_within_the_supported_range() {
        assert_eq!(OpenShiftRelease::parse("4.21"), Ok(OpenShiftRelease { minor: 21 }));
        assert_eq!(OpenShiftRelease::parse("4.16.3"), Ok(OpenShiftRelease { minor: 16 }));
        assert!(OpenShiftRelease::parse("4.15").is_err());
        assert!(OpenShiftRelease::parse("4.24").is_err());
        assert!(OpenShiftRelease::parse("5.1").is_err());
        assert_eq!(OpenShiftRelease::default().to_string(), "4.23");
    }

    #[test]
    fn the_pool_selector_policy_comes_with_4_18() {
        let has = |minor| OpenShiftRelease { minor }.has_custom_pool_selector_policy();
        assert!(!has(16) && !has(17));
        assert!(has(18) && has(21) && has(22));
    }

    #[test]
    fn machine_config_nodes_are_written_from_4_20() {
        let writes = |minor| OpenShiftRelease { minor }.writes_machine_config_nodes();
        assert!(!writes(16) && !writes(19));
        assert!(writes(20) && writes(21) && writes(22));
    }
}
