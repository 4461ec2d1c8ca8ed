pub mod keys;
pub mod podman;
