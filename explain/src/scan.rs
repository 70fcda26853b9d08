//! Scanning one log file: every line goes through the rules, the NCCL parser,
//! a Python traceback tracker (plain, or drawn in a box by `rich`) and a torchelastic
//! failure-table reader. A line that a paste joined from several is read as the lines it was
//! made of ([`joined_line_starts`]); the prefixes launchers and log collectors put before
//! lines, paste quoting and markup, a rich-text paste's characters and colours are looked
//! through.
//!
//! Ranks are attributed per line: an explicit prefix (`[rank1]:`, `[Rank 1]`,
//! `[PG 0 Rank 1]`, torchrun's `[default1]:`) wins; otherwise the NCCL process
//! that printed the line (resolved once all files are read); otherwise the
//! rank the file belongs to.

use std::collections::{HashMap, VecDeque};

use probe::text::strip_csi;

use crate::category::Category;
use crate::desync_snapshot::{Mismatch, SnapshotReader, RULE_DESYNC_SNAPSHOT_MISMATCH};
use crate::nccl::{self, Level, NcclCollector};
use crate::record_prefix::{self, Lesson, LinePrefixProbe, RecordPrefix};
use crate::report::{Evidence, Role};
use crate::rules;
use crate::sanitize::{sanitize, MAX_EVIDENCE_CHARS};
use crate::shape::LogShape;
use crate::signal::{Attach, Signal};

/// Lines kept per file for an `unknown` finding.
const TELLING_PER_FILE: usize = 12;
/// Last lines kept per file.
const LAST_LINES: usize = 5;
/// Bytes of each of the last lines kept (the evidence is cut shorter).
const LAST_LINE_BYTES: usize = 4096;
/// Bytes of a line that the patterns look at: every message they know
/// starts well within it, and it bounds the work per line of hostile input.
const ANALYSED_BYTES: usize = 8 * 1024;

/// What scanning one file found.
#[derive(Debug, Default)]
pub(crate) struct FileScan {
    /// Observations.
    pub signals: Vec<Signal>,
    /// Warning and error lines no rule explains, for an `unknown` finding.
    pub telling: Vec<Evidence>,
    /// Whether one of [`FileScan::telling`]'s lines says an error happened
    /// ([`says_an_error`]), read without the prefixes taken off each line.
    pub telling_says_error: bool,
    /// The last lines of the file.
    pub last: VecDeque<Evidence>,
    /// The rank the file is of, when its name or place says so (`logs/rank-1.stdout`).
    pub rank: Option<usize>,
    /// Whether a traceback in it ran through `torch.multiprocessing.spawn`'s `_wrap`: the
    /// process that raised was started by the program's own `mp.spawn`.
    pub spawned_by_the_program: bool,
    /// Whether any line was understood (an NCCL line or a rule match).
    pub recognised: bool,
    /// The rank torchelastic names as the root cause, if its table was seen.
    pub elastic_root: Option<usize>,
    /// Lines read.
    pub lines: u64,
}

#[derive(Debug)]
struct Traceback {
    last_frame: Option<Evidence>,
    /// The code line under the last frame (`    torch.cuda.set_device(local_rank)`).
    last_code: Option<Evidence>,
    /// The last frame in the program's own code ([`is_program_frame`]) and its code line:
    /// where to look when the exception was raised inside a library.
    program_frame: Option<(Evidence, Option<Evidence>)>,
    /// Whether the last frame was the program's own.
    in_program_frame: bool,
    /// The innermost call of `torch/distributed/distributed_c10d.py` (`all_reduce`,
    /// `broadcast`, `barrier`): the collective the rank was in when the exception came.
    collective: Option<String>,
    /// How far its `Traceback (most recent call last):` line is indented: its frames are
    /// indented further, its exception line is not (a paste indented as a Markdown code block
    /// indents them all; 5 of the corpus's answers were lost to that, 2026-12-03).
    indent: usize,
    /// How far its last frame line (`File "...", line N, in f`) is indented: an exception
    /// line no deeper than that after the frame's code line ends the traceback even where the
    /// paste indented it past the header (a FAQ's `    AssertionError` under `    File ...`).
    frame_indent: Option<usize>,
    /// Characters of its last line: a line as long as [`WRAP_MIN_CHARS`] or longer may go on
    /// in the next line, unindented, when a terminal or a paste hard-wrapped it.
    last_chars: usize,
    /// Unindented lines in a row that are no exception line: another rank's or thread's
    /// output printed into the traceback, up to [`STRAY_LINES_MAX`].
    strays: usize,
    /// Where its frames say the exception came from, when that changes what it means
    /// ([`TracebackPlace`]).
    place: Option<TracebackPlace>,
    /// The rank its header names: `torch.distributed.checkpoint`'s `CheckpointException`
    /// prints each failed rank's traceback on every rank, under "Traceback (most recent call
    /// last): (RANK 3)" (`checkpoint/api.py`).
    raised_on: Option<usize>,
}

/// Places in a traceback that change what its exception line means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TracebackPlace {
    /// Receiving a tensor another process shared (`torch/multiprocessing/reductions.py`'s
    /// `rebuild_storage_fd`, which connects to the sender through CPython's
    /// `multiprocessing/resource_sharer.py`, or `rebuild_storage_filename`, through libshm's
    /// torch_shm_manager socket): a refused connection there means the DataLoader worker (or
    /// the manager) that sent it had ended, not that the store or a peer rank was missing.
    SharedTensor,
    /// Pinning a batch (`torch/utils/data/_utils/pin_memory.py`): `pin_memory()` allocates
    /// page-locked *host* memory through CUDA (`cudaHostAlloc` in `CachingHostAllocator.cpp`),
    /// so "CUDA error: out of memory" there is host memory, not the GPU's.
    PinMemory,
    /// An HTTP client's connection (urllib3, requests, botocore, http.client, aiohttp, httpx,
    /// huggingface_hub): a refused connection there is a data, model or object-storage host
    /// (S3, MinIO, the Hugging Face Hub), not the store or a peer rank.
    HttpClient,
    /// Creating a multiprocessing lock, semaphore or queue (CPython's
    /// `multiprocessing/synchronize.py`: `_multiprocessing.SemLock(...)`, a POSIX `sem_open`
    /// whose file lives in /dev/shm; `mp.Queue()`, `SimpleQueue()`, so also
    /// `torch.multiprocessing.spawn`'s error queue and the DataLoader's index queues): "[Errno
    /// 28] No space left on device" there is /dev/shm full (cpython#93253 reproduces it with
    /// `docker run --shm-size=1m`; Megatron-LM#878 in the DataLoader's queue).
    SemLock,
    /// Printed by a library's `logger.warning(..., exc_info=True)` right after the warning
    /// ([`LOGS_ITS_TRACEBACK`]): the exception was caught, and the program went on.
    LoggedByWarning,
}

/// Whether a line (lowercased) is one of the warnings [`LOGS_ITS_TRACEBACK`] lists.
fn logs_its_traceback(lower: &str) -> bool {
    LOGS_ITS_TRACEBACK.iter().any(|w| lower.contains(w))
}

/// Warnings that PyTorch logs with the traceback of the exception it caught
/// (`logger.warning(..., exc_info=True)`) before it goes on: the traceback on the next line
/// ends in an exception nobody raised further. torch 2.13's `checkpoint/state_dict_loader.py`
/// (`local_step`: a checkpoint saved with `use_collectives=False` has no global `.metadata`, so
/// every load of it prints a `FileNotFoundError` traceback under the first, and loads the
/// rank's own file; only the `AssertionError: metadata is None` that follows when that fails
/// too is a failure), `elastic/multiprocessing/api.py`, `elastic/rendezvous/registry.py`,
/// `launcher/api.py` and `distributed_c10d.py`'s group teardown.
const LOGS_ITS_TRACEBACK: &[&str] = &[
    "global metadata is not found. falling back to rank local metadata",
    "rank local metadata is not found.",
    "failed to register signal handler for ",
    "exception while registering out of tree plugin ",
    "failed to start early health check server",
    "failed to fully clean up global state for process group",
];

impl TracebackPlace {
    /// The place a frame line (`File ".../x.py", line N, in f`) is in, if it is one.
    fn of_frame(frame: &str) -> Option<TracebackPlace> {
        if frame.contains("multiprocessing/resource_sharer.py")
            || frame.contains(", in rebuild_storage_")
        {
            Some(TracebackPlace::SharedTensor)
        } else if frame.contains("data/_utils/pin_memory.py") {
            Some(TracebackPlace::PinMemory)
        } else if frame.contains("multiprocessing/synchronize.py") {
            Some(TracebackPlace::SemLock)
        } else if [
            "/urllib3/",
            "/requests/",
            "/botocore/",
            "/http/client.py",
            "/aiohttp/",
            "/httpx/",
            "/huggingface_hub/",
        ]
        .iter()
        .any(|p| frame.contains(p))
        {
            Some(TracebackPlace::HttpClient)
        } else {
            None
        }
    }

    /// What a rule's reading of the exception line becomes in this place, with the finding's
    /// detail; `None` where the place does not change it.
    fn reading(self, category: Category) -> Option<(&'static str, Category, &'static str)> {
        match (self, category) {
            (TracebackPlace::SharedTensor, Category::ConnectionRefused) => Some((
                "shared_tensor_sender_gone",
                Category::RankCrashed,
                "the connection to the process that shared a tensor with this one was \
                 refused (torch.multiprocessing's reductions.py)",
            )),
            (TracebackPlace::HttpClient, Category::ConnectionRefused) => Some((
                "http_connection_refused",
                Category::RankCrashed,
                "a web, object-storage or serving host refused the connection (an HTTP client's \
                 call: a dataset, checkpoint or model download, or a server such as vLLM's), not \
                 the store or a peer rank",
            )),
            (TracebackPlace::PinMemory, Category::CudaOom) => Some((
                "pin_memory_host_alloc_failed",
                Category::RankCrashed,
                "out of memory while pinning a batch (the DataLoader's pin_memory.py)",
            )),
            _ => None,
        }
    }
}

impl Traceback {
    /// A traceback whose header is indented by `indent`, before any of its lines.
    fn under(indent: usize) -> Self {
        Traceback {
            last_frame: None,
            last_code: None,
            program_frame: None,
            in_program_frame: false,
            collective: None,
            indent,
            frame_indent: None,
            last_chars: 0,
            strays: 0,
            place: None,
            raised_on: None,
        }
    }
}

/// Lines in a row of other output a traceback goes on past. Another rank's or thread's lines
/// (a logger's, a progress line) land between a traceback's lines when processes share a
/// terminal; one such line after every third line of each real log of `tests/corpus.rs` had
/// changed 16 answers to a crash named after the line (`INFO:root:...`, `wandb: ...`), and
/// after every line it still changed some once those no longer read as exceptions.
const STRAY_LINES_MAX: usize = 2;

/// PyTorch's re-raised exception of another process or thread (`torch/_utils.py`'s
/// `ExceptionWrapper`: "ValueError: Caught ValueError in DataLoader worker process 0." then
/// "Original Traceback (most recent call last):" and the original's frames and exception line),
/// held until the original's exception line comes.
#[derive(Debug)]
struct Wrapped {
    number: Option<u64>,
    body: String,
    /// "DataLoader worker process 0", "replica 0 on device 0".
    place: String,
}

#[derive(Debug, Default)]
struct ElasticTable {
    active: bool,
    in_root_section: bool,
    rank: Option<usize>,
    seen_field: bool,
}

/// Lines from the kubelet's "could not be located" message to the exit code under it
/// (`kubectl describe`'s Message, then Exit Code; a Reason or Started line between).
const CONTAINER_LOST_LINES: u64 = 3;

/// Scans the lines of one file.
pub(crate) struct Scanner<'a> {
    file: String,
    file_rank: Option<usize>,
    nccl: &'a mut NcclCollector,
    shape: &'a mut LogShape,
    out: FileScan,
    tracebacks: HashMap<Option<usize>, Traceback>,
    /// The rank whose last line was a warning that logs its traceback next
    /// ([`LOGS_ITS_TRACEBACK`]).
    warned_with_traceback: Option<Option<usize>>,
    wrapped: HashMap<Option<usize>, Wrapped>,
    last: VecDeque<(Option<u64>, String)>,
    elastic: ElasticTable,
    /// PyTorch's desync report's snapshot, group by group.
    desync_snapshot: SnapshotReader,
    order: &'a mut u64,
    /// The previous line, when it was as long as the longest line so far: the first part of
    /// a line a terminal or a paste wrapped ([`WRAP_MIN_CHARS`]), with the rule it matched.
    unmatched_longest: Option<WrapCandidate>,
    /// The longest line so far, in characters.
    longest: usize,
    /// The characters of the line being read, its prefixes included: a terminal wraps the
    /// line as shown, so this, not its body's, compares with [`Self::longest`].
    line_chars: usize,
    /// The width the whole log was hard-wrapped at ([`PasteProbe`]), if it was.
    wrap_width: Option<usize>,
    /// The indentation every line of the log shares ([`PasteProbe`]), taken off each line.
    common_indent: String,
    /// The parts so far of a line the log's wrap cut (its first part's number, the parts
    /// joined), while they come in lines of exactly the wrap width.
    wrapped_parts: Option<(Option<u64>, String)>,
    /// Inside a traceback that the `rich` library drew in a box ([`rich_traceback_line`]).
    in_rich_traceback: bool,
    /// Whether the log was pasted with line numbers ([`PasteProbe::numbered`]), taken off.
    numbered: bool,
    /// The prefix the last traceback's or stack dump's first line had ([`record_prefix`]),
    /// taken off the lines that have it.
    record_prefix: Option<RecordPrefix>,
    /// A logger's prefix on nearly every line ([`LinePrefixProbe`]), taken off each line after
    /// the prefixes stripped by name.
    line_prefix: Option<RecordPrefix>,
}

/// The shortest line taken as the first part of a wrapped one. Hard-wrapping every real log
/// of `tests/corpus.rs` at 80 columns changed 38 answers and at 120 columns 23 (2026-12-03):
/// a wrap splits a message a rule reads whole. A wrapped line's parts are the longest lines of
/// the file (the wrap width), so a line no rule matched, as long as the longest so far and at
/// least this long, is read once more joined with the next one when neither matches alone.
const WRAP_MIN_CHARS: usize = 60;

/// Finds the width a terminal or a paste hard-wrapped a whole log at, read before the log is
/// scanned (a first pass over its lines). A hard-wrapped log's longest lines all have the
/// wrap's width and different texts (the parts of different long lines); in a log as printed
/// the longest line is one message, or one message printed by every rank. So the width is the
/// longest line's length when at least [`WRAPPED_PARTS_MIN`] different texts have it (its
/// first word and digits aside, so that the same message of two ranks or hosts counts once)
/// and it is at least [`WRAP_MIN_CHARS`]. Lines a program pads to the terminal's width
/// ([`padded_to_width`]) are not parts.
///
/// Measured on `tests/corpus.rs`'s real logs, 2026-12-03: hard-wrapping every one at 80 and
/// 120 columns had changed 13 and 9 answers with only [`WrapCandidate`]'s joins, and 0 and 1
/// with the wrap read whole (the 1 is a single line cut in two, which gives no width). The logs
/// as pasted give the same answers; ten of them are read as wrapped, eight of which a
/// reporter's terminal or paste did wrap.
///
/// It also finds the indentation every line of the log shares (a paste indented as a Markdown
/// code block, or quoted so): taken off before the lines are read, as Python's
/// `textwrap.dedent` would, so that a traceback's exception line starts at its column again.
#[derive(Debug, Default)]
pub(crate) struct PasteProbe {
    longest: usize,
    /// Different texts (digits as `0`) of the longest length so far, up to the number needed.
    at_longest: Vec<String>,
    /// The leading spaces and tabs every non-blank line so far begins with.
    indent: Option<String>,
    /// Non-blank lines so far, and those of them that start with a line number.
    nonblank: usize,
    numbered: usize,
    /// The last line number, whether every one so far was larger than the one before, and
    /// how many were one larger.
    last_number: Option<u64>,
    numbers_increase: bool,
    numbers_consecutive: usize,
    /// Lines whose number a tab follows (`cat -n`'s and `nl`'s form).
    tab_numbered: usize,
    /// The last time stamp seen at a line's start, and how often the next one was later or
    /// earlier.
    last_time: Option<String>,
    times_later: usize,
    times_earlier: usize,
    /// The starts of the lines, for a logger's prefix on nearly every one.
    line_prefix: LinePrefixProbe,
}

/// Different texts of the longest length that make a log hard-wrapped (see [`PasteProbe`]).
const WRAPPED_PARTS_MIN: usize = 2;

impl PasteProbe {
    /// Feeds one line as read.
    pub fn line(&mut self, raw: &str) {
        let raw = plain_characters(without_byte_order_mark(raw));
        let raw = raw.as_ref();
        match structured_message(raw).or_else(|| escaped_message(raw)) {
            Some(message) => message.lines().for_each(|part| self.pasted_line(part)),
            None => self.pasted_line(raw),
        }
    }

