//! What a rank's processes were doing while the others waited for it, from the launcher's
//! `logs/processes-rank-<R>.txt` ([`probe_contract::processes`]) beside the rank's Python stack,
//! and what to do about it:
//!
//! * a rank waiting for a batch from its DataLoader's worker processes (its stack in the
//!   multiprocess iterator's `_try_get_data`) waited for them: a worker asleep on a lock is the
//!   classic deadlock of a process forked while another thread of the rank held a lock; one in
//!   uninterruptible sleep waits for storage; one running is slow; none left is a lost worker;
//! * elsewhere, the rank's own process in uninterruptible sleep waited for storage (a
//!   checkpoint or a log written to a file system that stalled), and one stopped (`T`) was held
//!   by a signal or a debugger.

use std::fs;
use std::path::{Path, PathBuf};

use probe_contract::processes::{self, ProcessState};

use crate::python_stack::{ProcessWait, PyStack};
use crate::report::Evidence;
use crate::sanitize::{display_path, sanitize};

/// Largest processes file read (a rank with many workers writes a few kB).
const MAX_BYTES: u64 = 1024 * 1024;

/// One rank's processes file, read back.
#[derive(Debug, Clone)]
pub(crate) struct RankProcesses {
    pub rank: usize,
    pub path: PathBuf,
    pub processes: Vec<ProcessState>,
    /// The 1-based line of the file that lists each of `processes`.
    pub lines: Vec<u64>,
}

/// Whether `path` is named as a processes file (`processes-rank-<R>.txt`).
pub(crate) fn is_processes_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(processes::rank_of)
        .is_some()
}

/// Reads a processes file; None when it is not one or holds no process.
pub(crate) fn read(path: &Path) -> Option<RankProcesses> {
    let rank = processes::rank_of(path.file_name()?.to_str()?)?;
    if fs::metadata(path).ok()?.len() > MAX_BYTES {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    let (lines, list): (Vec<u64>, Vec<ProcessState>) =
        processes::parse_with_lines(&text).into_iter().unzip();
    (!list.is_empty()).then(|| RankProcesses {
        rank,
        path: path.to_path_buf(),
        processes: list,
        lines,
    })
}

/// The multiprocess DataLoader iterator's wait for a worker's result (PyTorch 1.x to 2.13:
/// `_MultiProcessingDataLoaderIter._try_get_data`, called by `_get_data`).
fn waits_for_workers(stack: &PyStack) -> bool {
    stack.frames.iter().any(|f| {
        f.file.ends_with("torch/utils/data/dataloader.py")
            && matches!(f.function.as_str(), "_try_get_data" | "_get_data")
    })
}

/// How a look at the worker (`pid`, when known) and a DataLoader `timeout=` help whatever it
/// waited for.
fn see_and_bound(pid: Option<u32>) -> String {
    let pid = pid.map_or("PID".to_owned(), |p| p.to_string());
    format!(
        "`py-spy dump --pid {pid}` shows where the worker waits, and a DataLoader `timeout=` \
         (seconds) makes a stuck worker raise in its rank instead of hanging the job"
    )
}

/// ` (futex_do_wait)`: a kernel wait channel in parentheses after a space, or nothing when the
/// kernel did not say (it hides them where `kptr_restrict` asks).
fn in_parens(wchan: &str) -> String {
    if wchan.is_empty() {
        String::new()
    } else {
        format!(" ({})", sanitize(wchan, 60))
    }
}

/// The fix for `who` (a rank, a process of a py-spy dump) waiting for a batch from its
/// DataLoader's workers when their states are not known.
pub(crate) fn fix_unlisted(who: &str) -> String {
    format!(
        "{who} was waiting for a batch from its DataLoader's worker processes \
         (`pt_data_worker`): one of them is stuck or slow (a lock it inherited when it was \
         forked from a process running threads, a read from stalled storage, slow decoding). \
         {}; `DataLoader(..., multiprocessing_context=\"spawn\")` (or \"forkserver\") starts \
         workers that inherit no lock. Under `ddp-probe run` the launcher also lists each \
         worker's state when it stops a job (`logs/processes-rank-<R>.txt`).",
        see_and_bound(None)
    )
}

/// What `stack`'s rank waited for, told by its processes' states in `procs` when the launcher
/// listed them: its DataLoader workers when its stack waits for them, else its own process when
/// that was in uninterruptible I/O or stopped; None when neither says more than the stack.
pub(crate) fn process_wait(stack: &PyStack, procs: Option<&RankProcesses>) -> Option<ProcessWait> {
    if waits_for_workers(stack) {
        return Some(workers_wait(stack, procs));
    }
    own_process_wait(stack, procs?)
}

/// The evidence that quotes the line of `procs`'s file listing process `pid` as `who, pid N,
/// said`.
fn process_evidence(procs: &RankProcesses, pid: u32, who: &str, said: &str) -> Evidence {
    let line = procs
        .processes
        .iter()
        .position(|p| p.pid == pid)
        .map(|i| procs.lines[i]);
    Evidence {
        file: display_path(&procs.path),
        line,
        text: format!("{who}, pid {pid}, {said}"),
    }
}

/// What rank `rank`'s process state says when there is no stack of it (the reference DDP, a
/// rank stopped or stuck too hard to answer): uninterruptible I/O or stopped, else None.
pub(crate) fn without_stack(rank: usize, procs: &RankProcesses) -> Option<ProcessWait> {
    own_state(rank, procs.processes.first()?, procs)
}

/// The rank's own process (the stack file names its pid; else the tree's first, the process
/// the launcher started) in uninterruptible I/O or stopped.
fn own_process_wait(stack: &PyStack, procs: &RankProcesses) -> Option<ProcessWait> {
    own_state(stack.rank, rank_process(stack, procs)?, procs)
}

/// The rank's own process in `procs`: the one the stack file names, else the tree's first (the
/// process the launcher started).
fn rank_process<'a>(stack: &PyStack, procs: &'a RankProcesses) -> Option<&'a ProcessState> {
    match stack.pid {
        Some(pid) => procs.processes.iter().find(|p| p.pid == pid),
        None => procs.processes.first(),
    }
}

