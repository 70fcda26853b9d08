//! Trace files mapped into memory rather than read, and the guard that
//! turns a file cut short under the map into a clear message.
//!
//! Reading a 1.7 GB run through a buffer makes the kernel copy every byte
//! out of the page cache; a map lets the parser read the page cache itself
//! (about a tenth of a first load's CPU time). [`Mapped`] gives the pages
//! read so far back as the reading goes on, so the map never counts as more
//! than a few MiB of the process's memory.
//!
//! A map has one hazard a read does not: if another process truncates the
//! file while it is read (a run directory overwritten by a new run), the
//! next access to a page past the new end raises `SIGBUS`, which would kill
//! the process with a bare "Bus error". Every live map is registered here,
//! and a `SIGBUS` handler, installed with the first map, recognises a fault
//! inside one of them and exits with a message saying what happened and
//! what to do (status [`TRUNCATED_EXIT`]). A fault anywhere else goes to
//! whatever handled `SIGBUS` before. Only Linux maps files; elsewhere (and
//! when [`crate::reader::MAP_ENV`] says so) files are read.

use std::fs::File;

/// The exit status after a mapped trace file was cut short (`EX_IOERR`).
pub const TRUNCATED_EXIT: i32 = 74;

/// Pages read are given back in steps of this many bytes.
const RELEASE_BYTES: usize = 8 << 20;

/// A page size every system this maps on divides (pages given back start
/// and end on multiples of it).
const PAGE: usize = 4096;

/// A trace file mapped into memory, read from start to end.
pub(crate) struct Mapped {
    map: memmap2::Mmap,
    /// Its slot among the live maps.
    slot: usize,
    /// Where the pages not yet given back begin.
    kept: usize,
}

impl Mapped {
    /// `file` (of `len` bytes, a regular file) mapped and registered with
    /// the guard; `None` when that cannot be done (then the file is read).
    pub(crate) fn open(file: &File, len: u64) -> Option<Mapped> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        if !guard::install() {
            return None;
        }
        // SAFETY: the map is only read, and only through `bytes`. Trace
        // files are appended to while a job writes them, which leaves the
        // mapped part as it was; a file cut short while it is mapped makes
        // an access fault, which the guard turns into an exit with a message
        // (see the module's documentation).
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
        let slot = guard::register(map.as_ptr() as usize, map.len())?;
        Some(Mapped { map, slot, kept: 0 })
    }

    /// The file's bytes (as long as it was when mapped).
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Gives back the pages before `pos` once there are enough of them: the
    /// caller reads no byte before `pos` again.
    #[inline]
    pub(crate) fn release_before(&mut self, pos: usize) {
        if pos - self.kept >= RELEASE_BYTES {
            let len = (pos - self.kept) & !(PAGE - 1);
            // SAFETY: the map is private and read-only, so dropping its pages
            // loses nothing (a later access would read the file again), and
            // the caller does not read them again.
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, self.kept, len)
            };
            self.kept += len;
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        guard::unregister(self.slot);
    }
}

#[cfg(target_os = "linux")]
mod guard {
    //! The registry of live maps and the `SIGBUS` handler.

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// How many maps may be live at once (one per loading thread); a map
    /// beyond that is not made (the file is read).
    const SLOTS: usize = 64;

    /// One live map: its first byte's address (0: a free slot) and its end.
    pub(super) struct Slot {
        pub(super) start: AtomicUsize,
        end: AtomicUsize,
    }

    pub(super) static SLOTS_IN_USE: [Slot; SLOTS] = [const {
        Slot {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
        }
    }; SLOTS];

    /// What handled `SIGBUS` before the guard (faults outside the maps go
    /// back to it).
    struct Previous(libc::sigaction);
    // SAFETY: a plain C struct of a handler address, flags and a signal
    // mask, written once before the handler can run and only read after.
    unsafe impl Sync for Previous {}
    unsafe impl Send for Previous {}

    /// Whether the handler is installed, and what it replaced.
    static INSTALLED: OnceLock<Option<Previous>> = OnceLock::new();

    const MESSAGE: &[u8] = b"ddp-probe: a trace file became shorter while it was being read \
(was its run directory overwritten by a new run?), so it could not be loaded. Run the \
command again once the files are complete, or with DDP_PROBE_MAP_FILES=0 to read the files \
instead of mapping them.\n";

