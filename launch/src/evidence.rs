//! Evidence about why a rank died of SIGKILL, collected by the launcher at
//! the moment it happens, so that `ddp-probe explain` can say whether the
//! kernel's out-of-memory killer sent it or something outside the process
//! did (`kill -9`, a scheduler's preemption, a timeout).
//!
//! Three sources, each optional (an unreadable one is "no evidence", never an
//! error):
//!
//! * **OOM-kill counters.** The kernel raises them *before* it sends the
//!   SIGKILL, so a rank's death is always preceded by the increment when the
//!   OOM killer acted: `oom_kill` in the cgroup v2 `memory.events` of the
//!   rank's cgroup and of every parent up to the root (a limit may be set
//!   higher up; v2 counts the events of the whole subtree), `oom_kill` in the
//!   cgroup v1 `memory.oom_control` of the same cgroups, and the host-wide
//!   `oom_kill` of `/proc/vmstat`. Each is read when first seen (at the
//!   rank's start) and again at its death.
//! * **The kernel log.** `/dev/kmsg`, opened non-blocking at the launch and
//!   positioned at its end, is read at a death for lines such as
//!   `Out of memory: Killed process <pid> (...)` or
//!   `oom-kill:...,pid=<pid>,...` naming the rank's pid. Reading it needs
//!   `CAP_SYSLOG` when `kernel.dmesg_restrict` is 1; a refusal is recorded.
//!   (Inside a PID namespace the kernel's pid differs from the launcher's, so
//!   only the counters can tell.)
//! * **Memory samples.** The launch loop samples each rank's resident set
//!   (`VmRSS` of `/proc/<pid>/status`) with the host's `MemAvailable`, so the
//!   last sample before the death is known.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::manifest::{CounterScope, KillEvidence, MemorySample, OomKillCounter};

/// The host-wide OOM-kill counter.
const VMSTAT: &str = "/proc/vmstat";
/// The kernel log device.
const KMSG: &str = "/dev/kmsg";
/// The kernel log's largest record (the kernel refuses smaller reads).
const KMSG_RECORD: usize = 8192;
/// OOM-related kernel lines kept for the whole run.
const MAX_KERNEL_LINES: usize = 256;
/// Largest kernel line kept, in bytes.
const MAX_KERNEL_LINE_BYTES: usize = 400;

/// The value of the `oom_kill` line of a counters file (`memory.events`,
/// `memory.oom_control`, `/proc/vmstat` all have `oom_kill N`).
pub(crate) fn parse_oom_kill(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        (parts.next() == Some("oom_kill"))
            .then(|| parts.next()?.parse().ok())
            .flatten()
    })
}

/// Reads the `oom_kill` counter of a file; `None` when unreadable.
fn read_counter(path: &Path) -> Option<u64> {
    parse_oom_kill(&fs::read_to_string(path).ok()?)
}

/// A cgroup hierarchy mounted on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupMount {
    /// Where it is mounted.
    mount_point: PathBuf,
    /// The cgroup the mount shows at its mount point.
    root: String,
    /// cgroup v2 (`true`) or the v1 hierarchy with the memory controller.
    v2: bool,
}

/// The cgroup v2 mount and the v1 memory-controller mount, from
/// `/proc/self/mountinfo` text.
fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let rfields: Vec<&str> = right.split(' ').collect();
        if fields.len() < 5 || rfields.is_empty() {
            continue;
        }
        let v2 = match rfields[0] {
            "cgroup2" => true,
            "cgroup"
                if rfields
                    .get(2)
                    .is_some_and(|o| o.split(',').any(|x| x == "memory")) =>
            {
                false
            }
            _ => continue,
        };
        out.push(CgroupMount {
            mount_point: PathBuf::from(unescape_mount(fields[4])),
            root: unescape_mount(fields[3]),
            v2,
        });
    }
    out
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok());
            if let Some(v) = oct {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The counter files of the cgroups in `/proc/<pid>/cgroup` text: the
/// process's cgroup and its parents up to the root, for v2 and for the v1
/// memory controller; `true` marks the process's own cgroup.
fn counter_files(cgroup_text: &str, mounts: &[CgroupMount]) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for line in cgroup_text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let v2 = id == "0" && controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "memory") {
            continue;
        }
        let Some(mount) = mounts.iter().find(|m| m.v2 == v2) else {
            continue;
        };
        let file = if v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        // The path is relative to the cgroup namespace; the mount shows
        // `root` at its mount point.
        let rel = path
            .strip_prefix(mount.root.as_str())
            .filter(|_| mount.root != "/")
            .unwrap_or(path);
        let mut dir = mount.mount_point.clone();
        let mut dirs = vec![dir.clone()];
        for part in rel.split('/').filter(|p| !p.is_empty() && *p != "..") {
            dir.push(part);
            dirs.push(dir.clone());
        }
        for (i, d) in dirs.into_iter().rev().enumerate() {
            out.push((d.join(file), i == 0));
        }
    }
    out
}

