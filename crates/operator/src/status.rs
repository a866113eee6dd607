//! The CR status in the Go helm-operator's exact shape: conditions and `deployedRelease`.
