//! The environment of each rank: torchrun's variables, so any torchrun program
//! runs unchanged, plus ddp-probe's own.
//!
//! The names are public constants so the programs' side (the reference DDP,
//! the recorder) can read them without repeating strings.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The DDP bucket size in MB, when `--bucket-cap-mb` is given.
pub use probe_contract::env::BUCKET_CAP_MB as DDP_PROBE_BUCKET_CAP_MB;
/// The absolute run directory.
pub use probe_contract::env::RUN_DIR as DDP_PROBE_RUN_DIR;
/// The run id (same as `TORCHELASTIC_RUN_ID`).
pub use probe_contract::env::RUN_ID as DDP_PROBE_RUN_ID;
/// The hex token the rendezvous store requires, shared by the run's ranks.
pub use probe_contract::env::STORE_TOKEN as DDP_PROBE_STORE_TOKEN;
/// Where each rank writes its trace, `<dir>/rank-<R>.jsonl`.
pub use probe_contract::env::TRACE_DIR as DDP_PROBE_TRACE_DIR;
/// Overrides where the launcher finds the project's `python/` folder (the
/// `ddp_probe_torch` module), which it appends to every rank's `PYTHONPATH`.
pub const DDP_PROBE_PYTHON_DIR: &str = "DDP_PROBE_PYTHON_DIR";
/// The file that marks the project's `python/` folder (the `ddp_probe_torch` package).
pub const PYTHON_MODULE_FILE: &str = "ddp_probe_torch/__init__.py";

