//! A rank's process tree read from `/proc` when the launcher stops a run, for
//! `logs/processes-rank-<R>.txt` ([`probe_contract::processes`]): the rank's process and every
//! process below it, each with its state, kernel wait channel and CPU time. Unreadable entries
//! (a process that ended meanwhile, a `/proc` without `wchan`) are left out or left empty, never
//! an error.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use probe_contract::processes::ProcessState;

/// For each of `roots`, its process and all its descendants under `proc_dir` (normally
/// `/proc`), the root first, then by parent and pid; empty for a root that is not there.
/// `/proc` is read once for all of them (the ranks of a node are siblings).
pub(crate) fn process_trees(proc_dir: &Path, roots: &[u32]) -> Vec<Vec<ProcessState>> {
    let ticks = clock_ticks_per_second();
    // Every process's stat line (for its parent), then the wait channel and command line of
    // the trees' members only.
    let mut all: BTreeMap<u32, ProcessState> = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(proc_dir) {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(p) = fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|stat| parse_stat(&stat, ticks))
            {
                all.insert(pid, p);
            }
        }
    }
    roots
        .iter()
        .map(|&root| {
            let mut tree = descendants(&mut all, root);
            for p in &mut tree {
                fill_wait_and_command(proc_dir, p);
            }
            tree
        })
        .collect()
}

/// `root` and its descendants taken out of `all`, breadth first: each generation's children
/// by pid.
fn descendants(all: &mut BTreeMap<u32, ProcessState>, root: u32) -> Vec<ProcessState> {
    let mut out: Vec<ProcessState> = all.remove(&root).into_iter().collect();
    let mut k = 0;
    while k < out.len() {
        let parent = out[k].pid;
        let children: Vec<u32> = all
            .values()
            .filter(|p| p.ppid == parent)
            .map(|p| p.pid)
            .collect();
        out.extend(children.into_iter().filter_map(|c| all.remove(&c)));
        k += 1;
    }
    out
}

/// Reads `p`'s kernel wait channel and command line.
fn fill_wait_and_command(proc_dir: &Path, p: &mut ProcessState) {
    let dir = proc_dir.join(p.pid.to_string());
    let wchan = fs::read_to_string(dir.join("wchan")).unwrap_or_default();
    // "0": running, or the kernel hides it.
    p.wchan = if wchan.trim() == "0" {
        String::new()
    } else {
        wchan.trim().to_owned()
    };
    p.command = fs::read(dir.join("cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
}

/// The fields of a `/proc/<pid>/stat` line after the name, and the part before the name's
/// `(`: the name, in parentheses, may hold spaces and parentheses, so it ends at the last `)`.
/// `fields[0]` is the state (field 3), `fields[1]` the parent (4), and so on.
pub(crate) fn stat_fields(stat: &str) -> Option<(&str, Vec<&str>)> {
    let (head, rest) = stat.rsplit_once(')')?;
    Some((head, rest.split_whitespace().collect()))
}

/// The fields of a `/proc/<pid>/stat` line that [`ProcessState`] keeps (its `wchan` and
/// `command` left empty): pid, `(comm)`, state, ppid, and utime + stime (fields 14 and 15) in
/// seconds. The name, in parentheses, may hold spaces and parentheses: it ends at the last `)`.
fn parse_stat(stat: &str, ticks_per_s: f64) -> Option<ProcessState> {
    let (head, f) = stat_fields(stat)?;
    let (pid, name) = head.split_once(" (")?;
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    // After the name: state (3), ppid (4), ..., utime (14), stime (15): indices 0, 1, 11, 12.
    let cpu = ticks(11)? + ticks(12)?;
    let mut state = f.first()?.chars();
    let s = state.next()?;
    Some(ProcessState {
        pid: pid.trim().parse().ok()?,
        ppid: f.get(1)?.parse().ok()?,
        state: s,
        wchan: String::new(),
        cpu_s: cpu as f64 / ticks_per_s,
        name: name.to_owned(),
        command: String::new(),
    })
}

/// The kernel's clock ticks per second (`USER_HZ`), in which `/proc/<pid>/stat` counts CPU time.
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_the_name_is_read() {
        let stat = "4388 (pt (data) worker) S 4321 4300 4300 0 -1 4194368 222 0 0 0 \
                    250 100 0 0 20 0 1 0 42816 1000 100";
        let p = parse_stat(stat, 100.0).unwrap();
        assert_eq!(
            (p.pid, p.ppid, p.state, p.name.as_str()),
            (4388, 4321, 'S', "pt (data) worker")
        );
        assert!((p.cpu_s - 3.5).abs() < 1e-9, "{}", p.cpu_s);
        assert_eq!(parse_stat("garbage", 100.0), None);
        assert_eq!(parse_stat("12 (x) S", 100.0), None);
    }

    #[test]
    fn a_childs_sleep_is_seen_below_this_process() {
        // A child of this test process, asleep in `sleep`: the tree of this process holds it
        // with its parent, state S and its command line.
        let mut child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::null())
            .spawn()
            .expect("start sleep");
        let me = std::process::id();
        let mut seen = None;
        for _ in 0..100 {
            let tree = process_trees(Path::new("/proc"), &[me]).remove(0);
            assert_eq!(tree.first().map(|p| p.pid), Some(me));
            seen = tree.into_iter().find(|p| p.pid == child.id());
            if seen.as_ref().is_some_and(|p| p.state == 'S') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        let p = seen.expect("the child is in the tree");
        assert_eq!((p.ppid, p.state, p.command.as_str()), (me, 'S', "sleep 30"));
        assert_eq!(
            process_trees(Path::new("/proc"), &[u32::MAX]),
            vec![Vec::new()]
        );
    }
}
