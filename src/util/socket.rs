//! Unix-socket plumbing shared by the engine-socket probe and the agent
//! sockets of the secrets probe.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::socket::{connect, socket, AddressFamily, SockFlag, SockType, UnixAddr};

/// Connects without blocking: a socket whose listener never accepts fills
/// its backlog, and a blocking connect(2) would then wait forever.
pub fn connect_unix(path: &Path) -> Result<UnixStream, Errno> {
    let fd: OwnedFd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let addr = UnixAddr::new(path)?;
    connect(fd.as_raw_fd(), &addr)?;
    let flags = OFlag::from_bits_truncate(fcntl(&fd, FcntlArg::F_GETFL)?);
    fcntl(&fd, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(UnixStream::from(fd))
}
