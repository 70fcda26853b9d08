//! The Python stacks of the ranks' training threads that the PyTorch module writes when
//! `ddp-probe run`'s hang watchdog asks (`logs/python-stack-rank-<R>.txt`, Python's traceback
//! format, outermost call first; see `python/ddp_probe_torch/__init__.py`): where a rank the
//! others wait for was when the run was stopped, said as the innermost frame of the program's
//! own code and the library call it was in.

use std::fs;
use std::path::{Path, PathBuf};

use crate::report::Evidence;
use crate::sanitize::{display_path, sanitize};

/// The start of a stack file's name; the rank and `.txt` follow.
pub(crate) const FILE_PREFIX: &str = "python-stack-rank-";

/// Largest stack file read (a deep stack is a few kB).
const MAX_BYTES: u64 = 1024 * 1024;

/// One frame: `File "train.py", line 64, in save` and the source line under it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Frame {
    pub file: String,
    pub line: u64,
    pub function: String,
    pub code: Option<String>,
    /// The 1-based line of the stack file that names the frame.
    pub at: u64,
}

/// One rank's stack.
#[derive(Debug, Clone)]
pub(crate) struct PyStack {
    pub rank: usize,
    pub path: PathBuf,
    /// Outermost first, as Python prints them.
    pub frames: Vec<Frame>,
    /// The rank's process id, when the file's first line names it (`(pid 4321)`).
    pub pid: Option<u32>,
    /// What its DataLoader workers were doing, when it waited for them (set once the run's
    /// processes files are read, by the module that reads them).
    pub process_wait: Option<ProcessWait>,
}

/// What a rank waiting for its DataLoader workers shows: the phrase that ends where it was,
/// the fix, and the processes file's line of the worker it names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessWait {
    /// ", waiting for a batch from its DataLoader worker (pid 4388), which was asleep on a lock".
    pub phrase: String,
    /// Where the rank was said without a stack ("in uninterruptible I/O (nfs_wait_on_request)"),
    /// when its process's state says it alone.
    pub place: Option<String>,
    pub fix: String,
    pub evidence: Option<Evidence>,
}

/// The rank of a stack file's name (`python-stack-rank-3.txt` → 3).
pub(crate) fn rank_of(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix(FILE_PREFIX)?
        .strip_suffix(".txt")?
        .parse()
        .ok()
}

/// Reads a stack file; None when it is not one (or holds no frame).
pub(crate) fn read(path: &Path) -> Option<PyStack> {
    let rank = rank_of(path)?;
    if fs::metadata(path).ok()?.len() > MAX_BYTES {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    let frames = parse(&text);
    (!frames.is_empty()).then(|| PyStack {
        rank,
        path: path.to_path_buf(),
        frames,
        pid: header_pid(&text),
        process_wait: None,
    })
}

/// The pid the first line names: `# rank 1's training thread (pid 4321) when ...`.
fn header_pid(text: &str) -> Option<u32> {
    let first = text.lines().next()?.strip_prefix('#')?;
    let (_, rest) = first.split_once("(pid ")?;
    rest.split_once(')')?.0.trim().parse().ok()
}

/// The frames of Python's traceback text (`  File "f.py", line 3, in g` then the code line).
fn parse(text: &str) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    let mut last_was_frame = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("File \"") {
            let Some((file, rest)) = rest.split_once("\", line ") else {
                last_was_frame = false;
                continue;
            };
            let Some((number, function)) = rest.split_once(", in ") else {
                last_was_frame = false;
                continue;
            };
            let Ok(number) = number.trim().parse() else {
                last_was_frame = false;
                continue;
            };
            out.push(Frame {
                file: file.to_owned(),
                line: number,
                function: function.trim().to_owned(),
                code: None,
                at: i as u64 + 1,
            });
            last_was_frame = true;
        } else if last_was_frame && !line.is_empty() && !line.starts_with('#') {
            if let Some(f) = out.last_mut() {
                f.code = Some(line.to_owned());
            }
            last_was_frame = false;
        } else {
            last_was_frame = false;
        }
    }
    out
}

/// Whether a frame's file (in a py-spy stack or a traceback) is a library's, Python's own or
/// ddp-probe's module (whose wrappers sit between the program and DDP, installed or run from the
/// build tree), not the program's.
pub(crate) fn is_library(file: &str) -> bool {
    // Windows tracebacks separate with backslashes (`C:\Python311\Lib\site-packages\torch\...`).
    let file = &file.replace('\\', "/");
    file.contains("/site-packages/")
        || file.contains("/dist-packages/")
        || file.contains("/lib/python")
        || file.contains("/torch/")
        || file.starts_with("torch/")
        || file.contains("ddp_probe_torch")
        || file.starts_with('<')
        || python_stdlib(file)
}

