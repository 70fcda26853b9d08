//! The rendezvous store's token is a secret another user cannot learn or compute (issue 24,
//! point 2). Node 0 of a two-node job (`ddp-probe run --nnodes 2 --rdzv-token-file FILE`, the
//! `train` example; node 1 is never started, so rank 0 holds its store open while it waits) is
//! attacked by a process of another user (uid 65534) that reads everything `ps` shows and the
//! run's manifest, and tries to join the store with every word it saw and with the token the
//! launcher used to derive from the run id and the endpoint. Every attempt must be refused,
//! while the real token (the positive control) is accepted.
//!
//! Needs root (to act as another user); without it the test says why and passes without
//! running.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use comm::{StoreClient, Token};
use common::{ddp_probe_bin, stop, train_bin};

/// The uid and gid the attacker runs as (`nobody` on most systems).
const OTHER_USER: u32 = 65534;

/// What the other user sees with `cmd`: its standard output, or the error it got.
fn as_other_user(program: &str, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .uid(OTHER_USER)
        .gid(OTHER_USER)
        .stdin(Stdio::null());
    // As root, std drops the supplementary groups before it changes the uid.
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The token the launcher used to derive for several nodes from what `ps` shows (two FNV-1a
/// 64-bit hashes of "ddp-probe-store-token|RUN_ID|ADDR|PORT"), as an attacker would compute it.
fn formerly_derived_token(run_id: &str, addr: &str, port: u16) -> String {
    let text = format!("ddp-probe-store-token|{run_id}|{addr}|{port}");
    let fnv = |offset: u64| {
        let mut h = offset;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x6c62_272e_07bb_0142)
    )
}

/// Whether a client presenting `token` gets into the store at `addr`.
fn joins(addr: &str, token: &str) -> bool {
    let Ok(token) = Token::new(token) else {
        return false;
    };
    match StoreClient::connect(addr, &token, Duration::from_secs(2)) {
        Ok(client) => client.set("attacker-was-here", b"1").is_ok(),
        Err(_) => false,
    }
}

#[test]
fn another_user_who_reads_ps_and_the_manifest_cannot_join_the_store() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: acting as another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Let the other user look everywhere the run lets it: the run directory's own
    // permissions decide what it can read.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let token_file = dir.path().join("token");
    let run_dir = dir.path().join("run");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let run_id = format!("attack-{}", std::process::id());
    let log = std::fs::File::create(dir.path().join("node0.log")).unwrap();
    let mut node0 = Command::new(ddp_probe_bin())
        .args([
            "run",
            "--nnodes",
            "2",
            "--node-rank",
            "0",
            "--nproc-per-node",
            "1",
        ])
        .args(["--rdzv-endpoint", &addr, "--rdzv-id", &run_id])
        .arg("--rdzv-token-file")
        .arg(&token_file)
        .args(["--grace", "1", "--console", "quiet", "--out"])
        .arg(&run_dir)
        .arg("--")
        .arg(train_bin())
        .args(["--epochs", "100000", "--checkpoint-every", "0"])
        .env_remove("DDP_PROBE_FAULT")
        .env_remove("DDP_PROBE_STORE_TOKEN")
        .env("DDP_PROBE_TIMEOUT", "60")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("ddp-probe run starts");

    // Rank 0 opens the store and waits there for node 1.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        if Instant::now() > deadline || matches!(node0.try_wait(), Ok(Some(_))) {
            stop(&mut node0);
            panic!(
                "rank 0 never opened its store:\n{}",
                std::fs::read_to_string(dir.path().join("node0.log")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let real = std::fs::read_to_string(&token_file).unwrap();
    let real = real.trim();

    // What the other user can see.
    let ps = as_other_user("ps", &["-eww", "-o", "pid=,args="]).expect("ps runs as another user");
    let manifest = as_other_user("cat", &[run_dir.join("manifest.json").to_str().unwrap()]);
    let token_read = as_other_user("cat", &[token_file.to_str().unwrap()]);
    let environ = as_other_user("cat", &[&format!("/proc/{}/environ", node0.id())]);
    let rank0_environ = ps
        .lines()
        .filter(|l| l.contains(train_bin().to_str().unwrap()) && !l.contains("ddp-probe"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|pid| as_other_user("cat", &[&format!("/proc/{pid}/environ")]))
        .collect::<Vec<_>>();
    let seen = format!("{ps}\n{}", manifest.as_deref().unwrap_or(""));

    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert!(token_read.is_err(), "the other user read the token file");
        assert!(
            environ.is_err(),
            "the other user read the launcher's environment"
        );
        assert!(!rank0_environ.is_empty(), "rank 0 is not in ps:\n{ps}");
        assert!(
            rank0_environ.iter().all(Result::is_err),
            "the other user read rank 0's environment"
        );
        assert!(
            !seen.contains(real),
            "the token is visible to the other user:\n{seen}"
        );
        // Everything the other user saw, word by word, and the formerly derived token.
        let mut candidates: BTreeSet<String> = seen
            .split(|c: char| c.is_whitespace() || "\"',:=[]{}()".contains(c))
            .filter(|w| (4..=256).contains(&w.len()))
            .map(str::to_owned)
            .collect();
        candidates.insert(formerly_derived_token(&run_id, "127.0.0.1", port));
        candidates.insert(run_id.clone());
        eprintln!("trying {} candidate tokens", candidates.len());
        for candidate in &candidates {
            assert!(
                !joins(&addr, candidate),
                "joined the store with '{candidate}'"
            );
        }
        // Positive control: the store does let the real token in.
        assert!(joins(&addr, real), "the real token was refused");
        // The run directory holds no copy of the token.
        for entry in walk(&run_dir) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(real),
                "{} holds the token",
                entry.display()
            );
        }
    }));
    stop(&mut node0);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