    fn pasted_line(&mut self, raw: &str) {
        if let Some(time) = leading_time_stamp(raw) {
            match self
                .last_time
                .as_deref()
                .map(|last| time.as_str().cmp(last))
            {
                Some(std::cmp::Ordering::Greater) => self.times_later += 1,
                Some(std::cmp::Ordering::Less) => self.times_earlier += 1,
                _ => {}
            }
            self.last_time = Some(time);
        }
        if !raw.trim().is_empty() {
            self.nonblank += 1;
            if let Some((n, len)) = line_number(raw) {
                self.tab_numbered += usize::from(raw.as_bytes()[len - 1] == b'\t');
                self.numbers_increase =
                    (self.numbered == 0 || self.numbers_increase) && self.last_number < Some(n);
                self.numbers_consecutive += usize::from(self.last_number == n.checked_sub(1));
                self.numbered += 1;
                self.last_number = Some(n);
            }
            let lead = &raw[..raw.len() - raw.trim_start_matches([' ', '\t']).len()];
            match &mut self.indent {
                None => self.indent = Some(lead.to_owned()),
                Some(common) => {
                    let shared = common
                        .bytes()
                        .zip(lead.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    common.truncate(shared);
                }
            }
        }
        let plain = strip_csi(raw);
        self.line_prefix
            .line(strip_launcher_prefix(&unquote_paste(&plain)).1);
        let chars = plain.chars().count();
        if chars < WRAP_MIN_CHARS || chars < self.longest || padded_to_width(&plain) {
            return;
        }
        if chars > self.longest {
            self.longest = chars;
            self.at_longest.clear();
        }
        if self.at_longest.len() < WRAPPED_PARTS_MIN {
            let text = plain.trim_start();
            // A host's, a time stamp's or a process's tag before the message.
            let text = match text.find(' ') {
                Some(i) if i <= 40 => &text[i..],
                _ => text,
            };
            let text: String = text
                .chars()
                .map(|c| if c.is_ascii_digit() { '0' } else { c })
                .collect();
            if !self.at_longest.contains(&text) {
                self.at_longest.push(text);
            }
        }
    }

    /// The wrap width, when the lines fed were hard-wrapped.
    pub fn wrap_width(&self) -> Option<usize> {
        (self.at_longest.len() >= WRAPPED_PARTS_MIN).then_some(self.longest)
    }

    /// The indentation every non-blank line fed shares, when there is one.
    pub fn common_indent(&self) -> Option<&str> {
        self.indent.as_deref().filter(|i| !i.is_empty())
    }

    /// Whether the lines were pasted numbered (`cat -n`, `nl`, `grep -n -C`, `less -N`, an
    /// editor's gutter): nearly all of them start with a number, the numbers only grow, and
    /// mostly by one. A launcher's labels (`srun -l`'s `0: `, `1: `) and time stamps repeat
    /// theirs; the sizes in nccl-tests' rows double.
    ///
    /// A log of fewer lines is numbered when each has `cat -n`'s number and tab.
    pub fn numbered(&self) -> bool {
        let short_and_tabbed = self.nonblank > 0 && self.tab_numbered == self.nonblank;
        self.numbers_increase
            && (short_and_tabbed
                || self.nonblank >= NUMBERED_LINES_MIN
                    && self.numbered * 10 >= self.nonblank * 9
                    && self.numbers_consecutive * 2 >= self.numbered)
    }
}

impl PasteProbe {
    /// Whether the log was pasted newest line first, as log viewers show it (Grafana's and
    /// Kibana's default order): its lines' time stamps mostly go back in time. It is then
    /// read oldest first, as it was written.
    pub fn newest_first(&self) -> bool {
        self.times_earlier >= NEWEST_FIRST_STEPS_MIN
            && self.times_earlier >= NEWEST_FIRST_RATIO * self.times_later
    }
}

/// The fewest steps back in time that make a log newest first ([`PasteProbe::newest_first`]).
const NEWEST_FIRST_STEPS_MIN: usize = 3;
/// How many more steps back than forward make a log newest first: ranks' lines interleaved
/// with clocks a little apart go back now and then.
const NEWEST_FIRST_RATIO: usize = 4;

/// An ISO 8601 time stamp (`2026-12-03T16:29:05.123Z`, `2026-12-03 16:29:05,123`) within the
/// first bytes of a line, what log collectors and viewers put first; as a text that sorts
/// like the time (date and time joined by a space, the fraction's separator a dot).
fn leading_time_stamp(line: &str) -> Option<String> {
    let head = head(line, 64).as_bytes();
    let (start, end) = (0..head.len().saturating_sub(18))
        .find_map(|i| iso_date_time_end(head, i).map(|end| (i, end)))?;
    let text: String = head[start..end]
        .iter()
        .map(|&b| match b {
            b'T' => ' ',
            b',' => '.',
            b => char::from(b),
        })
        .collect();
    Some(text)
}

/// The fewest non-blank lines a log is taken as numbered with ([`PasteProbe::numbered`]).
const NUMBERED_LINES_MIN: usize = 3;

/// A line number at the start of `line` (right-aligned: spaces before it) and the one
/// separator after it: a tab (`cat -n`, `nl`), `:` or `-` (`grep -n`'s matching and context
/// lines) or a space (`less -N`, editors). Returns the number and the bytes up to the line.
fn line_number(line: &str) -> Option<(u64, usize)> {
    let digits_at = line.len() - line.trim_start_matches(' ').len();
    let digits = line[digits_at..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    let end = digits_at + digits;
    let separated = matches!(line.as_bytes().get(end), Some(b'\t' | b':' | b'-' | b' '));
    if !(1..=7).contains(&digits) || !separated {
        return None;
    }
    Some((line[digits_at..end].parse().ok()?, end + 1))
}

/// A line that is as long as it is by design, never the first part of a wrapped one: a
/// table's rule (one character repeated: `-----`), a progress bar (tqdm's `%|`, block
/// characters), a box (rich's tracebacks end each line with `│`).
fn padded_to_width(line: &str) -> bool {
    let line = line.trim();
    let mut chars = line.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    chars.all(|c| c == first)
        || line.contains("%|")
        || line.chars().any(|c| ('\u{2580}'..='\u{259f}').contains(&c))
        || line
            .chars()
            .next_back()
            .is_some_and(|c| ('\u{2500}'..='\u{257f}').contains(&c))
}

/// A line that may be the first part of a wrapped one.
struct WrapCandidate {
    number: Option<u64>,
    raw: String,
    /// Its body, or the bodies of the parts so far joined.
    body: String,
    /// The position in [`rules::RULES`] of the rule its parts matched, if any, and what that
    /// rule read: the joined line counts only with a rule before it (a more specific one: a
    /// generic NCCL warning matched the first part, the words of the specific one are in the
    /// second) or the same rule reading more (the counts of a message cut in the middle).
    rule: Option<(usize, rules::Extract)>,
    /// How many signals the file had before its parts were read: what they were read as alone
    /// gives way to the joined line.
    signals_before: usize,
}

/// The longest run of wrapped parts read as one line, in bytes.
const WRAP_MAX_BYTES: usize = 4096;

impl<'a> Scanner<'a> {
    /// A scanner for `file` (display name) whose lines belong to `file_rank`
    /// unless they say otherwise.
    pub fn new(
        file: String,
        file_rank: Option<usize>,
        nccl: &'a mut NcclCollector,
        shape: &'a mut LogShape,
        order: &'a mut u64,
    ) -> Scanner<'a> {
        Scanner {
            file,
            file_rank,
            nccl,
            shape,
            out: FileScan::default(),
            tracebacks: HashMap::new(),
            warned_with_traceback: None,
            wrapped: HashMap::new(),
            last: VecDeque::new(),
            elastic: ElasticTable::default(),
            desync_snapshot: SnapshotReader::default(),
            order,
            unmatched_longest: None,
            line_chars: 0,
            longest: 0,
            wrap_width: None,
            common_indent: String::new(),
            wrapped_parts: None,
            in_rich_traceback: false,
            numbered: false,
            record_prefix: None,
            line_prefix: None,
        }
    }

    /// Reads the log as pasted the way `probe` found (see [`PasteProbe`]): without the
    /// indentation all its lines share, and when it was hard-wrapped, a line of exactly the
    /// width together with the lines after it, up to the first shorter one.
    pub fn read_as_pasted(&mut self, probe: &PasteProbe) {
        self.numbered = probe.numbered();
        self.wrap_width = probe.wrap_width();
        self.common_indent = probe.common_indent().unwrap_or_default().to_owned();
        self.line_prefix = probe.line_prefix.prefix();
    }

    fn evidence(&self, line: Option<u64>, text: &str) -> Evidence {
        Evidence {
            file: self.file.clone(),
            line,
            text: sanitize(text, MAX_EVIDENCE_CHARS),
        }
    }

    fn next_order(&mut self) -> u64 {
        *self.order += 1;
        *self.order
    }

    /// Feeds one line.
    pub fn line(&mut self, number: Option<u64>, raw: &str) {
        self.out.lines += 1;
        let raw = plain_characters(without_byte_order_mark(raw));
        let raw = raw.as_ref();
        match structured_message(raw).or_else(|| escaped_message(raw)) {
            // A collector's record: its message, line by line (a traceback can be one record).
            Some(message) => message
                .lines()
                .for_each(|part| self.pasted_line(number, part)),
            // Carriage returns inside a line longer than the bytes a line is analysed for: a
            // progress bar redrawn in place (tqdm's `\r 38%|`) and whatever was printed after
            // its last redraw, read as the terminal's lines, one each. Read as one line, a
            // saved log's progress bars hid what came after them (`srun: Job step aborted` 10
            // KB into a tqdm line of a real log, 2026-12-06). A shorter line is read whole,
            // its carriage returns shown in the evidence as they are (escaped), and what
            // follows one is cut apart like a joined line's parts.
            None if raw.len() > ANALYSED_BYTES && raw.contains('\r') => raw
                .split('\r')
                .filter(|part| !part.trim().is_empty())
                .for_each(|part| self.pasted_line(number, part)),
            None => self.pasted_line(number, raw),
        }
    }

    /// One line of the log as pasted: without the indentation all its lines share, a hard
    /// wrap's parts joined.
    fn pasted_line(&mut self, number: Option<u64>, raw: &str) {
        let raw = raw.strip_prefix(self.common_indent.as_str()).unwrap_or(raw);
        let raw = match line_number(raw) {
            Some((_, len)) if self.numbered => &raw[len..],
            _ => raw,
        };
        let Some(width) = self.wrap_width else {
            return self.unwrapped_line(number, raw);
        };
        let plain = strip_csi(raw);
        let full = plain.chars().count() == width && !padded_to_width(&plain);
        match self.wrapped_parts.take() {
            Some((first, joined))
                if starts_a_record(&plain) || next_traceback_line(&joined, &plain) =>
            {
                // The last part ended where its line did, at the width by chance.
                self.unwrapped_line(first, &joined);
                if full {
                    self.wrapped_parts = Some((number, raw.to_owned()));
                } else {
                    self.unwrapped_line(number, raw);
                }
            }
            Some((first, mut joined)) => {
                joined.push_str(raw);
                if full && joined.len() < WRAP_MAX_BYTES {
                    self.wrapped_parts = Some((first, joined));
                } else {
                    self.unwrapped_line(first, &joined);
                }
            }
            None if full => self.wrapped_parts = Some((number, raw.to_owned())),
            None => self.unwrapped_line(number, raw),
        }
    }

    /// Reads one line as printed (a wrapped one's parts joined).
    fn unwrapped_line(&mut self, number: Option<u64>, raw: &str) {
        if raw.trim().is_empty() {
            return;
        }
        let plain = strip_csi(head(raw, ANALYSED_BYTES));
        let plain = unquote_paste(&plain);
        // A quoted empty line (`>`) is an empty line; so is the markup a paste into an issue
        // brings around a log (a Markdown fence, a collapsed `<details>` block).
        if plain.trim().is_empty() || is_paste_markup(plain.trim()) {
            return;
        }
        let (line_rank, body) = strip_launcher_prefix(&plain);
        let (line_rank, body) = match self.line_prefix.as_ref().and_then(|p| p.length_in(body)) {
            Some(len) => {
                let (rank, rest) = strip_launcher_prefix(&body[len..]);
                (rank.or(line_rank), rest)
            }
            None => (line_rank, body),
        };
        let body = self.without_record_prefix(body);
        let prefix = plain.len() - body.len();
        let parts = joined_line_starts(&plain[prefix..]);
        if parts.len() == 1 {
            return self.logical_line(number, raw, &plain, line_rank, body);
        }
        for (i, &start) in parts.iter().enumerate() {
            let start = if i == 0 { 0 } else { prefix + start };
            let end = parts.get(i + 1).map_or(plain.len(), |e| prefix + e);
            let part = &plain[start..end];
            if !part.trim().is_empty() {
                // A part joined into a labelled line is that label's unless it has its own.
                let (part_rank, part_body) = strip_launcher_prefix(part);
                self.logical_line(number, part, part, part_rank.or(line_rank), part_body);
            }
        }
    }

    /// `body` without the prefix a traceback's or a stack dump's first line taught
    /// ([`record_prefix`]); a block's first line with another prefix teaches that one, and one
    /// with none forgets it. The teaching line itself is kept whole (what it holds before the
    /// block may be a line a paste joined to it, which [`joined_line_starts`] cuts apart).
    fn without_record_prefix<'b>(&mut self, body: &'b str) -> &'b str {
        let known = self.record_prefix.as_ref().and_then(|p| p.length_in(body));
        let rest = &body[known.unwrap_or(0)..];
        match record_prefix::lesson(rest) {
            Lesson::Prefix(p, _) => self.record_prefix = Some(p),
            Lesson::Bare if known.is_none() => self.record_prefix = None,
            _ => {}
        }
        rest
    }

    /// One line of the log as it was printed: `raw` as the file has it (for evidence), `plain`
    /// without colours and paste quoting, `body` without the launchers' and collectors'
    /// prefixes, and `prefix_rank` the rank they name.
    fn logical_line(
        &mut self,
        number: Option<u64>,
        raw: &str,
        plain: &str,
        prefix_rank: Option<usize>,
        body: &str,
    ) {
        // `[rank0]:` alone: a launcher labels the rank's empty lines too.
        if body.trim().is_empty() {
            return;
        }
        let explicit = prefix_rank.or_else(|| bracket_rank(body));
        let observer = explicit.or(self.file_rank);
        if self.last.len() == LAST_LINES {
            self.last.pop_front();
        }
        self.last
            .push_back((number, head(raw, LAST_LINE_BYTES).to_owned()));

        let parsed = nccl::parse_line(body);
        let process = parsed
            .as_ref()
            .and_then(|p| p.pid.map(|pid| (p.host.to_owned(), pid)));
        let file = &self.file;
        let evidence = || Evidence {
            file: file.clone(),
            line: number,
            text: sanitize(raw, MAX_EVIDENCE_CHARS),
        };
        if let Some(p) = &parsed {
            self.out.recognised = true;
            self.nccl.observe(p, observer, &evidence);
        }
        let lower = body.to_ascii_lowercase();
        self.shape
            .observe(body, &lower, parsed.is_some(), observer, &evidence);
        let mut matched = rules::classify(body);
        // `kubectl describe pod` puts the kubelet's message and the exit code it wrote for a
        // container it lost on separate lines; `rules::shell_report` reads the two joined. The
        // message is among the last lines kept (this one is the newest).
        if matched.as_ref().is_some_and(|m| m.0.name == "shell_killed") {
            let lost_just_above = self.last.iter().rev().skip(1).any(|(at, text)| {
                at.zip(number)
                    .is_some_and(|(at, n)| n > at && n - at <= CONTAINER_LOST_LINES)
                    && rules::kubelet_lost_the_container(&text.to_ascii_lowercase())
            });
            if lost_just_above {
                matched = None;
            }
        }
        // A terminal wraps the line as shown, prefixes included.
        let chars = plain.chars().count();
        self.line_chars = chars;
        let previous = self.unmatched_longest.take();
        let mut joined_from = None;
        let mut carried = None;
        // The second part of a wrapped line is read joined to the first when it matched
        // nothing alone, or only a rule less specific than the whole line's (NCCL's
        // `shm.cc ... Cuda failure 217 'peer access is not supported ...'` cut before its last
        // words reads as the P2P transport's alone).
        let alone = matched.as_ref().map(|m| rules::position(m.0));
        // A line that starts a record of its own (parsed as NCCL's above, or another
        // logger's) is not the rest of the previous one.
        if let Some(prev) = previous.filter(|_| parsed.is_none() && !starts_a_record(body)) {
            // A hard wrap keeps every character (the space it cut before starts the next
            // part); a word wrap drops the space it cut at.
            let joined = format!("{}{body}", prev.body);
            let worded =
                !body.starts_with(char::is_whitespace) && !prev.body.ends_with(char::is_whitespace);
            let found = rules::classify(&joined).or_else(|| {
                worded
                    .then(|| rules::classify(&format!("{} {body}", prev.body)))
                    .flatten()
            });
            let says_more = |(rule, ex): &(usize, rules::Extract), m: &(&rules::Rule, _)| {
                let at = rules::position(m.0);
                at < *rule || (at == *rule && m.1 != *ex)
            };
            let beats_alone =
                |m: &(&rules::Rule, _)| alone.is_none_or(|a| rules::position(m.0) < a);
            match found {
                Some(m)
                    if prev.rule.as_ref().is_none_or(|r| says_more(r, &m)) && beats_alone(&m) =>
                {
                    // What the first part alone was read as (an exception line:
                    // `RuntimeError: [enforce fail at ...] ... Unable to find`; the same
                    // rule without the counts the second part holds): the whole line says
                    // more.
                    self.out.signals.truncate(prev.signals_before);
                    matched = Some(m);
                    joined_from = Some((prev.number, prev.raw));
                }
                _ if alone.is_none() && joined.len() <= WRAP_MAX_BYTES => {
                    // A line wrapped into three parts or more: the parts so far go on.
                    carried = Some(WrapCandidate {
                        body: joined,
                        ..prev
                    });
                }
                _ => {}
            }
        }
        if chars >= WRAP_MIN_CHARS && chars >= self.longest && joined_from.is_none() {
            let rule = matched
                .as_ref()
                .map(|m| (rules::position(m.0), m.1.clone()));
            self.unmatched_longest = Some(match carried {
                Some(c) if rule.is_none() => c,
                _ => WrapCandidate {
                    number,
                    raw: raw.to_owned(),
                    body: body.to_owned(),
                    rule,
                    signals_before: self.out.signals.len(),
                },
            });
        }
        self.longest = self.longest.max(chars);
        if matched.is_none()
            && is_telling(&lower, parsed.as_ref().map(|p| p.level))
            && self.out.telling.len() < TELLING_PER_FILE
        {
            self.out.telling_says_error |= says_an_error(&lower);
            self.out.telling.push(self.evidence(number, raw));
        }

        if let Some((rule, ex)) = &matched {
            self.out.recognised = true;
            let category = ex.category.unwrap_or(rule.category);
            let role = if category == rule.category {
                rule.role
            } else {
                Role::Cause
            };
            // The exception line of an open traceback whose frames change what it means.
            let open = self.tracebacks.get(&observer);
            let place = open.and_then(|tb| tb.place);
            // Another rank's exception that this one reports (`Traceback ...: (RANK 3)`).
            let raised_on = open.and_then(|tb| tb.raised_on);
            let in_place = place.and_then(|p| p.reading(category));
            let mut s = match in_place {
                Some((name, category, _)) => {
                    Signal::new(name, category, Role::Cause, Attach::Standalone)
                }
                None => Signal::new(rule.name, category, role, rule.attach),
            };
            s.subjects = ex.subjects.clone();
            s.observer = raised_on.or(observer);
            s.observer_explicit = explicit.is_some() || raised_on.is_some();
            s.process = process.clone();
            s.detail = match in_place {
                Some((_, _, detail)) => Some(detail.to_owned()),
                None => ex.detail.clone(),
            };
            s.expected_world = ex.expected_world;
            s.port = ex.port;
            if let Some((n, prev_raw)) = &joined_from {
                s.evidence.push(self.evidence(*n, prev_raw));
            }
            s.evidence.push(self.evidence(number, raw));
            s.order = self.next_order();
            // An exception a library caught and logged with its warning is no failure.
            if place != Some(TracebackPlace::LoggedByWarning) {
                self.out.signals.push(s);
            }
        }
        self.elastic_line(number, body, &lower);
        if let Some(found) = self.desync_snapshot.line(number, body) {
            self.desync_mismatch(found);
        }
        match rich_traceback_line(body, &mut self.in_rich_traceback) {
            RichLine::Not => self.traceback_line(number, body, body, observer, matched.is_some()),
            RichLine::As(plain) => {
                // Quoted without the box's sides and padding.
                let shown = body.trim().trim_matches('│').trim();
                self.traceback_line(number, &plain, shown, observer, matched.is_some());
            }
            RichLine::Drawing => {}
        }
        // After `traceback_line` took the previous line's mark: the next line's header, if it
        // comes, is this warning's.
        if logs_its_traceback(&lower) {
            self.warned_with_traceback = Some(observer);
        }
    }

    /// Tracks `Traceback (most recent call last):` blocks; an exception line
    /// that no rule explains becomes a `rank_crashed` cause.
    fn traceback_line(
        &mut self,
        number: Option<u64>,
        body: &str,
        quote: &str,
        rank: Option<usize>,
        matched: bool,
    ) {
        let start = body.trim_start();
        // The warning's own record goes on unprefixed where a collector prefixed its first line.
        let after_warning = self
            .warned_with_traceback
            .take()
            .is_some_and(|r| r == rank || rank.is_none());
        // The original traceback of an exception another process raised (a DataLoader
        // worker's), under the rank's own: its frames say where it was raised.
        if start.starts_with("Traceback (most recent call last)")
            || start.starts_with("Original Traceback (most recent call last)")
        {
            let mut tb = Traceback::under(body.len() - start.len());
            tb.raised_on = start
                .split_once("(RANK ")
                .and_then(|(_, r)| r.trim_end().strip_suffix(')'))
                .and_then(|r| r.trim().parse().ok());
            if after_warning {
                tb.place = Some(TracebackPlace::LoggedByWarning);
            }
            self.tracebacks.insert(rank, tb);
            return;
        }
        let Some(tb) = self.tracebacks.get_mut(&rank) else {
            // A paste that starts inside a traceback (its header cut off): its frames are read
            // as the header's would be, so that its exception line ends it even bare
            // (`AssertionError`, which an `assert` without a message raises).
            let frame = start.starts_with("File \"") && start.contains(", in ");
            // Or a code line a paste joined with the next frame (`    return f(x)   File
            // "/path/enum.py", line 663, in __new__`).
            let frame_after_code = start.find(" File \"").is_some_and(|i| {
                let rest = &start[i..];
                rest.contains("\", line ") && rest.contains(", in ")
            });
            // Or its first frame cut by a hard wrap inside the path (the longest line so far,
            // and long enough to be a wrap's first part): `File "/opt/.../optimizer_param_`.
            let chars = self.line_chars;
            let cut_frame = start.starts_with("File \"")
                && !start["File \"".len()..].contains('"')
                && chars >= WRAP_MIN_CHARS
                && chars >= self.longest;
            if body.starts_with([' ', '\t'])
                && ((frame && frame_end(start).is_some()) || cut_frame || frame_after_code)
            {
                // Its header would stand left of its frames.
                self.tracebacks
                    .insert(rank, Traceback::under(body.len() - start.len() - 1));
                return self.traceback_line(number, body, quote, rank, matched);
            }
            // A paste that starts inside a traceback still ends with the exception. A bare
            // `Error: ...` with no traceback is a command-line tool's own failure, not Python's
            // (Python has no builtin `Error`; Rust's `main` returning an error prints it so, as
            // py-spy does when it cannot attach: "Error: Failed to suspend process").
            if !matched
                && !body.starts_with([' ', '\t'])
                && looks_like_named_exception(body)
                && !body.starts_with("Error:")
            {
                self.python_exception(number, body, rank, None);
            } else if let Some(at) = (!matched).then(|| exception_after_raise(start)).flatten() {
                // The traceback's frames cut off above it (and the shared indentation taken off).
                self.python_exception(number, &start[at..], rank, None);
            } else if let Some(exception) =
                (!matched).then(|| exception_after_level(body)).flatten()
            {
                self.python_exception(number, exception, rank, None);
            }
            return;
        };
        let chars = body.chars().count();
        let last_chars = std::mem::replace(&mut tb.last_chars, chars);
        if body.len() - start.len() > tb.indent {
            tb.strays = 0;
            let evidence = Evidence {
                file: self.file.clone(),
                line: number,
                text: sanitize(quote.trim(), MAX_EVIDENCE_CHARS),
            };
            let t = body.trim_start();
            if t.starts_with("File \"") {
                if t.contains("torch/multiprocessing/spawn.py\"") && t.ends_with(" in _wrap") {
                    self.out.spawned_by_the_program = true;
                }
                if let Some(function) = c10d_function(t) {
                    tb.collective = Some(function.to_owned());
                }
                if let Some(place) = TracebackPlace::of_frame(t) {
                    tb.place = Some(place);
                }
                tb.in_program_frame = is_program_frame(t);
                if tb.in_program_frame {
                    tb.program_frame = Some((evidence.clone(), None));
                }
                tb.last_frame = Some(evidence);
                tb.last_code = None;
                tb.frame_indent = Some(body.len() - t.len());
                return;
            }
            if t.starts_with("File") {
                return;
            }
            // An exception line as far left as the frame above its code line: the traceback's
            // end, indented with the rest of a paste.
            if tb.last_code.is_some()
                && tb.frame_indent.is_some_and(|f| body.len() - t.len() <= f)
                && looks_like_exception(t)
            {
                let Some(tb) = self.tracebacks.remove(&rank) else {
                    return;
                };
                if matched {
                    return self.add_program_frame(number, tb);
                }
                return self.python_exception(number, t, rank, Some(tb));
            }
            // A code line a paste joined with the exception line after it.
            let Some(at) = exception_after_code(t) else {
                if tb.in_program_frame {
                    if let Some((_, code)) = &mut tb.program_frame {
                        code.get_or_insert_with(|| evidence.clone());
                    }
                }
                tb.last_code = Some(evidence);
                return;
            };
            let exception = &t[at..];
            let Some(tb) = self.tracebacks.remove(&rank) else {
                return;
            };
            if !matched {
                self.python_exception(number, exception, rank, Some(tb));
            } else {
                self.add_program_frame(number, tb);
            }
            return;
        }
        // Both as far left as the header (a paste's shared indentation taken off).
        if let Some(at) = (!matched).then(|| exception_after_raise(start)).flatten() {
            let Some(tb) = self.tracebacks.remove(&rank) else {
                return;
            };
            return self.python_exception(number, &start[at..], rank, Some(tb));
        }
        if last_chars >= WRAP_MIN_CHARS && !matched && !looks_like_exception(start) {
            // The rest of a hard-wrapped frame or code line: the traceback goes on. Wrapping
            // every real log of `tests/corpus.rs` at 80 columns changed one answer more without.
            return;
        }
        if !matched && !looks_like_exception(start) && tb.strays < STRAY_LINES_MAX {
            tb.strays += 1;
            return;
        }
        let Some(tb) = self.tracebacks.remove(&rank) else {
            return;
        };
        if matched {
            return self.add_program_frame(number, tb);
        }
        if !looks_like_exception(start) {
            return;
        }
        self.python_exception(number, start, rank, Some(tb));
    }

    /// Adds where the program's own code was (frame and code line) to the cause a rule read in
    /// the exception line `number` that ended `tb`.
    fn add_program_frame(&mut self, number: Option<u64>, tb: Traceback) {
        let Some(s) = self.out.signals.last_mut() else {
            return;
        };
        let this_line = s.evidence.last().is_some_and(|e| e.line == number);
        // A collective's timeout raised in the rank's own call (gloo; NCCL's blocking wait):
        // which collective it waited in, for comparing the ranks' (`LogShape::timed_out_in`).
        if let (true, Category::CollectiveTimeout, Some(rank), Some(function)) = (
            this_line,
            s.category,
            s.observer.or(self.file_rank),
            tb.collective.as_deref(),
        ) {
            if let Some(line) = s.evidence.last().cloned() {
                let places = with_program_frame(line, &tb.program_frame);
                self.shape.timed_out_in(rank, function, places);
            }
        }
        if this_line && s.role == Role::Cause {
            if let Some((frame, code)) = tb.program_frame {
                if s.category == Category::CudaError
                    && s.detail.is_none()
                    && code
                        .as_ref()
                        .is_some_and(|c| set_device_by_global_rank(&c.text))
                {
                    s.detail = Some(GLOBAL_RANK_DEVICE.to_owned());
                }
                s.evidence.push(frame);
                s.evidence.extend(code);
            }
        }
    }

    /// An exception line no rule explains: a `rank_crashed` cause (a consequence for
    /// `SystemExit`; for `KeyboardInterrupt`, the job stopped by hand, a `launcher_interrupted`
    /// symptom, or a `collective_timeout` one where the rank waited in a collective: a hang
    /// stopped by hand; a cause in the same log ranks before either).
    fn python_exception(
        &mut self,
        number: Option<u64>,
        body: &str,
        rank: Option<usize>,
        tb: Option<Traceback>,
    ) {
        let (last_frame, program_frame, collective, raised_on, place) = match tb {
            // Caught and logged, and the program went on.
            Some(tb) if tb.place == Some(TracebackPlace::LoggedByWarning) => return,
            Some(tb) => (
                tb.last_frame,
                tb.program_frame,
                tb.collective,
                tb.raised_on,
                tb.place,
            ),
            None => (None, None, None, None, None),
        };
        let semaphore_in_full_shm = place == Some(TracebackPlace::SemLock)
            && body
                .to_ascii_lowercase()
                .contains("no space left on device");
        let name = body.split(':').next().unwrap_or(body).trim();
        let rank = rank.or(self.file_rank);
        if let Some(place) = wrapper_place(body) {
            // The original's exception line follows; it is what failed.
            self.wrapped.insert(
                rank,
                Wrapped {
                    number,
                    body: body.to_owned(),
                    place,
                },
            );
            return;
        }
        let wrapped = self.wrapped.remove(&rank);
        // Another rank's exception that this one reports: it is that rank's failure.
        let rank = raised_on.or(rank);
        let class = name.rsplit('.').next().unwrap_or(name);
        let interrupted = class == "KeyboardInterrupt";
        // DeepSpeed's process groups (`deepspeed/utils/groups.py`): every `_ensure_divisibility`
        // there divides the world size (or the data-parallel part of it) by a parallel size
        // asked for (`ep_size` of a MoE layer, the model-parallel size): "AssertionError: 4 is
        // not divisible by 8" raised in it is a layout that does not fit the ranks started.
        let deepspeed_groups_check = class == "AssertionError"
            && body.contains(" is not divisible by ")
            && last_frame
                .as_ref()
                .is_some_and(|f| f.text.contains("deepspeed/utils/groups.py"));
        let (category, role, attach) = match class {
            // Stopped by hand while it waited in a collective: a hang.
            "KeyboardInterrupt" if collective.is_some() => (
                Category::CollectiveTimeout,
                Role::Symptom,
                Attach::Standalone,
            ),
            "KeyboardInterrupt" => (
                Category::LauncherInterrupted,
                Role::Symptom,
                Attach::Standalone,
            ),
            "SystemExit" => (Category::RankCrashed, Role::Consequence, Attach::AnyFinding),
            // Lightning's loops raise `SIGTERMException` (a `SystemExit`) after its signal
            // handler saw SIGTERM (`loops/fit_loop.py`: `if trainer.received_sigterm: raise
            // SIGTERMException`): the rank was stopped, by the batch system or a launcher
            // tearing the job down.
            // Lightning 1.5's `ExitGracefullyException`, raised after its SIGUSR1 handler ran
            // (`fault_tolerant_sigusr1_handler_fn`): the same stop by the batch system.
            "SIGTERMException" | "ExitGracefullyException" => (
                Category::LauncherInterrupted,
                Role::Symptom,
                Attach::Standalone,
            ),
            // Ray's report to the caller that an actor's or task's worker process died
            // (`ray.exceptions`): the death's own words are the worker's, or the raylet's.
            // Ray Train's controller says the same of its worker group
            // (`train/v2/_internal/execution/worker_group`): `WorkerHealthCheckFailedError` ("A
            // worker health check failed.", built from the ActorDiedError its poll raised) and
            // `WorkerGroupError`, which carry the workers' own errors below them.
            "ActorDiedError"
            | "RayActorError"
            | "WorkerCrashedError"
            | "WorkerHealthCheckFailedError"
            | "WorkerGroupError" => (Category::RankCrashed, Role::Consequence, Attach::AnyFinding),
            _ if deepspeed_groups_check => {
                (Category::WorldSizeMismatch, Role::Cause, Attach::Standalone)
            }
            // A semaphore that did not fit in /dev/shm (`TracebackPlace::SemLock`).
            _ if semaphore_in_full_shm => (Category::ShmTooSmall, Role::Cause, Attach::Standalone),
            // ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL) runs a gloo monitored barrier
            // before each collective; its error names the collective, and the barrier's own
            // words on the next lines ("Rank 3 failed to pass monitoredBarrier in 1800000 ms",
            // gloo's timeout or closed connection) say what failed.
            _ if body.contains("ProcessGroupWrapper: Monitored Barrier encountered error") => {
                (Category::RankCrashed, Role::Consequence, Attach::AnyFinding)
            }
            _ => (Category::RankCrashed, Role::Cause, Attach::Standalone),
        };
        if let (true, Some(r), Some(c)) = (interrupted, rank, collective.as_deref()) {
            // Where each rank waited, for comparing them (`LogShape::timed_out_in`).
            let places = with_program_frame(self.evidence(number, body), &program_frame);
            self.shape.timed_out_in(r, c, places);
        }
        let mut s = Signal::new("python_exception", category, role, attach);
        s.observer = rank;
        s.observer_explicit = raised_on.is_some();
        // `torch.multiprocessing.spawn`'s report in the parent that a child raised (`spawn.py`:
        // "ProcessRaisedException: \n\n-- Process 1 terminated with the following error:" and
        // the child's own traceback) says nothing itself: the child's exception below it, when
        // the log has it, names the finding.
        // (torch before 1.8 raised a plain `Exception:` with the same message.)
        let says_nothing = (class == "ProcessRaisedException" || class == "Exception")
            && body
                .split_once(':')
                .is_none_or(|(_, rest)| rest.trim().is_empty());
        // Lightning 1.3 to 1.9's DDP re-raises a rank's error with its traceback inside
        // (`reconciliate_processes`: "DeadlockDetectedException: DeadLock detected from rank:
        // 1 \n <traceback>"): the same wrapper around the rank's own words.
        if says_nothing || class == "DeadlockDetectedException" {
            // It joins the child's own finding (a timeout, an NCCL or CUDA error read by its
            // rule); alone, it is still a crash.
            s.attach = Attach::AnyFinding;
        }
        s.detail = (!says_nothing).then(|| match (&wrapped, interrupted, collective) {
            (_, true, Some(c)) => format!(
                "KeyboardInterrupt while the rank waited in {c}: the job was stopped by hand \
                 (Ctrl-C, SIGINT) while that collective did not complete, a hang"
            ),
            (_, true, None) => {
                "KeyboardInterrupt: the job was stopped by hand (Ctrl-C, SIGINT)".to_owned()
            }
            (Some(w), ..) => format!("{} (raised in {})", sanitize(body, 140), w.place),
            (None, ..) if deepspeed_groups_check => format!(
                "{}: DeepSpeed's process groups need the world size (or its data-parallel part) \
                 to be a multiple of the parallel size asked for (a MoE layer's ep_size, the \
                 model-parallel size); start a number of ranks it divides, or ask for a size \
                 that divides the ranks",
                sanitize(body, 100)
            ),
            (None, ..) if semaphore_in_full_shm => {
                "a multiprocessing lock or queue could not create its semaphore (sem_open, a \
                 file in /dev/shm): no space left on /dev/shm"
                    .to_owned()
            }
            (None, ..) if class == "SIGTERMException" => {
                "SIGTERMException: the rank got SIGTERM and Lightning stopped it (sent by the \
                 batch system, or by a launcher stopping the job after another rank failed)"
                    .to_owned()
            }
            (None, ..) => sanitize(body, 160),
        });
        s.evidence.push(self.evidence(number, body));
        // The program's own frame too, when the exception came from inside a library.
        if let Some((frame, code)) = program_frame {
            if last_frame.as_ref().is_none_or(|f| f.line != frame.line) {
                s.evidence.extend(last_frame);
                s.evidence.push(frame);
                s.evidence.extend(code);
            } else {
                s.evidence.push(frame);
            }
        } else {
            s.evidence.extend(last_frame);
        }
        if let Some(w) = wrapped {
            s.evidence.push(self.evidence(w.number, &w.body));
        }
        s.order = self.next_order();
        self.out.recognised = true;
        self.out.signals.push(s);
    }

    /// Tracebacks the log ends inside, before their exception line (a paste
    /// cut short): when the last call is one that fails in a known way, that
    /// is what failed. `torch.cuda.set_device(i)` fails when `i` is not a GPU
    /// of the host (more processes per node than GPUs: "invalid device
    /// ordinal") or the GPU cannot be used ("busy or unavailable").
    fn cut_tracebacks(&mut self) {
        let mut open: Vec<(Option<usize>, Traceback)> = self.tracebacks.drain().collect();
        open.sort_by_key(|(rank, _)| *rank);
        for (rank, tb) in open {
            let Some(code) = tb.last_code else {
                continue;
            };
            if !code.text.contains("cuda.set_device(") {
                continue;
            }
            let mut s = Signal::new(
                "traceback_cut_in_set_device",
                Category::CudaError,
                Role::Cause,
                Attach::Standalone,
            );
            s.observer = rank.or(self.file_rank);
            s.detail = Some(if set_device_by_global_rank(&code.text) {
                format!(
                    "the log ends in a traceback whose last call is torch.cuda.set_device: \
                     {GLOBAL_RANK_DEVICE}"
                )
            } else {
                "the log ends in a traceback whose last call is torch.cuda.set_device: the \
                 device index is not a GPU of this host (more processes per node than GPUs) \
                 or the GPU cannot be used"
                    .to_owned()
            });
            s.evidence.extend(tb.last_frame);
            s.evidence.push(code);
            s.order = self.next_order();
            self.out.recognised = true;
            self.out.signals.push(s);
        }
    }

    /// Reads torchelastic's `ChildFailedError` table: one entry per failed
    /// rank (`rank : 1 (local_rank: 1)`, `exitcode : -9 (pid: 123)`), the
    /// "Root Cause (first observed failure)" section naming the first.
    fn elastic_line(&mut self, number: Option<u64>, body: &str, lower: &str) {
        if lower.contains("childfailederror") {
            self.elastic = ElasticTable {
                active: true,
                ..ElasticTable::default()
            };
            return;
        }
        if !self.elastic.active {
            return;
        }
        let t = lower.trim();
        if t.starts_with("root cause") {
            self.elastic.in_root_section = true;
            return;
        }
        if t.starts_with("====")
            || t.starts_with("----")
            || t.ends_with(" failed")
            || t.starts_with("failures:")
            || t.starts_with("<no_other_failures>")
            || (t.starts_with('[') && t.ends_with("]:"))
        {
            return;
        }
        let Some((key, value)) = t.split_once(':') else {
            if self.elastic.seen_field {
                self.elastic.active = false;
            }
            return;
        };
        self.elastic.seen_field = true;
        match key.trim() {
            "rank" => {
                self.elastic.rank = rules::leading_number(value).and_then(rules::rank_number);
            }
            "exitcode" => {
                let Some(rank) = self.elastic.rank else {
                    return;
                };
                let code: Option<i64> =
                    value.split_whitespace().next().and_then(|c| c.parse().ok());
                let Some(code) = code else {
                    return;
                };
                let root = self.elastic.in_root_section;
                if root {
                    self.out.elastic_root = Some(rank);
                }
                let (category, role, attach, what) = match (code, root) {
                    (-9, true) => (
                        Category::HostOomKilled,
                        Role::Cause,
                        Attach::CauseOnly,
                        "was killed by SIGKILL (exitcode -9)".to_owned(),
                    ),
                    // SIGBUS, as `sigbus_exit` reads it elsewhere: /dev/shm could not back a
                    // page the rank touched.
                    (-7, true) => (
                        Category::ShmTooSmall,
                        Role::Cause,
                        Attach::CauseOnly,
                        "was killed by SIGBUS (exitcode -7)".to_owned(),
                    ),
                    (-15 | -2 | -1, _) | (_, false) => (
                        Category::RankCrashed,
                        Role::Consequence,
                        Attach::AnyFinding,
                        format!("ended with exitcode {code}"),
                    ),
                    (c, true) if c < 0 => (
                        Category::RankCrashed,
                        Role::Cause,
                        Attach::AnyFinding,
                        format!("was killed by signal {} (exitcode {c})", -c),
                    ),
                    (c, true) => (
                        Category::RankCrashed,
                        Role::Cause,
                        Attach::AnyFinding,
                        format!("exited with code {c}"),
                    ),
                };
                let mut s = Signal::new("elastic_failure", category, role, attach);
                s.subjects = vec![rank];
                s.detail = Some(format!(
                    "torchelastic reports rank {rank} {what}{}",
                    if root { " as the first failure" } else { "" }
                ));
                s.evidence.push(self.evidence(number, body));
                s.order = self.next_order();
                self.out.signals.push(s);
            }
            _ => {}
        }
    }

    /// Ranks that the desync report's snapshot shows in different collectives at one number.
    fn desync_mismatch(&mut self, found: Mismatch) {
        let mut s = Signal::new(
            RULE_DESYNC_SNAPSHOT_MISMATCH,
            Category::CollectiveMismatch,
            Role::Cause,
            Attach::Standalone,
        );
        s.subjects = found.ranks();
        s.detail = Some(found.detail());
        s.evidence = found
            .lines
            .iter()
            .map(|(n, text)| self.evidence(*n, text))
            .collect();
        s.order = self.next_order();
        self.out.recognised = true;
        self.out.signals.push(s);
    }

    /// The scan result.
    pub fn finish(mut self) -> FileScan {
        if let Some(found) = self.desync_snapshot.end() {
            self.desync_mismatch(found);
        }
        if let Some((number, joined)) = self.wrapped_parts.take() {
            self.unwrapped_line(number, &joined);
        }
        self.cut_tracebacks();
        // A wrapper whose original never came (a log cut short): the wrapper is what is known.
        let mut waiting: Vec<(Option<usize>, Wrapped)> = self.wrapped.drain().collect();
        waiting.sort_by_key(|(rank, w)| (*rank, w.number));
        for (rank, w) in waiting {
            let mut s = Signal::new(
                "python_exception",
                Category::RankCrashed,
                Role::Cause,
                Attach::Standalone,
            );
            s.observer = rank;
            s.detail = Some(sanitize(&w.body, 160));
            s.evidence.push(self.evidence(w.number, &w.body));
            s.order = self.next_order();
            self.out.recognised = true;
            self.out.signals.push(s);
        }
        self.out.rank = self.file_rank;
        let last = std::mem::take(&mut self.last);
        self.out.last = last
            .into_iter()
            .map(|(n, text)| self.evidence(n, &text))
            .collect();
        self.out
    }
}

