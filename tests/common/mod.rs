pub mod canary;
pub mod fixture;
pub mod keys;
pub mod netserve;
pub mod other_user;
pub mod podman;
pub mod report;
pub mod tree;
