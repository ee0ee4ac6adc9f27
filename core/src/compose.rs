//! Compose model, interpolation, policy, the `svc` template extension and
//! template compilation. (Being written: see the submodules as they land.)