/// Whether a `/proc/PID/stat` line is of a task that is exiting or has exited: state `Z`
/// or `X`, or `PF_EXITING` (0x4) in its flags (the ninth field; the command name, in
/// parentheses, may hold spaces).
fn stat_says_exiting(stat: &str) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Some((_, fields)) = crate::process_tree::stat_fields(stat) else {
        return true;
    };
    let state = fields.first().copied().unwrap_or("X");
    let flags = fields.get(6).and_then(|f| f.parse::<u64>().ok());
    matches!(state, "Z" | "X" | "x") || flags.is_none_or(|f| f & PF_EXITING != 0)
}

/// One counter being watched for a rank.
#[derive(Debug, Clone)]
struct Watched {
    file: PathBuf,
    scope: CounterScope,
    at_start: u64,
}

/// The evidence sources of one rank: its counters with their values when
/// first seen, and its last memory sample.
#[derive(Debug, Clone, Default)]
pub(crate) struct RankWatch {
    counters: Vec<Watched>,
    /// The last memory sample.
    pub last_memory: Option<MemorySample>,
}

impl RankWatch {
    /// Adds the counters of the cgroups `pid` is in now (those not watched
    /// yet, with their current values as the start).
    pub fn refresh_cgroups(&mut self, pid: u32, mounts: &Mounts) {
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return;
        };
        // An exiting task has left its cgroups (the kernel moves it out as it exits, after
        // marking it PF_EXITING), so a reading taken then is not where the rank lived: its own
        // cgroup's counter would be taken for a parent's. Checked after the read, which the
        // mark precedes. Seen as a flaky test under load: a rank killed by the OOM killer in
        // its own cgroup was recorded with that cgroup as a parent's.
        let exiting = fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat_says_exiting(&stat));
        if exiting {
            return;
        }
        let files = counter_files(&text, &mounts.0);
        for c in &mut self.counters {
            if c.scope != CounterScope::Host {
                let own = files.iter().any(|(f, own)| *own && *f == c.file);
                c.scope = if own {
                    CounterScope::Cgroup
                } else {
                    CounterScope::ParentCgroup
                };
            }
        }
        for (file, own) in files {
            if self.counters.iter().any(|c| c.file == file) {
                continue;
            }
            if let Some(v) = read_counter(&file) {
                self.counters.push(Watched {
                    file,
                    scope: if own {
                        CounterScope::Cgroup
                    } else {
                        CounterScope::ParentCgroup
                    },
                    at_start: v,
                });
            }
        }
    }

    /// Adds the host-wide counter with its value at the launch.
    pub fn add_host_counter(&mut self, at_start: Option<u64>) {
        if let Some(v) = at_start {
            self.counters.push(Watched {
                file: PathBuf::from(VMSTAT),
                scope: CounterScope::Host,
                at_start: v,
            });
        }
    }

    /// Samples the rank's resident set and the host's available memory.
    pub fn sample_memory(&mut self, pid: u32, after_s: f64) {
        let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let Some(rss_kib) = kib_field(&status, "VmRSS:") else {
            return;
        };
        let mem_available_kib = fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| kib_field(&m, "MemAvailable:"));
        self.last_memory = Some(MemorySample {
            rss_kib,
            mem_available_kib,
            after_s,
        });
    }

    /// The counters now, against their starts.
    fn read_counters(&self) -> Vec<OomKillCounter> {
        self.counters
            .iter()
            .map(|c| OomKillCounter {
                file: c.file.to_string_lossy().into_owned(),
                scope: c.scope,
                at_start: c.at_start,
                at_death: read_counter(&c.file),
            })
            .collect()
    }

    /// Whether a counter rose since its start.
    fn any_rose(counters: &[OomKillCounter]) -> bool {
        counters
            .iter()
            .any(|c| c.at_death.is_some_and(|d| d > c.at_start))
    }
}

/// A `Name:   1234 kB` field of `/proc/<pid>/status` or `/proc/meminfo`.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The cgroup mounts of this host (none when `/proc/self/mountinfo` cannot
/// be read).
#[derive(Debug, Clone, Default)]
pub(crate) struct Mounts(Vec<CgroupMount>);

impl Mounts {
    /// Reads `/proc/self/mountinfo`.
    pub fn read() -> Mounts {
        Mounts(
            fs::read_to_string("/proc/self/mountinfo")
                .map(|t| parse_mountinfo(&t))
                .unwrap_or_default(),
        )
    }
}

