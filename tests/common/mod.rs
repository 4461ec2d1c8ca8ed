pub mod fixture;
pub mod keys;
pub mod podman;