/// The first `max` bytes of `s`, cut at a character boundary.
fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether a line is worth showing when nothing else explains a failure.
fn is_telling(lower: &str, level: Option<Level>) -> bool {
    if level == Some(Level::Warn) {
        return true;
    }
    if level == Some(Level::Info) {
        return false;
    }
    [
        "error",
        "traceback",
        "exception",
        "fatal",
        "failed",
        "killed",
        "abort",
        "panicked",
        "timed out",
        "timeout",
    ]
    .iter()
    .any(|k| lower.contains(k))
}

/// Whether a telling line (lower case) says that something went wrong: `error:`/`error ` but
/// not an option name like NCCL_ASYNC_ERROR_HANDLING; NCCL's "Failed to open libibverbs.so"
/// only says it uses sockets instead.
fn says_an_error(lower: &str) -> bool {
    !lower.contains("libibverbs")
        && [
            "error:",
            "error ",
            "fail",
            "exception",
            "abort",
            "killed",
            "fatal",
            "traceback",
        ]
        .iter()
        .any(|k| lower.contains(k))
}

/// Where the lines that a paste joined into one (line ends lost, a whole log as one
/// paragraph) start again: before a launcher's rank label (`[rank3]:`, `[default3]:`), a
/// traceback's header, its frames (`File "x.py", line 3, in f`) and the code line after a
/// frame, an NCCL line's `host:pid:tid [dev] NCCL` prefix and a glog-style `[E1102 03:04:14.69
/// ProcessGroupNCCL.cpp:607]` / `[E ProcessGroupNCCL.cpp:325]` prefix; also NCCL's version
/// line, a framework's rank announcement and a py-spy dump's thread headers and frames. Only a
/// marker after other text counts: after a space, or, for the labels, headers and frames that
/// no line has in its middle, after anything but a letter, digit or underscore (lines joined
/// with no space). The first start is 0. An exception line joined after a
/// code line is cut where the traceback is read ([`exception_after_code`]). Joining every two
/// lines of every real log of `tests/corpus.rs` changed 14 of their 332 answers and joining
/// each log into one line 32, most of them tracebacks read as no traceback (2026-12-03).
fn joined_line_starts(line: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let bytes = line.as_bytes();
    // After a space, and after other text.
    let after_text =
        |i: usize| i > 0 && bytes[i - 1].is_ascii_whitespace() && !line[..i].trim().is_empty();
    // After other text, not inside a word: markers no line has in its middle also start a
    // line that a paste joined with no space.
    let after_word = |i: usize| {
        i > 0
            && !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
            && !line[..i].trim().is_empty()
    };
    for key in ["[rank", "[default"] {
        for i in markers(line, key) {
            let rest = &line[i + key.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if after_word(i) && digits > 0 && rest[digits..].starts_with("]:") {
                starts.push(i);
            }
        }
    }
    for i in markers(line, "Traceback (most recent call last)") {
        let i = if line[..i].ends_with("Original ") {
            i - "Original ".len()
        } else {
            i
        };
        if after_word(i) {
            starts.push(i);
        }
    }
    for i in markers(line, "File \"") {
        let Some(end) = frame_end(&line[i..]) else {
            continue;
        };
        // The frame keeps the spaces before it: frames are indented under their header.
        if after_word(i) {
            starts.push(line[..i].trim_end().len());
        }
        let code = i + end;
        if !line[code..].trim().is_empty() {
            starts.push(code);
            // The exception after the code line (a paste that starts at a frame, without the
            // traceback's header, and lost its line ends: `File "x.py", line 277 port =
            // int(...) ValueError: invalid literal ...`), up to the next frame.
            let next = line[code..]
                .find("File \"")
                .map_or(line.len(), |n| code + n);
            if let Some(at) = exception_after_code(&line[code..next]) {
                starts.push(code + at);
            }
        }
    }
    // Lines read one record at a time: NCCL's version line, a framework's rank announcement,
    // a py-spy dump's thread headers and frames (`    broadcast (torch/distributed/x.py:1191)`).
    for key in [
        "NCCL version ",
        "initializing ddp: ",
        "Initializing distributed: ",
    ] {
        for i in markers(line, key) {
            // NCCL prints its version as an INFO line too: one line.
            let version = line[i + key.len()..].starts_with(|c: char| c.is_ascii_digit());
            // Not inside NCCL's own sentence about versions ("This application was compiled
            // with NCCL version 2.30.7, but is running with NCCL version 2.28.3"): a split
            // there cut the sentence its rule reads.
            let in_sentence = line[..i].trim_end().ends_with(" with");
            if after_text(i)
                && !line[..i].ends_with("NCCL INFO ")
                && (version || key != "NCCL version ")
                && !in_sentence
            {
                starts.push(i);
            }
        }
    }
    // nccl-tests' header, read a line at a time by its shape reader (`shape.rs`): "# nThread 1
    // nGpus 2 ...", "# Using devices", "#   Rank  0 Pid 871210 on host-a device  0 ...", the
    // column titles "#       size         count      type ...". 1.x marks its first lines with
    // '>' ("> Using devices", ">   Rank  0 uses device  0 ...", then unmarked ranks).
    for key in ["nThread ", "Using devices"] {
        for i in markers(line, key) {
            if let Some(start) = nccl_tests_mark_start(line, i) {
                starts.push(start);
            }
        }
    }
    for i in markers(line, "Rank ") {
        let rest = line[i + "Rank ".len()..].trim_start();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after = rest[digits..].trim_start();
        if digits == 0 {
            continue;
        }
        let marked = ["Group ", "Pid ", "on ", "uses device"]
            .iter()
            .any(|w| after.starts_with(w));
        match nccl_tests_mark_start(line, i) {
            Some(start) if marked => starts.push(start),
            // 1.x's ranks after the first: unmarked.
            None if after.starts_with("uses device") && after_text(i) => starts.push(i),
            _ => {}
        }
    }
    // Its failure line: "NCCL failure all_reduce.cu:95 'unhandled cuda error'" (1.x), "host-a:
    // Test NCCL failure common.cu:1279 'unhandled cuda error'".
    // Python 3.11's marker line under a code line (`           ^^^^^^^^^`, `~~~~^^^`) joined
    // with the exception line after it.
    let is_mark = |b: u8| matches!(b, b'^' | b'~');
    for (i, _) in line.match_indices(['^', '~']).take(MAX_CUTS_PER_MARKER * 8) {
        let run_starts = i == 0 || bytes[i - 1].is_ascii_whitespace();
        if !run_starts {
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| is_mark(b)).count();
        let rest = line[i + run..].trim_start();
        if rest.len() < line.len() - i - run
            && looks_like_named_exception(&rest[..rest.floor_char_boundary(128)])
        {
            starts.push(line.len() - rest.len());
        }
    }
    for i in markers(line, "NCCL failure ") {
        let start = line[..i].strip_suffix("Test ").map_or(i, str::len);
        if after_text(start) {
            starts.push(start);
        }
    }
    for key in ["size ", "bytes "] {
        for i in markers(line, key) {
            let rest = line[i + key.len()..].trim_start();
            if rest.starts_with("count") || rest.starts_with("N ") {
                if let Some(start) = nccl_tests_mark_start(line, i) {
                    starts.push(start);
                }
            }
        }
    }
    for i in markers(line, "Thread ") {
        if (i == 0 || after_text(i)) && crate::tool_output::thread_header(&line[i..]).is_some() {
            if i > 0 {
                starts.push(i);
            }
            // Its frames follow the quoted thread name.
            let name = line[i..].find("): \"").map(|q| i + q + "): \"".len());
            if let Some(end) = name.and_then(|n| line[n..].find('"').map(|e| n + e + 1)) {
                if !line[end..].trim().is_empty() {
                    starts.push(end);
                }
            }
        }
    }
    for i in markers(line, ".py:") {
        let rest = &line[i + ".py:".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let end = i + ".py:".len() + digits;
        if digits > 0 && line[end..].starts_with(')') && !line[end + 1..].trim().is_empty() {
            starts.push(end + 1);
        }
    }
    for marker in [" NCCL INFO ", " NCCL WARN ", " NCCL TRACE "] {
        for i in markers(line, marker) {
            if let Some(start) = nccl_prefix_start(&line[..i]) {
                if after_text(start) {
                    starts.push(start);
                }
            }
        }
    }
    for i in markers(line, "[") {
        if after_text(i) && is_glog_prefix(&line[i + 1..]) {
            starts.push(i);
        }
    }
    // PyTorch's Python logging writes the glog prefix without brackets (`W0128 15:04:48.217000
    // 121673 site-packages/torch/distributed/elastic/agent/server/api.py:704] Received 15 death
    // signal, shutting down workers`): only its dated form, a level letter right after a space.
    let dated_glog = line
        .match_indices(['I', 'W', 'E', 'F'])
        .map(|(i, _)| i)
        .filter(|&i| after_text(i) && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        .take(MAX_CUTS_PER_MARKER);
    for i in dated_glog {
        if is_glog_prefix(&line[i..]) {
            starts.push(i);
        }
    }
    // Python logging's default format, `LEVEL:logger:message` (torchrun before PyTorch 2.2:
    // `WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 518 closing signal
    // SIGTERM`), and Slurm's step daemon and launcher (`slurmstepd: error: *** STEP 9304949.0
    // ON host-a CANCELLED AT ... ***`, `srun: error: host-a: task 0: Killed`).
    for key in ["DEBUG:", "INFO:", "WARNING:", "ERROR:", "CRITICAL:"] {
        for i in markers(line, key) {
            let rest = &line[i + key.len()..];
            let name = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || b"._".contains(b))
                .count();
            if after_text(i) && name > 0 && rest[name..].starts_with(':') {
                starts.push(i);
            }
        }
    }
    // A named exception after other text on a line that holds a frame's code or the end
    // of another message (`  at vllm/v1/serial_utils.py enc_hook DistBackendError: Watchdog
    // caught collective operation timeout: ...`): only a name with an upper-case letter inside
    // it (`DistBackendError`, `torch.OutOfMemoryError`), which prose does not write.
    for (i, _) in line.match_indices("Error: ").take(MAX_CUTS_PER_MARKER) {
        let name_start = line[..i]
            .char_indices()
            .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |(w, c)| w + c.len_utf8());
        let name = &line[name_start..i + "Error".len()];
        let class = name.rsplit('.').next().unwrap_or(name);
        let camel = class.len() > "Error".len()
            && class.starts_with(|c: char| c.is_ascii_uppercase())
            && class[1..class.len() - "Error".len()].contains(|c: char| c.is_ascii_uppercase());
        // Any exception name after a frame's code line that ends in an open call (`...
        // dist._broadcast_coalesced( RuntimeError: ...`): a call's argument is never a name
        // followed by a colon, so it is the exception line joined to the code above it.
        let after_open_call = line[..name_start].trim_end().ends_with('(')
            && class.starts_with(|c: char| c.is_ascii_uppercase());
        if (camel || after_open_call)
            && after_text(name_start)
            && looks_like_named_exception(&line[name_start..])
        {
            starts.push(name_start);
        }
    }
    // A progress bar that another process's line followed on the same line (tqdm redraws
    // its bar after a carriage return and ends no line: `\r 38%|███▊      | 377/1000
    // [04:38<04:39,  2.22it/s]Traceback (most recent call last):`): after the bar's `[...]`.
    for i in markers(line, "%|") {
        let rest = &line[i..];
        let Some(open) = rest.find('[') else {
            continue;
        };
        let Some(close) = rest[open..].find(']') else {
            continue;
        };
        let end = i + open + close + 1;
        let bar = &line[i..end];
        if bar[2..].contains('|') && !line[end..].trim().is_empty() {
            starts.push(end);
        }
    }
    for key in ["slurmstepd: error: ", "srun: error: "] {
        for i in markers(line, key) {
            if after_word(i) {
                starts.push(i);
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    // A launcher's label stays with the line it labels.
    let mut kept: Vec<usize> = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let labelled = kept.last().is_some_and(|&prev| {
            i > 0
                && strip_launcher_prefix(&line[prev..start])
                    .1
                    .trim()
                    .is_empty()
        });
        if !labelled {
            kept.push(start);
        }
    }
    kept
}

/// Where an nccl-tests header line whose words start at `at` starts, when its '#' (or 1.x's
/// '>') mark stands before them, after spaces, and the mark follows other text after a space.
fn nccl_tests_mark_start(line: &str, at: usize) -> Option<usize> {
    let mark = line[..at].trim_end_matches(' ').len().checked_sub(1)?;
    let b = line.as_bytes();
    let is_mark = matches!(b[mark], b'#' | b'>');
    (is_mark && mark > 0 && b[mark - 1].is_ascii_whitespace() && !line[..mark].trim().is_empty())
        .then_some(mark)
}

/// Where `pattern` occurs in `line`, the first [`MAX_CUTS_PER_MARKER`] times: each is looked at
/// further, and a hostile line must not cost the square of its length.
fn markers<'a>(line: &'a str, pattern: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(pattern)
        .map(|(i, _)| i)
        .take(MAX_CUTS_PER_MARKER)
}

/// The places per marker where a joined line is looked at: a line joined from more lines than
/// this is read as that many and one.
const MAX_CUTS_PER_MARKER: usize = 64;

/// The length of a traceback frame (`File "x.py", line 3, in main`) at the start of `s`, when
/// it is one.
fn frame_end(s: &str) -> Option<usize> {
    // A path is not longer than this: the search stays short on a hostile line.
    let window = &s[..s.floor_char_boundary(1024)];
    let close = window["File \"".len()..].find("\", line ")? + "File \"".len();
    let rest = &s[close + "\", line ".len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let mut end = close + "\", line ".len() + digits;
    if let Some(after) = s[end..].strip_prefix(", in ") {
        let name = after.find(char::is_whitespace).unwrap_or(after.len());
        end += ", in ".len() + name;
    }
    Some(end)
}

/// Where the `host:pid:tid [dev]` prefix of an NCCL line starts, given the text before its
/// ` NCCL INFO` (or ` NCCL WARN` and the source location before it).
fn nccl_prefix_start(before: &str) -> Option<usize> {
    // A WARN line has its source location between the prefix and the level (`host-b:2918:4483
    // [4] init.cc:263 NCCL WARN Cuda failure ...`).
    let trimmed = before.trim_end();
    let last = trimmed.rsplit(' ').next().unwrap_or(trimmed);
    let located = last.rsplit_once(':').is_some_and(|(file, line)| {
        file.contains('.')
            && !line.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
            && file
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
    });
    let before = if located {
        trimmed[..trimmed.len() - last.len()].trim_end()
    } else {
        before
    };
    let dev = before.strip_suffix(']')?;
    let open = dev.rfind('[')?;
    if !dev[open + 1..].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let token_end = dev[..open].trim_end().len();
    // After the white space, whatever its width (a no-break space is two bytes).
    let token_start = dev[..token_end]
        .char_indices()
        .rfind(|(_, c)| c.is_whitespace())
        .map_or(0, |(w, c)| w + c.len_utf8());
    let token = &dev[token_start..token_end];
    let mut parts = token.rsplitn(3, ':');
    let (Some(tid), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (numeric(tid) && numeric(pid)).then_some(token_start)
}

/// Whether `s` (after a `[`) is a glog-style prefix: a level letter, then a `MMDD hh:mm:ss`
/// time or a space and a C++ or CUDA source file (`E1102 03:04:14.692 ProcessGroupNCCL.cpp:607]`,
/// `E ProcessGroupNCCL.cpp:325]`, `W Utils.hpp:133]`). c10d's own logger writes the month
/// without its leading zero (`[W728 15:01:59.562622567 TCPStore.cpp:340]`, `[E108 20:04:34...`
/// in January).
fn is_glog_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !matches!(b[0], b'I' | b'W' | b'E' | b'F') {
        return false;
    }
    let date = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if (3..=4).contains(&date) && b.get(1 + date) == Some(&b' ') {
        let time = &b[2 + date..];
        return time.len() > 2 && time[..2].iter().all(u8::is_ascii_digit) && time[2] == b':';
    }
    if b[1] != b' ' {
        return false;
    }
    let name = s[2..s.floor_char_boundary(256)]
        .split(']')
        .next()
        .unwrap_or("");
    !name.contains(' ')
        && [".cpp:", ".cc:", ".hpp:", ".h:", ".cu:", ".cuh:"]
            .iter()
            .any(|ext| name.contains(ext))
}

/// The message of a log collector's JSON record (one per line): Docker's json-file driver
/// (`{"log":"...\n","stream":"stderr","time":"..."}`), Google Cloud Logging's export
/// (`{"textPayload":"..."}`), a structured logger's `{"message":"..."}` or `{"msg":"..."}`.
/// Each of these, made of every line of `tests/corpus.rs`'s real logs, had changed 16 to 24
/// answers before it was read (2026-12-03).
fn structured_message(raw: &str) -> Option<String> {
    let t = raw.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return None;
    }
    let serde_json::Value::Object(record) = serde_json::from_str(t).ok()? else {
        return None;
    };
    ["log", "textPayload", "message", "msg"]
        .iter()
        .find_map(|key| record.get(*key)?.as_str())
        .map(|m| m.strip_suffix('\n').unwrap_or(m).to_owned())
}

/// A whole log written as one escaped string, its line ends as `\n`: a JSON value that no
/// collector's record holds (`"Traceback (most recent call last):\n  File ..."`), Python's
/// repr of captured output (`b'...\n...'`, as a subprocess error prints it). One escaped line
/// end in quotes, or [`ESCAPED_LINE_ENDS_MIN`] without, and no Windows path written with single
/// backslashes (`C:\new\nodes`), whose `\n` are no line ends. Every real log of
/// `tests/corpus.rs` written so had changed 45 answers (2026-12-04).
fn escaped_message(raw: &str) -> Option<String> {
    if !raw.contains("\\n") || has_windows_path(raw) {
        return None;
    }
    let t = raw.trim();
    let quoted = [("b'", '\''), ("b\"", '"'), ("'", '\''), ("\"", '"')]
        .iter()
        .find_map(|(open, close)| t.strip_prefix(open)?.strip_suffix(*close));
    // A quoted string holding a line end is one; bare text needs a few.
    let needed = if quoted.is_some() {
        1
    } else {
        ESCAPED_LINE_ENDS_MIN
    };
    let inner = quoted.unwrap_or(t);
    (inner.matches("\\n").count() >= needed).then(|| unescape(inner))
}

/// Escaped line ends on one line, not in quotes, that make it an escaped log
/// ([`escaped_message`]).
const ESCAPED_LINE_ENDS_MIN: usize = 3;

/// Whether `line` holds a drive letter's path written with single backslashes (`C:\Users`):
/// a lone letter (not a word's last, as in `directory:\n`) before `:\`.
fn has_windows_path(line: &str) -> bool {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(3)).any(|i| {
        b[i].is_ascii_alphabetic()
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b[i + 1] == b':'
            && b[i + 2] == b'\\'
            && b[i + 3] != b'\\'
    })
}

/// JSON's and Python's escapes undone: `\n`, `\r`, `\t`, `\"`, `\'`, `\\`, `\uXXXX` and
/// `\xNN` (a byte, kept as its character where it is one); any other stays as written.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('n') => out.push('\n'),
            Some('r') => {}
            Some('t') => out.push('\t'),
            Some(q @ ('"' | '\'' | '\\' | '/')) => out.push(q),
            Some(kind @ ('u' | 'x')) => {
                let digits = if kind == 'u' { 4 } else { 2 };
                let hex: String = chars.clone().skip(1).take(digits).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if hex.len() == digits => {
                        out.push(ch);
                        for _ in 0..digits {
                            chars.next();
                        }
                    }
                    _ => {
                        out.push('\\');
                        continue;
                    }
                }
            }
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    out
}