/// The host-wide OOM-kill counter now.
pub(crate) fn host_counter() -> Option<u64> {
    read_counter(Path::new(VMSTAT))
}

/// The kernel log from the launch on: OOM-related lines read so far, or why
/// it cannot be read.
#[derive(Debug)]
pub(crate) struct KernelLog {
    file: Result<File, String>,
    lines: Vec<String>,
}

impl KernelLog {
    /// Opens `/dev/kmsg` non-blocking at its end (only records written from
    /// now on are read).
    pub fn open() -> KernelLog {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(KMSG)
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f))
            .map_err(|e| format!("cannot read {KMSG}: {e}"));
        KernelLog {
            file,
            lines: Vec::new(),
        }
    }

    /// Reads the records written since the last call, keeping OOM-related
    /// ones. Returns why the log cannot be read, if it cannot.
    fn poll(&mut self) -> Result<(), String> {
        let file = match &mut self.file {
            Ok(f) => f,
            Err(e) => return Err(e.clone()),
        };
        let mut buf = vec![0u8; KMSG_RECORD];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    let record = String::from_utf8_lossy(&buf[..n]);
                    let text = record
                        .split_once(';')
                        .map_or(&*record, |(_, t)| t)
                        .lines()
                        .next()
                        .unwrap_or("");
                    if is_oom_line(text) && self.lines.len() < MAX_KERNEL_LINES {
                        let mut t = text.to_owned();
                        if t.len() > MAX_KERNEL_LINE_BYTES {
                            let mut cut = MAX_KERNEL_LINE_BYTES;
                            while !t.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            t.truncate(cut);
                        }
                        self.lines.push(t);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // EPIPE: records were overwritten before we read them; the
                // next read goes on with the oldest one left.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
                Err(e) => {
                    let why = format!("reading {KMSG} failed: {e}");
                    self.file = Err(why.clone());
                    return Err(why);
                }
            }
        }
    }
}

/// Whether a kernel log line is about an out-of-memory kill.
fn is_oom_line(text: &str) -> bool {
    text.contains("Killed process") || text.contains("oom-kill:")
}

/// Whether a kernel log line names `pid` as the process killed.
pub(crate) fn names_pid(line: &str, pid: u32) -> bool {
    if let Some((_, rest)) = line.split_once("Killed process ") {
        if rest.split([' ', '(']).next() == Some(pid.to_string().as_str()) {
            return true;
        }
    }
    if line.contains("oom-kill:") {
        let needle = format!("pid={pid}");
        return line
            .split(',')
            .any(|field| field.trim() == needle || field.trim_end() == needle);
    }
    false
}