/// `/usr/lib/python3.11/threading.py` and the like.
fn python_stdlib(file: &str) -> bool {
    file.split('/').any(|part| {
        part.strip_prefix("python3")
            .is_some_and(|v| v.starts_with('.') && v[1..].chars().all(|c| c.is_ascii_digit()))
    })
}

/// A library frame's file as people know it: the part from the package on
/// (`torch/utils/data/dataloader.py`), else the file's name.
fn short(file: &str) -> String {
    for marker in ["/site-packages/", "/dist-packages/"] {
        if let Some((_, rest)) = file.split_once(marker) {
            return rest.to_owned();
        }
    }
    file.rsplit('/').next().unwrap_or(file).to_owned()
}

impl PyStack {
    /// Where the rank was, in words, and the stack file's line that shows it: "in
    /// _run_epoch at train.py:57 (`for x, y in loader:`), inside
    /// torch/utils/data/dataloader.py:1480 in _next_data" (the library part when the
    /// innermost frame is not the program's).
    pub(crate) fn whereabouts(&self) -> (String, u64) {
        let innermost = self.frames.last().expect("a stack has frames");
        let own_at = self.frames.iter().rposition(|f| !is_library(&f.file));
        let own = own_at.map(|i| &self.frames[i]);
        let frame = own.unwrap_or(innermost);
        let mut text = format!(
            "in {} at {}:{}",
            sanitize(&frame.function, 80),
            sanitize(&short(&frame.file), 120),
            frame.line
        );
        if let Some(code) = &frame.code {
            text.push_str(&format!(" (`{}`)", sanitize(code, 120)));
        }
        // The library call it was in: the innermost frame of an installed package (torch's
        // data loader, not the `threading.py` wait under it), else the innermost frame.
        // Only frames under the program's own count: a library that called the program's code
        // (the data loader calling `__getitem__`) is not where it was.
        let under = &self.frames[own_at.map_or(self.frames.len(), |i| i + 1)..];
        let inside = under
            .iter()
            .rev()
            .find(|f| f.file.contains("/site-packages/") || f.file.contains("/dist-packages/"))
            .or(under.last());
        if let (Some(_), Some(inside)) = (own, inside) {
            text.push_str(&format!(
                ", inside {}:{} in {}",
                sanitize(&short(&inside.file), 120),
                inside.line,
                sanitize(&inside.function, 80)
            ));
        }
        if let Some(w) = &self.process_wait {
            text.push_str(&w.phrase);
        }
        (text, frame.at)
    }

    /// Whether the rank was inside `torch.distributed` (a collective, a barrier, a store
    /// wait, DDP's checks when it wraps the model), that is waiting for its peers.
    pub(crate) fn in_distributed(&self) -> bool {
        self.frames
            .iter()
            .any(|f| f.file.contains("torch/distributed/"))
    }

    /// The function of the innermost `torch.distributed` frame, if any.
    pub(crate) fn innermost_distributed_function(&self) -> Option<&str> {
        self.frames
            .iter()
            .rev()
            .find(|f| f.file.contains("torch/distributed/"))
            .map(|f| f.function.as_str())
    }

    /// Whether the rank was inside a forward of a DistributedDataParallel model: DDP's forward
    /// runs collectives of its own before the module's (the broadcast of the module's buffers,
    /// BatchNorm's statistics; with `join`, an all-reduce of whether every rank still has
    /// data), which every rank must join.
    pub(crate) fn in_ddp_forward(&self) -> bool {
        self.frames.iter().any(|f| {
            f.file.ends_with("torch/nn/parallel/distributed.py")
                && matches!(f.function.as_str(), "forward" | "_pre_forward")
        })
    }

    /// Whether the rank was inside `init_process_group` (its rendezvous: the store waits
    /// for every rank of the world size to register).
    pub(crate) fn in_init_process_group(&self) -> bool {
        self.frames.iter().any(|f| {
            f.file.contains("torch/distributed/")
                && matches!(
                    f.function.as_str(),
                    "init_process_group" | "_env_rendezvous_handler" | "_create_c10d_store"
                )
        })
    }

    /// The innermost frame of the program's own code (not a library's), if any.
    pub(crate) fn own_frame(&self) -> Option<&Frame> {
        self.frames.iter().rev().find(|f| !is_library(&f.file))
    }

    /// Where the rank was ([`PyStack::whereabouts`]) and the evidence line that cites it.
    pub(crate) fn place(&self) -> (String, Evidence) {
        let (where_, at) = self.whereabouts();
        let evidence = Evidence {
            file: self.file(),
            line: Some(at),
            text: format!(
                "rank {}'s Python stack when the run was stopped: {where_}",
                self.rank
            ),
        };
        (where_, evidence)
    }

    /// The file for display.
    pub(crate) fn file(&self) -> String {
        display_path(&self.path)
    }

