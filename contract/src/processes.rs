//! A rank's processes when the launcher stopped the run (a hang, another rank's failure, an
//! interrupt): the rank's own process and every process it started (DataLoader workers,
//! `torch.multiprocessing.spawn`'s ranks, compile workers), each with its scheduler state and
//! where the kernel has it waiting. `explain` reads them beside the rank's Python stack: a rank
//! that the others waited for while it waited for a batch was waiting for its DataLoader
//! workers, and their state says why (asleep on a lock, in uninterruptible I/O, busy).
//!
//! The launcher writes `logs/processes-rank-<R>.txt` ([`file_name`]): a `#` comment line, then
//! one process per line, tab-separated ([`ProcessState::to_line`]):
//!
//! ```text
//! # rank 1's processes when ddp-probe run stopped the job (another rank failed): pid, ...
//! 4321<TAB>4300<TAB>S<TAB>do_select<TAB>12.40<TAB>python<TAB>python train.py --epochs 2
//! 4388<TAB>4321<TAB>S<TAB>futex_wait_queue<TAB>0.35<TAB>pt_data_worker<TAB>python train.py ...
//! ```

/// The name of the file of rank `rank`'s processes, in the run directory's `logs/`.
pub fn file_name(rank: usize) -> String {
    format!("{FILE_PREFIX}{rank}.txt")
}

/// The start of [`file_name`]'s names.
pub const FILE_PREFIX: &str = "processes-rank-";

/// The rank a file named as [`file_name`] names (`processes-rank-3.txt` → 3).
pub fn rank_of(file_name: &str) -> Option<usize> {
    file_name
        .strip_prefix(FILE_PREFIX)?
        .strip_suffix(".txt")?
        .parse()
        .ok()
}

/// The most characters of a command line kept.
const COMMAND_CHARS: usize = 200;

/// The name PyTorch gives a DataLoader worker process (`torch.multiprocessing._set_thread_name`
/// in `torch/utils/data/_utils/worker.py`; it is the process's `comm`).
pub const DATA_LOADER_WORKER_NAME: &str = "pt_data_worker";

/// One process, as the kernel showed it (`/proc/<pid>/stat`, `wchan`, `cmdline`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessState {
    /// Its process id.
    pub pid: u32,
    /// Its parent's process id.
    pub ppid: u32,
    /// The scheduler state: `R` running, `S` asleep, `D` in uninterruptible sleep (I/O), `T`
    /// stopped, `Z` exited and not yet reaped.
    pub state: char,
    /// The kernel function it sleeps in (`futex_wait_queue`, `pipe_read`, `do_epoll_wait`), or
    /// empty when it runs or the kernel does not say.
    pub wchan: String,
    /// The CPU time it has used, user and system, in seconds.
    pub cpu_s: f64,
    /// Its name (`comm`: the executable's name, or the one it gave itself).
    pub name: String,
    /// Its command line, cut to 200 characters.
    pub command: String,
}