/// Process `p` of rank `rank` in uninterruptible I/O or stopped.
fn own_state(rank: usize, p: &ProcessState, procs: &RankProcesses) -> Option<ProcessWait> {
    let who = format!("rank {rank}'s process");
    let wchan = in_parens(&p.wchan);
    if p.in_uninterruptible_io() {
        return Some(ProcessWait {
            phrase: format!(", its process in uninterruptible I/O{wchan}"),
            place: Some(format!("in uninterruptible I/O{wchan}")),
            fix: format!(
                "Rank {rank}'s process (pid {}) was in uninterruptible I/O{wchan} while the \
                 others waited for it: a read or write of its storage stalled (a checkpoint or \
                 a log on a network file system, an overloaded or failing disk). Check that \
                 storage (`dmesg`, the mount's health) and write checkpoints to local disk \
                 first; give the process group a timeout longer than a slow save \
                 (`init_process_group(timeout=...)`).",
                p.pid
            ),
            evidence: Some(process_evidence(
                procs,
                p.pid,
                &who,
                &format!("was in uninterruptible I/O{wchan}"),
            )),
        });
    }
    if matches!(p.state, 'T' | 't') {
        return Some(ProcessWait {
            phrase: ", its process stopped".to_owned(),
            place: Some(format!("stopped (state {})", p.state)),
            fix: format!(
                "Rank {rank}'s process (pid {}) was stopped (state {}) while the others waited \
                 for it: a stop signal (Ctrl-Z in its terminal, SIGSTOP from a scheduler's \
                 suspend) or a debugger attached to it held it. Resume it (`kill -CONT {}`) or \
                 detach the debugger.",
                p.pid, p.state, p.pid
            ),
            evidence: Some(process_evidence(
                procs,
                p.pid,
                &who,
                &format!("was stopped (state {})", p.state),
            )),
        });
    }
    None
}

