//! The `helm.sdk.operatorframework.io/*` annotations a CR can carry to tune its release.