    /// Installs the handler once; whether it is installed.
    pub(super) fn install() -> bool {
        INSTALLED
            .get_or_init(|| {
                // SAFETY: `sigaction` with a zeroed (empty) mask, our
                // handler, SA_SIGINFO and SA_ONSTACK (the alternate stack of
                // threads that have one); `previous` is written by the call.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = handler as *const () as usize;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut action.sa_mask);
                    let mut previous: libc::sigaction = std::mem::zeroed();
                    (libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0)
                        .then_some(Previous(previous))
                }
            })
            .is_some()
    }

    /// Registers a live map of `len` bytes at `start`; its slot, or `None`
    /// when every slot is taken.
    pub(super) fn register(start: usize, len: usize) -> Option<usize> {
        for (i, slot) in SLOTS_IN_USE.iter().enumerate() {
            if slot
                .start
                .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.end.store(start + len, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    /// Frees the slot of a map about to be unmapped.
    pub(super) fn unregister(i: usize) {
        SLOTS_IN_USE[i].end.store(0, Ordering::Release);
        SLOTS_IN_USE[i].start.store(0, Ordering::Release);
    }

    /// The `SIGBUS` handler: only async-signal-safe calls (`write`,
    /// `_exit`, `sigaction`) and atomic loads.
    extern "C" fn handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
        let addr = unsafe { (*info).si_addr() } as usize;
        let ours = SLOTS_IN_USE.iter().any(|s| {
            let start = s.start.load(Ordering::Acquire);
            start != 0 && addr >= start && addr < s.end.load(Ordering::Acquire)
        });
        if ours {
            // SAFETY: write(2) and _exit(2) are async-signal-safe.
            unsafe {
                libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
                libc::_exit(super::TRUNCATED_EXIT);
            }
        }
        // Not one of our maps: hand the signal back to what handled it
        // before. Returning re-runs a faulting access under it; a signal
        // sent by a process (no fault to re-run) is sent again.
        if let Some(Some(Previous(previous))) = INSTALLED.get() {
            // SAFETY: restoring the action saved at installation; raise(3)
            // is async-signal-safe.
            unsafe {
                libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
                if (*info).si_code <= 0 {
                    libc::raise(libc::SIGBUS);
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod guard {
    //! No maps outside Linux: files are read.

    pub(super) fn install() -> bool {
        false
    }

    pub(super) fn register(_start: usize, _len: usize) -> Option<usize> {
        None
    }

    pub(super) fn unregister(_i: usize) {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    /// Set in the child process a test starts: what the child does.
    const CHILD_ENV: &str = "DDP_PROBE_MAPPED_TEST_CHILD";

    /// Runs the test `name` again in a child process with [`CHILD_ENV`] set
    /// to `what`, and returns how it ended.
    fn child(name: &str, what: &str) -> std::process::Output {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, what)
            .output()
            .unwrap()
    }

    /// A mapped file of 1 MiB of `x`.
    fn mapped_file(dir: &std::path::Path) -> (File, Mapped) {
        let path = dir.join("rank-0.jsonl");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![b'x'; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let map = Mapped::open(&file, 1 << 20).expect("mapped");
        (file, map)
    }

    #[test]
    fn a_file_cut_short_under_its_map_ends_the_process_with_a_message() {
        const NAME: &str =
            "mapped::tests::a_file_cut_short_under_its_map_ends_the_process_with_a_message";
        if std::env::var_os(CHILD_ENV).is_some() {
            let dir = tempfile::tempdir().unwrap();
            let (file, mut map) = mapped_file(dir.path());
            assert_eq!(map.bytes()[0], b'x');
            // Pages given back are read again from the file.
            map.release_before(RELEASE_BYTES.min(map.bytes().len()));
            assert_eq!(map.bytes()[4096], b'x');
            file.set_len(0).unwrap();
            // Past the new end: the guard ends the process.
            let b = std::hint::black_box(map.bytes()[500_000]);
            println!("read {b} past the end of a truncated file");
            return;
        }
        let out = child(NAME, "truncate");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(TRUNCATED_EXIT), "{stderr}");
        assert!(
            stderr.contains("became shorter while it was being read")
                && stderr.contains("DDP_PROBE_MAP_FILES=0"),
            "{stderr}"
        );
    }

    /// The exit status of [`previous_handler`].
    const PREVIOUS_EXIT: i32 = 42;

    /// A `SIGBUS` handler installed before the guard.
    extern "C" fn previous_handler(_sig: libc::c_int) {
        // SAFETY: _exit(2) is async-signal-safe.
        unsafe { libc::_exit(PREVIOUS_EXIT) }
    }

    #[test]
    fn a_bus_error_elsewhere_goes_to_the_previous_handler() {
        const NAME: &str = "mapped::tests::a_bus_error_elsewhere_goes_to_the_previous_handler";
        if std::env::var_os(CHILD_ENV).is_some() {
            // SAFETY: installing a handler in this (child) process.
            unsafe {
                libc::signal(libc::SIGBUS, previous_handler as *const () as usize);
            }
            let dir = tempfile::tempdir().unwrap();
            // The guard is installed over it, a map is live, and SIGBUS
            // comes from elsewhere: the previous handler must get it.
            let (_file, map) = mapped_file(dir.path());
            assert_eq!(map.bytes()[0], b'x');
            // SAFETY: raising a signal in this (child) process.
            unsafe {
                libc::raise(libc::SIGBUS);
            }
            println!("survived SIGBUS");
            return;
        }
        let out = child(NAME, "raise");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(PREVIOUS_EXIT), "{stderr}");
        assert!(!stderr.contains("became shorter"), "{stderr}");
    }

    #[test]
    fn maps_are_registered_while_they_live() {
        let dir = tempfile::tempdir().unwrap();
        let (_file, map) = mapped_file(dir.path());
        let start = map.bytes().as_ptr() as usize;
        let live = |start: usize| {
            guard::SLOTS_IN_USE
                .iter()
                .any(|s| s.start.load(std::sync::atomic::Ordering::Acquire) == start)
        };
        assert!(live(start));
        drop(map);
        assert!(!live(start));
    }
}