/// The project's `python/` folder holding the `ddp_probe_torch` package:
/// [`DDP_PROBE_PYTHON_DIR`] when set, else the source tree this launcher was
/// built from, else `python/` two levels above the executable
/// (`<repo>/target/release/ddp-probe`). `None` when none of them holds the module.
pub fn python_dir() -> Option<std::path::PathBuf> {
    let has_module = |d: &Path| d.join(PYTHON_MODULE_FILE).is_file();
    if let Some(dir) = std::env::var_os(DDP_PROBE_PYTHON_DIR).filter(|v| !v.is_empty()) {
        let dir = std::path::PathBuf::from(dir);
        return has_module(&dir).then_some(dir);
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("python");
    if has_module(&source) {
        return Some(source.canonicalize().unwrap_or(source));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.parent()?.join("python");
    has_module(&dir).then_some(dir)
}

/// The `PYTHONPATH` with `dir` appended (after the user's entries, so a
/// module of the user's own name wins), unchanged when it already holds `dir`.
pub(crate) fn python_path_with(user: Option<&OsStr>, dir: &Path) -> OsString {
    let mut parts: Vec<std::path::PathBuf> = user
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_default();
    parts.retain(|p| !p.as_os_str().is_empty());
    if !parts.iter().any(|p| p == dir) {
        parts.push(dir.to_path_buf());
    }
    std::env::join_paths(parts).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// What the launcher prints when it sets `OMP_NUM_THREADS=1` (as torchrun does).
pub const OMP_NOTICE: &str = "OMP_NUM_THREADS=1 for each rank, as torchrun sets it (export OMP_NUM_THREADS to choose another value)";

/// Shown instead of the store token in the manifest.
pub const REDACTED: &str = "<redacted>";

/// Name prefixes of the variables recorded in the manifest.
pub const RELEVANT_PREFIXES: &[&str] = &[
    "NCCL_",
    "TORCH",
    "CUDA_",
    "OMP_",
    "MASTER_",
    "GLOO_",
    "PYTORCH_",
    "DDP_PROBE_",
    "LOCAL_",
    "WORLD_",
    "GROUP_",
    "ROLE_",
    "RANK",
];

/// Whether a variable belongs in the manifest's environment record.
pub fn is_relevant(name: &str) -> bool {
    RELEVANT_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The relevant variables of an environment as strings, the store token redacted.
pub(crate) fn relevant(env: &BTreeMap<OsString, OsString>) -> BTreeMap<String, String> {
    env.iter()
        .filter_map(|(k, v)| {
            let name = k.to_string_lossy();
            if !is_relevant(&name) {
                return None;
            }
            let value = if name == DDP_PROBE_STORE_TOKEN {
                REDACTED.to_owned()
            } else {
                v.to_string_lossy().into_owned()
            };
            Some((name.into_owned(), value))
        })
        .collect()
}

/// The environment the user gave: the launcher's own plus the configuration's
/// extra variables.
pub(crate) fn user_env(extra: &[(OsString, OsString)]) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// Whether ddp-probe sets `OMP_NUM_THREADS=1` (torchrun's rule: several ranks
/// per node and the user did not set it).
pub(crate) fn sets_omp_threads(user: &BTreeMap<OsString, OsString>, nproc_per_node: usize) -> bool {
    nproc_per_node > 1 && !user.contains_key(OsStr::new("OMP_NUM_THREADS"))
}

/// Everything that differs between ranks or runs.
#[derive(Debug, Clone)]
pub(crate) struct RankEnvSpec<'a> {
    pub(crate) rank: usize,
    pub(crate) local_rank: usize,
    pub(crate) world_size: usize,
    pub(crate) nproc_per_node: usize,
    pub(crate) node_rank: usize,
    pub(crate) nnodes: usize,
    pub(crate) master_addr: &'a str,
    pub(crate) master_port: u16,
    pub(crate) run_id: &'a str,
    pub(crate) run_dir: &'a Path,
    pub(crate) store_token: &'a str,
    pub(crate) bucket_cap_mb: Option<f64>,
    /// The attempt's `TORCHELASTIC_RESTART_COUNT`: 0, then 1, 2, ... after
    /// each restart of the workers.
    pub(crate) restart_count: u32,
    /// `TORCHELASTIC_MAX_RESTARTS`: how many restarts the run allows.
    pub(crate) max_restarts: u32,
    /// The project's `python/` folder, appended to `PYTHONPATH` ([`python_dir`]).
    pub(crate) python_dir: Option<&'a Path>,
    /// Which names of the flight-recorder variables the installed torch reads.
    pub(crate) flight_recorder_names: FlightRecorderNames,
    /// torchrun's `--role` (`ROLE_NAME`).
    pub(crate) role: &'a str,
}

/// The path of rank `rank`'s NCCL log in `run_dir`.
pub(crate) fn nccl_log_path(run_dir: &Path, rank: usize) -> std::path::PathBuf {
    run_dir.join("logs").join(format!("nccl-rank{rank}.log"))
}

/// The prefix PyTorch's flight recorder appends the rank to.
pub(crate) fn flight_recorder_prefix(run_dir: &Path) -> std::path::PathBuf {
    run_dir.join("logs").join("nccl_trace_rank_")
}

/// The torchelastic error file of rank `rank`.
pub(crate) fn error_file_path(run_dir: &Path, rank: usize) -> std::path::PathBuf {
    run_dir.join("logs").join(format!("error-rank{rank}.json"))
}

/// One rank's complete environment.
pub(crate) fn rank_env(
    user: &BTreeMap<OsString, OsString>,
    spec: &RankEnvSpec<'_>,
) -> BTreeMap<OsString, OsString> {
    let mut env = user.clone();
    let mut set = |k: &str, v: String| {
        env.insert(OsString::from(k), OsString::from(v));
    };
    // torchrun's variables, always set (a nested launch must not leak its own).
    set("RANK", spec.rank.to_string());
    set("LOCAL_RANK", spec.local_rank.to_string());
    set("WORLD_SIZE", spec.world_size.to_string());
    set("LOCAL_WORLD_SIZE", spec.nproc_per_node.to_string());
    set("GROUP_RANK", spec.node_rank.to_string());
    set("GROUP_WORLD_SIZE", spec.nnodes.to_string());
    set("ROLE_RANK", spec.rank.to_string());
    set("ROLE_WORLD_SIZE", spec.world_size.to_string());
    set("ROLE_NAME", spec.role.to_owned());
    set("MASTER_ADDR", spec.master_addr.to_owned());
    set("MASTER_PORT", spec.master_port.to_string());
    set("TORCHELASTIC_RUN_ID", spec.run_id.to_owned());
    set("TORCHELASTIC_RESTART_COUNT", spec.restart_count.to_string());
    set("TORCHELASTIC_MAX_RESTARTS", spec.max_restarts.to_string());
    set("TORCHELASTIC_USE_AGENT_STORE", "False".to_owned());
    set("PYTHONUNBUFFERED", "1".to_owned());
    // ddp-probe's own.
    let run_dir = spec.run_dir.to_string_lossy().into_owned();
    set(DDP_PROBE_RUN_ID, spec.run_id.to_owned());
    set(
        DDP_PROBE_TRACE_DIR,
        spec.run_dir.join("traces").to_string_lossy().into_owned(),
    );
    set(DDP_PROBE_RUN_DIR, run_dir);
    set(DDP_PROBE_STORE_TOKEN, spec.store_token.to_owned());
    if let Some(mb) = spec.bucket_cap_mb {
        set(DDP_PROBE_BUCKET_CAP_MB, mb.to_string());
    }
    if let Some(dir) = spec.python_dir {
        let path = python_path_with(
            user.get(OsStr::new("PYTHONPATH")).map(|v| v.as_os_str()),
            dir,
        );
        env.insert(OsString::from("PYTHONPATH"), path);
    }
    // Defaults the user may override.
    let defaults = [
        (
            "OMP_NUM_THREADS",
            sets_omp_threads(user, spec.nproc_per_node).then(|| "1".to_owned()),
        ),
        ("NCCL_DEBUG", Some("INFO".to_owned())),
        (
            "NCCL_DEBUG_FILE",
            Some(
                nccl_log_path(spec.run_dir, spec.rank)
                    .to_string_lossy()
                    .into_owned(),
            ),
        ),
        ("TORCH_NCCL_DUMP_ON_TIMEOUT", Some("1".to_owned())),
        (
            "TORCHELASTIC_ERROR_FILE",
            Some(
                error_file_path(spec.run_dir, spec.rank)
                    .to_string_lossy()
                    .into_owned(),
            ),
        ),
    ];
    for (name, value) in defaults {
        if let Some(value) = value {
            if !user.contains_key(OsStr::new(name)) {
                env.insert(OsString::from(name), OsString::from(value));
            }
        }
    }
    // The flight recorder, under the names the installed torch reads (see
    // [`FlightRecorderNames`]). A pair is left alone when the user set either
    // of its names, since the newer name would otherwise override the user's
    // older one.
    let prefix = flight_recorder_prefix(spec.run_dir)
        .to_string_lossy()
        .into_owned();
    for (names, value) in [
        (
            FLIGHT_RECORDER_BUFFER_VARS,
            FLIGHT_RECORDER_ENTRIES.to_string(),
        ),
        (FLIGHT_RECORDER_FILE_VARS, prefix),
    ] {
        if !names.iter().any(|n| user.contains_key(OsStr::new(n))) {
            for name in spec.flight_recorder_names.pick(names) {
                env.insert(OsString::from(*name), OsString::from(&value));
            }
        }
    }
    env
}

/// Which of PyTorch's two names of each flight-recorder variable the ranks get.
///
/// torch 2.9 renamed `TORCH_NCCL_TRACE_BUFFER_SIZE` and
/// `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` to `TORCH_FR_BUFFER_SIZE` and
/// `TORCH_FR_DUMP_TEMP_FILE`. It still reads the old names, but every process
/// that sees one prints "Environment variable TORCH_NCCL_TRACE_BUFFER_SIZE is
/// deprecated; use TORCH_FR_BUFFER_SIZE instead" (c10d's `getCvar*`, which
/// warns for any name but the first of its list; seen with torch 2.13 on
/// gloo). Older versions read only the old names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlightRecorderNames {
    /// torch 2.9 and later: `TORCH_FR_*` only.
    Current,
    /// Before 2.9: `TORCH_NCCL_*` only.
    Legacy,
    /// The version is unknown (no Python with torch found): both, so the
    /// recorder is on whatever the version, at the cost of the warning.
    Both,
}

impl FlightRecorderNames {
    /// The names for an installed torch `(major, minor)`, if known.
    pub fn for_torch(version: Option<(u32, u32)>) -> FlightRecorderNames {
        match version {
            Some(v) if v >= (2, 9) => FlightRecorderNames::Current,
            Some(_) => FlightRecorderNames::Legacy,
            None => FlightRecorderNames::Both,
        }
    }

    /// The names to set out of a `[current, legacy]` pair.
    fn pick(self, names: &'static [&'static str]) -> &'static [&'static str] {
        match self {
            FlightRecorderNames::Current => &names[..1],
            FlightRecorderNames::Legacy => &names[1..],
            FlightRecorderNames::Both => names,
        }
    }
}