/// Whether a traceback frame (`File "train.py", line 3, in main`) is in the program's own code,
/// not in an installed library or the interpreter's.
/// An exception's line, then the program's own frame and code line where the traceback had
/// one: where a rank was when a collective's wait ended.
fn with_program_frame(
    line: Evidence,
    frame: &Option<(Evidence, Option<Evidence>)>,
) -> Vec<Evidence> {
    let mut places = vec![line];
    if let Some((frame, code)) = frame {
        places.push(frame.clone());
        places.extend(code.clone());
    }
    places
}

/// The function of a traceback's frame in `torch/distributed/distributed_c10d.py` (`File
/// ".../torch/distributed/distributed_c10d.py", line 3252, in all_reduce`).
fn c10d_function(frame: &str) -> Option<&str> {
    let (path, rest) = frame.split_once("\", line ")?;
    if !path.ends_with("distributed/distributed_c10d.py") {
        return None;
    }
    let function = rest.split_once(", in ")?.1.trim();
    (!function.is_empty() && !function.starts_with('_')).then_some(function)
}

fn is_program_frame(frame: &str) -> bool {
    let path = frame
        .trim_start()
        .strip_prefix("File \"")
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("");
    !path.is_empty() && !crate::python_stack::is_library(path)
}

/// Whether `line` starts a new record of a logger that marks its lines (NCCL's `host:pid:tid
/// [dev]`, glog's `[E ProcessGroupNCCL.cpp:...]`, torchelastic's bracketless `E0208
/// 21:12:26.795000 1460 .../api.py:869]` (PyTorch 2.4 on), a launcher's `[rank1]:`, a traceback's
/// header, an indented frame line): never the rest of a line a terminal wrapped. An NCCL line
/// as long as the longest so far read with a glog warning printed after it had made one of
/// InfiniBand's rules match across the two; a traceback whose lines are as long as the wrap
/// width by chance had its frames read as the rest of the lines before them.
fn starts_a_record(line: &str) -> bool {
    let indented = line.starts_with([' ', '\t']);
    let line = line.trim_start();
    (indented && line.starts_with("File \""))
        || nccl::parse_line(line).is_some()
        || is_glog_prefix(line.strip_prefix('[').unwrap_or(line))
        || strip_launcher_prefix(line).0.is_some()
        || line.starts_with("Traceback (most recent call last)")
}

