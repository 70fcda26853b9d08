//! The run's rendezvous-store token: the secret every rank presents to the store and to its
//! peers. It is given by the user (`DDP_PROBE_STORE_TOKEN` in the launcher's environment, never
//! overwritten), read from a token file every node sees (`--rdzv-token-file`; node 0 writes a
//! new one when it is missing), or made fresh from the operating system's generator on a single
//! node. It never goes on a command line or into the manifest; ranks get it in their
//! environment, which only their own user can read.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::env::DDP_PROBE_STORE_TOKEN;
use crate::error::LaunchError;

use probe_contract::secret::{store_token_problem, MAX_STORE_TOKEN_BYTES};

/// How long a node other than node 0 waits for node 0 to write the token file.
pub const TOKEN_FILE_WAIT: Duration = Duration::from_secs(120);

/// How the run's token was chosen (for the manifest and the console: never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// Given in the launcher's environment or by the caller.
    Given,
    /// Read from this token file.
    File(PathBuf),
    /// This node 0 wrote a new token to this file.
    WroteFile(PathBuf),
    /// Fresh from the operating system (single node).
    Generated,
}

/// Decides the run's token: the caller's `given` one, else `DDP_PROBE_STORE_TOKEN` from the
/// user's environment, else the token file, else a fresh one on a single node. Several nodes
/// with neither a token nor a file are refused: a token every node could compute from what `ps`
/// shows would be no secret.
pub(crate) fn resolve(
    given: Option<&str>,
    file: Option<&Path>,
    user_env: &std::collections::BTreeMap<OsString, OsString>,
    nnodes: usize,
    node_rank: usize,
) -> Result<(String, TokenSource), LaunchError> {
    let from_env = user_env
        .get(OsStr::new(DDP_PROBE_STORE_TOKEN))
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(format!("{DDP_PROBE_STORE_TOKEN} is not valid UTF-8")))
        })
        .transpose()?;
    let given = given.map(str::to_owned).or(from_env);
    match (given, file) {
        (Some(_), Some(path)) => Err(invalid(format!(
            "both {DDP_PROBE_STORE_TOKEN} and --rdzv-token-file {} are given; give the token one way",
            path.display()
        ))),
        (Some(token), None) => {
            check(&token).map_err(|why| invalid(format!("{DDP_PROBE_STORE_TOKEN} {why}")))?;
            Ok((token, TokenSource::Given))
        }
        (None, Some(path)) => from_file(path, node_rank == 0, TOKEN_FILE_WAIT),
        (None, None) if nnodes > 1 => Err(LaunchError::MultiNodeNeedsToken { nnodes }),
        (None, None) => Ok((secret_hex(16)?, TokenSource::Generated)),
    }
}

/// Why `token` cannot be a store token, if it cannot (the rule the store applies).
fn check(token: &str) -> Result<(), String> {
    store_token_problem(token).map_or(Ok(()), Err)
}

fn invalid(message: String) -> LaunchError {
    LaunchError::InvalidOption {
        option: "store token",
        message,
    }
}