    /// The `torch.distributed` communication call the rank was blocked in, when its innermost
    /// frame of `distributed_c10d.py` is one ("recv", "barrier"): the rank was communicating,
    /// in a call the others were not in.
    pub(crate) fn communication_call(&self) -> Option<&str> {
        let c10d = self.frames.iter().rev().find(|f| {
            f.file
                .replace('\\', "/")
                .ends_with("torch/distributed/distributed_c10d.py")
        })?;
        COMMUNICATION_CALLS
            .contains(&c10d.function.as_str())
            .then_some(c10d.function.as_str())
    }
}

/// `torch.distributed`'s functions that block until peers take part (the blocking forms; an
/// `isend`'s or `irecv`'s wait is the work's, outside `distributed_c10d.py`).
const COMMUNICATION_CALLS: &[&str] = &[
    "send",
    "recv",
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "broadcast_object_list",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
];

#[cfg(test)]
mod tests {
    use super::*;

    const STACK: &str =
        "# rank 0's training thread when ddp-probe run asked (most recent call last):
  File \"/work/stuck.py\", line 112, in <module>
    main(args.save_every, args.total_epochs, args.batch_size)
  File \"/work/stuck.py\", line 102, in main
    trainer.train(total_epochs)
  File \"/work/stuck.py\", line 64, in _save_snapshot
    __import__(\"time\").sleep(600)  # a slow disk
";

    #[test]
    fn the_programs_innermost_frame_is_where_the_rank_was() {
        let frames = parse(STACK);
        assert_eq!(frames.len(), 3);
        let s = PyStack {
            rank: 0,
            path: PathBuf::from("logs/python-stack-rank-0.txt"),
            frames,
            pid: None,
            process_wait: None,
        };
        assert_eq!(
            s.whereabouts(),
            (
                "in _save_snapshot at stuck.py:64 (`__import__(\"time\").sleep(600)  # a slow disk`)"
                    .to_owned(),
                6
            )
        );
    }

    #[test]
    fn a_rank_inside_torch_distributed_is_waiting_for_its_peers() {
        let stack = |text: &str| PyStack {
            rank: 0,
            path: PathBuf::from("python-stack-rank-0.txt"),
            frames: parse(text),
            pid: None,
            process_wait: None,
        };
        // DDP's check of the model (the first collective a DDP script makes) and a plain
        // all-reduce, as PyTorch 2.13's frames read.
        assert!(stack(
            "  File \"/w/train.py\", line 181, in main\n    model = DDP(model)\n\
             \x20 File \"/v/lib/python3.11/site-packages/torch/distributed/utils.py\", line 286, in _verify_param_shape_across_processes\n    return dist._verify_params_across_processes(process_group, tensors, logger)\n"
        )
        .in_distributed());
        assert!(stack(
            "  File \"/w/t.py\", line 7, in <module>\n    dist.all_reduce(t)\n\
             \x20 File \"/v/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line 3252, in all_reduce\n    work.wait()\n"
        )
        .in_distributed());
        assert!(!stack(STACK).in_distributed());
    }

    #[test]
    fn a_library_that_called_the_program_is_not_where_it_was() {
        // A dataset's __getitem__ stuck in a read, called by the data loader's fetcher.
        let text = "  File \"/w/train.py\", line 57, in _run_epoch\n    for x, y in self.train_data:\n\
                    \x20 File \"/v/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py\", line 54, in fetch\n    data = [self.dataset[idx] for idx in possibly_batched_index]\n\
                    \x20 File \"/w/datautils.py\", line 17, in __getitem__\n    time.sleep(600)\n";
        let s = PyStack {
            rank: 1,
            path: PathBuf::from("python-stack-rank-1.txt"),
            frames: parse(text),
            pid: None,
            process_wait: None,
        };
        assert_eq!(
            s.whereabouts().0,
            "in __getitem__ at datautils.py:17 (`time.sleep(600)`)"
        );
    }

    #[test]
    fn a_library_call_it_was_inside_is_named_after_the_programs_frame() {
        let text = format!(
            "{STACK}  File \"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1480, in _next_data\n    idx, data = self._get_data()\n  File \"/usr/lib/python3.11/threading.py\", line 320, in wait\n    waiter.acquire()\n"
        );
        let s = PyStack {
            rank: 2,
            path: PathBuf::from("python-stack-rank-2.txt"),
            frames: parse(&text),
            pid: None,
            process_wait: None,
        };
        let (words, at) = s.whereabouts();
        assert_eq!(
            words,
            "in _save_snapshot at stuck.py:64 (`__import__(\"time\").sleep(600)  # a slow disk`), \
             inside torch/utils/data/dataloader.py:1480 in _next_data"
        );
        assert_eq!(at, 6);
        assert_eq!(
            rank_of(Path::new("/r/logs/python-stack-rank-12.txt")),
            Some(12)
        );
        assert_eq!(rank_of(Path::new("/r/logs/python-stack-rank-x.txt")), None);
    }
}