/// Whether `line`, after an indented traceback line as long as a log's wrap width by chance,
/// is the traceback's next line rather than the rest of that one: after a frame line
/// (`  File "...", line N, in f`) its code line, indented by two spaces or more, which a
/// frame's text cut anywhere does not hold; after a frame or code line, an unindented
/// exception line (`KeyError: 'answer_reward_type'`).
fn next_traceback_line(previous: &str, line: &str) -> bool {
    if !previous.starts_with([' ', '\t']) || line.trim().is_empty() {
        return false;
    }
    (previous.trim_start().starts_with("File \"") && line.starts_with("  "))
        || (!line.starts_with([' ', '\t']) && looks_like_named_exception(line))
}

/// Where an exception line starts that a paste joined after a traceback's code line
/// (`dist.barrier(device_ids=[0]) TypeError: barrier() got ...`): the first word after a space
/// that reads as a named exception ([`looks_like_named_exception`]).
fn exception_after_code(code: &str) -> Option<usize> {
    code.match_indices(' ')
        .map(|(i, _)| i + 1)
        .filter(|&i| code[i..].starts_with(|c: char| c.is_ascii_alphabetic()))
        .take(MAX_CUTS_PER_MARKER)
        .find(|&i| {
            // A name is at most 120 characters and its colon follows it.
            let rest = &code[i..];
            looks_like_named_exception(&rest[..rest.floor_char_boundary(128)])
        })
        .or_else(|| bare_exception_after_code(code))
}

/// Where the exception starts in the raising code line a paste joined with it (`raise ve_exc
/// ValueError: 'jsonl' is not a valid LoggingTypes`, `assert x > 0 AssertionError`).
fn exception_after_raise(code: &str) -> Option<usize> {
    (code.starts_with("raise ") || code.starts_with("assert "))
        .then(|| exception_after_code(code))
        .flatten()
}

/// An exception line a logger wrote as an error record, after its prefix (`2023-10-13
/// 17:40:02,544 - root - ERROR - AssertionError: ...`, `ERROR AssertionError: ...`, vLLM's
/// `ERROR 10-13 09:06:25 [core.py:597] ValueError: ...`): the exception after the level word
/// `ERROR`, `CRITICAL` or `FATAL` within a prefix's length. A log of many such lines has its
/// prefix learnt and taken off (`record_prefix::LinePrefixProbe`); one line cannot show it.
/// Not after `INFO` or `WARNING`: a program that logs an exception so goes on.
fn exception_after_level(line: &str) -> Option<&str> {
    let head = &line[..line.floor_char_boundary(crate::record_prefix::PREFIX_MAX_BYTES)];
    let level_end = ["ERROR", "CRITICAL", "FATAL"].iter().find_map(|level| {
        head.match_indices(level).find_map(|(i, _)| {
            let before = head[..i].chars().next_back();
            let after = head[i + level.len()..].chars().next();
            let bounded = before.is_none_or(|c| matches!(c, ' ' | '[' | '|' | '-' | ':'))
                && after.is_some_and(|c| matches!(c, ' ' | ']' | '|' | ':' | '-'));
            bounded.then_some(i + level.len())
        })
    })?;
    let rest = &line[level_end..];
    // Not a bare `Error: ...` (as alone, see `Scanner::logical_line`): a library's own message
    // after its name (`MIOpen Error: .../sqlite_db.cpp:220: Internal error while accessing
    // SQLite database: locking protocol`).
    exception_after_code(rest)
        .map(|at| &rest[at..])
        .filter(|exception| !exception.starts_with("Error:"))
}

/// A bare exception name joined after the code line (`assert num_samples > 0
/// AssertionError`: an `assert` without a message raises a bare `AssertionError`), when it is
/// the line's last word and the code before it does not name it itself (`raise ValueError`,
/// `except OSError`).
fn bare_exception_after_code(code: &str) -> Option<usize> {
    let trimmed = code.trim_end();
    let at = trimmed.rfind(' ')? + 1;
    let last = &trimmed[at..];
    let before = trimmed[..at].trim_end();
    let last_word = before.rsplit(' ').next().unwrap_or(before);
    let names_it = ["raise", "except", "as", "import", "in", "return"].contains(&last_word)
        || before.ends_with(['=', '(', ',']);
    (!before.is_empty()
        && !names_it
        && (last.ends_with("Error") || last.ends_with("Exception"))
        && looks_like_exception(last))
    .then_some(at)
}

/// `Name: message` or a bare `Name` where `Name` is a (dotted) identifier that names an
/// exception class: capitalised words (`ValueError`, `torch.distributed.DistBackendError`,
/// `KeyboardInterrupt`) or, in lower case, one of the socket module's (`socket.gaierror`,
/// `socket.timeout`). Not a logger's `INFO:root:...` or a tool's `wandb: ...`, which another
/// rank or thread may print between a traceback's frames and its exception line.
fn looks_like_exception(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or("").trim();
    // A private class keeps its capital after the underscore (numpy's
    // `numpy.core._exceptions._ArrayMemoryError`).
    let class = name
        .rsplit('.')
        .next()
        .unwrap_or(name)
        .trim_start_matches('_');
    !name.is_empty()
        && name.len() <= 120
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && (line.contains(':')
            || name.ends_with("Error")
            || name.ends_with("Exception")
            // Python prints it bare.
            || class == "KeyboardInterrupt")
        && ((class.starts_with(|c: char| c.is_ascii_uppercase())
            && class.contains(|c: char| c.is_ascii_lowercase()))
            || class.ends_with("error")
            || class == "timeout")
}

/// Where PyTorch's `ExceptionWrapper` says the original exception was raised: "ValueError:
/// Caught ValueError in DataLoader worker process 0." → "DataLoader worker process 0" (also
/// "replica 0 on device 0", "pin memory thread for device 0").
fn wrapper_place(line: &str) -> Option<String> {
    let (_, message) = line.split_once(": ")?;
    // `torch.distributed.checkpoint`'s gathered failures (`checkpoint/api.py`):
    // "CheckpointException ranks:dict_keys([3, 5])", then each rank's traceback and exception.
    if let Some(ranks) = message
        .trim_start()
        .strip_prefix("CheckpointException ranks:")
    {
        let ranks = ranks.trim();
        let ranks = ranks
            .strip_prefix("dict_keys(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(ranks);
        return Some(format!("torch.distributed.checkpoint on ranks {ranks}"));
    }
    let rest = message.trim_start().strip_prefix("Caught ")?;
    let (_, place) = rest.split_once(" in ")?;
    let place = place.trim_end().trim_end_matches('.');
    (!place.is_empty() && place.len() <= 80).then(|| place.to_owned())
}

/// `Name: message` where `Name` is a (dotted) identifier ending in `Error`
/// or `Exception`: an exception line even without its traceback's header.
fn looks_like_named_exception(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or("").trim();
    if line.trim() == "KeyboardInterrupt" {
        return true;
    }
    line.contains(':')
        && looks_like_exception(line)
        && (name.ends_with("Error") || name.ends_with("Exception"))
}

/// Undoes what pasting a log into a web page or a reply did to a line: Markdown's quote
/// markers (`> `, `> > `: a log quoted in a reply) and HTML's character references (`&quot;`,
/// `&#39;`, `&lt;`, `&gt;`, `&amp;`: a log copied from a page's source or an e-mail). On the
/// real logs of `tests/corpus.rs`, quoting every line cost 17 right answers and escaping them
/// 9 (2026-12-03).
pub(crate) fn unquote_paste(line: &str) -> std::borrow::Cow<'_, str> {
    let mut rest = line;
    loop {
        let t = rest.trim_start_matches(' ');
        if rest.len() - t.len() > 3 {
            break;
        }
        match t.strip_prefix('>') {
            Some(after) if after.is_empty() || after.starts_with(' ') => {
                rest = after.strip_prefix(' ').unwrap_or(after);
            }
            _ => break,
        }
    }
    if !rest.contains('&') {
        return std::borrow::Cow::Borrowed(rest);
    }
    let mut out = String::with_capacity(rest.len());
    let mut s = rest;
    while let Some(i) = s.find('&') {
        out.push_str(&s[..i]);
        let tail = &s[i..];
        let entity = [
            ("&quot;", '"'),
            ("&#39;", '\''),
            ("&#x27;", '\''),
            ("&apos;", '\''),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&amp;", '&'),
        ]
        .into_iter()
        .find(|(name, _)| tail.starts_with(name));
        match entity {
            Some((name, c)) => {
                out.push(c);
                s = &tail[name.len()..];
            }
            None => {
                out.push('&');
                s = &tail[1..];
            }
        }
    }
    out.push_str(s);
    std::borrow::Cow::Owned(out)
}

/// Strips the per-line prefixes launchers add: Slurm's `srun -l` task label
/// (`12: `), PyTorch's `[rank1]:` and torchrun's `[default1]:` (local rank
/// of the default role). Returns the rank they name (the bracket's, else the
/// task label's) and the rest of the line.
pub(crate) fn strip_launcher_prefix(line: &str) -> (Option<usize>, &str) {
    let (tagged, mut line) = strip_collector_prefixes(line);
    let (mut task, mut mpi, mut rank) = (None, None, None);
    // Launchers nest (`[rank0]: 2: [rank2]: `: a tee around `srun -l` around a rank's own
    // label); the label nearest the text names the process that printed it.
    for round in 0..3 {
        let before = line.len();
        let (t, rest) = strip_task_label(strip_compose_label(line));
        // Open MPI's tag may follow a date, but only in the outermost label.
        let at_start = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .is_some_and(|(inside, after)| {
                inside.bytes().all(|b| b.is_ascii_digit() || b == b',')
                    && (after.starts_with("<stdout>:") || after.starts_with("<stderr>:"))
            });
        let (m, rest) = if round == 0 || at_start {
            strip_mpi_tag(rest)
        } else {
            (None, rest)
        };
        let (r, rest) = strip_rank_bracket(rest);
        // A collector's prefix inside a launcher's label (`[rank0]:host-a: `, a rank's tee of
        // pdsh's output).
        let (tag, rest) = strip_collector_prefixes(rest);
        (task, mpi, rank) = (t.or(task), m.or(mpi), r.or(tag).or(rank));
        line = rest;
        if line.len() == before {
            break;
        }
    }
    (rank.or(tagged).or(mpi).or(task), line)
}

/// Strips the prefixes that log collectors put before every line of a job's output, in any
/// order and combination: a time stamp ([`strip_time_stamp`]: `kubectl logs --timestamps`,
/// `docker logs -t`, Determined), Ray's and SkyPilot's process tags (`(RayTrainWorker
/// pid=1234, ip=10.0.0.1) `, `(worker1, rid=4213) `), Determined's trial tag (`fa88a9df || `
/// and its `[rank=0] `), pdsh's host label (`worker-1: `, as DeepSpeed's multi-node launcher
/// prints it), `kubectl logs --prefix`'s `[pod/NAME/CONTAINER] ` and the system log's `Feb 27
/// 21:35:32 host python[1234]: `. Returns the rank a tag names. On the real logs of
/// `tests/corpus.rs` each of these prefixes, put before every line, cost 13 to 17 right
/// answers before they were stripped (2026-12-03).
fn strip_collector_prefixes(mut line: &str) -> (Option<usize>, &str) {
    let mut rank = None;
    for _ in 0..4 {
        let before = line.len();
        line = strip_cri_stream(strip_time_stamp(line));
        line = strip_syslog_prefix(strip_kubectl_prefix(line));
        line = strip_process_tag(line);
        let (r, rest) = strip_trial_tag(line);
        let (c, rest) = strip_composer_label(rest);
        rank = rank.or(r).or(c);
        line = strip_host_label(rest);
        if line.len() == before {
            break;
        }
    }
    (rank, line)
}

/// `kubectl logs --prefix`'s source before every line: `[pod/trainer-worker-0/pytorch] `.
fn strip_kubectl_prefix(line: &str) -> &str {
    if !line.starts_with("[pod/") {
        return line;
    }
    match line.find("] ") {
        Some(end) if !line[..end].contains(' ') => &line[end + 2..],
        _ => line,
    }
}

/// The system log's prefix (`journalctl`'s default output, syslog files): a time stamp
/// `Feb 27 21:35:32`, the host, and the program with its process id: `python[1234]: `. The time
/// stamp alone, as moreutils' `ts` puts it before every line of a command's output, when no host
/// and program follow it.
fn strip_syslog_prefix(line: &str) -> &str {
    const MONTHS: [&str; 12] = [
        "Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ", "Nov ",
        "Dec ",
    ];
    if !MONTHS.iter().any(|m| line.starts_with(m)) {
        return line;
    }
    let rest = line[4..].trim_start_matches(' ');
    let day = rest.bytes().take_while(u8::is_ascii_digit).count();
    let b = rest.as_bytes();
    let clock = |i: usize| {
        b.len() >= i + 8
            && b[i..i + 8].iter().enumerate().all(|(k, c)| {
                if k == 2 || k == 5 {
                    *c == b':'
                } else {
                    c.is_ascii_digit()
                }
            })
    };
    if !(1..=2).contains(&day) || b.get(day) != Some(&b' ') || !clock(day + 1) {
        return line;
    }
    let Some(after) = rest[day + 9..].strip_prefix(' ') else {
        return line;
    };
    // The host, then the program: `name[pid]:` or `name:`.
    match after.split_once(' ') {
        Some((host, rest)) if is_host_or_program_name(host, b"") => {
            after_program_tag(rest).unwrap_or(after)
        }
        _ => after,
    }
}

/// A host's or program's name in the system log: letters, digits, `-_.` and `extra`.
fn is_host_or_program_name(s: &str, extra: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c) || extra.contains(&c))
}

/// The message after the system log's program tag: a program with its process id
/// (`python[1234]: `) or the kernel (`kernel: `). Other words before a colon are a message's
/// own (`initializing ddp: GLOBAL_RANK: 0` after `ts`'s time stamp).
fn after_program_tag(rest: &str) -> Option<&str> {
    let (program, message) = rest.split_once(": ")?;
    let name = match program.split_once('[') {
        Some((name, pid)) => pid
            .strip_suffix(']')
            .filter(|p| p.bytes().all(|c| c.is_ascii_digit()))
            .map(|_| name)?,
        None if program == "kernel" => program,
        None => return None,
    };
    is_host_or_program_name(name, b"/@").then_some(message)
}

/// The stream and tag that the container runtime's log files (CRI, what `kubectl logs` reads
/// and strips) put after their time stamp: `stderr F ` (a whole line), `stdout P ` (part of
/// one).
fn strip_cri_stream(line: &str) -> &str {
    ["stdout F ", "stderr F ", "stdout P ", "stderr P "]
        .iter()
        .find_map(|tag| line.strip_prefix(tag))
        .unwrap_or(line)
}

/// An RFC 3339 / ISO 8601 time stamp at the start of a line, bare or in brackets, and the
/// space after it: `2024-02-27T21:35:32.106313Z `, `[2024-02-27 21:35:32,544] `,
/// `2024-02-27 21:35:32.106 UTC `.
fn strip_time_stamp(line: &str) -> &str {
    let b = line.as_bytes();
    let digits =
        |i: usize, n: usize| b.len() >= i + n && b[i..i + n].iter().all(u8::is_ascii_digit);
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let Some(mut i) = iso_date_time_end(b, usize::from(b.first() == Some(&b'['))) else {
        return line;
    };
    if at(i, b'Z') {
        i += 1;
    } else if (at(i, b'+') || at(i, b'-')) && digits(i + 1, 2) {
        i += 3;
        if at(i, b':') {
            i += 1;
        }
        if digits(i, 2) {
            i += 2;
        }
    } else if line[i..].starts_with(" UTC") {
        i += 4;
    }
    if b.first() == Some(&b'[') {
        if !at(i, b']') {
            return line;
        }
        i += 1;
    }
    // One separator: the line's own indentation (a traceback's `  File`) stays.
    match line[i..].strip_prefix([' ', '\t']) {
        Some(rest) => rest,
        None if i == line.len() => "",
        None => line,
    }
}

/// Where an ISO 8601 date and time starting at `i` ends (`2024-02-27T21:35:32`, or with a
/// space for the `T`, then an optional fraction after `.` or `,`), if one starts there.
fn iso_date_time_end(b: &[u8], i: usize) -> Option<usize> {
    let digits =
        |i: usize, n: usize| b.len() >= i + n && b[i..i + n].iter().all(u8::is_ascii_digit);
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let starts = digits(i, 4)
        && at(i + 4, b'-')
        && digits(i + 5, 2)
        && at(i + 7, b'-')
        && digits(i + 8, 2)
        && (at(i + 10, b'T') || at(i + 10, b' '))
        && digits(i + 11, 2)
        && at(i + 13, b':')
        && digits(i + 14, 2)
        && at(i + 16, b':')
        && digits(i + 17, 2);
    if !starts {
        return None;
    }
    let mut end = i + 19;
    if at(end, b'.') || at(end, b',') {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    Some(end)
}

/// Ray's (`(RayTrainWorker pid=1234, ip=10.0.0.1) `, `(pid=1234) `) and SkyPilot's
/// (`(worker1, rid=4213) `, `(head, rid=1) `) tag of the process a line came from.
fn strip_process_tag(line: &str) -> &str {
    let Some(rest) = line.strip_prefix('(') else {
        return line;
    };
    let Some(close) = rest.find(')').filter(|&c| c <= 160) else {
        return line;
    };
    let inside = &rest[..close];
    let tagged = inside.contains("pid=") || inside.contains("rid=");
    match rest[close + 1..].strip_prefix(' ') {
        Some(body) if tagged => body,
        _ => line,
    }
}

/// Determined's trial tag, eight hexadecimal digits and ` || `, and the `[rank=N] ` it puts
/// after it; returns N.
fn strip_trial_tag(line: &str) -> (Option<usize>, &str) {
    let b = line.as_bytes();
    if !(b.len() > 12 && b[..8].iter().all(u8::is_ascii_hexdigit) && line[8..].starts_with(" || "))
    {
        return (None, line);
    }
    let rest = &line[12..];
    if let Some(after) = rest.strip_prefix("[rank=") {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            if let Some(body) = after[digits..].strip_prefix("] ") {
                return (
                    after[..digits].parse().ok().and_then(rules::rank_number),
                    body,
                );
            }
        }
    }
    (None, rest)
}