/// The wait of `stack`'s rank for its DataLoader workers, told by their states in `procs` when
/// the launcher listed them.
fn workers_wait(stack: &PyStack, procs: Option<&RankProcesses>) -> ProcessWait {
    let rank = stack.rank;
    let Some(procs) = procs else {
        return ProcessWait {
            place: None,
            phrase: ", waiting for a batch from its DataLoader workers".to_owned(),
            fix: fix_unlisted(&format!("Rank {rank}")),
            evidence: None,
        };
    };
    // The rank's own workers: the children of its process (the stack file names its pid),
    // else every worker of the tree.
    let workers: Vec<(usize, &ProcessState)> = procs
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_data_loader_worker() && p.state != 'Z' && p.state != 'X')
        .filter(|(_, p)| stack.pid.is_none_or(|pid| p.ppid == pid))
        .collect();
    let who = format!("rank {rank}'s DataLoader worker");
    let evidence =
        |i: usize, said: &str| Some(process_evidence(procs, procs.processes[i].pid, &who, said));
    if let Some(&(i, p)) = workers.iter().find(|(_, p)| p.waits_on_lock()) {
        let said = format!(
            "was asleep on a lock{} with {:.2} s of CPU used",
            in_parens(&p.wchan),
            p.cpu_s
        );
        return ProcessWait {
            place: None,
            phrase: format!(
                ", waiting for a batch from its DataLoader worker (pid {}), which was asleep on \
                 a lock",
                p.pid
            ),
            fix: format!(
                "Rank {rank}'s DataLoader worker (pid {}) was asleep on a lock while the rank \
                 waited for its batch: a worker forked from a rank that runs threads (gloo's or \
                 NCCL's, a logger's, the program's own) can inherit a lock that one of them held \
                 at the fork, and nobody is left to release it. Start the workers without fork: \
                 `DataLoader(..., multiprocessing_context=\"spawn\")` or \"forkserver\" (Linux's \
                 default from Python 3.14 for this reason). {}.",
                p.pid,
                see_and_bound(Some(p.pid))
            ),
            evidence: evidence(i, &said),
        };
    }
    if let Some(p) = stuck_since_fork(stack, procs) {
        let said = format!(
            "a process forked from the rank that had not yet taken the DataLoader worker's name \
             ({}), was asleep on a lock{} with {:.2} s of CPU used",
            processes::DATA_LOADER_WORKER_NAME,
            in_parens(&p.wchan),
            p.cpu_s
        );
        return ProcessWait {
            place: None,
            phrase: format!(
                ", waiting for a batch from its DataLoader worker (pid {}), which was stuck on a \
                 lock since it was forked",
                p.pid
            ),
            fix: format!(
                "Rank {rank}'s DataLoader worker (pid {}) never started: it was stuck on a lock \
                 right after the DataLoader forked it ({:.2} s of CPU, before it took the \
                 worker's name), so its batch never came. A process forked from a rank that runs \
                 threads (gloo's or NCCL's, a logger's, a profiler's or recorder's, the program's \
                 own) inherits the locks they held at that moment, and nobody is left to release them; it \
                 happens now and then, at any DataLoader's start (an evaluation loader's too). \
                 Start the workers without fork: `DataLoader(..., \
                 multiprocessing_context=\"spawn\")` or \"forkserver\" (Linux's default from \
                 Python 3.14 for this reason), or keep them alive across epochs \
                 (`persistent_workers=True`) so that they are forked once. {}.",
                p.pid,
                p.cpu_s,
                see_and_bound(Some(p.pid))
            ),
            evidence: Some(process_evidence(
                procs,
                p.pid,
                &format!("rank {rank}'s process"),
                &said,
            )),
        };
    }
    if let Some(&(i, p)) = workers.iter().find(|(_, p)| p.in_uninterruptible_io()) {
        let said = format!("was in uninterruptible I/O{}", in_parens(&p.wchan));
        return ProcessWait {
            place: None,
            phrase: format!(
                ", waiting for a batch from its DataLoader worker (pid {}), which was waiting \
                 for storage",
                p.pid
            ),
            fix: format!(
                "Rank {rank}'s DataLoader worker (pid {}) was in uninterruptible I/O while the \
                 rank waited for its batch: its read from storage stalled (a network file \
                 system, an overloaded or failing disk). Check that storage (`dmesg`, the \
                 mount's health) or stage the data on local disk; {}.",
                p.pid,
                see_and_bound(Some(p.pid))
            ),
            evidence: evidence(i, &said),
        };
    }
    if let Some(&(i, p)) = workers.iter().find(|(_, p)| p.state == 'R') {
        let said = format!("was running, with {:.2} s of CPU used", p.cpu_s);
        return ProcessWait {
            place: None,
            phrase: format!(
                ", waiting for a batch from its DataLoader worker (pid {}), which was busy",
                p.pid
            ),
            fix: format!(
                "Rank {rank}'s DataLoader worker (pid {}) was busy computing while the rank \
                 waited for its batch: loading is slower than the step (heavy decoding or \
                 augmentation, a sample far larger than the others) or the worker loops. More \
                 workers (`num_workers`), lighter transforms or preprocessed data help a slow \
                 loader; {}.",
                p.pid,
                see_and_bound(Some(p.pid))
            ),
            evidence: evidence(i, &said),
        };
    }
    if workers.is_empty() {
        return ProcessWait {
            place: None,
            phrase: ", waiting for a batch from DataLoader workers that were gone".to_owned(),
            fix: format!(
                "Rank {rank} was waiting for a batch from its DataLoader, and the launcher found \
                 no DataLoader worker process below it: its workers had ended without the \
                 rank noticing. Read the rank's log for a worker's error or a kill (the \
                 out-of-memory killer: `dmesg`), and give the DataLoader a `timeout=` (seconds) \
                 so that a lost worker raises in its rank instead of hanging the job."
            ),
            evidence: None,
        };
    }
    let (i, p) = workers[0];
    let said = format!("was asleep{}", in_parens(&p.wchan));
    ProcessWait {
        place: None,
        phrase: format!(
            ", waiting for a batch from its DataLoader worker (pid {}), which was asleep",
            p.pid
        ),
        fix: format!(
            "Rank {rank}'s DataLoader worker (pid {}) was asleep{} while the rank waited for \
             its batch: it waits for something outside it (a pipe, a socket, a remote read). \
             {}.",
            p.pid,
            in_parens(&p.wchan),
            see_and_bound(Some(p.pid))
        ),
        evidence: evidence(i, &said),
    }
}