/// Collects the evidence at the death of the rank with `pid`.
pub(crate) fn collect(watch: &RankWatch, kernel: &mut KernelLog, pid: u32) -> KillEvidence {
    let counters = watch.read_counters();
    let mut notes = Vec::new();
    let mut read = kernel.poll();
    let matching = |k: &KernelLog| -> Vec<String> {
        k.lines
            .iter()
            .filter(|l| names_pid(l, pid))
            .cloned()
            .collect()
    };
    let mut lines = matching(kernel);
    if lines.is_empty() && read.is_ok() && RankWatch::any_rose(&counters) {
        // The kernel raises the counter before the signal and prints after
        // it: give the line a moment.
        std::thread::sleep(std::time::Duration::from_millis(100));
        read = kernel.poll();
        lines = matching(kernel);
    }
    if let Err(e) = &read {
        notes.push(e.clone());
    }
    if counters.is_empty() {
        notes.push(
            "no oom_kill counter was readable (no cgroup memory.events or memory.oom_control, no /proc/vmstat)"
                .to_owned(),
        );
    }
    KillEvidence {
        oom_kill_counters: counters,
        kernel_log_read: read.is_ok(),
        kernel_log_lines: lines,
        last_memory: watch.last_memory.clone(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exiting_task_is_told_from_its_stat_line() {
        // Fields after the command: state ppid pgrp session tty_nr tpgid flags ...
        let running = "4242 (tail) R 4200 4242 4200 0 -1 4194304 120 0 0 0";
        assert!(!stat_says_exiting(running));
        // PF_EXITING (0x4) set: 4194308 = 0x400004.
        assert!(stat_says_exiting(
            "4242 (tail) R 4200 4242 4200 0 -1 4194308 120 0 0 0"
        ));
        assert!(stat_says_exiting(
            "4242 (tail) Z 4200 4242 4200 0 -1 4194304 120 0 0 0"
        ));
        // A command name with spaces and parentheses.
        assert!(!stat_says_exiting(
            "7 (python3 -u (x)) S 1 7 7 0 -1 4194560 0 0 0 0"
        ));
        assert!(stat_says_exiting("garbage"));
        // This test's own process is running.
        let own = fs::read_to_string("/proc/self/stat").unwrap();
        assert!(!stat_says_exiting(&own), "{own}");
    }

    #[test]
    fn oom_kill_counters_parse_in_all_three_files() {
        let events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(parse_oom_kill(events), Some(2));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n";
        assert_eq!(parse_oom_kill(v1), Some(7));
        let vmstat = "pgfault 1\noom_kill 0\nnr_free_pages 3\n";
        assert_eq!(parse_oom_kill(vmstat), Some(0));
        assert_eq!(parse_oom_kill("oom_kill_disable 0\n"), None);
        assert_eq!(parse_oom_kill(""), None);
    }

    #[test]
    fn cgroup_files_cover_the_cgroup_and_its_parents() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw
33 25 0:29 / /sys/fs/cgroup/memory rw,relatime shared:8 - cgroup cgroup rw,memory
34 25 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
";
        let mounts = parse_mountinfo(mountinfo);
        assert_eq!(mounts.len(), 2);
        let cg = "4:memory:/job/a1\n1:cpu:/\n0::/user.slice/s\n";
        let files = counter_files(cg, &mounts);
        let shown: Vec<String> = files.iter().map(|p| p.0.display().to_string()).collect();
        let own: Vec<bool> = files.iter().map(|p| p.1).collect();
        assert_eq!(own, [true, false, false, true, false, false]);
        assert_eq!(
            shown,
            [
                "/sys/fs/cgroup/memory/job/a1/memory.oom_control",
                "/sys/fs/cgroup/memory/job/memory.oom_control",
                "/sys/fs/cgroup/memory/memory.oom_control",
                "/sys/fs/cgroup/unified/user.slice/s/memory.events",
                "/sys/fs/cgroup/unified/user.slice/memory.events",
                "/sys/fs/cgroup/unified/memory.events",
            ]
        );
        // No cgroup mounts: no files, no panic.
        assert!(counter_files(cg, &[]).is_empty());
        assert!(counter_files("garbage", &mounts).is_empty());
    }

    #[test]
    fn a_mount_of_a_sub_cgroup_is_resolved_below_its_mount_point() {
        let mounts = parse_mountinfo(
            "40 35 0:27 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        let files = counter_files("0::/kubepods/pod1/c\n", &mounts);
        assert_eq!(
            files[0],
            (PathBuf::from("/sys/fs/cgroup/c/memory.events"), true),
            "{files:?}"
        );
        assert_eq!(
            files.last(),
            Some(&(PathBuf::from("/sys/fs/cgroup/memory.events"), false))
        );
        assert_eq!(unescape_mount("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount("/x\\"), "/x\\");
    }

    #[test]
    fn kernel_lines_name_the_killed_pid() {
        let a = "Out of memory: Killed process 4242 (python3) total-vm:1kB, anon-rss:1kB";
        let b = "Memory cgroup out of memory: Killed process 4242 (tail) total-vm:9kB";
        let c = "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/x,task_memcg=/x,task=tail,pid=4242,uid=0";
        for l in [a, b, c] {
            assert!(is_oom_line(l), "{l}");
            assert!(names_pid(l, 4242), "{l}");
            assert!(!names_pid(l, 424), "{l}");
            assert!(!names_pid(l, 42421), "{l}");
        }
        assert!(!is_oom_line("EXT4-fs (vda): mounted filesystem"));
    }

    #[test]
    fn unreadable_sources_are_no_evidence_not_errors() {
        let mut watch = RankWatch::default();
        // A pid that cannot exist: nothing to read, nothing added.
        watch.refresh_cgroups(u32::MAX, &Mounts::default());
        watch.sample_memory(u32::MAX, 1.0);
        assert!(watch.last_memory.is_none());
        let mut kernel = KernelLog {
            file: Err("cannot read /dev/kmsg: Operation not permitted".to_owned()),
            lines: Vec::new(),
        };
        let ev = collect(&watch, &mut kernel, 1);
        assert!(ev.oom_kill_counters.is_empty());
        assert!(!ev.kernel_log_read);
        assert_eq!(ev.notes.len(), 2, "{:?}", ev.notes);
    }

    #[test]
    fn this_process_is_sampled() {
        let mut watch = RankWatch::default();
        watch.sample_memory(std::process::id(), 0.5);
        if Path::new("/proc/self/status").exists() {
            let m = watch.last_memory.expect("VmRSS of this process");
            assert!(m.rss_kib > 0);
        }
    }
}
