pub mod netserve;
pub mod podman;
