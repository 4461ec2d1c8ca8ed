pub mod podman;