/// The torch version (`major.minor`) that `python` imports, read from the
/// package metadata without importing torch (tens of milliseconds); `None`
/// when the interpreter cannot be run, has no torch or takes over 10 s.
pub fn installed_torch_version(python: &OsStr) -> Option<(u32, u32)> {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('torch'))",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    parse_torch_version(out.trim())
}

/// `2.13.0+cu128` → `(2, 13)`.
fn parse_torch_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// The variables of the flight recorder's ring buffer size, newest name first.
pub const FLIGHT_RECORDER_BUFFER_VARS: &[&str] =
    &["TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"];
/// The variables of the flight recorder's dump file prefix (the rank is
/// appended), newest name first.
pub const FLIGHT_RECORDER_FILE_VARS: &[&str] =
    &["TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"];
/// How many collectives the flight recorder keeps when the launcher turns it on.
pub const FLIGHT_RECORDER_ENTRIES: usize = 2000;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path) -> RankEnvSpec<'_> {
        RankEnvSpec {
            rank: 3,
            local_rank: 1,
            world_size: 4,
            nproc_per_node: 2,
            node_rank: 1,
            nnodes: 2,
            master_addr: "10.0.0.1",
            master_port: 29500,
            run_id: "job7",
            run_dir: dir,
            store_token: "abcd",
            bucket_cap_mb: Some(25.0),
            restart_count: 2,
            max_restarts: 3,
            python_dir: Some(Path::new("/repo/python")),
            flight_recorder_names: FlightRecorderNames::Current,
            role: "default",
        }
    }

    fn get<'a>(env: &'a BTreeMap<OsString, OsString>, k: &str) -> &'a str {
        env.get(OsStr::new(k))
            .and_then(|v| v.to_str())
            .unwrap_or_else(|| panic!("{k} not set"))
    }

    #[test]
    fn torchruns_role_is_the_ranks_role_name() {
        let dir = Path::new("/runs/x");
        let mut s = spec(dir);
        s.role = "rank";
        assert_eq!(get(&rank_env(&BTreeMap::new(), &s), "ROLE_NAME"), "rank");
    }

    #[test]
    fn torchrun_and_probe_variables() {
        let dir = Path::new("/runs/x");
        let mut user = BTreeMap::new();
        user.insert(OsString::from("RANK"), OsString::from("99"));
        let env = rank_env(&user, &spec(dir));
        for (k, v) in [
            ("RANK", "3"),
            ("LOCAL_RANK", "1"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("GROUP_RANK", "1"),
            ("GROUP_WORLD_SIZE", "2"),
            ("ROLE_RANK", "3"),
            ("ROLE_WORLD_SIZE", "4"),
            ("ROLE_NAME", "default"),
            ("MASTER_ADDR", "10.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "job7"),
            ("TORCHELASTIC_RESTART_COUNT", "2"),
            ("TORCHELASTIC_MAX_RESTARTS", "3"),
            ("TORCHELASTIC_USE_AGENT_STORE", "False"),
            ("OMP_NUM_THREADS", "1"),
            ("PYTHONUNBUFFERED", "1"),
            ("DDP_PROBE_RUN_ID", "job7"),
            ("DDP_PROBE_RUN_DIR", "/runs/x"),
            ("DDP_PROBE_TRACE_DIR", "/runs/x/traces"),
            ("DDP_PROBE_STORE_TOKEN", "abcd"),
            ("DDP_PROBE_BUCKET_CAP_MB", "25"),
            ("NCCL_DEBUG", "INFO"),
            ("NCCL_DEBUG_FILE", "/runs/x/logs/nccl-rank3.log"),
            ("TORCH_FR_BUFFER_SIZE", "2000"),
            ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
            ("TORCH_FR_DUMP_TEMP_FILE", "/runs/x/logs/nccl_trace_rank_"),
            ("PYTHONPATH", "/repo/python"),
        ] {
            assert_eq!(get(&env, k), v, "{k}");
        }
        // torch >= 2.9 warns on every rank about the old names: not set.
        for old in [
            "TORCH_NCCL_TRACE_BUFFER_SIZE",
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
        ] {
            assert!(!env.contains_key(OsStr::new(old)), "{old} set");
        }
    }

    #[test]
    fn flight_recorder_names_follow_the_torch_version() {
        let dir = Path::new("/runs/x");
        let user = BTreeMap::new();
        for (version, expect) in [
            (
                Some((2, 13)),
                &["TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"][..],
            ),
            (
                Some((2, 9)),
                &["TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"][..],
            ),
            (
                Some((2, 5)),
                &[
                    "TORCH_NCCL_TRACE_BUFFER_SIZE",
                    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                ][..],
            ),
            (
                None,
                &[
                    "TORCH_FR_BUFFER_SIZE",
                    "TORCH_FR_DUMP_TEMP_FILE",
                    "TORCH_NCCL_TRACE_BUFFER_SIZE",
                    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                ][..],
            ),
        ] {
            let mut spec = spec(dir);
            spec.flight_recorder_names = FlightRecorderNames::for_torch(version);
            let env = rank_env(&user, &spec);
            let set: Vec<&str> = FLIGHT_RECORDER_BUFFER_VARS
                .iter()
                .chain(FLIGHT_RECORDER_FILE_VARS)
                .copied()
                .filter(|n| env.contains_key(OsStr::new(n)))
                .collect();
            let mut want = expect.to_vec();
            want.sort_unstable();
            let mut got = set.clone();
            got.sort_unstable();
            assert_eq!(got, want, "{version:?}");
        }
    }

    #[test]
    fn torch_versions_parse() {
        assert_eq!(parse_torch_version("2.13.0+cu128"), Some((2, 13)));
        assert_eq!(parse_torch_version("2.9.0a0+git1234"), Some((2, 9)));
        assert_eq!(parse_torch_version("2.10rc1"), Some((2, 10)));
        assert_eq!(parse_torch_version("torch"), None);
        assert_eq!(parse_torch_version(""), None);
    }

    #[test]
    fn user_settings_win_over_defaults() {
        let dir = Path::new("/runs/x");
        let mut user = BTreeMap::new();
        for (k, v) in [
            ("NCCL_DEBUG", "WARN"),
            ("OMP_NUM_THREADS", "8"),
            ("TORCH_NCCL_TRACE_BUFFER_SIZE", "10"),
        ] {
            user.insert(OsString::from(k), OsString::from(v));
        }
        let env = rank_env(&user, &spec(dir));
        assert_eq!(get(&env, "NCCL_DEBUG"), "WARN");
        assert_eq!(get(&env, "NCCL_DEBUG_FILE"), "/runs/x/logs/nccl-rank3.log");
        assert_eq!(get(&env, "OMP_NUM_THREADS"), "8");
        assert_eq!(get(&env, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "10");
        // The newer name would override the user's older one: left unset.
        assert!(!env.contains_key(OsStr::new("TORCH_FR_BUFFER_SIZE")));
        assert!(!sets_omp_threads(&user, 2));
    }

    #[test]
    fn flight_recorder_file_follows_the_user_under_either_name() {
        let dir = Path::new("/runs/x");
        for name in FLIGHT_RECORDER_FILE_VARS {
            let mut user = BTreeMap::new();
            user.insert(OsString::from(*name), OsString::from("/tmp/mine_"));
            let env = rank_env(&user, &spec(dir));
            assert_eq!(get(&env, name), "/tmp/mine_");
            for other in FLIGHT_RECORDER_FILE_VARS.iter().filter(|o| *o != name) {
                assert!(!env.contains_key(OsStr::new(other)), "{other} set");
            }
            // The buffer stays on: the user named only the file.
            assert_eq!(get(&env, "TORCH_FR_BUFFER_SIZE"), "2000");
        }
    }

    #[test]
    fn python_path_gets_the_module_folder_after_the_users_entries() {
        let dir = Path::new("/runs/x");
        let mut user = BTreeMap::new();
        user.insert(OsString::from("PYTHONPATH"), OsString::from("/a:/b"));
        let env = rank_env(&user, &spec(dir));
        assert_eq!(get(&env, "PYTHONPATH"), "/a:/b:/repo/python");
        user.insert(
            OsString::from("PYTHONPATH"),
            OsString::from("/repo/python:/a"),
        );
        let env = rank_env(&user, &spec(dir));
        assert_eq!(get(&env, "PYTHONPATH"), "/repo/python:/a");
        let mut s = spec(dir);
        s.python_dir = None;
        let env = rank_env(&BTreeMap::new(), &s);
        assert!(!env.contains_key(OsStr::new("PYTHONPATH")));
    }

    #[test]
    fn the_source_tree_python_folder_is_found() {
        let dir = python_dir().expect("python/ddp_probe_torch/__init__.py in the source tree");
        assert!(dir.join(PYTHON_MODULE_FILE).is_file());
    }

    #[test]
    fn single_process_leaves_omp_alone_and_manifest_redacts_token() {
        let dir = Path::new("/runs/x");
        let mut s = spec(dir);
        s.nproc_per_node = 1;
        s.bucket_cap_mb = Some(0.5);
        let env = rank_env(&BTreeMap::new(), &s);
        assert!(!env.contains_key(OsStr::new("OMP_NUM_THREADS")));
        assert_eq!(get(&env, "DDP_PROBE_BUCKET_CAP_MB"), "0.5");
        let rel = relevant(&env);
        assert_eq!(rel["DDP_PROBE_STORE_TOKEN"], REDACTED);
        assert_eq!(rel["RANK"], "3");
        assert!(!rel.contains_key("PYTHONUNBUFFERED"));
        assert!(is_relevant("CUDA_VISIBLE_DEVICES"));
        assert!(!is_relevant("HOME"));
    }
}