fn file_error(path: &Path, reason: impl Into<String>) -> LaunchError {
    LaunchError::TokenFile {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Reads the token file; node 0 writes a new token when the file is missing, other nodes wait
/// up to `wait` for it to appear.
fn from_file(
    path: &Path,
    node0: bool,
    wait: Duration,
) -> Result<(String, TokenSource), LaunchError> {
    let until = Instant::now() + wait;
    loop {
        match File::open(path) {
            Ok(file) => {
                return Ok((
                    read_private(path, file)?,
                    TokenSource::File(path.to_owned()),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if node0 {
                    if let Some(token) = write_new(path)? {
                        return Ok((token, TokenSource::WroteFile(path.to_owned())));
                    }
                    // Another launcher wrote it first: read that one.
                    continue;
                }
                if Instant::now() >= until {
                    return Err(file_error(
                        path,
                        format!(
                            "it does not exist after {} s; node 0's launcher writes it, so give \
                             every node a path on a filesystem they share (or copy the file to \
                             each node, or set {DDP_PROBE_STORE_TOKEN} in every node's environment)",
                            wait.as_secs()
                        ),
                    ));
                }
                thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(file_error(path, format!("cannot open it: {e}"))),
        }
    }
}

/// The token in an open token file, refused when other users could read it.
fn read_private(path: &Path, mut file: File) -> Result<String, LaunchError> {
    let meta = file
        .metadata()
        .map_err(|e| file_error(path, format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(file_error(path, "it is not a regular file"));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(file_error(
            path,
            format!(
                "other users can read it (mode {mode:03o}), so the token is no secret; run \
                 `chmod 600 {}` and start again",
                path.display()
            ),
        ));
    }
    let mut text = String::new();
    (&mut file)
        .take(MAX_STORE_TOKEN_BYTES as u64 + 2)
        .read_to_string(&mut text)
        .map_err(|e| file_error(path, format!("cannot read it as text: {e}")))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    check(&token).map_err(|why| file_error(path, format!("its first line {why}")))?;
    Ok(token)
}

/// Writes a fresh token to `path` (mode 600) unless the file appeared meanwhile (`Ok(None)`):
/// the token goes to a private temporary file first, which is then linked under the name, so a
/// reader never sees a half-written token.
fn write_new(path: &Path) -> Result<Option<String>, LaunchError> {
    let token = secret_hex(16)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(format!("{token}\n").as_bytes())?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(file_error(
            path,
            format!("cannot write a new token file: {e}"),
        ));
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(Some(token)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(file_error(
            path,
            format!("cannot write a new token file: {e}"),
        )),
    }
}

/// `n` bytes from the operating system's generator, in hexadecimal. Fails rather than fall
/// back to anything guessable.
pub(crate) fn secret_hex(n: usize) -> Result<String, LaunchError> {
    let mut bytes = vec![0u8; n];
    probe_contract::secret::fill_random(&mut bytes)
        .map_err(|source| LaunchError::NoRandom { source })?;
    Ok(crate::process::hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    fn env(token: Option<&str>) -> BTreeMap<OsString, OsString> {
        token
            .map(|t| (OsString::from(DDP_PROBE_STORE_TOKEN), OsString::from(t)))
            .into_iter()
            .collect()
    }

    #[test]
    fn an_exported_token_is_used_as_it_is() {
        let (t, src) = resolve(None, None, &env(Some("s3cret-Token")), 2, 1).unwrap();
        assert_eq!((t.as_str(), src), ("s3cret-Token", TokenSource::Given));
        let e = resolve(None, None, &env(Some("two words")), 1, 0).unwrap_err();
        assert!(
            e.to_string().contains("printable ASCII without spaces"),
            "{e}"
        );
    }

    #[test]
    fn single_node_tokens_are_fresh_and_several_nodes_need_one() {
        let (a, src) = resolve(None, None, &env(None), 1, 0).unwrap();
        let (b, _) = resolve(None, None, &env(None), 1, 0).unwrap();
        assert_eq!(src, TokenSource::Generated);
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        let e = resolve(None, None, &env(None), 2, 0).unwrap_err();
        assert!(
            matches!(e, LaunchError::MultiNodeNeedsToken { nnodes: 2 }),
            "{e}"
        );
        assert!(e.to_string().contains(DDP_PROBE_STORE_TOKEN), "{e}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn node_0_writes_a_private_token_file_that_other_nodes_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let (t0, src) = resolve(None, Some(&path), &env(None), 2, 0).unwrap();
        assert_eq!(src, TokenSource::WroteFile(path.clone()));
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_to_string(&path).unwrap(), format!("{t0}\n"));
        let (t1, src) = resolve(None, Some(&path), &env(None), 2, 1).unwrap();
        assert_eq!((t1, src), (t0.clone(), TokenSource::File(path.clone())));
        // No temporary file is left next to it.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        // A second node 0 (a restarted job) reuses it.
        let (again, _) = resolve(None, Some(&path), &env(None), 2, 0).unwrap();
        assert_eq!(again, t0);
    }

    #[test]
    fn a_token_file_others_can_read_or_a_missing_one_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        fs::write(&path, "abc\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve(None, Some(&path), &env(None), 2, 1).unwrap_err();
        assert!(
            e.to_string().contains("mode 644") && e.to_string().contains("chmod 600"),
            "{e}"
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let e = resolve(None, Some(&path), &env(Some("x")), 2, 1).unwrap_err();
        assert!(e.to_string().contains("give the token one way"), "{e}");
        let missing = dir.path().join("never");
        let e = from_file(&missing, false, Duration::from_millis(150)).unwrap_err();
        assert!(e.to_string().contains("node 0's launcher writes it"), "{e}");
        fs::write(&path, "\n").unwrap();
        let e = resolve(None, Some(&path), &env(None), 2, 1).unwrap_err();
        assert!(e.to_string().contains("first line is empty"), "{e}");
    }
}
