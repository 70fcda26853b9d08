//! Process-level helpers: finding the command, checking the master port,
//! starting a rank in its own process group, signalling groups, naming
//! signals, and small host facts (hostname, random tokens).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::net::TcpListener;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::LaunchError;
use crate::manifest::Termination;

/// Finds the file `program` runs, the way `execvp` would: a name with a `/`
/// is a path, anything else is looked up in `path_var` (the ranks' `PATH`).
pub(crate) fn resolve_command(
    program: &OsStr,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, LaunchError> {
    let shown = program.to_string_lossy().into_owned();
    if program.is_empty() {
        return Err(LaunchError::NoCommand);
    }
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return match check_executable(&path) {
            Candidate::Runnable => Ok(path),
            Candidate::Missing => Err(LaunchError::CommandNotFound { program: shown }),
            Candidate::NotExecutable => Err(LaunchError::CommandNotExecutable {
                program: shown,
                path,
            }),
            Candidate::Directory => Err(LaunchError::CommandIsDirectory {
                program: shown,
                path,
            }),
        };
    }
    let search = path_var
        .map(OsStr::to_os_string)
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let mut not_executable = None;
    for dir in std::env::split_paths(&search) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Candidate::Runnable => return Ok(candidate),
            Candidate::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Candidate::Missing | Candidate::Directory => {}
        }
    }
    match not_executable {
        Some(path) => Err(LaunchError::CommandNotExecutable {
            program: shown,
            path,
        }),
        None => Err(LaunchError::CommandNotFound { program: shown }),
    }
}

enum Candidate {
    Runnable,
    Missing,
    NotExecutable,
    Directory,
}

fn check_executable(path: &Path) -> Candidate {
    match std::fs::metadata(path) {
        Err(_) => Candidate::Missing,
        Ok(m) if m.is_dir() => Candidate::Directory,
        Ok(_) => {
            let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
                return Candidate::Missing;
            };
            // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
            if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
                Candidate::Runnable
            } else {
                Candidate::NotExecutable
            }
        }
    }
}

/// Refuses a master port that something on this host already uses.
pub(crate) fn check_port_free(port: u16, multi_node: bool) -> Result<(), LaunchError> {
    match TcpListener::bind(("0.0.0.0", port)) {
        Ok(listener) => {
            drop(listener);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(LaunchError::PortInUse {
            port,
            hint: if multi_node {
                " (the same on every node), or stop what uses it"
            } else {
                ", or leave it out to pick a free one, or stop what uses it"
            },
        }),
        Err(source) => Err(LaunchError::PortUnavailable { port, source }),
    }
}

/// Why `addr` cannot be where a store on this machine is reached ("does not resolve", "is
/// not an address of this machine"), or `None` when it is one of this machine's addresses
/// (a port can be bound on it) or the check cannot tell (another error: no guess).
pub(crate) fn not_an_address_here(addr: &str) -> Option<&'static str> {
    use std::net::ToSocketAddrs;
    let resolved: Vec<std::net::SocketAddr> = match (addr, 0).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(_) => return Some("does not resolve"),
    };
    let mut not_here = !resolved.is_empty();
    for a in resolved {
        match TcpListener::bind(a) {
            Ok(_) => return None,
            Err(e) if e.kind() == io::ErrorKind::AddrNotAvailable => {}
            Err(_) => not_here = false,
        }
    }
    not_here.then_some("is not an address of this machine")
}

/// Picks a free TCP port by binding port 0 (as torchrun does).
pub(crate) fn pick_free_port() -> Result<u16, LaunchError> {
    let listener =
        TcpListener::bind(("0.0.0.0", 0)).map_err(|source| LaunchError::NoFreePort { source })?;
    let port = listener
        .local_addr()
        .map_err(|source| LaunchError::NoFreePort { source })?
        .port();
    Ok(port)
}

