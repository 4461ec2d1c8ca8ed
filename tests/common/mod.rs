pub mod fixture;
pub mod podman;