/// The MosaicML stack's logger label after its time stamp (llm-foundry's `train.py`:
/// `%(asctime)s: rank{rank}[%(process)d][%(threadName)s]: `): `rank5[4242][MainThread]: `.
fn strip_composer_label(line: &str) -> (Option<usize>, &str) {
    // Its time stamp, `2022-06-29 11:22:26,152: `, which ends in a colon (looked for only on
    // a line that starts with a digit: this runs on every line).
    let stamped = line.starts_with(|c: char| c.is_ascii_digit());
    let label = match line.split_once(": rank").filter(|_| stamped) {
        Some((stamp, _))
            if stamp.len() >= 19
                && stamp.starts_with(|c: char| c.is_ascii_digit())
                && stamp
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b" -:,.T".contains(&b)) =>
        {
            &line[stamp.len() + 2..]
        }
        _ => line,
    };
    let Some(after) = label.strip_prefix("rank") else {
        return (None, line);
    };
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    let Some(rest) = after[digits..].strip_prefix('[') else {
        return (None, line);
    };
    let Some((pid, rest)) = rest.split_once("][") else {
        return (None, line);
    };
    let Some((_thread, body)) = rest.split_once("]: ") else {
        return (None, line);
    };
    if digits == 0 || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return (None, line);
    }
    (
        after[..digits].parse().ok().and_then(rules::rank_number),
        body,
    )
}

/// pdsh's host label, `host: `: an IPv4 address, or a lower-case host name with a digit or a
/// hyphen in it and no dot (so that `torch.distributed.elastic...api: ` and `RuntimeError: `
/// stay), as DeepSpeed's multi-node launcher prints every remote line.
fn strip_host_label(line: &str) -> &str {
    let len = line
        .bytes()
        .take_while(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        })
        .count();
    if len == 0 || len > 63 || !line[len..].starts_with(": ") {
        return line;
    }
    let host = &line[..len];
    // Slurm's step daemon names itself and its host the same way (`slurmstepd-host-a: error:
    // ...`), and NVIDIA's container tools and enroot name themselves (`nvidia-container-cli:
    // initialization error: ...`, `enroot-mount: failed to mount: ...`): programs, not host
    // labels, and the rules read their names.
    const PROGRAMS: &[&str] = &[
        "slurmstepd",
        "nvidia-container-",
        "nvidia-ctk",
        "nvidia-smi",
        "nvidia-persistenced",
        "enroot",
    ];
    if PROGRAMS.iter().any(|p| host.starts_with(p)) {
        return line;
    }
    let ipv4 = host.split('.').count() == 4
        && host
            .split('.')
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()));
    let name = !host.contains('.')
        && host.starts_with(|c: char| c.is_ascii_lowercase())
        && host.contains(|c: char| c.is_ascii_digit() || c == '-');
    if ipv4 || name {
        &line[len + 2..]
    } else {
        line
    }
}

/// Docker Compose's service label (`trainer_1  | `, `worker-2 | `): a name
/// of letters, digits, `_`, `-`, `.` with a letter in it, spaces, `| `.
fn strip_compose_label(line: &str) -> &str {
    let name_len = line
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        .count();
    if name_len == 0 || !line[..name_len].bytes().any(|b| b.is_ascii_alphabetic()) {
        return line;
    }
    let rest = line[name_len..].trim_start_matches(' ');
    let spaces = line.len() - name_len - rest.len();
    // Compose names its containers `service_1` / `service-1` and pads the
    // names to one width; one space after another name is ordinary text.
    let name = &line[..name_len];
    let numbered = name
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .ends_with(['_', '-'])
        && name.ends_with(|c: char| c.is_ascii_digit());
    if spaces == 0 || (spaces == 1 && !numbered) {
        return line;
    }
    match rest.strip_prefix('|') {
        Some(body) => body.strip_prefix(' ').unwrap_or(body),
        None => line,
    }
}

/// Open MPI's `--tag-output` label, `[1,3]<stdout>:` or `[3]<stderr>:`
/// (job, rank), after whatever the line starts with (Horovod puts a date
/// before it). Returns the rank.
fn strip_mpi_tag(line: &str) -> (Option<usize>, &str) {
    for tag in ["]<stdout>:", "]<stderr>:"] {
        let Some(end) = line.find(tag) else {
            continue;
        };
        let Some(open) = line[..end].rfind('[') else {
            continue;
        };
        let inside = &line[open + 1..end];
        let rank = inside.rsplit(',').next().and_then(|r| r.parse().ok());
        if rank.is_some() && inside.bytes().all(|b| b.is_ascii_digit() || b == b',') {
            return (rank, &line[end + tag.len()..]);
        }
    }
    (None, line)
}

/// `srun -l`'s `N: ` label at the start of a line (spaces before it).
fn strip_task_label(line: &str) -> (Option<usize>, &str) {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=6).contains(&digits) {
        if let Some(rest) = t[digits..].strip_prefix(": ") {
            return (t[..digits].parse().ok(), rest);
        }
    }
    (None, line)
}

/// PyTorch's `[rank3]:` and torchrun's `[default3]:`, also nested (`[default0]:[rank3]:`, a
/// launcher's tee around a rank that prefixes its own lines). Returns the global rank (the
/// innermost `[rankN]` bracket's, else the local rank of `[defaultN]`) and the rest of the line.
fn strip_rank_bracket(mut line: &str) -> (Option<usize>, &str) {
    let (mut global, mut local) = (None, None);
    'outer: loop {
        let t = line.trim_start();
        for key in ["[rank", "[default"] {
            let Some(rest) = t.strip_prefix(key) else {
                continue;
            };
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                continue;
            }
            let Some(body) = rest[digits..].strip_prefix("]:") else {
                continue;
            };
            let rank = rest[..digits].parse().ok().and_then(rules::rank_number);
            // The bracket nearest the text is the process that printed it.
            if key == "[rank" {
                global = rank;
            } else {
                local = rank;
            }
            line = body.strip_prefix(' ').unwrap_or(body);
            continue 'outer;
        }
        break;
    }
    (global.or(local), line)
}

/// A rank named in a bracket near the start of a line: `[Rank 1]`,
/// `[PG 0 (default_pg) Rank 1]`, `[PG ID 0 PG GUID 0 Rank 1]`.
pub(crate) fn bracket_rank(line: &str) -> Option<usize> {
    let head: String = line.chars().take(240).collect();
    let mut rest = head.as_str();
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            break;
        };
        let group = after[..close].to_ascii_lowercase();
        if let Some(i) = group.rfind("rank") {
            let before_ok = i == 0 || group.as_bytes()[i - 1] == b' ';
            let num = group[i + 4..].trim();
            if before_ok && !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) {
                return num.parse().ok().and_then(rules::rank_number);
            }
        }
        rest = &after[close + 1..];
    }
    None
}

/// What a `torch.cuda.set_device` call indexed by the global rank does wrong.
const GLOBAL_RANK_DEVICE: &str = "the device index is the global rank (dist.get_rank(), RANK): \
     on every node after the first it is past the node's GPUs; index a node's GPUs by the local \
     rank (LOCAL_RANK)";

/// Whether a code line calls `torch.cuda.set_device` with the global rank: `dist.get_rank()`,
/// `global_rank`, or the `RANK` variable (`LOCAL_RANK` is the right one, and is not matched).
fn set_device_by_global_rank(code: &str) -> bool {
    let lower = code.to_ascii_lowercase();
    let Some(at) = lower.find("set_device(") else {
        return false;
    };
    let args = &lower[at + "set_device(".len()..];
    ["get_rank()", "global_rank", "'rank'", "\"rank\""]
        .iter()
        .any(|k| args.contains(k))
}

/// A line without the byte order mark an editor on Windows puts before a file's first line
/// (U+FEFF is no white space to `trim`: before, it hid 4 of the corpus's first lines from
/// their rules).
fn without_byte_order_mark(raw: &str) -> &str {
    raw.strip_prefix('\u{feff}').unwrap_or(raw)
}

/// A line with the characters a rich-text paste (a chat, a web page, a word processor) puts
/// for ASCII ones made ASCII again: no-break spaces for spaces (with them every space of the
/// corpus's logs changed 315 of its 410 answers, 2026-12-03) and typographic quotes for `'`
/// and `"` (10 answers).
fn plain_characters(raw: &str) -> std::borrow::Cow<'_, str> {
    const ASCII_FOR: [(char, char); 7] = [
        ('\u{a0}', ' '),
        ('\u{2007}', ' '),
        ('\u{202f}', ' '),
        ('\u{2018}', '\''),
        ('\u{2019}', '\''),
        ('\u{201c}', '"'),
        ('\u{201d}', '"'),
    ];
    if raw.is_ascii()
        || !raw
            .chars()
            .any(|c| ASCII_FOR.iter().any(|(from, _)| *from == c))
    {
        return std::borrow::Cow::Borrowed(raw);
    }
    std::borrow::Cow::Owned(
        raw.chars()
            .map(|c| {
                ASCII_FOR
                    .iter()
                    .find(|(from, _)| *from == c)
                    .map_or(c, |(_, to)| *to)
            })
            .collect(),
    )
}

/// The markup around a log pasted into an issue or a forum: a Markdown code fence (```` ``` ````,
/// `~~~`, with a language or not) and GitHub's collapsed block (`<details>`, `<summary>...`,
/// `<pre>`). Read as a line of the log, a closing fence became the line the log ends with.
fn is_paste_markup(line: &str) -> bool {
    // Every line of every log comes here: only one that starts like markup is looked at.
    match line.as_bytes().first() {
        Some(b'`' | b'~') => ["```", "~~~"].iter().any(|f| {
            line.strip_prefix(f).is_some_and(|rest| {
                rest.bytes().all(|b| {
                    b.is_ascii_alphanumeric()
                        || matches!(b, b'-' | b'_' | b'+' | b' ' | b'`' | b'~')
                })
            })
        }),
        Some(b'<') => {
            line.ends_with('>')
                && [
                    "<details",
                    "</details>",
                    "<summary>",
                    "</summary>",
                    "<pre>",
                    "</pre>",
                ]
                .iter()
                .any(|t| {
                    line.get(..t.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(t))
                })
        }
        _ => false,
    }
}

/// A line of a traceback the `rich` library drew (`rich.traceback.install()`, Typer's and
/// some launchers' own), read as Python's plain traceback would print it.
enum RichLine {
    /// No part of such a traceback.
    Not,
    /// The plain form: `Traceback (most recent call last):`, a frame's `File "PATH", line N,
    /// in FUNC`, the code line its `❱` marks.
    As(String),
    /// The box's drawing, a context line around the marked one, a locals panel.
    Drawing,
}