/// Starts one rank: in its own session and process group (so its whole tree
/// can be signalled), stdin from /dev/null, stdout and stderr piped, and on
/// Linux killed if the launcher dies.
pub(crate) fn spawn_rank(
    path: &Path,
    argv0: &OsStr,
    args: &[OsString],
    env: &std::collections::BTreeMap<OsString, OsString>,
) -> io::Result<Child> {
    let mut cmd = Command::new(path);
    cmd.arg0(argv0)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(target_os = "linux")]
    // SAFETY: getpid has no preconditions.
    let launcher = unsafe { libc::getpid() };
    let pre_exec = move || {
        // SAFETY: setsid is async-signal-safe and takes no pointers.
        if unsafe { libc::setsid() } == -1 {
            return Err(io::Error::last_os_error());
        }
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid are async-signal-safe
            // and take no pointers.
            unsafe {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() != launcher {
                    // The launcher died between fork and prctl.
                    libc::_exit(1);
                }
            }
        }
        Ok(())
    };
    // SAFETY: the closure only calls async-signal-safe functions and does not
    // allocate or take locks, as required between fork and exec.
    unsafe {
        cmd.pre_exec(pre_exec);
    }
    // Linux refuses to execute a file that a process holds open for writing
    // (ETXTBSY). A process forked by another thread while the file was being
    // written holds such a descriptor until it execs, so retry for a moment.
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

/// Sends `signal` to the process group `pgid`; a group that is gone is fine.
pub(crate) fn signal_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill takes no pointers; a negative pid addresses a process group.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// How an exit status reads in the manifest.
pub(crate) fn termination(status: ExitStatus) -> Termination {
    if let Some(code) = status.code() {
        Termination::Exited { code }
    } else if let Some(number) = status.signal() {
        Termination::Signaled {
            signal: signal_name(number),
            number,
            core_dumped: status.core_dumped(),
        }
    } else {
        Termination::Unknown {
            reason: format!("wait status {status:?}"),
        }
    }
}

/// The conventional name of a signal number, e.g. `SIGKILL` for 9
/// (`signal N` for numbers without one).
pub fn signal_name(number: i32) -> String {
    let name = match number {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {number}"),
    };
    name.to_owned()
}

/// This host's name (`unknown` if it cannot be read).
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the pointer and length describe `buf`, which outlives the call.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".to_owned();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `n` random bytes as lower-case hex (run ids), from the kernel's random source
/// (falling back to std's randomly keyed hasher if it cannot be read).
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if probe_contract::secret::fill_random(&mut bytes).is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            let v = h.finish().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
    hex(&bytes)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_signals() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(200), "signal 200");
    }

    #[test]
    fn the_master_address_is_checked_against_this_machine() {
        assert_eq!(not_an_address_here("127.0.0.1"), None);
        assert_eq!(not_an_address_here("localhost"), None);
        // TEST-NET-1 (RFC 5737) is never assigned to a machine; `.invalid` never resolves
        // (RFC 6761).
        assert_eq!(
            not_an_address_here("192.0.2.1"),
            Some("is not an address of this machine")
        );
        assert_eq!(
            not_an_address_here("master.invalid"),
            Some("does not resolve")
        );
    }

    #[test]
    fn tokens() {
        let a = random_hex(16);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(16));
    }

    #[test]
    fn resolves_commands_like_execvp() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        let err = resolve_command(OsStr::new("trian"), Some(&path)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot run 'trian': no such file or directory; check the command after --"
        );
        assert_eq!(err.exit_code(), 127);
        let script = dir.path().join("plain.txt");
        std::fs::write(&script, "x").unwrap();
        let err = resolve_command(OsStr::new("plain.txt"), Some(&path)).unwrap_err();
        assert!(
            matches!(err, LaunchError::CommandNotExecutable { .. }),
            "{err}"
        );
        assert_eq!(err.exit_code(), 126);
        let err = resolve_command(dir.path().as_os_str(), None).unwrap_err();
        assert!(
            matches!(err, LaunchError::CommandIsDirectory { .. }),
            "{err}"
        );
        assert!(resolve_command(OsStr::new("sh"), std::env::var_os("PATH").as_deref()).is_ok());
    }
}