/// A child of the rank's process forked from it (the same command line; a DataLoader worker
/// before it took its name, `pt_data_worker`) and asleep on a lock: a worker that deadlocked
/// right after its fork.
fn stuck_since_fork<'a>(stack: &PyStack, procs: &'a RankProcesses) -> Option<&'a ProcessState> {
    let rank = rank_process(stack, procs)?;
    if rank.command.is_empty() {
        return None;
    }
    procs.processes.iter().find(|p| {
        p.ppid == rank.pid
            && !p.is_data_loader_worker()
            && p.command == rank.command
            && p.waits_on_lock()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python_stack;

    /// A rank's stack in the multiprocess iterator's wait, as the PyTorch module writes it.
    const WAITING: &str = "# rank 1's training thread (pid 4321) when ddp-probe run asked (most recent call last):
  File \"/work/train.py\", line 284, in main
    x, y = next(batches)
  File \"/v/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 741, in __next__
    data = self._next_data()
  File \"/v/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1448, in _next_data
    idx, data = self._get_data()
  File \"/v/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1412, in _get_data
    success, data = self._try_get_data()
  File \"/v/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1291, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
";

    fn files(procs: &str) -> (tempfile::TempDir, PyStack, Option<RankProcesses>) {
        let dir = tempfile::tempdir().unwrap();
        let stack_path = dir.path().join("python-stack-rank-1.txt");
        fs::write(&stack_path, WAITING).unwrap();
        let procs_path = dir.path().join(processes::file_name(1));
        fs::write(&procs_path, procs).unwrap();
        let stack = python_stack::read(&stack_path).unwrap();
        let procs = read(&procs_path);
        (dir, stack, procs)
    }

    const HEADER: &str = "# rank 1's processes when ddp-probe run stopped the job (hang): ...\n";

    #[test]
    fn a_worker_asleep_on_a_lock_is_named_with_its_line_and_the_fork_fix() {
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tdo_select\t12.40\tpython\tpython train.py\n\
             4388\t4321\tS\tfutex_do_wait\t0.35\tpt_data_worker\tpython train.py\n\
             4390\t9999\tR\t\t5.00\tpt_data_worker\tanother rank's worker\n"
        ));
        assert_eq!(stack.pid, Some(4321));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert_eq!(
            w.phrase,
            ", waiting for a batch from its DataLoader worker (pid 4388), which was asleep on a lock"
        );
        assert!(
            w.fix.contains("multiprocessing_context=\"spawn\"")
                && w.fix.contains("`py-spy dump --pid 4388`"),
            "{}",
            w.fix
        );
        let e = w.evidence.unwrap();
        assert_eq!(e.line, Some(3));
        assert_eq!(
            e.text,
            "rank 1's DataLoader worker, pid 4388, was asleep on a lock (futex_do_wait) with \
             0.35 s of CPU used"
        );
    }

    /// Read from a timm `train.py` run (2 CPU ranks, `--workers 2`) that hung at its first
    /// evaluation: rank 0 waited for a batch of the evaluation loader, whose first worker had
    /// deadlocked right after its fork (still named `python3`, on a futex, no CPU), while the
    /// training loader's workers waited for work as workers do (asleep in poll). Before, the
    /// first worker by name, an idle one, was blamed.
    #[test]
    fn a_worker_stuck_on_a_lock_since_its_fork_is_named_not_an_idle_one() {
        let cmd = "python3 -u -m ddp_probe_torch.auto train.py --workers 2";
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tpoll_schedule_timeout.constprop.0\t7.54\tpython3\t{cmd}\n\
             4344\t4321\tS\tpoll_schedule_timeout.constprop.0\t0.06\tpt_data_worker\t{cmd}\n\
             4345\t4321\tS\tpoll_schedule_timeout.constprop.0\t0.10\tpt_data_worker\t{cmd}\n\
             4360\t4321\tS\tfutex_do_wait\t0.00\tpython3\t{cmd}\n\
             4363\t4321\tS\tpoll_schedule_timeout.constprop.0\t0.07\tpt_data_worker\t{cmd}\n"
        ));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert_eq!(
            w.phrase,
            ", waiting for a batch from its DataLoader worker (pid 4360), which was stuck on a \
             lock since it was forked"
        );
        assert!(
            w.fix.contains("never started") && w.fix.contains("multiprocessing_context"),
            "{}",
            w.fix
        );
        let e = w.evidence.unwrap();
        assert_eq!(e.line, Some(5));
        assert!(
            e.text
                .starts_with("rank 1's process, pid 4360, a process forked"),
            "{}",
            e.text
        );
        // A child of another command (a helper the program started with exec) is not one.
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tpoll_schedule_timeout.constprop.0\t7.54\tpython3\t{cmd}\n\
             4344\t4321\tS\tpoll_schedule_timeout.constprop.0\t0.06\tpt_data_worker\t{cmd}\n\
             4360\t4321\tS\tfutex_do_wait\t0.00\tpython3\tpython3 -m resource_tracker\n"
        ));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert!(
            w.phrase.contains("(pid 4344), which was asleep"),
            "{}",
            w.phrase
        );
    }

    #[test]
    fn storage_a_busy_worker_and_no_worker_each_get_their_own_words() {
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tdo_select\t12.40\tpython\t\n\
             4388\t4321\tD\tnfs_wait_bit_killable\t0.35\tpt_data_worker\t\n"
        ));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert!(
            w.phrase.ends_with("which was waiting for storage"),
            "{}",
            w.phrase
        );
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tdo_select\t12.40\tpython\t\n\
             4388\t4321\tR\t\t95.10\tpt_data_worker\t\n"
        ));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert!(w.phrase.ends_with("which was busy"), "{}", w.phrase);
        let (_d, stack, procs) = files(&format!(
            "{HEADER}4321\t4300\tS\tdo_select\t12.40\tpython\t\n"
        ));
        let w = process_wait(&stack, procs.as_ref()).unwrap();
        assert!(w.phrase.ends_with("that were gone"), "{}", w.phrase);
        // No list (plain torchrun, or an older run): the wait itself, and how to look.
        let w = process_wait(&stack, None).unwrap();
        assert_eq!(
            w.phrase,
            ", waiting for a batch from its DataLoader workers"
        );
        assert!(w.fix.contains("py-spy dump"), "{}", w.fix);
    }

    #[test]
    fn a_rank_in_uninterruptible_io_or_stopped_is_told_so_and_asleep_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let stack_path = dir.path().join("python-stack-rank-0.txt");
        fs::write(
            &stack_path,
            "# rank 0's training thread (pid 700) when ddp-probe run asked (most recent call last):
  File \"/work/train.py\", line 64, in _save_snapshot
    torch.save(state, path)
",
        )
        .unwrap();
        let stack = python_stack::read(&stack_path).unwrap();
        let with = |state: &str, wchan: &str| {
            let path = dir.path().join(processes::file_name(0));
            fs::write(
                &path,
                format!("{HEADER}700\t650\t{state}\t{wchan}\t3.00\tpython\tpython train.py\n"),
            )
            .unwrap();
            process_wait(&stack, read(&path).as_ref())
        };
        let w = with("D", "nfs_wait_on_request").unwrap();
        assert_eq!(
            w.phrase,
            ", its process in uninterruptible I/O (nfs_wait_on_request)"
        );
        assert!(w
            .fix
            .starts_with("Rank 0's process (pid 700) was in uninterruptible I/O"));
        let e = w.evidence.unwrap();
        assert_eq!(
            (e.line, e.text.as_str()),
            (
                Some(2),
                "rank 0's process, pid 700, was in uninterruptible I/O (nfs_wait_on_request)"
            )
        );
        // A kernel that hides wait channels: the state alone.
        let w = with("D", "").unwrap();
        assert_eq!(w.phrase, ", its process in uninterruptible I/O");
        let w = with("T", "do_signal_stop").unwrap();
        assert_eq!(w.phrase, ", its process stopped");
        assert!(w.fix.contains("kill -CONT 700"), "{}", w.fix);
        assert_eq!(with("S", "futex_do_wait"), None);
        assert_eq!(with("R", ""), None);
        assert_eq!(process_wait(&stack, None), None);
    }

    #[test]
    fn a_stack_outside_the_data_loaders_wait_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("python-stack-rank-0.txt");
        fs::write(
            &path,
            "# rank 0's training thread when ddp-probe run asked (most recent call last):
  File \"/work/train.py\", line 64, in _save_snapshot
    __import__(\"time\").sleep(600)
",
        )
        .unwrap();
        let stack = python_stack::read(&path).unwrap();
        assert_eq!(stack.pid, None);
        assert_eq!(process_wait(&stack, None), None);
    }
}