/// `s` with tabs and line breaks as spaces, so a field stays one field of one line.
fn one_field(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

impl ProcessState {
    /// The process as one line of the file.
    pub fn to_line(&self) -> String {
        let command: String = one_field(&self.command)
            .chars()
            .take(COMMAND_CHARS)
            .collect();
        format!(
            "{}\t{}\t{}\t{}\t{:.2}\t{}\t{}",
            self.pid,
            self.ppid,
            self.state,
            one_field(&self.wchan),
            self.cpu_s,
            one_field(&self.name),
            command
        )
    }

    /// A line of the file read back; `None` for a comment or a line that is not one.
    pub fn parse_line(line: &str) -> Option<ProcessState> {
        if line.starts_with('#') {
            return None;
        }
        let f: Vec<&str> = line.trim_end_matches(['\r', '\n']).split('\t').collect();
        if f.len() < 6 {
            return None;
        }
        let mut state = f[2].chars();
        let (Some(s), None) = (state.next(), state.next()) else {
            return None;
        };
        Some(ProcessState {
            pid: f[0].parse().ok()?,
            ppid: f[1].parse().ok()?,
            state: s,
            wchan: f[3].to_owned(),
            cpu_s: f[4].parse().ok().filter(|v: &f64| v.is_finite())?,
            name: f[5].to_owned(),
            command: f.get(6).copied().unwrap_or_default().to_owned(),
        })
    }

    /// Whether it is one of PyTorch's DataLoader workers.
    pub fn is_data_loader_worker(&self) -> bool {
        self.name == DATA_LOADER_WORKER_NAME
    }

    /// Whether it sleeps on a lock (a futex): a mutex, a condition, a semaphore, Python's
    /// `threading.Lock`.
    pub fn waits_on_lock(&self) -> bool {
        self.state == 'S' && self.wchan.contains("futex")
    }

    /// Whether it is in uninterruptible sleep, in practice waiting for I/O (a disk, a network
    /// file system).
    pub fn in_uninterruptible_io(&self) -> bool {
        self.state == 'D'
    }
}

/// The file's text: a comment saying whose processes and when, then one line each.
pub fn render(rank: usize, when: &str, processes: &[ProcessState]) -> String {
    let mut out = format!(
        "# rank {rank}'s processes when ddp-probe run {when}: pid, parent pid, state, kernel \
         wait channel, CPU seconds, name, command line\n"
    );
    for p in processes {
        out.push_str(&p.to_line());
        out.push('\n');
    }
    out
}

/// The processes of a file's text (comments and lines that are not one skipped).
pub fn parse(text: &str) -> Vec<ProcessState> {
    parse_with_lines(text).into_iter().map(|(_, p)| p).collect()
}

/// [`parse`], each process with the 1-based line of the text that lists it.
pub fn parse_with_lines(text: &str) -> Vec<(u64, ProcessState)> {
    text.lines()
        .enumerate()
        .filter_map(|(n, l)| Some((n as u64 + 1, ProcessState::parse_line(l)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker() -> ProcessState {
        ProcessState {
            pid: 4388,
            ppid: 4321,
            state: 'S',
            wchan: "futex_do_wait".into(),
            cpu_s: 0.35,
            name: "pt_data_worker".into(),
            command: "python train.py\t--epochs 2".into(),
        }
    }

    #[test]
    fn lines_read_back_as_written_with_tabs_in_fields_made_spaces() {
        let text = render(1, "stopped the job (hang)", &[worker()]);
        assert!(text.starts_with("# rank 1's processes when ddp-probe run stopped the job (hang)"));
        let back = parse(&text);
        assert_eq!(back.len(), 1);
        assert_eq!(
            back[0],
            ProcessState {
                command: "python train.py --epochs 2".into(),
                ..worker()
            }
        );
        assert!(back[0].is_data_loader_worker() && back[0].waits_on_lock());
        assert!(!back[0].in_uninterruptible_io());
    }

    #[test]
    fn lines_that_are_not_a_process_are_skipped() {
        for bad in [
            "",
            "# a comment",
            "4388\t4321\tS",
            "x\t4321\tS\t\t0.1\tpython\t",
            "4388\t4321\tSS\t\t0.1\tpython\t",
            "4388\t4321\tS\t\tNaN\tpython\t",
        ] {
            assert_eq!(ProcessState::parse_line(bad), None, "{bad:?}");
        }
        // No command line (a kernel thread's is empty): still a process.
        let p = ProcessState::parse_line("7\t2\tD\tio_schedule\t3.00\tkworker").unwrap();
        assert!(p.in_uninterruptible_io() && p.command.is_empty());
    }

    #[test]
    fn the_rank_is_read_from_the_file_name() {
        assert_eq!(rank_of(&file_name(12)), Some(12));
        assert_eq!(rank_of("processes-rank-x.txt"), None);
        assert_eq!(rank_of("python-stack-rank-1.txt"), None);
    }
}