/// Reads one line of a `rich` traceback: its box opens with `╭──── Traceback (most recent
/// call last) ────╮`, each frame is `│ /path/train.py:12 in main │` and the frame's line is
/// marked `│ ❱ 12 │   code │`; the box closes with `╰────╯` and the exception line follows
/// it unboxed, as Python prints it. `inside` says whether the box is open.
fn rich_traceback_line(body: &str, inside: &mut bool) -> RichLine {
    let t = body.trim();
    // The box's top line, or its part from the title on (a joined line's parts are cut where a
    // traceback's header starts).
    if t.ends_with('╮') && t.contains("Traceback (most recent call last)") {
        *inside = true;
        return RichLine::As("Traceback (most recent call last):".to_owned());
    }
    if !*inside {
        return RichLine::Not;
    }
    if t.starts_with('╰') {
        *inside = false;
        return RichLine::Drawing;
    }
    let Some(inner) = t.strip_prefix('│') else {
        // Not the box's: the traceback is over (a paste cut it).
        *inside = false;
        return RichLine::Not;
    };
    let inner = inner.strip_suffix('│').unwrap_or(inner).trim();
    if let Some(code) = inner.strip_prefix('❱') {
        // `❱ 12 │   main()`: the number, the gutter, the code.
        let code = code
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit());
        let code = code.trim_start().strip_prefix('│').unwrap_or(code);
        return RichLine::As(format!("    {}", code.trim()));
    }
    // `PATH:LINE in FUNC`
    if let Some((place, func)) = inner.split_once(" in ") {
        if let Some((path, line)) = place.rsplit_once(':') {
            let numbered = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
            if numbered && !path.is_empty() && !path.contains(' ') && !func.contains(' ') {
                return RichLine::As(format!("  File \"{path}\", line {line}, in {func}"));
            }
        }
    }
    RichLine::Drawing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_s_markup_is_no_line_of_the_log() {
        for markup in [
            "```",
            "```shell",
            "``` text",
            "~~~",
            "<details>",
            "<summary>log</summary>",
            "</details>",
            "<pre>",
        ] {
            assert!(is_paste_markup(markup), "{markup}");
        }
        for line in [
            "```python3 train.py```x = 1",
            "<stdin>",
            "`torch.cuda.set_device`",
            "~~~ NCCL WARN: x",
        ] {
            assert!(!is_paste_markup(line), "{line}");
        }
        assert_eq!(without_byte_order_mark("\u{feff}Traceback"), "Traceback");
        assert_eq!(
            plain_characters("NCCL\u{a0}WARN Cuda failure \u{2018}invalid argument\u{2019}"),
            "NCCL WARN Cuda failure 'invalid argument'"
        );
        assert!(matches!(
            plain_characters("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn kubectl_s_and_the_system_log_s_prefixes_are_looked_through() {
        assert_eq!(
            strip_collector_prefixes("[pod/trainer-worker-0/pytorch] RuntimeError: boom").1,
            "RuntimeError: boom"
        );
        assert_eq!(
            strip_collector_prefixes("Feb 27 21:35:32 host-a python[1234]:   File \"t.py\"").1,
            "  File \"t.py\""
        );
        assert_eq!(
            strip_collector_prefixes("Dec  3 01:02:03 host-a kernel: Out of memory: Killed").1,
            "Out of memory: Killed"
        );
        // moreutils' `ts`: the time stamp alone, the rest of the line as it was.
        for (line, rest) in [
            (
                "Dec 03 16:29:01 main.py: error: unrecognized arguments: --local-rank=0",
                "main.py: error: unrecognized arguments: --local-rank=0",
            ),
            (
                "Dec 03 16:29:03 ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2)",
                "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2)",
            ),
            ("Dec 03 16:29:04   File \"t.py\"", "  File \"t.py\""),
            (
                "Dec 03 16:29:05 initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2",
                "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2",
            ),
        ] {
            assert_eq!(strip_collector_prefixes(line).1, rest);
        }
        // Not a prefix: a month's name at the start of a sentence, a bracket of other words.
        for line in [
            "May the job end",
            "[pod is down] x",
            "Jan 12 was the day: it failed",
        ] {
            assert_eq!(strip_collector_prefixes(line).1, line);
        }
    }

    #[test]
    fn a_device_indexed_by_the_global_rank_is_told_from_the_local_rank() {
        for by_global in [
            "    torch.cuda.set_device(dist.get_rank())",
            "torch.cuda.set_device(torch.distributed.get_rank() % 8)",
            "torch.cuda.set_device(int(os.environ['RANK']))",
            "torch.cuda.set_device(global_rank)",
        ] {
            assert!(set_device_by_global_rank(by_global), "{by_global}");
        }
        for by_local in [
            "    torch.cuda.set_device(local_rank)",
            "torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))",
            "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
            "dist.get_rank()",
        ] {
            assert!(!set_device_by_global_rank(by_local), "{by_local}");
        }
    }

    fn probe(lines: &[&str]) -> PasteProbe {
        let mut probe = PasteProbe::default();
        lines.iter().for_each(|l| probe.line(l));
        probe
    }

    fn wrap_width(lines: &[&str]) -> Option<usize> {
        probe(lines).wrap_width()
    }

    #[test]
    fn the_indentation_all_lines_share_is_found() {
        let indented = [
            "    FileNotFoundError: [Errno 2] x",
            "",
            "      deeper",
            "    \tERROR:x",
        ];
        assert_eq!(probe(&indented).common_indent(), Some("    "));
        assert_eq!(probe(&["> a", "b"]).common_indent(), None);
        assert_eq!(probe(&["\ta", "\t b"]).common_indent(), Some("\t"));
        assert_eq!(probe(&[]).common_indent(), None);
    }

    #[test]
    fn a_log_is_taken_as_hard_wrapped_only_when_different_texts_share_its_longest_width() {
        let warn = "NCCL WARN NET/IB : Got completion from peer with error 4, opcode 32639, len 0";
        let cut: Vec<String> = [
            format!("host-a:19989:20082 [1] {warn}, vendor err 129 (Recv)"),
            "RuntimeError: NCCL communicator was aborted on rank 1. Original reason for failure \
             was: [Rank 1] Watchdog caught collective operation timeout"
                .to_owned(),
        ]
        .iter()
        .flat_map(|l| {
            let chars: Vec<char> = l.chars().collect();
            chars
                .chunks(64)
                .map(|c| c.iter().collect())
                .collect::<Vec<String>>()
        })
        .collect();
        let cut: Vec<&str> = cut.iter().map(String::as_str).collect();
        assert_eq!(wrap_width(&cut), Some(64));
        // The same message of two hosts and ranks, as printed.
        let a = format!("host-a:19989:20082 [1] {warn}");
        let b = format!("host-c:68738:69060 [3] {warn}");
        assert_eq!(wrap_width(&[&a, &b, "short"]), None);
        // Lines padded to the terminal's width: progress bars, rich's boxes, a table's rule.
        let bar1 = format!("Epoch 0:  35%|{:<60}| 35/100 [00:10<00:20]", "█".repeat(20));
        let bar2 = format!("Epoch 1:  40%|{:<60}| 40/100 [00:12<00:18]", "█".repeat(24));
        assert_eq!(bar1.chars().count(), bar2.chars().count());
        let box1 = format!("│ {:<70} │", "/path/to/train.py:12 in <module>");
        let box2 = format!("│ {:<70} │", "❱ 12 main()");
        let rule = "-".repeat(74);
        assert_eq!(
            wrap_width(&[&bar1, &bar2, &box1, &box2, &rule, &rule]),
            None
        );
        // One line cut once: one part has the width, which says nothing.
        assert_eq!(wrap_width(&cut[..2]), None);
    }

    #[test]
    fn a_line_cut_once_is_read_whole_when_its_second_part_says_more() {
        let categories = |lines: &[&str]| -> Vec<Category> {
            scan(lines, None)
                .0
                .signals
                .iter()
                .map(|s| s.category)
                .collect()
        };
        // gloo's enforce message cut where a terminal wrapped it, before a space: its first
        // part alone reads as an exception line.
        assert_eq!(
            categories(&[
                "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/\
                 device.cc:83] ifa != nullptr. Unable to find",
                " address for: ib0",
            ]),
            [Category::NetworkInterface]
        );
        // The store-based barrier's line cut inside its counts: the same rule, reading more.
        assert_eq!(
            categories(&[
                "2022-05-09 22:30:27,597 INFO Waiting in store based barrier to initialize \
                 process group for rank: 0, key: store_based_barrier_key:1 (world_s",
                "ize=6, worker_count=287, timeout=0:30:00)",
            ]),
            [Category::WorldSizeMismatch]
        );
    }

    #[test]
    fn a_collector_s_json_records_are_read_as_their_messages() {
        assert_eq!(
            structured_message(
                r#"{"log":"NCCL WARN x\n","stream":"stderr","time":"2024-02-27T21:35:32Z"}"#
            )
            .as_deref(),
            Some("NCCL WARN x")
        );
        // A record can hold a whole traceback: each of its lines is read.
        let (out, _) = scan(
            &[
                r#"{"textPayload":"Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\nValueError: bad","severity":"ERROR"}"#,
            ],
            Some(0),
        );
        assert_eq!(out.signals.len(), 1);
        assert_eq!(out.signals[0].detail.as_deref(), Some("ValueError: bad"));
        assert_eq!(out.lines, 1);
        // Not JSON records: a printed dict, JSON without a message.
        assert_eq!(structured_message("{'loss': 1.5, 'epoch': 0.12}"), None);
        assert_eq!(
            escaped_message(r#""Traceback (most recent call last):\n  File \"t.py\", line 3\n    f()\nValueError: bad \u00e9\n""#)
                .as_deref(),
            Some("Traceback (most recent call last):\n  File \"t.py\", line 3\n    f()\nValueError: bad \u{e9}\n")
        );
        assert_eq!(
            escaped_message(r"b'a\nb\nc\r\nd\x41'").as_deref(),
            Some("a\nb\nc\ndA")
        );
        // Two escaped line ends are not enough; a Windows path's are none.
        assert_eq!(escaped_message(r"x\ny\nz"), None);
        assert_eq!(escaped_message(r#""x\ny""#).as_deref(), Some("x\ny"));
        assert_eq!(
            escaped_message(r"open C:\new\nodes\nets\nfile failed"),
            None
        );
        // A word ending in a colon before a line end is no drive letter.
        assert_eq!(
            escaped_message(r"No such file or directory:\n  x\nb\nc").as_deref(),
            Some("No such file or directory:\n  x\nb\nc")
        );
        assert_eq!(structured_message(r#"{"loss": 1.5}"#), None);
        assert_eq!(
            strip_collector_prefixes("2024-02-27T21:35:32.1Z stderr F boom").1,
            "boom"
        );
    }

    #[test]
    fn an_exception_joined_after_pythons_marker_line_is_cut_apart() {
        let cut = |line: &str| -> Vec<usize> { joined_line_starts(line) };
        let joined = "           ^^^^^^^^^ RuntimeError: use_libuv was requested";
        assert_eq!(cut(joined), [0, joined.find("RuntimeError").unwrap()]);
        let joined = "    ~~~~^^^^^^ ZeroDivisionError: division by zero";
        assert_eq!(cut(joined), [0, joined.find("ZeroDivisionError").unwrap()]);
        // A marker line alone, and markers before words that name no exception, stay whole.
        assert_eq!(cut("           ^^^^^^^^^"), [0]);
        assert_eq!(cut("  ^^^ see above"), [0]);
        // Also after the code line it marks (a whole traceback joined into one line).
        let joined = "    return TCPStore(            ^^^^^^^^^ RuntimeError: use_libuv";
        assert_eq!(cut(joined), [0, joined.find("RuntimeError").unwrap()]);
        // Not an exponent's caret or a bitwise operator inside code.
        assert_eq!(cut("    x = a ^ b"), [0]);
    }

    #[test]
    fn nccl_tests_header_lines_joined_into_one_are_cut_apart() {
        let joined = "# nThread 1 nGpus 2 minBytes 8 # Using devices #   Rank  0 Pid 7 on host-a \
                      device  0 [0x01] GPU #   Rank  1 Pid 7 on host-a device  1 [0x24] GPU \
                      #       size         count      type   redop host-a: Test NCCL failure \
                      common.cu:1279 'unhandled cuda error'";
        let parts: Vec<&str> = {
            let starts = joined_line_starts(joined);
            starts
                .iter()
                .enumerate()
                .map(|(i, &s)| joined[s..starts.get(i + 1).copied().unwrap_or(joined.len())].trim())
                .collect()
        };
        assert_eq!(
            parts,
            [
                "# nThread 1 nGpus 2 minBytes 8",
                "# Using devices",
                "#   Rank  0 Pid 7 on host-a device  0 [0x01] GPU",
                "#   Rank  1 Pid 7 on host-a device  1 [0x24] GPU",
                "#       size         count      type   redop host-a:",
                "Test NCCL failure common.cu:1279 'unhandled cuda error'",
            ]
        );
    }

    #[test]
    fn lines_that_start_a_logger_record_are_told_apart() {
        assert!(starts_a_record(
            "host-a:2328:2692 [0] NCCL INFO Using network IBext"
        ));
        assert!(starts_a_record(
            "[W Utils.hpp:133] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING"
        ));
        assert!(starts_a_record(
            "[E1102 03:04:14.692 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog"
        ));
        assert!(starts_a_record("[rank1]: RuntimeError: x"));
        assert!(starts_a_record("Traceback (most recent call last):"));
        assert!(starts_a_record("  File \"t.py\", line 3, in f"));
        assert!(!starts_a_record("File \"t.py\", line 3, in f"));
        assert!(!starts_a_record("ng the entire process down."));
        assert!(!starts_a_record(
            "[2]mlx5_2:1/IB/SHARP [3]mlx5_3:1/IB/SHARP"
        ));
    }

    /// The last lines kept (line number, text) and the lines counted when `lines` are read as
    /// a log hard-wrapped at `width`.
    fn read_wrapped(width: usize, lines: &[&str]) -> (Vec<(Option<u64>, String)>, u64) {
        let mut nccl = NcclCollector::default();
        let mut shape = LogShape::default();
        let mut order = 0;
        let mut s = Scanner::new("f.log".into(), None, &mut nccl, &mut shape, &mut order);
        s.wrap_width = Some(width);
        for (n, l) in lines.iter().enumerate() {
            s.line(Some(n as u64 + 1), l);
        }
        let out = s.finish();
        let last = out.last.iter().map(|e| (e.line, e.text.clone())).collect();
        (last, out.lines)
    }

    fn owned(lines: &[(Option<u64>, &str)]) -> Vec<(Option<u64>, String)> {
        lines.iter().map(|(n, t)| (*n, (*t).to_owned())).collect()
    }

    #[test]
    fn a_hard_wrapped_log_is_read_as_the_lines_it_was_cut_from() {
        let (last, lines) = read_wrapped(
            10,
            &[
                "0123456789",
                "abcdefghij",
                "klm",
                "----------",
                "short",
                "0123456789",
                "[rank0]: x",
            ],
        );
        assert_eq!(
            last,
            owned(&[
                (Some(1), "0123456789abcdefghijklm"),
                (Some(4), "----------"),
                (Some(5), "short"),
                // At the width by chance: a new record follows.
                (Some(6), "0123456789"),
                (Some(7), "[rank0]: x"),
            ])
        );
        assert_eq!(lines, 7);
    }

    #[test]
    fn torchelastic_s_bracketless_log_line_after_a_line_at_the_wrap_width_stays_apart() {
        // PyTorch 2.4 on: torchelastic's logger writes glog's prefix without brackets.
        let (last, _) = read_wrapped(
            24,
            &[
                "python: can't open file ",
                "'t.py': [Errno 2] No suc",
                "E0208 21:12:26.795000 14 api.py:869] failed",
            ],
        );
        assert_eq!(
            last,
            owned(&[
                (Some(1), "python: can't open file 't.py': [Errno 2] No suc"),
                (Some(3), "E0208 21:12:26.795000 14 api.py:869] failed"),
            ])
        );
    }

    #[test]
    fn traceback_lines_at_the_wrap_width_by_chance_stay_apart() {
        let (last, _) = read_wrapped(
            16,
            &[
                "  File \"t.py\", l",
                "ine 3, in f",
                // A whole frame line, then its code line, each 16 characters long by chance.
                "  File \"u.py\", 1",
                "    x = d[k] + 1",
                "KeyError: 'k'",
            ],
        );
        assert_eq!(
            last,
            owned(&[
                (Some(1), "File \"t.py\", line 3, in f"),
                (Some(3), "File \"u.py\", 1"),
                (Some(4), "x = d[k] + 1"),
                (Some(5), "KeyError: 'k'"),
            ])
        );
        assert!(next_traceback_line(
            "  File \"t.py\", line 3, in f",
            "    x = 1"
        ));
        assert!(next_traceback_line("    x = 1", "ValueError: bad"));
        assert!(!next_traceback_line("    x = 1", "  y = 2"));
        assert!(!next_traceback_line("plain text", "ValueError: bad"));
    }

    #[test]
    fn colours_and_launcher_labels_are_looked_through() {
        assert_eq!(strip_csi("\x1b[31mError\x1b[0m: x"), "Error: x");
        assert_eq!(strip_csi("plain"), "plain");
        assert_eq!(strip_csi("\x1b[1;33m"), "");
        assert_eq!(
            strip_launcher_prefix(" 3: [rank3]: boom"),
            (Some(3), "boom")
        );
        assert_eq!(strip_launcher_prefix("12: boom"), (Some(12), "boom"));
        // A rank's tee of pdsh's output: the host label inside the rank's.
        assert_eq!(
            strip_launcher_prefix("[rank0]:host-a: Traceback (most recent call last):"),
            (Some(0), "Traceback (most recent call last):")
        );
        assert_eq!(
            strip_launcher_prefix("12:30:01 boom"),
            (None, "12:30:01 boom")
        );
        assert_eq!(
            strip_launcher_prefix("bug_1  | h:7:7 [0] NCCL WARN x"),
            (None, "h:7:7 [0] NCCL WARN x")
        );
        assert_eq!(
            strip_launcher_prefix("[1,3]<stdout>:h:7:7 [0] NCCL INFO x"),
            (Some(3), "h:7:7 [0] NCCL INFO x")
        );
        assert_eq!(
            strip_launcher_prefix("Tue Feb  7 15:26:02 2023[1]<stderr>:RuntimeError: x"),
            (Some(1), "RuntimeError: x")
        );
        // A progress bar and a table are not labels.
        for line in [" 7%|▋   | 499/7151", "Epoch 3:  7%|▋ | 499/7151", "a | b"] {
            assert_eq!(strip_launcher_prefix(line).1, line);
        }
    }

    #[test]
    fn quoted_and_escaped_pastes_are_read_as_the_log() {
        for (pasted, log) in [
            ("> RuntimeError: x", "RuntimeError: x"),
            ("> > [rank1]: x", "[rank1]: x"),
            (">   File \"a.py\", line 3", "  File \"a.py\", line 3"),
            (">", ""),
            (
                "RuntimeError: expected &#39;a&#39; &lt; &quot;b&quot; &amp;&amp; c",
                "RuntimeError: expected 'a' < \"b\" && c",
            ),
            ("a & b &unknown; c", "a & b &unknown; c"),
            ("x > y", "x > y"),
            ("    > deeply indented", "    > deeply indented"),
        ] {
            assert_eq!(unquote_paste(pasted), log, "{pasted}");
        }
    }

    #[test]
    fn log_collectors_prefixes_are_stripped_and_lines_like_them_are_not() {
        for (line, rank, body) in [
            (
                "2024-02-27T21:35:32.106313123Z [rank1]: boom",
                Some(1),
                "boom",
            ),
            ("2024-02-27T21:35:32+01:00 boom", None, "boom"),
            (
                "[2023-10-13 17:40:02,544] torch.distributed.elastic: x",
                None,
                "torch.distributed.elastic: x",
            ),
            (
                "2024-02-27 21:35:32.106 UTC   File \"a.py\"",
                None,
                "  File \"a.py\"",
            ),
            (
                "(RayTrainWorker pid=1234, ip=10.0.0.1) [rank0]: boom",
                Some(0),
                "boom",
            ),
            ("(pid=77) boom", None, "boom"),
            ("(worker1, rid=4213) boom", None, "boom"),
            (
                "[2024-02-27T21:35:32.1Z] fa88a9df || [rank=3] boom",
                Some(3),
                "boom",
            ),
            ("worker-1: [rank2]: boom", Some(2), "boom"),
            ("10.0.0.7: boom", None, "boom"),
            ("node001: 3: boom", Some(3), "boom"),
        ] {
            assert_eq!(strip_launcher_prefix(line), (rank, body), "{line}");
        }
        for line in [
            "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9)",
            "RuntimeError: NCCL error",
            "host-a:1234:5678 [0] NCCL INFO Bootstrap",
            "api: x",
            "(most recent call last) boom",
            "2024-02-27 boom",
            "deadbee || x",
            // Programs that name themselves like a host label: the rules read their names.
            "nvidia-container-cli: initialization error: nvml error: driver not loaded",
            "enroot-mount: failed to mount: /dev/shm at /run/enroot/job/dev/shm: x",
            "slurmstepd-host-a: error: x",
        ] {
            assert_eq!(strip_launcher_prefix(line), (None, line), "{line}");
        }
    }

    #[test]
    fn prefixes_name_ranks() {
        assert_eq!(strip_launcher_prefix("[rank3]: boom"), (Some(3), "boom"));
        assert_eq!(strip_launcher_prefix("[default1]:x"), (Some(1), "x"));
        assert_eq!(strip_launcher_prefix("[rankx]: y"), (None, "[rankx]: y"));
        // A launcher's tee around a rank's own prefix: the global rank is the rank's.
        assert_eq!(
            strip_launcher_prefix("[default0]:[rank3]:[E ProcessGroupNCCL.cpp:1] x"),
            (Some(3), "[E ProcessGroupNCCL.cpp:1] x")
        );
        assert_eq!(strip_launcher_prefix("[rank0]:[rank2]: y"), (Some(2), "y"));
        // The MosaicML stack's logger label, with or without its time stamp.
        assert_eq!(
            strip_launcher_prefix(
                "2025-11-28 10:00:00,152: rank5[4242][MainThread]: ERROR: composer: x"
            ),
            (Some(5), "ERROR: composer: x")
        );
        assert_eq!(
            strip_launcher_prefix("rank12[77][Thread-3 (run)]: INFO: y"),
            (Some(12), "INFO: y")
        );
        assert_eq!(
            strip_launcher_prefix("rank5[x][MainThread]: z"),
            (None, "rank5[x][MainThread]: z")
        );
        assert_eq!(
            bracket_rank("[E ProcessGroupNCCL.cpp:1] [Rank 2] Watchdog"),
            Some(2)
        );
        assert_eq!(
            bracket_rank("[PG ID 0 PG GUID 0(default_pg) Rank 5] x"),
            Some(5)
        );
        assert_eq!(bracket_rank("[localrank 3] x"), None);
        assert_eq!(bracket_rank("no brackets"), None);
    }

    /// The lines a paste joined are read as they were printed; whole lines are not cut.
    #[test]
    fn joined_lines_are_cut_where_their_lines_started() {
        let cut = |line: &str| -> Vec<String> {
            let starts = joined_line_starts(line);
            let ends = starts.iter().skip(1).copied().chain([line.len()]);
            starts
                .iter()
                .zip(ends)
                .map(|(&s, e)| line[s..e].to_owned())
                .collect()
        };
        for whole in [
            "node1:301:301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "node1:301:301 [0] init.cc:710 NCCL WARN Mismatched NCCL version detected : rank 1",
            "  File \"/w/train.py\", line 40, in <module>",
            "[rank1]:[E1102 03:04:14.692188080 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught",
            "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
            "Thread 688514 (idle): \"MainThread\"",
            "RuntimeError: [/opt/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.1]:4",
        ] {
            assert_eq!(cut(whole), vec![whole.to_owned()], "{whole}");
        }
        assert_eq!(
            cut("    launch() [rank6]:   File \"/w/l.py\", line 19, in launch     run_exp()"),
            [
                "    launch() ",
                "[rank6]:   File \"/w/l.py\", line 19, in launch",
                "     run_exp()"
            ]
        );
        assert_eq!(
            cut("Traceback (most recent call last):   File \"t.py\", line 3, in <module>"),
            [
                "Traceback (most recent call last):",
                "   File \"t.py\", line 3, in <module>"
            ]
        );
        assert_eq!(
            cut("h:1:2 [0] NCCL INFO Bootstrap : Using eth0 h:1:2 [0] NCCL WARN Call to connect"),
            [
                "h:1:2 [0] NCCL INFO Bootstrap : Using eth0 ",
                "h:1:2 [0] NCCL WARN Call to connect"
            ]
        );
        // A WARN line's source location stays with it.
        assert_eq!(
            cut(
                "h:1:2 [0] NCCL INFO Using network IB h:1:3 [4] init.cc:263 NCCL WARN Cuda failure"
            ),
            [
                "h:1:2 [0] NCCL INFO Using network IB ",
                "h:1:3 [4] init.cc:263 NCCL WARN Cuda failure"
            ]
        );
        assert_eq!(
            cut("text [E ProcessGroupNCCL.cpp:325] Some NCCL operations have failed"),
            [
                "text ",
                "[E ProcessGroupNCCL.cpp:325] Some NCCL operations have failed"
            ]
        );
        // c10d's own logger: the month without its leading zero.
        assert_eq!(
            cut("to (127.0.0.1, 48315). [W728 15:01:59.562622567 TCPStore.cpp:340] [c10d] TCP"),
            [
                "to (127.0.0.1, 48315). ",
                "[W728 15:01:59.562622567 TCPStore.cpp:340] [c10d] TCP"
            ]
        );
        assert_eq!(cut("x [W72 15:01:59 y"), ["x [W72 15:01:59 y"]);
        // PyTorch's Python logging: the dated glog prefix without brackets; Python logging's
        // default `LEVEL:logger:`; Slurm's step daemon, also right after a progress bar's `]`.
        assert_eq!(
            cut("***  W0128 15:04:48.217000 121673 torch/api.py:704] Received 15 death signal"),
            [
                "***  ",
                "W0128 15:04:48.217000 121673 torch/api.py:704] Received 15 death signal"
            ]
        );
        assert_eq!(
            cut("version 2.10.3 WARNING:torch.distributed.elastic.api:Sending process 518"),
            [
                "version 2.10.3 ",
                "WARNING:torch.distributed.elastic.api:Sending process 518"
            ]
        );
        // After a progress bar's `[...]`: whatever another process printed on its line.
        assert_eq!(
            cut(" 38%|███▊      | 377/1000 [04:38<04:39,  2.22it/s]Traceback (most recent call last):"),
            [
                " 38%|███▊      | 377/1000 [04:38<04:39,  2.22it/s]",
                "Traceback (most recent call last):"
            ]
        );
        assert_eq!(
            cut("  0%|          | 0/1000 [00:00<?, ?it/s]RuntimeError: CUDA error: out of memory"),
            [
                "  0%|          | 0/1000 [00:00<?, ?it/s]",
                "RuntimeError: CUDA error: out of memory"
            ]
        );
        assert_eq!(
            cut(" 38%|███▊      | 377/1000 [04:38<04:39]"),
            [" 38%|███▊      | 377/1000 [04:38<04:39]"]
        );
        assert_eq!(
            cut(" 39%|███▉      | 394/1000 [04:45<04:33]slurmstepd: error: *** STEP 9.0 CANCELLED"),
            [
                " 39%|███▉      | 394/1000 [04:45<04:33]",
                "slurmstepd: error: *** STEP 9.0 CANCELLED"
            ]
        );
        // After a character of more than one byte (the fuzzer's: an invalid byte read as
        // U+FFFD right before the name).
        assert_eq!(
            cut("error: rendezvous tim\u{fffd}eKeyError: 'label'"),
            ["error: rendezvous tim\u{fffd}eKeyError: 'label'"]
        );
        assert_eq!(
            cut("at enc_hook \u{fffd}DistBackendError: Watchdog caught"),
            ["at enc_hook \u{fffd}DistBackendError: Watchdog caught"]
        );
        // The exception after a frame's code, in a paste that starts at the frame.
        assert_eq!(
            cut("File \".../rendezvous.py\", line 277 port = int(x) ValueError: invalid literal"),
            [
                "File \".../rendezvous.py\", line 277",
                " port = int(x) ",
                "ValueError: invalid literal"
            ]
        );
        // An exception whose name has a capital inside it, after a frame's code.
        assert_eq!(
            cut("  at vllm/v1/serial_utils.py enc_hook DistBackendError: Watchdog caught"),
            [
                "  at vllm/v1/serial_utils.py enc_hook ",
                "DistBackendError: Watchdog caught"
            ]
        );
        // Any exception after a frame's code that ends in an open call (the call's arguments
        // were on the next lines of the traceback).
        assert_eq!(
            cut("    dist._broadcast_coalesced( RuntimeError: Tensors must be CUDA and dense"),
            [
                "    dist._broadcast_coalesced( ",
                "RuntimeError: Tensors must be CUDA and dense"
            ]
        );
        // Words, not prefixes: a level word without a logger name, a letter and digits that
        // are no date and time, an exception name a message quotes in its own words.
        for whole in [
            "the run ended with ERROR: see above",
            "layer W0128 weights loaded",
            "srun: error: host-a: task 0: Killed",
            "RuntimeError: NCCL error in: x.cpp:1269, unhandled system error, ncclSystemError: y",
            "ValueError: expected a tensor, got TypeError: none",
            "print(f\"retry after ValueError: {e}\")",
        ] {
            assert_eq!(cut(whole), vec![whole.to_owned()], "{whole}");
        }
        assert_eq!(
            cut("Thread 7 (active): \"MainThread\"     broadcast (torch/c10d.py:1191)     main (t.py:9)"),
            ["Thread 7 (active): \"MainThread\"", "     broadcast (torch/c10d.py:1191)", "     main (t.py:9)"]
        );
        assert_eq!(
            exception_after_code("dist.barrier(device_ids=[0]) TypeError: barrier() got"),
            Some("dist.barrier(device_ids=[0]) ".len())
        );
        assert_eq!(
            exception_after_code("raise ValueError(f\"bad sample {i}\")"),
            None
        );
        // A bare exception (an `assert` without a message) joined after its code line.
        assert_eq!(
            exception_after_code("assert num_samples > 0 AssertionError"),
            Some("assert num_samples > 0 ".len())
        );
        for code in [
            "raise AssertionError",
            "except OSError",
            "err = RuntimeError",
            "return KeyError",
        ] {
            assert_eq!(exception_after_code(code), None, "{code}");
        }
        // Those are words, not endings: a name that ends in "in" is code like any other.
        assert_eq!(
            exception_after_code("assert loss < thresh_min AssertionError"),
            Some("assert loss < thresh_min ".len())
        );
    }

    #[test]
    fn head_cuts_at_char_boundaries() {
        assert_eq!(head("héllo", 2), "h");
        assert_eq!(head("héllo", 3), "hé");
        assert_eq!(head("abc", 10), "abc");
    }

    #[test]
    fn a_tools_bare_error_line_is_no_crash_of_the_job() {
        // py-spy denied ptrace on a hung job's process: the tool failed, not the rank.
        let (out, _) = scan(
            &[
                "Error: Failed to suspend process",
                "Reason: EPERM: Operation not permitted",
            ],
            None,
        );
        assert!(crash(&out).is_none(), "{:?}", out.signals);
        // In a traceback, `Error` is the program's own class (one defined in `__main__`).
        let (out, _) = scan(
            &[
                "Traceback (most recent call last):",
                "  File \"train.py\", line 3, in <module>",
                "    raise Error(\"bad config\")",
                "Error: bad config",
            ],
            None,
        );
        assert!(crash(&out).is_some(), "{:?}", out.signals);
        // Nor after a logger's error level: a library's message after its name.
        let (out, _) = scan(
            &["ERROR:root:MIOpen Error: sqlite_db.cpp:220: Internal error while accessing SQLite database: locking protocol"],
            None,
        );
        assert!(crash(&out).is_none(), "{:?}", out.signals);
    }

    #[test]
    fn a_progress_bar_redrawn_in_place_does_not_hide_what_follows_it() {
        // A saved log's tqdm line: redraws joined by carriage returns, then Slurm's line; past
        // the bytes a line is analysed for, read as one line.
        let bar: String = (0..400)
            .map(|i| format!("\r 20%|██        | {i}/1000 [02:50<2:21:36, 10.63s/it]"))
            .collect();
        let line = format!("{bar}\rslurmstepd: error: *** JOB 9304949 ON host-a CANCELLED AT 2025-01-28T15:04:48 ***");
        assert!(line.len() > ANALYSED_BYTES);
        let (out, _) = scan(&[line.as_str()], None);
        assert!(
            out.signals
                .iter()
                .any(|s| s.category == Category::LauncherInterrupted),
            "{:?}",
            out.signals
        );
    }

    #[test]
    fn a_raise_joined_with_its_exception_is_read_without_the_frames_above() {
        let out = scan_as_pasted(&[
            "    return cls.__new__(cls, value)   File \"/a/enum.py\", line 663, in __new__",
            "    raise ve_exc ValueError: 'jsonl' is not a valid LoggingTypes",
        ]);
        assert!(crash(&out).is_some(), "{:?}", out.signals);
        // Not any line with an exception's name in it.
        let out = scan_as_pasted(&["    retry after ValueError: bad thing"]);
        assert!(crash(&out).is_none(), "{:?}", out.signals);
    }

    #[test]
    fn an_exception_logged_as_an_error_record_is_read_after_the_prefix() {
        for line in [
            "2023-10-13 17:40:02,544 - root - ERROR - AssertionError: lr values do not match",
            "ERROR AssertionError: lr values do not match",
            "ERROR 10-13 09:06:25 [core.py:597] ValueError: bad config",
        ] {
            let (out, _) = scan(&[line], None);
            assert!(crash(&out).is_some(), "{line}: {:?}", out.signals);
        }
        for line in [
            // Logged as a warning: the program went on.
            "WARNING - root - ValueError: bad config, using the default",
            // A level inside another word, and an error with no exception's name after it.
            "timed out connecting: SO_ERROR: Connection refused",
            "NET/OFI Couldn't register memory region. RC: -38, ERROR: Function not implemented",
        ] {
            let (out, _) = scan(&[line], None);
            assert!(crash(&out).is_none(), "{line}: {:?}", out.signals);
        }
    }

    #[test]
    fn exception_lines_are_recognised() {
        assert!(looks_like_exception("ValueError: bad"));
        assert!(looks_like_exception(
            "torch.distributed.DistBackendError: x"
        ));
        assert!(looks_like_exception("RuntimeError"));
        assert!(looks_like_exception(
            "socket.gaierror: [Errno -2] Name or service not known"
        ));
        assert!(looks_like_exception("socket.timeout: timed out"));
        assert!(looks_like_exception(
            "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 47.7 GiB"
        ));
        assert!(!looks_like_exception("some words: here"));
        assert!(!looks_like_exception(""));
        assert!(!looks_like_exception("INFO:root:Saving checkpoint"));
        assert!(!looks_like_exception(
            "wandb: Tracking run with wandb version 0.16.0"
        ));
    }

    fn scan(lines: &[&str], rank: Option<usize>) -> (FileScan, NcclCollector) {
        let mut nccl = NcclCollector::default();
        let mut shape = LogShape::default();
        let mut order = 0;
        let mut s = Scanner::new("f.log".into(), rank, &mut nccl, &mut shape, &mut order);
        for (i, l) in lines.iter().enumerate() {
            s.line(Some(i as u64 + 1), l);
        }
        let out = s.finish();
        (out, nccl)
    }

    /// [`scan`] after the first pass that finds how the log was pasted.
    fn scan_as_pasted(lines: &[&str]) -> FileScan {
        let mut nccl = NcclCollector::default();
        let mut shape = LogShape::default();
        let mut order = 0;
        let mut s = Scanner::new("f.log".into(), None, &mut nccl, &mut shape, &mut order);
        s.read_as_pasted(&probe(lines));
        for (i, l) in lines.iter().enumerate() {
            s.line(Some(i as u64 + 1), l);
        }
        s.finish()
    }

    /// The crash a traceback's exception line is read as: (its line number, the frame's).
    fn crash(out: &FileScan) -> Option<(Option<u64>, Option<u64>)> {
        let s = out
            .signals
            .iter()
            .find(|s| s.category == Category::RankCrashed)?;
        Some((s.evidence[0].line, s.evidence.get(1).and_then(|e| e.line)))
    }

    #[test]
    fn a_log_pasted_newest_first_is_told_by_its_time_stamps() {
        let newest_first = [
            "2026-12-03T16:29:09.500Z RuntimeError: x",
            "2026-12-03T16:29:09.100Z   File \"t.py\", line 3",
            "2026-12-03T16:29:08.900Z Traceback (most recent call last):",
            "2026-12-03T16:29:01.000Z step 9",
        ];
        assert!(probe(&newest_first).newest_first());
        let oldest_first: Vec<&str> = newest_first.iter().rev().copied().collect();
        assert!(!probe(&oldest_first).newest_first());
        // Ranks' lines interleaved with clocks a little apart, a log without time stamps.
        let skewed = [
            "[rank0]:[2026-12-03 16:29:01,100] a",
            "[rank1]:[2026-12-03 16:29:01,050] a",
            "[rank0]:[2026-12-03 16:29:02,100] b",
            "[rank1]:[2026-12-03 16:29:02,050] b",
            "[rank0]:[2026-12-03 16:29:03,100] c",
            "[rank1]:[2026-12-03 16:29:03,050] c",
            "[rank0]:[2026-12-03 16:29:04,100] d",
            "[rank1]:[2026-12-03 16:29:04,050] d",
        ];
        assert!(!probe(&skewed).newest_first());
        assert!(!probe(&["c", "b", "a"]).newest_first());
        assert_eq!(
            leading_time_stamp("2026-12-03T16:29:05,25Z x"),
            Some("2026-12-03 16:29:05.25".to_owned())
        );
    }

    #[test]
    fn numbered_pastes_are_told_from_labels_time_stamps_and_tables() {
        let cat_n = ["     9\ta", "    10\t  b", "    11\t", "    12\tc"];
        let grep_context = ["40-a", "41:b", "42-c", "44-d"];
        let less_n = ["      1 a", "      2   b", "      3 c"];
        let one_line_of_cat_n = ["     1\tRuntimeError: x"];
        for numbered in [&cat_n[..], &grep_context, &less_n, &one_line_of_cat_n] {
            assert!(probe(numbered).numbered(), "{numbered:?}");
        }
        let srun_labels = ["0: a", "1: b", "0: c", "1: d"];
        let stamps = ["2024-05-01 a", "2024-05-01 b", "2024-05-01 c"];
        let nccl_tests_rows = [
            "           8             2     float     sum      -1    18.52",
            "          16             4     float     sum      -1    18.61",
            "          32             8     float     sum      -1    18.49",
            "          64            16     float     sum      -1    18.77",
        ];
        let one_unnumbered_in_four = ["1 a", "2 b", "c", "4 d"];
        let one_line_counting = ["8 ranks joined"];
        for plain in [
            &srun_labels[..],
            &stamps,
            &nccl_tests_rows,
            &one_unnumbered_in_four,
            &one_line_counting,
        ] {
            assert!(!probe(plain).numbered(), "{plain:?}");
        }
    }

    /// A traceback whose every line has a prefix no rule strips by name is read as the
    /// prefix its first line teaches allows (see `record_prefix.rs`): numbered, logged by
    /// vLLM's logger, loguru's around each line.
    #[test]
    fn a_traceback_under_a_prefix_on_every_line_is_still_read() {
        let numbered = [
            "     1\tTraceback (most recent call last):",
            "     2\t  File \"train.py\", line 3, in <module>",
            "     3\t    x = load()",
            "     4\tKeyError: 'label'",
        ];
        let vllm = [
            "ERROR 10-13 09:06:25 [multiproc_executor.py:597] Traceback (most recent call last):",
            "ERROR 10-13 09:06:25 [multiproc_executor.py:597]   File \"train.py\", line 3, in <module>",
            "ERROR 10-13 09:06:25 [multiproc_executor.py:597]     x = load()",
            "ERROR 10-13 09:06:25 [multiproc_executor.py:597] KeyError: 'label'",
        ];
        let loguru = [
            "2024-05-01 12:00:09.123 | ERROR    | app:run:99 - Traceback (most recent call last):",
            "2024-05-01 12:00:10.123 | ERROR    | app:run:100 -   File \"train.py\", line 3, in <module>",
            "2024-05-01 12:00:10.124 | ERROR    | app:run:100 -     x = load()",
            "2024-05-01 12:00:10.125 | ERROR    | app:run:100 - KeyError: 'label'",
        ];
        for lines in [numbered, vllm, loguru] {
            assert_eq!(
                crash(&scan_as_pasted(&lines)),
                Some((Some(4), Some(2))),
                "{lines:?}"
            );
        }
    }

    #[test]
    fn unexplained_exception_becomes_a_crash_with_its_frame() {
        let (out, _) = scan(
            &[
                "Traceback (most recent call last):",
                "  File \"train.py\", line 3, in <module>",
                "    x = load()",
                "KeyError: 'label'",
            ],
            Some(2),
        );
        assert_eq!(out.signals.len(), 1);
        let s = &out.signals[0];
        assert_eq!(s.category, Category::RankCrashed);
        assert_eq!(s.observer, Some(2));
        assert_eq!(s.evidence[0].line, Some(4));
        assert_eq!(s.evidence[1].line, Some(2));
    }

    /// The program's own frame is cited, not ddp-probe's module's wrapper of DDP's constructor
    /// (run from the build tree as from an installed wheel) nor a library's, whatever the
    /// path separator (timm's train.py with `--sync-bn` on the CPU, 2026-12-07).
    #[test]
    fn the_cited_frame_is_the_programs_not_the_modules_wrapper() {
        for (sep, lib) in [
            ("/", "/v/lib/python3.11/site-packages"),
            ("\\", "C:\\py\\Lib\\site-packages"),
        ] {
            let frame = |path: &str, line: u32, function: &str| {
                format!(
                    "[rank0]:   File \"{}\", line {line}, in {function}",
                    path.replace('/', sep)
                )
            };
            let lines = [
                "[rank0]: Traceback (most recent call last):".to_owned(),
                frame("/w/train.py", 1028, "main"),
                "[rank0]:     task.prepare_distributed(device_ids=None)".to_owned(),
                frame(
                    &format!("{lib}/timm/task/classification.py"),
                    65,
                    "prepare_distributed",
                ),
                "[rank0]:     self.trainable_module = DDP(self.trainable_module)".to_owned(),
                frame(
                    "/w/ddp-probe/python/ddp_probe_torch/__init__.py",
                    2133,
                    "__init__",
                ),
                "[rank0]:     original(self, *args, **kwargs)".to_owned(),
                frame(
                    &format!("{lib}/torch/nn/parallel/distributed.py"),
                    947,
                    "__init__",
                ),
                "[rank0]:     raise err_type(err_msg)".to_owned(),
                "[rank0]: ValueError: SyncBatchNorm layers only work with GPU modules".to_owned(),
            ];
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let (out, _) = scan(&lines, None);
            assert_eq!(out.signals.len(), 1, "{:#?}", out.signals);
            let cited: Vec<Option<u64>> = out.signals[0].evidence.iter().map(|e| e.line).collect();
            assert_eq!(cited, vec![Some(10), Some(2), Some(3)], "separator {sep}");
        }
    }

    /// A dataset's exception in a DataLoader worker, as PyTorch 2.13 re-raises it in the rank
    /// (`ExceptionWrapper.reraise`): the original's exception and frame are what failed.
    #[test]
    fn an_exception_re_raised_from_a_dataloader_worker_is_the_originals() {
        let lines = [
            "[rank1]: Traceback (most recent call last):",
            "[rank1]:   File \"/w/train.py\", line 40, in <module>",
            "[rank1]:     for x, y in loader:",
            "[rank1]:   File \"/v/site-packages/torch/_utils.py\", line 750, in reraise",
            "[rank1]:     raise exception",
            "[rank1]: ValueError: Caught ValueError in DataLoader worker process 0.",
            "[rank1]: Original Traceback (most recent call last):",
            "[rank1]:   File \"/v/site-packages/torch/utils/data/_utils/worker.py\", line 349, in _worker_loop",
            "[rank1]:     data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
            "[rank1]:   File \"/w/train.py\", line 17, in __getitem__",
            "[rank1]:     raise ValueError(f\"bad sample {i}\")",
            "[rank1]: ValueError: bad sample 17",
        ];
        let (out, _) = scan(&lines, None);
        assert_eq!(out.signals.len(), 1, "{:#?}", out.signals);
        let s = &out.signals[0];
        assert_eq!(s.observer, Some(1));
        assert_eq!(
            s.detail.as_deref(),
            Some("ValueError: bad sample 17 (raised in DataLoader worker process 0)")
        );
        let lines_cited: Vec<Option<u64>> = s.evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines_cited, vec![Some(12), Some(10), Some(6)]);
        // Cut after the wrapper's line: the wrapper is what is known.
        let (out, _) = scan(&lines[..7], None);
        assert_eq!(out.signals.len(), 1);
        assert_eq!(
            out.signals[0].detail.as_deref(),
            Some("ValueError: Caught ValueError in DataLoader worker process 0.")
        );
    }

    #[test]
    fn a_traceback_cut_in_set_device_is_a_cuda_error() {
        let lines = [
            "Traceback (most recent call last):",
            "  File \"train.py\", line 9, in <module>",
            "    torch.cuda.set_device(local_rank)",
            "  File",
        ];
        let (out, _) = scan(&lines, Some(3));
        assert_eq!(out.signals.len(), 1);
        let s = &out.signals[0];
        assert_eq!(s.category, Category::CudaError);
        assert_eq!(s.observer, Some(3));
        assert_eq!(s.evidence[1].line, Some(3));
        // Another call cut short says nothing; a traceback that ends says its own error.
        let (out, _) = scan(&[lines[0], lines[1], "    model = build()"], None);
        assert!(out.signals.is_empty());
        let (out, _) = scan(&[lines[0], lines[1], lines[2], "KeyError: 'x'"], None);
        assert_eq!(out.signals[0].category, Category::RankCrashed);
    }

    /// DeepSpeed's `_ensure_divisibility` (`deepspeed/utils/groups.py`, read in its source)
    /// raised while it builds its process groups: the world size against a parallel size. The
    /// same words raised in a program's own assert stay a crash.
    #[test]
    fn deepspeed_groups_divisibility_is_a_layout_that_does_not_fit_the_ranks() {
        let lines = [
            "Traceback (most recent call last):",
            "  File \"/opt/ds/deepspeed/moe/layer.py\", line 99, in _create_process_groups",
            "    groups._create_expert_and_data_parallel(self.ep_size)",
            "  File \"/opt/ds/deepspeed/utils/groups.py\", line 54, in _ensure_divisibility",
            "    assert numerator % denominator == 0, '{} is not divisible by {}'.format(",
            "AssertionError: 2 is not divisible by 4",
        ];
        let (out, _) = scan(&lines, None);
        let s = &out.signals[0];
        assert_eq!(s.category, Category::WorldSizeMismatch);
        assert!(
            s.detail.as_deref().is_some_and(|d| d.contains("ep_size")),
            "{:?}",
            s.detail
        );
        let own = [
            lines[0],
            "  File \"train.py\", line 12, in main",
            "    assert batch % world == 0, f'{batch} is not divisible by {world}'",
            "AssertionError: 6 is not divisible by 4",
        ];
        let (out, _) = scan(&own, None);
        assert_eq!(out.signals[0].category, Category::RankCrashed);
    }

    #[test]
    fn elastic_table_names_the_root_cause() {
        let (out, _) = scan(
            &[
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                "============================================================",
                "train.py FAILED",
                "------------------------------------------------------------",
                "Failures:",
                "  <NO_OTHER_FAILURES>",
                "------------------------------------------------------------",
                "Root Cause (first observed failure):",
                "[0]:",
                "  time      : 2024-05-01_12:00:00",
                "  host      : node0",
                "  rank      : 1 (local_rank: 1)",
                "  exitcode  : -9 (pid: 4242)",
                "  error_file: <N/A>",
                "  traceback : Signal 9 (SIGKILL) received by PID 4242",
                "============================================================",
            ],
            None,
        );
        assert_eq!(out.elastic_root, Some(1));
        let s = out
            .signals
            .iter()
            .find(|s| s.rule == "elastic_failure")
            .unwrap();
        assert_eq!(s.category, Category::HostOomKilled);
        assert_eq!(s.subjects, vec![1]);
        assert_eq!(s.evidence[0].line, Some(13));
    }
}
